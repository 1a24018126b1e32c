//! Point-to-point transports: the bottom layer every collective runs on.
//!
//! A [`Transport`] moves byte payloads between ranks: `send` never blocks
//! (the payload is queued, so a pipeline keeps receiving while earlier
//! segments are still in flight) and `recv` blocks until the message from a
//! given source with a given tag arrives, or a timeout passes. Messages
//! between one pair of ranks with one tag arrive in the order they were sent.
//! Collectives know nothing else about the transport. This module holds
//! the trait, tags and messages its children build on: the shared
//! [`mailbox`], [`local`] threads, [`sim`]ulated networks, [`tcp`] and
//! `mpi` (feature "mpi"); [`crate::comm`] builds communicators on them.

/// The methods of a [`Transport`] that wraps another in the field
/// `$inner` and changes only `send` and `recv` (the pattern's counter,
/// `measure::same`'s log): everything else is the inner transport's.
macro_rules! forward_transport {
    ($inner:ident) => {
        fn rank(&self) -> usize {
            self.$inner.rank()
        }

        fn size(&self) -> usize {
            self.$inner.size()
        }

        fn try_recv(
            &mut self,
            src: usize,
            tag: $crate::transport::Tag,
        ) -> $crate::error::Result<Option<bytes::Bytes>> {
            self.$inner.try_recv(src, tag)
        }

        fn kind(&self) -> &'static str {
            self.$inner.kind()
        }

        fn shared_clock(&self) -> bool {
            self.$inner.shared_clock()
        }

        fn set_timeout(&mut self, timeout: std::time::Duration) {
            self.$inner.set_timeout(timeout)
        }

        fn timeout(&self) -> std::time::Duration {
            self.$inner.timeout()
        }

        fn hosts(&self) -> Vec<String> {
            self.$inner.hosts()
        }

        fn switches(&self) -> Vec<Option<String>> {
            self.$inner.switches()
        }

        fn finish_sends(&mut self) -> $crate::error::Result<()> {
            self.$inner.finish_sends()
        }
    };
}
pub(crate) use forward_transport;

pub mod local;
pub mod mailbox;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod shared;
pub mod sim;
pub mod tcp;

use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use crate::error::Result;
use crate::ids::CallSig;

/// How long a rank waits for a message before declaring its peer lost.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a message belongs to; receives match on source and tag. `ctx`
/// is the context id of the communicator the message belongs to (0 for
/// the one a transport starts with, see [`shared`]): messages of two
/// communicators never match each other's receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// A message of a collective call; `phase` separates the stages of
    /// algorithms that exchange several kinds of message between one pair.
    Coll {
        /// The call.
        call: CallSig,
        /// The stage within the call.
        phase: u8,
        /// The communicator's context id.
        ctx: u32,
    },
    /// A user's point-to-point message (benchmarks' acknowledgements, tools).
    User {
        /// The user's tag.
        tag: u64,
        /// The communicator's context id.
        ctx: u32,
    },
}

impl Tag {
    /// A user's tag on the communicator a transport starts with.
    pub const fn user(tag: u64) -> Tag {
        Tag::User { tag, ctx: 0 }
    }

    /// A collective call's tag on the communicator a transport starts with.
    pub const fn coll(call: CallSig, phase: u8) -> Tag {
        Tag::Coll {
            call,
            phase,
            ctx: 0,
        }
    }

    /// The collective call this message belongs to, if any.
    pub fn call(&self) -> Option<&CallSig> {
        match self {
            Tag::Coll { call, .. } => Some(call),
            Tag::User { .. } => None,
        }
    }

    /// The context id of the communicator it belongs to.
    pub fn ctx(&self) -> u32 {
        match *self {
            Tag::Coll { ctx, .. } | Tag::User { ctx, .. } => ctx,
        }
    }

    /// The same tag in the communicator of context id `ctx`.
    pub fn in_ctx(self, ctx: u32) -> Tag {
        match self {
            Tag::Coll { call, phase, .. } => Tag::Coll { call, phase, ctx },
            Tag::User { tag, .. } => Tag::User { tag, ctx },
        }
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tag::Coll { call, phase, .. } => write!(f, "{call} phase {phase}")?,
            Tag::User { tag, .. } => write!(f, "user tag {tag}")?,
        }
        match self.ctx() {
            0 => Ok(()),
            ctx => write!(f, " of communicator {ctx}"),
        }
    }
}

/// One message on the wire: who sent it, its tag and its payload.
#[derive(Clone, Debug)]
pub struct Message {
    /// The sending rank.
    pub src: usize,
    /// The message's tag.
    pub tag: Tag,
    /// The payload; cloning it does not copy the bytes.
    pub data: Bytes,
    /// When it arrives in virtual time, ns (the `sim` transport); 0 on
    /// transports of real time.
    pub at_ns: u64,
}

/// Carries point-to-point messages between the ranks of one job.
pub trait Transport: Send {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Queues `data` for `dest` and returns without waiting for delivery.
    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()>;
    /// Waits for the next message from `src` with `tag`.
    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes>;
    /// The next message from `src` with `tag` if it has arrived; never
    /// waits (the balancer's rank 0 drains its reports with it).
    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>>;
    /// A short name: `local`, `tcp`, `mpi`.
    fn kind(&self) -> &'static str;
    /// True when every rank reads the same monotonic clock (one host).
    fn shared_clock(&self) -> bool;
    /// Changes how long `recv` waits before it reports a lost peer.
    fn set_timeout(&mut self, timeout: Duration);
    /// How long `recv` waits (a sub-communicator's [`shared::View`]
    /// starts with its parent's). Transports that do not say wait
    /// [`DEFAULT_TIMEOUT`].
    fn timeout(&self) -> Duration {
        DEFAULT_TIMEOUT
    }
    /// Names of the hosts the ranks run on, indexed by rank.
    fn hosts(&self) -> Vec<String>;
    /// The switch of every rank's host, indexed by rank, as a path from
    /// the top switch down (`sw0/sw1`, see [`crate::layout`]); `None`
    /// where the job does not say. The default knows no switch.
    fn switches(&self) -> Vec<Option<String>> {
        vec![None; self.size()]
    }
    /// Called at the end of every collective call: a transport whose sends
    /// advance only while the rank is inside the library (MPI) completes
    /// them here, so that a rank that leaves a call early (a broadcast's
    /// root) and then computes or sleeps does not hold back the ranks still
    /// in the call. Transports that send in the background return at once.
    fn finish_sends(&mut self) -> Result<()> {
        Ok(())
    }
}
