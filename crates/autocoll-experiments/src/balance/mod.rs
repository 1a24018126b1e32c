//! The balancer's experiment (Soga et al., 2007): one rank works (a busy
//! loop) before every broadcast; the same broadcast runs K times under the
//! identity table, under the paper's swapping balancer and under the
//! sorting balancer, interleaved round by round in a fresh random order so
//! that the machine's drift hits all alike, every call after an untimed
//! barrier. Each balancer is its own instance on its own report tag, put
//! into the communicator for its calls only: what one series learns never
//! reaches another.
//!
//! Measures, per series: the total time inside the broadcast (the sum over
//! ranks and calls of leave − enter, the paper's measure), the per-call
//! span, the reduction against the identity table, the call from which the
//! table holds still and how many times it changed.
//!
//! [`Setup`] says what runs, [`run`] runs it on every rank and
//! [`report::analyse`] turns rank 0's [`Trace`] into the report.

pub mod report;
mod run;
mod setup;

pub use report::Report;
pub use run::{run, run_local, SeriesTrace, StatusTrace, Trace};
pub use setup::{first_receiver, moves_of, Load, Setup};
