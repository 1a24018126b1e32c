//! The lottery scheduler of Nishtala et al. (section 6), with the
//! improvements the paper proposes.
//!
//! Per (collective, communicator size, message-size class) the scheduler
//! keeps, for every candidate implementation, an exponential average of its
//! time, an exponential variance and a count (the first `1/weight` times
//! are averaged plainly, so neither leans on the first time nor starts from
//! a variance of zero; at the default weight, 0.002, that is a run's first
//! 500 times, so within a run the averages are long-run means: the drift
//! rule follows a change of 25% or more, a smaller lasting one shows after
//! a few hundred calls). At each draw the candidate
//! with the best average holds a share α of the tickets and the others split
//! the rest, uniformly (the paper) or in inverse proportion to their average
//! (its proposal). Once every candidate has been tried `min_tries` times, a
//! candidate whose average is more than two standard deviations above the
//! best (deviations of the difference between its times and the best's,
//! σ = √(σ_best² + σ_candidate²)) is left out of exploration; after
//! `readmit_after` calls it gets one
//! trial whose time replaces its stale average (one bad first impression,
//! say over cold connections, must not keep a fast candidate out for good),
//! and each time it is left out again the wait doubles, so that a truly
//! slow candidate costs fewer and fewer trials. All are let back in when
//! drift is seen. Calls, not draws, time the readmission: how many calls a
//! draw covers depends on the time-to-live; the wait and the doubling are
//! kept across runs ([`Stats::readmit_in`]). A drawn candidate holds for a
//! time-to-live that grows with its share, and at least [`TRY_CALLS`]
//! (the communicator learns nothing from the first call after a switch);
//! alone in the lottery, until the next readmission ([`ALONE_HOLDS`]).
//! Before the lottery proper, a warm-up tries every candidate `min_tries`
//! times (least-tried first, a try of [`TRY_CALLS`] each).
//!
//! A warmed-up candidate's times enter its average clipped at mean + 2σ
//! (its variance alike), so that the long right tail of call times
//! (scheduling hiccups) does not make near-equal candidates trade places
//! at random. Drift: when the
//! median of a holding period of the best candidate lies more than
//! `drift_sigmas` standard deviations and `drift_ratio` times above its
//! long-run average, conditions have changed: the candidate's average is
//! restarted from the new times, every other candidate's count is cut to one
//! (its average is stale), and exclusions are lifted, so a new warm-up and
//! exploration resume. A period that is that slow over more than its last
//! quarter counts too (the median of its second half), from that half.
//!
//! With [`Params::budget`] a pool has an incumbent that holds from the
//! first call, and every other candidate is tried only as a budget of the
//! pool's own time allows and a model of the machine rates it able to win
//! ([`Budget`]).
//!
//! This module is pure: no clock, no I/O, a seeded generator. The
//! communicator supplies the times and carries the draws between ranks.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::implementation::{Algorithm, Implementation};
pub use super::key::{default_candidates, Key};
use crate::stats::median;

/// The lottery of one (collective, size, size-class): its candidates and
/// what is known of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    /// Every candidate, in a fixed order (draws are indices into it).
    pub candidates: Vec<Stats>,
    /// Draws made so far.
    pub draws: u64,
    /// The candidate now holding and the calls it has left.
    #[serde(skip)]
    pub current: Option<(usize, u32)>,
    /// Draws made ahead, taken in order when the current one runs out.
    #[serde(skip)]
    pub queued: VecDeque<Draw>,
    /// Holding periods begun so far (a period: the calls of one draw).
    #[serde(skip)]
    pub periods: u64,
    /// Calls that were exploration (not the best candidate) so far.
    pub explored: u64,
    /// Whether the current period explores: its candidate was not the
    /// best when it began. The averages change only when periods are
    /// settled, at a draw message, between periods, so the best is not
    /// asked for on every call.
    #[serde(skip)]
    exploring: bool,
    /// Calls made so far.
    pub calls: u64,
    /// The home candidate (the MPI library's own) and its margin
    /// ([`Params::home_margin`]), once [`Pool::set_home`] is called.
    #[serde(skip)]
    home: Option<(usize, f64)>,
    /// Seconds the pool's calls took, over every run it resumes.
    #[serde(default)]
    pub spent_s: f64,
    /// Seconds its calls of candidates other than the best took beyond
    /// the best's average, over every run it resumes.
    #[serde(default)]
    pub lost_s: f64,
    /// The candidate that holds from the first call, under a budget.
    #[serde(skip)]
    incumbent: Option<usize>,
    /// Per candidate, the time a model predicts for it.
    #[serde(skip)]
    predicted: Vec<Option<f64>>,
    /// The factor the predictions are trusted to ([`Budget::model_slack`]).
    #[serde(skip)]
    slack: f64,
    /// An average of what the best's first call after a switch took beyond
    /// its average: what a draw message costs.
    #[serde(skip)]
    switch_s: f64,
    /// An average of what a draw message itself takes at rank 0 (its
    /// reduction and broadcast, before the call that follows is timed).
    #[serde(skip)]
    message_s: f64,
    /// Whether a period of the best has been settled in this run without
    /// drift: until then its average may be another run's, and it is not
    /// held longer than usual.
    #[serde(skip)]
    steady: bool,
    /// The candidate of the last period charged.
    #[serde(skip)]
    last_period: Option<usize>,
    /// Whether the incumbent has had its one more try in this run.
    #[serde(skip)]
    rechecked: bool,
}

/// A draw: which candidate, for how many calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// Index into the candidates.
    pub index: usize,
    /// Calls it holds for (at least 1).
    pub ttl: u32,
}

impl Pool {
    /// A lottery among `candidates`, none tried yet.
    pub fn new(candidates: Vec<Implementation>) -> Self {
        Pool {
            candidates: candidates.into_iter().map(Stats::new).collect(),
            draws: 0,
            current: None,
            queued: VecDeque::new(),
            periods: 0,
            explored: 0,
            exploring: false,
            calls: 0,
            home: None,
            spent_s: 0.0,
            lost_s: 0.0,
            incumbent: None,
            predicted: Vec::new(),
            slack: 1.0,
            switch_s: 0.0,
            message_s: 0.0,
            steady: false,
            last_period: None,
            rechecked: false,
        }
    }

    /// Makes the MPI library's own candidate, if one of these, the home
    /// candidate: the best whenever it is within `p.home_margin` of the
    /// best average, tried `p.home_tries` times in the warm-up.
    pub fn set_home(&mut self, p: &Params) {
        self.home = self
            .candidates
            .iter()
            .position(|s| s.imp.algorithm == Algorithm::Native)
            .map(|i| (i, p.home_margin.max(0.0)));
    }

    /// Tries a candidate gets in the warm-up.
    fn tries_wanted(&self, i: usize, p: &Params) -> u32 {
        match self.home {
            Some((home, _)) if home == i => p.home_tries.max(p.min_tries),
            _ => p.min_tries,
        }
    }

    /// Starts from what an earlier run learned of these candidates (the
    /// others start untried). A candidate it measured counts as tried
    /// `min_tries` times, whatever its count was: at least that many, so
    /// that a new run does not spend its first calls repeating tries of the
    /// slowest candidates; no more, so that this run's own times still
    /// have their say in averages that start plain for `1/weight` times.
    /// Candidates that are far behind are left out from the first draw, as
    /// they would be after this run's first times.
    /// The home candidate keeps up to its own warm-up's count: the runs
    /// that resume need not try it again.
    pub fn resume(&mut self, known: &[Stats], p: &Params) {
        for i in 0..self.candidates.len() {
            let wanted = self.tries_wanted(i, p);
            let stats = &mut self.candidates[i];
            if let Some(old) = known.iter().find(|s| s.imp == stats.imp) {
                *stats = old.clone();
                if stats.count > 0 {
                    stats.count = stats.count.clamp(p.min_tries, wanted);
                }
                // This run's calls count from zero.
                stats.excluded_until = stats.readmit_in.take();
            }
        }
        self.update_exclusions(p);
    }

    /// The candidates as the state file keeps them: a left-out one with
    /// the calls it still has to wait.
    pub fn saved(&self) -> Vec<Stats> {
        let mut out = self.candidates.clone();
        for s in &mut out {
            s.readmit_in = s
                .excluded_until
                .map(|until| until.saturating_sub(self.calls));
        }
        out
    }

    /// The candidate with the best average among those tried, if any;
    /// the home candidate when it is within its margin of that.
    pub fn best(&self) -> Option<usize> {
        let fastest = self
            .candidates
            .iter()
            .enumerate()
            .filter(|(_, s)| s.count > 0)
            .min_by(|a, b| a.1.mean_s.total_cmp(&b.1.mean_s))
            .map(|(i, _)| i)?;
        let Some((home, margin)) = self.home else {
            return Some(fastest);
        };
        let h = &self.candidates[home];
        let near = h.count > 0 && h.mean_s <= self.candidates[fastest].mean_s * (1.0 + margin);
        Some(if near { home } else { fastest })
    }

    /// The holding candidate for the next call, or `None` when a draw is
    /// due (the current draw has run out and none was made ahead).
    pub fn next_call(&mut self) -> Option<usize> {
        while self.current?.1 == 0 {
            let next = self.queued.pop_front()?;
            self.begin(next);
        }
        let (index, left) = self.current.as_mut()?;
        *left -= 1;
        let index = *index;
        self.calls += 1;
        self.explored += u64::from(self.exploring);
        Some(index)
    }

    /// Makes `draw` the holding period.
    fn begin(&mut self, draw: Draw) {
        self.current = Some((draw.index, draw.ttl));
        self.exploring = Some(draw.index) != self.best();
        self.periods += 1;
    }

    /// Feeds the times of an ended period of candidate `index` (over all
    /// ranks) to its average, and looks for drift.
    pub fn settle(&mut self, index: usize, times: &[f64], p: &Params) {
        self.settle_all([(index, times)], p);
    }

    /// Settles the periods one draw message covered, in order. Drift is
    /// looked for in the periods of the candidate that was the best when
    /// they were drawn (the lottery's current choice): a slowdown that
    /// begins late in one period raises that candidate's average, through
    /// the first few slow times, until another candidate's stale average
    /// is lower, and the next period's slow times, judged against the new
    /// best, went unseen (the lottery then held a 300× slower choice for
    /// two more periods).
    pub fn settle_all<'t>(
        &mut self,
        periods: impl IntoIterator<Item = (usize, &'t [f64])>,
        p: &Params,
    ) {
        let best = self.best();
        for (index, times) in periods {
            self.settle_drawn_with(index, times, p, best);
        }
    }

    fn settle_drawn_with(&mut self, index: usize, times: &[f64], p: &Params, best: Option<usize>) {
        if times.is_empty() || index >= self.candidates.len() {
            return;
        }
        let drifted = match best {
            Some(b) if b == index => self.drifted(index, times, p),
            _ => None,
        };
        if let Some(changed) = drifted {
            self.restart_after_drift(index, changed, p);
            return;
        }
        self.steady |= best == Some(index);
        let s = &mut self.candidates[index];
        for &t in times {
            let warm = s.count >= p.min_tries;
            s.add(t, p.weight, warm);
        }
        self.update_exclusions(p);
    }

    /// The times of a drifted period from which the change shows: all of
    /// them, or its second half when the change began within it (that
    /// half's slow times, averaged in, would widen the candidate's
    /// deviation and hide the change from the next period's check).
    fn drifted<'t>(&self, index: usize, times: &'t [f64], p: &Params) -> Option<&'t [f64]> {
        let s = &self.candidates[index];
        if s.count < p.min_tries {
            return None;
        }
        // Timers and scheduling jitter.
        let floor = 0.02 * s.mean_s;
        // The median, not the mean: one hiccup in a period is not a change.
        let changed = |part: &[f64]| {
            let typical = median(part);
            typical > s.mean_s + p.drift_sigmas * s.sd().max(floor)
                && typical > p.drift_ratio * s.mean_s
        };
        let late = &times[times.len() / 2..];
        [times, late].into_iter().find(|part| changed(part))
    }

    fn restart_after_drift(&mut self, index: usize, times: &[f64], p: &Params) {
        self.steady = false;
        for (i, s) in self.candidates.iter_mut().enumerate() {
            s.excluded_until = None;
            if i == index {
                s.count = 0;
                for &t in times {
                    s.add(t, p.weight, false);
                }
            } else {
                s.count = s.count.min(1);
            }
        }
    }

    fn update_exclusions(&mut self, p: &Params) {
        let Some(best) = self.best() else { return };
        let untried = |i: usize| {
            let s = &self.candidates[i];
            s.count < p.min_tries && s.excluded_until.is_none() && self.may_try(i)
        };
        if (0..self.candidates.len()).any(untried) {
            return;
        }
        let (b_mean, b_var) = (self.candidates[best].mean_s, self.candidates[best].var_s2);
        for s in &mut self.candidates {
            // Two deviations of the difference of the two candidates' times.
            let sd = (b_var + s.var_s2).max(0.0).sqrt().max(0.02 * b_mean);
            let limit = b_mean + 2.0 * sd;
            if s.excluded_until.is_none() && s.count >= p.min_tries && s.mean_s > limit {
                let wait = u64::from(p.readmit_after) << s.strikes.min(16);
                s.excluded_until = Some(self.calls + wait);
                s.strikes += 1;
            }
        }
    }

    /// Each candidate's share of the tickets at this draw.
    pub fn shares(&self, p: &Params) -> Vec<f64> {
        let n = self.candidates.len();
        let mut shares = vec![0.0; n];
        let Some(best) = self.best() else {
            return vec![1.0 / n as f64; n];
        };
        let open: Vec<usize> = (0..n).filter(|&i| i != best && self.open(i)).collect();
        if open.is_empty() {
            shares[best] = 1.0;
            return shares;
        }
        shares[best] = p.alpha;
        let rest = 1.0 - p.alpha;
        let weight = |i: usize| match p.policy {
            Policy::Uniform => 1.0,
            // Untried candidates are taken to be as fast as the best.
            Policy::InverseTime => {
                let s = &self.candidates[i];
                let t = if s.count == 0 {
                    self.candidates[best].mean_s
                } else {
                    s.mean_s
                };
                1.0 / t.max(1e-12)
            }
        };
        let total: f64 = open.iter().map(|&i| weight(i)).sum();
        for &i in &open {
            shares[i] = rest * weight(i) / total;
        }
        shares
    }

    fn open(&self, i: usize) -> bool {
        let due = match self.candidates[i].excluded_until {
            None => true,
            Some(until) => self.calls >= until,
        };
        due && self.may_try(i)
    }

    /// The least-tried open candidate while any has fewer than `min_tries`
    /// times: every candidate is tried a few times before the lottery
    /// proper, instead of waiting for chance to reach it.
    fn warm_up(&self, p: &Params, planned: &[u32]) -> Option<usize> {
        let tries = |i: usize| self.candidates[i].count + planned.get(i).copied().unwrap_or(0);
        // Least tried first; among those, the one a model rates fastest.
        let floor = |i: usize| self.floor(i).unwrap_or(f64::INFINITY);
        (0..self.candidates.len())
            .filter(|&i| self.open(i) && tries(i) < self.tries_wanted(i, p))
            .min_by(|&a, &b| tries(a).cmp(&tries(b)).then(floor(a).total_cmp(&floor(b))))
    }

    /// Lets left-out candidates whose time is up back in for one trial (the
    /// warm-up gives it, as they sit one short of `min_tries`) whose time
    /// replaces their stale average.
    fn readmit(&mut self, p: &Params) {
        let calls = self.calls;
        for s in &mut self.candidates {
            if s.excluded_until.is_some_and(|until| calls >= until) {
                s.excluded_until = None;
                s.count = p.min_tries.saturating_sub(1);
                s.stale = true;
            }
        }
    }

    /// Draws for the next periods, one per number in `us` (uniform in
    /// [0, 1)), made now so that one message carries them. The warm-up's
    /// draws need no results (least-tried first, in turn), so as many as
    /// `us` allows go together; a lottery draw needs them, so it never
    /// follows a warm-up draw in one message, and at most `p.ahead`
    /// lottery draws are made at once (the pool learns nothing between
    /// draws made together).
    pub fn draw_ahead(&mut self, us: &[f64], p: &Params) -> Vec<Draw> {
        // Readmission is timed in calls, and no call runs between these draws.
        self.readmit(p);
        if let (Some(budget), Some(incumbent)) = (p.budget, self.incumbent) {
            return self.budgeted_draws(us, p, budget, incumbent);
        }
        let mut out = Vec::with_capacity(us.len());
        let mut planned = vec![0u32; self.candidates.len()];
        for &u in us {
            if let Some(index) = self.warm_up(p, &planned) {
                planned[index] += 1;
                out.push(Draw {
                    index,
                    ttl: TRY_CALLS,
                });
                continue;
            }
            let warm_ups_drawn = planned.iter().any(|&n| n > 0);
            if warm_ups_drawn || out.len() >= p.ahead.max(1) as usize {
                break;
            }
            out.push(self.lottery_draw(u, p));
            if self.alone() {
                // Its hold runs to the next readmission; a draw made ahead
                // would put that off.
                break;
            }
        }
        out
    }

    /// Draws the next candidate with `u`, a uniform number in [0, 1).
    pub fn draw(&mut self, u: f64, p: &Params) -> Draw {
        self.readmit(p);
        match self.warm_up(p, &[]) {
            Some(index) => Draw {
                index,
                ttl: TRY_CALLS,
            },
            None => self.lottery_draw(u, p),
        }
    }

    /// The lottery proper: a candidate by its share of the tickets, for a
    /// time-to-live that grows with that share, of at least [`TRY_CALLS`];
    /// alone, until the next readmission ([`ALONE_HOLDS`]).
    fn lottery_draw(&mut self, u: f64, p: &Params) -> Draw {
        let shares = self.shares(p);
        let mut acc = 0.0;
        let mut index = shares.len() - 1;
        for (i, &s) in shares.iter().enumerate() {
            acc += s;
            if u < acc && s > 0.0 {
                index = i;
                break;
            }
        }
        if self.candidates[index].excluded_until.is_some() {
            // A readmitted candidate gets its one trial, then is judged again.
            self.candidates[index].excluded_until = None;
        }
        let usual = |share: f64| p.usual_ttl(share);
        let ttl = match self.alone() {
            true => {
                let due = self
                    .candidates
                    .iter()
                    .filter_map(|s| s.excluded_until)
                    .min();
                let wait = due.map_or(u64::MAX, |until| until.saturating_sub(self.calls));
                wait.clamp(u64::from(usual(1.0)), u64::from(ALONE_HOLDS * usual(1.0))) as u32
            }
            false => usual(shares[index]).max(TRY_CALLS),
        };
        Draw { index, ttl }
    }

    /// Whether the best candidate holds every ticket (every other one is
    /// left out).
    fn alone(&self) -> bool {
        let best = self.best();
        (0..self.candidates.len()).all(|i| Some(i) == best || !self.open(i))
    }

    /// Makes the first of `draws` (made on rank 0, or locally) the holding
    /// candidate and queues the others behind it.
    pub fn adopt(&mut self, draws: &[Draw]) {
        let Some((first, rest)) = draws.split_first() else {
            return;
        };
        self.draws += draws.len() as u64;
        self.begin(*first);
        self.queued = rest.iter().copied().collect();
    }
}

/// A small, seedable generator (xorshift64*): draws must be reproducible.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A uniform number in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `v` in a random order (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = ((self.uniform() * (i + 1) as f64) as usize).min(i);
            v.swap(i, j);
        }
    }
}

mod budget;
mod budgeted;
mod params;
mod stats;
pub use budget::Budget;
pub use params::{Objective, Params, Policy, ALONE_HOLDS, FIRST_CALLS, TRY_CALLS, WARM_UP_SLOTS};
pub use stats::Stats;

#[cfg(test)]
mod tests;
