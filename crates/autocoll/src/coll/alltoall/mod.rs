//! Alltoall: block j of rank i's send buffer becomes block i of rank j's
//! receive buffer. Pairwise exchange, Bruck, and linear with a bounded
//! number of sends ahead of the receives; none is a tree.

mod bruck;
mod linear;
mod pairwise;

pub(crate) use bruck::bruck;
pub(crate) use linear::linear;
pub(crate) use pairwise::pairwise;
