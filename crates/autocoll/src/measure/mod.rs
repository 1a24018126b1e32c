//! Accurate measurement of collective operations.
//!
//! Every rank calls [`run_point`] with the same [`Point`], [`Method`] and
//! [`Options`]; the rank that times (the *leader*: the root of a rooted
//! collective, rank 0 otherwise) decides how many repetitions to run and
//! tells the others through a small broadcast after each one, so the same
//! code runs unchanged on threads, on processes over TCP and under MPI: no
//! rank ever reads another's memory. Rank 0 gets the [`Measurement`].
//!
//! The methods, after de Supinski and Karonis (1999), are described on
//! [`Method`]. A *repetition* is one sample: M calls (`Options::calls`),
//! timed together and divided by M (by M·P for `rounds`).

mod call;
mod classic;
mod driver;
mod job;
pub mod link;
pub mod machines;
mod method;
mod ol_i;
pub mod race;
pub mod same;
pub mod truth;

/// Moved to [`crate::stats`]; the old path kept for the other crates.
pub use crate::stats;
/// Moved to [`crate::stats`]; the old path kept for the other crates.
pub use crate::stats::Summary;
pub use call::{effective_bytes, Caller, Target};
pub use driver::{
    agree, race_points, run_baseline, run_baseline_methods, run_methods, run_point, Interleaved,
    Raced,
};
pub use machines::Machines;
pub use method::{Baseline, Flag, Measurement, Method, Options, Point};
