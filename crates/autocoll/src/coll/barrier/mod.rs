//! Barrier: fan-in then fan-out over any tree, or dissemination.

mod dissemination;
mod tree;

pub(crate) use dissemination::dissemination;
pub(crate) use tree::tree;
