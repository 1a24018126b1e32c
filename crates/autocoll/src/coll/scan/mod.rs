//! Scan and exscan: rank i ends with ranks 0..=i (scan) or 0..i (exscan)
//! combined. A pipeline along the ranks in order, and recursive doubling;
//! neither is a tree. Both combine in an order fit for commutative ops
//! only, which is all the callers hand them (the typed API's ops are
//! commutative; the MPI library passes the others through).

mod linear;
mod recursive_doubling;

pub(crate) use linear::linear;
pub(crate) use recursive_doubling::recursive_doubling;
