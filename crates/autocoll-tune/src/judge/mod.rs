//! `tune --against FILE`: this sweep's winners judged by another sweep of
//! the same points (typically an `--exhaustive` one), by that sweep's own
//! measurements: per point the same winner, one within the tolerance of
//! its best, one it cannot tell from its best (their 95% intervals of the
//! median overlap), or a different one. Two winners of different names
//! that send the same messages at the point ([`autocoll::measure::same`])
//! count as the same winner: between them the other sweep measured only
//! noise. With the two sweeps' measuring times, this is the evidence that
//! racing finds what measuring everything finds, in a fraction of the time.

mod judged;
mod pool;
mod verdict;

pub use judged::{judge, Agreement, Judged};
pub use pool::pooled;
pub use verdict::Verdict;

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod cases;
