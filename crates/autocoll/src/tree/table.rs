//! Virtual-rank tables: the order in which the ranks take a tree's
//! positions, numbered so that the trees built from one can be kept.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A virtual-rank table with a number no other table has, so that the
/// trees built from it can be kept by that number.
#[derive(Clone, Debug)]
pub(crate) struct RankTable {
    /// Unique among the tables of the process (0: the identity, never made).
    pub version: u64,
    /// The ranks in the order they take the positions.
    pub ranks: Arc<[usize]>,
}

impl RankTable {
    pub(crate) fn new(ranks: Vec<usize>) -> RankTable {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        RankTable {
            version: NEXT.fetch_add(1, Ordering::Relaxed),
            ranks: ranks.into(),
        }
    }
}
