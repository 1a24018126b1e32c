//! The interface between the communicator and whatever picks an
//! implementation: the [`Selector`] trait and the [`Group`] of small fixed
//! collectives selectors agree through.

use super::implementation::Implementation;
use crate::error::Result;
use crate::ids::Collective;

/// What a selector may ask of the ranks so that all of them run the same
/// implementation. The communicator provides it with fixed, small
/// collectives that never go through a selector.
pub trait Group {
    /// This rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// True when all ranks read one monotonic clock.
    fn shared_clock(&self) -> bool;
    /// The number of hosts the ranks run on (candidates that follow the
    /// hosts, `hier` trees, join a lottery only above one).
    fn host_count(&self) -> usize {
        1
    }
    /// Where the ranks run, when that is known (a model's predictions need
    /// it).
    fn ranks_layout(&self) -> Option<std::sync::Arc<crate::layout::Layout>> {
        None
    }
    /// Replaces every value on rank 0 by its maximum, mean or minimum over
    /// all ranks, as `how` says (the other ranks' values are left as they
    /// were).
    fn fold_to_rank0(&mut self, values: &mut [f64], how: Fold) -> Result<()>;
    /// Replaces `values` on every rank by rank 0's.
    fn share_rank0(&mut self, values: &mut [u64]) -> Result<()>;
}

/// How [`Group::fold_to_rank0`] combines the ranks' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// The maximum over all ranks.
    Max,
    /// The mean over all ranks.
    Mean,
    /// The minimum over all ranks.
    Min,
}

/// Chooses the implementation of each call and learns from its time.
///
/// Every rank calls `select` for every call, in the same order, so a
/// selector that must agree across ranks can use the [`Group`].
pub trait Selector: Send {
    /// The implementation for `op` with `bytes` per rank.
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> Result<Implementation>;

    /// True when the communicator should time calls and report them with
    /// `record`; false spares the clock reads.
    fn wants_times(&self) -> bool {
        false
    }

    /// When this rank entered and left a call, in nanoseconds on
    /// [`crate::clock::now_ns`]'s clock; the default ignores it.
    fn record(&mut self, _imp: &Implementation, _bytes: usize, _enter_ns: u64, _leave_ns: u64) {}

    /// Learns from the calls it has not learnt from yet, as the
    /// communicator ends: a collective step, every rank calls it at the
    /// same point. The default has nothing to learn.
    fn finish(&mut self, _group: &mut dyn Group) -> Result<()> {
        Ok(())
    }

    /// Saves what the selector learned, if it keeps anything.
    fn save(&mut self) -> Result<()> {
        Ok(())
    }

    /// The selector of a communicator made over some of this one's ranks
    /// (a split or a dup): one whose ranks run on `ranks.hosts`. Every
    /// rank of the new communicator makes its own alike. The default:
    /// none, and the new communicator starts with the built-in choice.
    fn offspring(&mut self, _ranks: &Offspring<'_>) -> Option<Box<dyn Selector>> {
        None
    }
}

/// Where the ranks of a communicator made from another run, as its
/// selector needs to know.
#[derive(Clone, Copy, Debug)]
pub struct Offspring<'a> {
    /// The host of each of its ranks, in its rank order.
    pub hosts: &'a [String],
    /// The transport's kind.
    pub transport: &'a str,
    /// This rank in it.
    pub rank: usize,
}
