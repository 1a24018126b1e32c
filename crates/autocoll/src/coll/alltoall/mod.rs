//! Alltoall: block j of rank i's send buffer becomes block i of rank j's
//! receive buffer. Pairwise exchange, Bruck, linear with a bounded
//! number of sends ahead of the receives, and two-level over the hosts of
//! the layout; none is a tree.

mod bruck;
mod linear;
mod pairwise;
mod two_level;

pub(crate) use bruck::bruck;
pub(crate) use linear::linear;
pub(crate) use pairwise::pairwise;
pub(crate) use two_level::two_level;
