//! Reduce-scatter: every rank's P blocks combined element by element, the
//! combined block i to rank i. Ring, recursive halving and pairwise
//! exchange, or over any tree a reduce of the whole vector and a scatter
//! of its blocks. The op is commutative (the interposition library passes
//! the others to MPI), so each algorithm combines in its own order.

mod pairwise;
mod recursive_halving;
mod ring;
mod tree;

pub(crate) use pairwise::pairwise;
pub(crate) use recursive_halving::recursive_halving;
pub(crate) use ring::ring;
pub(crate) use tree::tree;
