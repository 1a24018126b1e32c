//! The observer hook: collectives report the stages of every call.
//!
//! It is the only way stages leave a collective. The observers of a
//! communicator (the one set with [`crate::Communicator::set_observer`],
//! those added with [`crate::Communicator::add_observer`], and the trace
//! recorder of [`crate::Communicator::trace`]) see, on each rank, the call
//! entered, every segment received, combined and sent, and the call done;
//! the collectives know nothing of who listens (the tests count calls with
//! it, `autocoll adapt --disturb` slows a rank's link through it, the
//! tracer records it). With no observer the collectives test one slice for
//! emptiness and do nothing else: no clock read, no allocation. With some,
//! each stage reads the clock once and hands the same event to each.

use crate::ids::CallSig;
use crate::select::Implementation;
use crate::tree::Tree;

/// A stage inside a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The rank entered the call.
    Enter,
    /// A segment arrived from `peer` (parent, child or exchange partner).
    Received,
    /// A segment from `peer` was combined into the partial result.
    Combined,
    /// A segment was handed to the transport for `peer`.
    Sent,
    /// The rank's part of the call is complete.
    Done,
}

/// One stage of one call on one rank.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// The rank reporting.
    pub rank: usize,
    /// The call: its sequence number on the communicator (`sig.seq`), the
    /// collective, its root and its bytes per rank.
    pub sig: CallSig,
    /// The implementation running.
    pub imp: &'a Implementation,
    /// The tree the call runs over, for tree algorithms.
    pub tree: Option<&'a Tree>,
    /// What happened.
    pub stage: Stage,
    /// The algorithm's message phase of a send or receive (it separates,
    /// e.g., an allreduce's reduce messages from its broadcast messages);
    /// 0 for `Enter` and `Done`.
    pub phase: u8,
    /// The segment (or algorithm step) index.
    pub segment: u32,
    /// The other rank involved, if any.
    pub peer: Option<usize>,
    /// When, in nanoseconds on [`crate::clock::now_ns`]: one clock read per
    /// stage, shared by all observers.
    pub time_ns: u64,
}

/// Receives the stages of every collective call on a communicator.
pub trait Observer: Send + Sync {
    /// Called at each stage; keep it short, it runs inside the collective.
    fn event(&self, event: &Event<'_>);
}
