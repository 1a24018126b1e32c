//! The experiments the docs quote, as a library so that they can be run
//! from Rust and tested: autocoll against the MPI library's defaults
//! ([`compare`]), the balancer under a late rank ([`balance`]) and the
//! lottery's adaptation, also under a disturbance ([`adapt`]).
//!
//! Layers, each using only those above it in this list:
//! - [`rounds`]: what the live experiments share: rounds of series in a
//!   random order, the barrier between timed calls, every rank's times
//!   brought to rank 0;
//! - [`balance`] and [`adapt`]: a [`balance::Setup`] or [`adapt::Setup`]
//!   runs on every rank of any communicator, rank 0 gets a trace, and a
//!   pure `report` turns the trace into the report (JSON and text);
//!   [`adapt::replay`] runs the lottery again over a recorded trace;
//! - [`compare`]: the comparison's plan and its report from bench rows
//!   ([`autocoll_tune::Row`]); running the benches under mpirun on an
//!   emulated cluster is the `autocoll compare` command's.
//!
//! Nothing here prints or starts a process: reports come back as values
//! and text, and a change outside the job (an emulated link's rate) is
//! made through the caller's [`adapt::Outside`].
//!
//! ```
//! use std::time::Duration;
//!
//! use autocoll::balance::{Mode, Params};
//! use autocoll_experiments::balance::{self, Load, Setup};
//!
//! // Rank 1 of 3 works 50 µs before every broadcast; the sorting
//! // balancer against the identity table, 20 calls each.
//! let setup = Setup {
//!     ranks: 3,
//!     bytes: 16,
//!     calls: 20,
//!     imp: "bcast:binomial".parse()?,
//!     root: 0,
//!     load: Some(Load { rank: 1, work: Duration::from_micros(50) }),
//!     moves: None,
//!     modes: vec![Mode::Sort],
//!     params: Params::default(),
//!     seed: 1,
//!     timeout: Duration::from_secs(30),
//! };
//! let trace = balance::run_local(&setup)?;
//! let report = balance::report::analyse(&setup, "local", &trace);
//! assert_eq!(report.series.len(), 2, "identity and sort");
//! assert_eq!(report.series[0].changes, 0, "identity never changes");
//! assert!(balance::report::text(&report).starts_with("series"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod adapt;
pub mod balance;
pub mod compare;
mod error;
pub mod rounds;

pub use error::Error;
