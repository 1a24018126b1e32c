//! Stage traces: what happened inside every collective call, on every rank.
//!
//! A recorder (an [`crate::observe::Observer`]) keeps each call's header
//! and its stage events in a buffer sized up front; each rank writes its
//! own file ([`format`]) when the recording ends. `autocoll analyze` reads
//! the files of all ranks together.

pub mod format;
pub mod messages;
