//! The lottery's adaptation (the paper's Figure 7/8 experiment). K calls
//! of every candidate and K calls under the `Lottery` selector,
//! interleaved round by round so that the machine's drift hits all alike;
//! then each one's mean and median, the oracle (the best fixed candidate
//! by mean), and how the lottery compares with it.
//!
//! Every timed call starts after an untimed barrier. Per-call time, agreed
//! by all ranks: with a shared clock the call's span,
//! max(leave) − min(enter) over the ranks; otherwise the longest rank's
//! duration. Lottery calls are timed around the plain call, so they include
//! the selector's agreement collectives at each draw.
//!
//! Definitions. `settled_at_call`: the first call (1-based) from which the
//! final choice holds the majority of every later 50-call window (`null`
//! when the last window has no majority). `near_best_from_call`: the same
//! for the candidates whose mean is within 3% of the oracle's taken
//! together (near-equal candidates can trade the lead at random for the
//! whole run). `explore_share`: the share of
//! lottery calls not on the pool's best candidate at that time.
//! `final_impl`: the pool's best candidate after the last call.
//!
//! The parts: [`run`] runs the series on every rank, `log` notes what
//! the lottery chose on every call, [`report`] turns a run's [`Trace`]
//! into the report, [`disturb`] slows a link halfway and [`replay`] runs
//! the lottery again over a recorded run.

pub mod disturb;
mod log;
pub mod replay;
pub mod report;
mod run;
mod setup;

pub use disturb::{Disturb, Outside};
pub use log::Trace;
pub use run::run;
pub use setup::{paper_trees, Setup};
