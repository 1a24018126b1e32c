//! Stage traces: what happened inside every collective call, on every rank.
//!
//! A [`Recorder`] (an [`crate::observe::Observer`]) keeps each call's
//! header and its stage events in a buffer sized up front, dropping the
//! oldest calls when it is full; each rank writes its own file
//! ([`format`](mod@format), `DIR/rank-NNNNN.trace`) on demand and when its
//! communicator is dropped. A recording starts with
//! [`crate::Communicator::trace`], with `AUTOCOLL_TRACE=DIR` for programs
//! built on [`crate::init`] or [`crate::local::run`], or with `--trace DIR`
//! on the command's `bench`, `adapt` and `check`. `autocoll analyze` reads
//! the files of all ranks together.

pub mod format;
pub mod messages;
pub(crate) mod recorder;

/// Starting a trace runs collectives, so it sits in [`crate::comm`]; the
/// public paths stay here.
pub use crate::comm::trace_options::{
    file_of, prepare_dir, TraceOptions, ENV_TRACE, ENV_TRACE_EVENTS,
};
pub use crate::comm::tracing::from_env;
pub use recorder::{Recorder, Usage, DEFAULT_CAPACITY_EVENTS, MIN_CAPACITY_EVENTS};
