//! The observer hook: collectives report the stages of every call.
//!
//! It is the only way stages leave a collective. An [`Observer`] installed
//! with [`crate::Communicator::set_observer`] sees, on each rank, the call
//! entered, every segment received, combined and sent, and the call done;
//! the collectives know nothing of who listens (the tests count calls with
//! it, `autocoll adapt --disturb` slows a rank's link through it). When no
//! observer is installed the collectives test one `Option` and do nothing
//! else: no clock read, no allocation.

use std::time::Instant;

use crate::select::Implementation;

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
    /// The call's sequence number on the communicator.
    pub call: u64,
    /// The implementation running.
    pub imp: &'a Implementation,
    /// What happened.
    pub stage: Stage,
    /// The segment (or algorithm step) index.
    pub segment: u32,
    /// The other rank involved, if any.
    pub peer: Option<usize>,
    /// When, on this process's monotonic clock.
    pub time: Instant,
}

/// Receives the stages of every collective call on a communicator.
pub trait Observer: Send + Sync {
    /// Called at each stage; keep it short, it runs inside the collective.
    fn event(&self, event: &Event<'_>);
}
