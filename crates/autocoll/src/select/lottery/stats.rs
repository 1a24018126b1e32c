//! What the scheduler knows of one candidate: its implementation and the
//! running averages of its times.

use serde::{Deserialize, Serialize};

use crate::select::implementation::Implementation;

/// What the scheduler knows of one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The implementation.
    #[serde(rename = "impl")]
    pub imp: Implementation,
    /// Exponential average of its time, in seconds.
    pub mean_s: f64,
    /// Exponential variance of its time, in seconds squared.
    pub var_s2: f64,
    /// Times recorded.
    pub count: u32,
    /// Call at which a left-out candidate comes back; `None` when in.
    /// A run's call count starts again at zero: the state file keeps
    /// [`Stats::readmit_in`] instead.
    #[serde(skip)]
    pub excluded_until: Option<u64>,
    /// Calls a left-out candidate still had to wait when the state was
    /// saved; the next run waits them out, so that a program calling a
    /// size fewer times than the wait still tries it again some run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readmit_in: Option<u64>,
    /// Times left out, in this run and the runs it resumes; each doubles
    /// the next wait, so that a truly slow candidate costs a long-lived
    /// program's runs fewer and fewer trials.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub strikes: u32,
    /// The next time replaces the average instead of joining it.
    #[serde(skip)]
    pub stale: bool,
    /// Not tried again in this run: a call of it took more than
    /// [`Budget::far`](super::Budget::far) times the best's average.
    #[serde(skip)]
    pub banned: bool,
}

impl Stats {
    pub(crate) fn new(imp: Implementation) -> Self {
        Stats {
            imp,
            mean_s: 0.0,
            var_s2: 0.0,
            count: 0,
            excluded_until: None,
            readmit_in: None,
            strikes: 0,
            stale: false,
            banned: false,
        }
    }

    pub(super) fn sd(&self) -> f64 {
        self.var_s2.max(0.0).sqrt()
    }

    /// Adds a time. Past warm-up, a time above the average counts as at
    /// most two standard deviations above it, and the variance is clipped
    /// alike: call times have a long right tail (a rank descheduled, a
    /// retransmission) that says little about the candidate. A lasting
    /// slowdown still shows, as every later time pushes the average up, and
    /// the drift rule works on unclipped times.
    ///
    /// The first `1/w` times are averaged plainly (each weighs `1/count`),
    /// only then exponentially, so that neither the average leans on the
    /// first time nor the variance starts from zero.
    pub(super) fn add(&mut self, t: f64, w: f64, warm: bool) {
        let w = w.max(1.0 / (f64::from(self.count) + 1.0));
        let t = if warm {
            t.min(self.mean_s + 2.0 * self.sd().max(0.05 * self.mean_s))
        } else {
            t
        };
        if self.count == 0 || std::mem::take(&mut self.stale) {
            self.mean_s = t;
            self.var_s2 = 0.0;
        } else {
            let diff = t - self.mean_s;
            self.mean_s += w * diff;
            self.var_s2 = (1.0 - w) * (self.var_s2 + w * diff * diff);
        }
        self.count = self.count.saturating_add(1);
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
