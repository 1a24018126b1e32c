//! Allreduce: over a tree (reduce then broadcast), ring, recursive
//! doubling, Rabenseifner.

mod rabenseifner;
mod recursive_doubling;
mod ring;
mod tree;

pub(crate) use rabenseifner::rabenseifner;
pub(crate) use recursive_doubling::recursive_doubling;
pub(crate) use ring::ring;
pub(crate) use tree::tree;
