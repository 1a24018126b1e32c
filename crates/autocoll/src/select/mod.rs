//! Which implementation runs a call. Collectives never decide: a
//! [`Selector`] does, and hears back how long each call took.
//!
//! The communicator asks its selector on every plain call (`bcast`, not
//! `bcast_with`) and, when it wants times, reports each call's enter and
//! leave. Selectors that must agree across ranks do it through a [`Group`]
//! of small fixed collectives that never come back here. Three ship:
//! [`Fixed`] (MPI-like defaults), [`Table`] (a tuning file from `autocoll
//! tune`) and [`Lottery`] (learns at run time, and can keep what it learned
//! in a [`state`] file, shared by communicators of one shape). Under a
//! budget the lottery tries a candidate only where [`estimate`], a model
//! of the machine, says it could beat the incumbent. Every
//! [`Implementation`] has one text id, the name the command, tuning files
//! and results use, and [`export`] writes a table as Open MPI's and
//! MPICH's selection files.

mod adaptive;
pub mod estimate;
pub mod export;
mod fixed;
mod implementation;
mod key;
pub mod lottery;
mod selector;
pub mod state;
mod table;

/// Moved to [`crate::ids`]; the old paths kept for the binary and the other crates.
pub use crate::ids::{parse_bytes, Collective};
pub use adaptive::Lottery;
pub use fixed::{default_for, Fixed};
pub use implementation::{format_bytes, Algorithm, Implementation};
pub use key::{default_candidates, Key};
pub use selector::{Fold, Group, Offspring, Selector};
pub use table::{Rule, Table};
