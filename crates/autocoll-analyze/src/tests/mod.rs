//! The analysis against traces whose every quantity is known: written by
//! hand (`hand_built`), simulated (`simulated`), and recorded by the local
//! transport (`recorded`).

mod hand_built;
mod recorded;
mod simulated;
mod support;
