//! The communicator, built on the transports of [`crate::transport`]:
//! every collective call goes through it, and it wires selection,
//! tracing, balancing and pattern counting over the algorithms of `coll`.
//! [`local::run`], [`sim::run`] and (feature "mpi") `mpi::world` start
//! jobs of communicators; [`Communicator::split`] and
//! [`Communicator::dup`] make communicators of some of their ranks.

pub(crate) mod balancing;
pub(crate) mod communicator;
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi;
pub(crate) mod patterns;
pub(crate) mod raw;
pub(crate) mod selecting;
pub mod sim;
pub(crate) mod trace_options;
pub(crate) mod tracing;

pub use communicator::Communicator;
pub use raw::{RawCall, RawCombine};

/// Moved to [`crate::ids`]; the old path kept for the binary.
pub use crate::ids::CallSig;
/// Moved to [`crate::transport::mailbox`]; the old path kept for the other crates.
pub use crate::transport::mailbox::{Incoming, Mailbox};
/// Moved to [`crate::transport`]; the old path kept for the other crates.
pub use crate::transport::tcp;
/// Moved to [`crate::transport`]; the old path kept for the other crates.
pub use crate::transport::{Message, Tag, Transport, DEFAULT_TIMEOUT};
