//! The lottery's knobs ([`Params`]) and the constants its rules are built
//! on.

use serde::{Deserialize, Serialize};

use super::budget::Budget;

/// How the tickets that the best candidate does not hold are spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Equal shares for every other candidate (the paper's policy).
    Uniform,
    /// Shares in inverse proportion to each candidate's average time.
    InverseTime,
}

/// What a call's time is, for the lottery: the measure it minimises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// The call as a whole: its span on a shared clock (first enter to
    /// last leave), else the slowest rank's own time. What a program that
    /// waits for every rank after the call (the next collective, a
    /// barrier) pays.
    #[default]
    Slowest,
    /// The mean over ranks of each rank's own time in the call: the time
    /// the ranks spend in it together, and what OSU's benchmarks report.
    /// A tree whose leaves leave early (a reduce's) scores better here.
    Mean,
}

impl std::str::FromStr for Objective {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "slowest" => Ok(Objective::Slowest),
            "mean" => Ok(Objective::Mean),
            other => Err(format!(
                "unknown objective {other:?}: expected slowest or mean"
            )),
        }
    }
}

/// The scheduler's knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Share of the tickets the best candidate holds.
    pub alpha: f64,
    /// How the rest is spread.
    pub policy: Policy,
    /// Weight of a new time in the exponential averages, once a candidate
    /// has `1/weight` times (before, each weighs 1/count: a plain mean).
    ///
    /// Small (0.002), because the best candidate runs ~25 calls a period
    /// and the others 2–3 calls every few hundred: at 0.05 the best's
    /// average was its last period, the others' spanned the whole run. On
    /// 4 processes on 2 cores, whose two states come and go every 100–500
    /// calls and reorder the trees, one period in the best's bad state then
    /// handed the lead to a tree measured across both, and the lead went
    /// back and forth (320 interleaved runs: settled within the bound in
    /// 87 at 0.05, 180 at 0.002). Changes of 25% and more are the drift
    /// rule's, which restarts the averages.
    pub weight: f64,
    /// Tries of every candidate before any is left out.
    pub min_tries: u32,
    /// Calls after which a left-out candidate is measured afresh.
    pub readmit_after: u32,
    /// Time-to-live of a candidate holding every ticket; a draw's TTL is
    /// 1 + ⌊ttl_scale × share⌋.
    pub ttl_scale: f64,
    /// Standard deviations above its average that signal drift.
    pub drift_sigmas: f64,
    /// Ratio to its average that a period must also exceed to signal drift.
    pub drift_ratio: f64,
    /// Lottery draws, for consecutive periods, that one broadcast carries
    /// (at least 1). Each draw message costs a reduction and a broadcast,
    /// paid by the call that follows; drawing two periods at once halves
    /// that cost and leaves the odds of every draw as they were. The
    /// warm-up's draws fill a message's [`Params::slots`].
    pub ahead: u32,
    /// The measure of a call's time that the lottery minimises.
    #[serde(default)]
    pub objective: Objective,
    /// How much faster than the MPI library's own algorithm (`<op>:mpi`,
    /// the home candidate, where it is one) another must look to be the
    /// best: within this share of the best's average, home is the best.
    /// A program that preloads the library expects its MPI's speed at the
    /// least; a candidate the averages put a few percent ahead is, as
    /// often as not, a few tries' luck.
    #[serde(default = "default_home_margin")]
    pub home_margin: f64,
    /// Tries of the home candidate in the warm-up (the others get
    /// `min_tries`): its average is what every other one must beat.
    #[serde(default = "default_home_tries")]
    pub home_tries: u32,
    /// What exploring may cost, for pools with an incumbent
    /// ([`Pool::set_incumbent`](super::Pool::set_incumbent)): `None` explores as the paper does, every
    /// candidate tried from the start.
    #[serde(default)]
    pub budget: Option<Budget>,
}

fn default_home_margin() -> f64 {
    Params::default().home_margin
}

fn default_home_tries() -> u32 {
    Params::default().home_tries
}

impl Params {
    /// A draw's time-to-live at `share` of the tickets, as the paper has
    /// it: 1 + ⌊ttl_scale × share⌋.
    pub(super) fn usual_ttl(&self, share: f64) -> u32 {
        1 + (self.ttl_scale * share).floor() as u32
    }

    /// Draws one message has room for: the lottery's `ahead`, and at least
    /// [`WARM_UP_SLOTS`] for the warm-up's.
    pub fn slots(&self) -> usize {
        (self.ahead.max(1) as usize).max(WARM_UP_SLOTS)
    }
}

/// Warm-up draws one message carries at most: four candidates' three
/// tries in two messages instead of twelve (on 4 threads a message costs
/// about three 64 KiB calls).
pub const WARM_UP_SLOTS: usize = 8;

/// Calls a try holds at least (a warm-up's, a readmission's, an
/// exploration's): the first call of a candidate after another's, or
/// after a draw message, runs off its usual time and is not learnt from,
/// so a try of one call would teach nothing.
pub const TRY_CALLS: u32 = 2;

/// Calls of the incumbent's first period where a model may vouch: the
/// second (the first after a draw message is not learnt from) is the
/// average a vouch is weighed against; a new communicator's first calls
/// may still run off their usual time, which the incumbent's one more try
/// (`budgeted.rs`) mends.
pub const FIRST_CALLS: u32 = 2;

/// How many times its usual time-to-live a candidate alone in the lottery
/// (every other one left out) may hold: it holds until the next left-out
/// one is due back (no draw could differ before), and every draw message
/// costs a reduction and a broadcast, about two small collectives. Four
/// times: the drift rule, which looks at a period when it ends,
/// then sees a change at most 124 calls late, or 155 when it began in the
/// last quarter of a hold (too few times to move the median of its second
/// half: the next hold shows it).
pub const ALONE_HOLDS: u32 = 4;

impl Default for Params {
    fn default() -> Self {
        Params {
            alpha: 0.8,
            policy: Policy::Uniform,
            weight: 0.002,
            min_tries: 3,
            readmit_after: 200,
            ttl_scale: 30.0,
            drift_sigmas: 3.0,
            drift_ratio: 1.25,
            ahead: 2,
            objective: Objective::Slowest,
            home_margin: 0.05,
            home_tries: 10,
            budget: None,
        }
    }
}
