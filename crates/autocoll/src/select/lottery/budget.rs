//! What exploring may cost a pool: the [`Budget`] a lottery's `Params` may
//! carry (the pool spends it in `budgeted.rs`).

use serde::{Deserialize, Serialize};

/// What exploring may cost a pool.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Share of the time the pool's calls took that candidates slower than
    /// the best may lose.
    pub share: f64,
    /// Seconds a pool may lose beyond its share: what lets a new pool try
    /// anything at all.
    pub allowance_s: f64,
    /// A candidate a call of which takes more than this many best averages
    /// is not tried again in the run.
    pub far: f64,
    /// How far a model's prediction may be off: a candidate is tried while
    /// its predicted time divided by this is below the best's average.
    pub model_slack: f64,
    /// Whether a model sure of a candidate may vouch for its first try.
    #[serde(default = "vouch_by_default")]
    pub vouch: bool,
    /// How many candidates of a pool may run slower than the model allowed
    /// before it vouches for no more tries there: beyond its budget a pool
    /// loses at most this many vouched tries.
    #[serde(default = "misses_by_default")]
    pub vouch_misses: u32,
}

fn vouch_by_default() -> bool {
    true
}

// Two, not one: a model that rates two trees alike can be wrong about one
// for a reason it does not see (docs/decisions.md, "The model").
fn misses_by_default() -> u32 {
    2
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            share: 0.03,
            allowance_s: 0.0,
            far: 3.0,
            model_slack: 1.5,
            vouch: vouch_by_default(),
            vouch_misses: misses_by_default(),
        }
    }
}

impl Budget {
    /// The most a try of `calls` calls can lose before its candidate is
    /// banned, with the best at `best_s` a call.
    pub fn reserve(&self, calls: u32, best_s: f64) -> f64 {
        f64::from(calls) * (self.far - 1.0).max(0.0) * best_s
    }
}
