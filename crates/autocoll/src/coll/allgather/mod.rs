//! Allgather: over a tree (gather then broadcast), ring, recursive doubling.

mod recursive_doubling;
mod ring;
mod tree;

pub(crate) use recursive_doubling::recursive_doubling;
pub(crate) use ring::ring;
pub(crate) use tree::tree;
