//! Exploration that pays for itself.
//!
//! A pool with an incumbent (the MPI library's own algorithm, or a tuning
//! table's pick) runs it from the first call, and draws another candidate
//! only when two things allow it. A model of the machine must rate the
//! candidate able to beat the best average so far
//! ([`Pool::set_predictions`]); and what the pool may still lose must
//! cover the try's worst case. A pool may lose [`Budget::share`] of the
//! time its calls took, plus [`Budget::allowance_s`]; a call of a
//! candidate other than the best loses what it takes beyond the best's
//! average. A try of `n` calls reserves `n × (far − 1)` best averages
//! before it is drawn, and a candidate any of whose calls takes more than
//! `far` best averages is not tried again in the run. So the time lost
//! passes the budget only by what those banning calls took beyond `far`
//! best averages, once per candidate (the tests check it against
//! adversarial times).
//!
//! Where calls are dear, the budget takes many calls to afford a try. A
//! model sure enough of a candidate (its prediction, times the slack, still
//! below the best's average) may vouch for its first try, drawn with no
//! reserve; the message ends with it, so that the next one knows the
//! outcome. A model is believed in a pool until [`Budget::vouch_misses`]
//! of its candidates have run slower than it allowed: beyond its budget a
//! pool loses at most that many such tries. Where a model predicts, the
//! incumbent's first period is [`FIRST_CALLS`] calls, not a usual hold,
//! so that a size called a handful of times learns its incumbent's time
//! and can try what the model vouches for within the run. Those calls are
//! a new communicator's first, off their usual time: when a candidate
//! beats them, the incumbent runs once more as soon as the budget covers
//! what that loses if they were right (no reserve beyond: its calls are
//! what the program pays without the library).
//!
//! Reservations need no bookkeeping across draw messages: every period
//! drawn at one message ends before the next, where all of them are
//! charged ([`Pool::charge`]) before anything is drawn again.
//!
//! The draw messages cost too: a small reduction and broadcast before the
//! call that follows, outside its time (rank 0 times them), and what that
//! call then takes beyond the best's average (the ranks leave a message
//! apart). The pool keeps an average of both, and holds the best for at
//! least as many calls as it takes the budget's share of them to pay for
//! one message, so the messages cost at most about another `share` of the
//! pool's time.

use super::budget::Budget;
use super::params::{Params, ALONE_HOLDS, FIRST_CALLS, TRY_CALLS};
use super::{Draw, Pool};

/// How many usual holds the best may hold at most where draw messages are
/// dear (tiny calls): the drift rule looks at a period only when it ends.
pub const MESSAGE_HOLDS: u32 = 16;

/// Weight of a new message's or switch's cost in its average.
const COST_WEIGHT: f64 = 0.2;

/// A message's or switch's cost average `old` (0 before any) with `new`
/// taken in.
fn averaged(old: f64, new: f64) -> f64 {
    match old {
        0.0 => new,
        s => s + COST_WEIGHT * (new - s),
    }
}

impl Pool {
    /// Makes candidate `index` the incumbent: under a budget it holds from
    /// the first call, and every other candidate is a try it pays for.
    pub fn set_incumbent(&mut self, index: usize) {
        if index < self.candidates.len() {
            self.incumbent = Some(index);
        }
    }

    /// The incumbent, if one is set.
    pub fn incumbent(&self) -> Option<usize> {
        self.incumbent
    }

    /// Each candidate's predicted time in seconds (`None` where the model
    /// has none), trusted to within a factor `slack`.
    pub fn set_predictions(&mut self, predicted: &[Option<f64>], slack: f64) {
        self.predicted = predicted.to_vec();
        self.slack = slack.max(1.0);
    }

    /// The least average the model allows candidate `i`.
    pub(super) fn floor(&self, i: usize) -> Option<f64> {
        Some(self.predicted.get(i).copied().flatten()? / self.slack)
    }

    /// The most the model allows candidate `i`.
    fn ceiling(&self, i: usize) -> Option<f64> {
        Some(self.predicted.get(i).copied().flatten()? * self.slack)
    }

    /// Whether candidate `i` may be tried at all: it is not banned, and no
    /// model rules it out (the best never is).
    pub(super) fn may_try(&self, i: usize) -> bool {
        if self.candidates[i].banned {
            return false;
        }
        let Some(floor) = self.floor(i) else {
            return true;
        };
        match self.best() {
            Some(b) if b != i => floor < self.candidates[b].mean_s,
            _ => true,
        }
    }

    /// Whether the model vouches for a first try of candidate `i`, against
    /// a best at `best_s`: even its most pessimistic time for `i` beats the
    /// best, and fewer than `b.vouch_misses` candidates measured in this
    /// pool have run slower than the model allowed them. A try it vouches
    /// for is drawn without a reserve; one that loses shows the model
    /// wrong, so a pool pays for at most `vouch_misses` such tries beyond
    /// its budget.
    fn vouched(&self, i: usize, best_s: f64, b: &Budget) -> bool {
        let sure = self.candidates[i].count == 0 && self.ceiling(i).is_some_and(|c| c < best_s);
        let misses = || {
            self.candidates
                .iter()
                .enumerate()
                .filter(|(j, s)| s.count > 0 && self.ceiling(*j).is_some_and(|c| s.mean_s > c))
                .count()
        };
        sure && misses() < b.vouch_misses as usize
    }

    /// How long the incumbent holds before anything is measured: a usual
    /// hold, or [`FIRST_CALLS`] where the model may vouch once it knows
    /// the incumbent's time.
    fn first_hold(&self, p: &Params, b: &Budget) -> u32 {
        match b.vouch && self.predicted.iter().any(Option::is_some) {
            true => FIRST_CALLS,
            false => p.usual_ttl(1.0),
        }
    }

    /// What the incumbent's one more try would lose if its times so far
    /// were right, when one is due: another candidate is best against
    /// fewer than `min_tries` times of it. Those came from a new
    /// communicator's first calls, which run off their usual time
    /// (connections being made, ranks still apart), and a tree that beat
    /// only them would hold where the MPI library's own algorithm is
    /// faster. The try reserves nothing beyond: its calls cost nothing the
    /// program would not pay without the library.
    fn again_cost(&self, best: usize, incumbent: usize, p: &Params) -> Option<f64> {
        let s = &self.candidates[incumbent];
        if self.rechecked || best == incumbent || s.banned || s.count >= p.min_tries {
            return None;
        }
        let over = (s.mean_s - self.candidates[best].mean_s).max(0.0);
        Some(f64::from(TRY_CALLS) * over + 2.0 * self.message_cost())
    }

    /// The incumbent's one more try, once in a run, whose time replaces
    /// its times so far.
    fn incumbent_again(&mut self, incumbent: usize) -> Draw {
        self.rechecked = true;
        let s = &mut self.candidates[incumbent];
        s.stale = s.count > 0;
        Draw {
            index: incumbent,
            ttl: TRY_CALLS,
        }
    }

    /// Seconds the pool may still lose.
    pub fn budget_left(&self, b: &Budget) -> f64 {
        b.share * self.spent_s + b.allowance_s - self.lost_s
    }

    /// Charges ended periods, (candidate, the time of every call, the one
    /// after a switch included, whether that first call followed a switch
    /// or a draw message), to the budget, before they are settled: losses
    /// are measured against the best that drew them, and so is the best's
    /// first call back after another candidate's period (the message and
    /// the switch a try cost). A candidate a call of which took more than
    /// [`Budget::far`] best averages (a first call after a switch: beyond
    /// what a switch costs) is banned for the run.
    pub fn charge<'t>(
        &mut self,
        periods: impl IntoIterator<Item = (usize, &'t [f64], bool)>,
        p: &Params,
    ) {
        let best = self.best();
        let far = p.budget.map_or(f64::INFINITY, |b| b.far);
        for (index, times, switched) in periods {
            if index >= self.candidates.len() {
                continue;
            }
            self.spent_s += times.iter().sum::<f64>();
            let before = self.last_period.replace(index);
            let (Some(best), Some((&first, rest))) = (best, times.split_first()) else {
                continue;
            };
            let best_s = self.candidates[best].mean_s;
            let over = |t: f64| (t - best_s).max(0.0);
            if best == index {
                if switched {
                    self.note_switch(over(first));
                    if before.is_some_and(|b| b != index) {
                        self.lost_s += over(first);
                    }
                }
                continue;
            }
            self.lost_s += times.iter().map(|&t| over(t)).sum::<f64>();
            let first_allowed = far * best_s + if switched { self.switch_s } else { 0.0 };
            if first > first_allowed || rest.iter().any(|&t| t > far * best_s) {
                self.candidates[index].banned = true;
            }
        }
    }

    /// The most a try of `calls` calls can cost before its candidate is
    /// banned: its calls' worst ([`Budget::reserve`]), and the draw
    /// messages and switches into it and back, at what they cost so far.
    fn try_cost(&self, b: &Budget, calls: u32, best_s: f64) -> f64 {
        b.reserve(calls, best_s) + 2.0 * self.message_cost()
    }

    /// The draws of one message under budget `b`: the incumbent until
    /// anything is measured; then tries (the warm-up's, least tried and
    /// most promising first, or the lottery's) while the budget covers
    /// them, and the best, held until the budget covers the next try.
    pub(super) fn budgeted_draws(
        &mut self,
        us: &[f64],
        p: &Params,
        b: Budget,
        incumbent: usize,
    ) -> Vec<Draw> {
        let Some(best) = self.best() else {
            return vec![Draw {
                index: incumbent,
                ttl: self.first_hold(p, &b),
            }];
        };
        let best_s = self.candidates[best].mean_s;
        let mut left = self.budget_left(&b);
        let again = self.again_cost(best, incumbent, p);
        if again.is_some_and(|cost| cost <= left) {
            return vec![self.incumbent_again(incumbent)];
        }
        // Held no longer than until the budget covers the incumbent's try.
        let again_short = again.map_or(f64::INFINITY, |cost| cost - left);
        let mut planned = vec![0u32; self.candidates.len()];
        let mut out = Vec::new();
        for &u in us {
            let Some((draw, warm_up)) = self.next_draw(u, p, &planned, out.is_empty()) else {
                break;
            };
            if draw.index == best {
                out.push(self.paid(draw, best_s, p, &b));
                break;
            }
            // One period a candidate per message: a call past `far` bans
            // it before it runs again.
            if planned[draw.index] > 0 {
                break;
            }
            // A try on the model's word ends the message: the next one,
            // after it, knows whether the model was right.
            if b.vouch && self.vouched(draw.index, best_s, &b) {
                out.push(draw);
                break;
            }
            let reserve = self.try_cost(&b, draw.ttl, best_s);
            if reserve > left {
                let short = (reserve - left).min(again_short);
                out.push(self.hold(best, short, best_s, p, &b));
                break;
            }
            left -= reserve;
            planned[draw.index] += 1;
            out.push(draw);
            if !warm_up && out.len() >= p.ahead.max(1) as usize {
                break;
            }
        }
        if out.is_empty() {
            out.push(self.hold(best, 0.0, best_s, p, &b));
        }
        out
    }

    /// The next draw of a message, with `u`, and whether it is the
    /// warm-up's; `None` when the message must end with the draws before.
    fn next_draw(
        &mut self,
        u: f64,
        p: &Params,
        planned: &[u32],
        first: bool,
    ) -> Option<(Draw, bool)> {
        match self.warm_up(p, planned) {
            Some(index) => Some((
                Draw {
                    index,
                    ttl: TRY_CALLS,
                },
                true,
            )),
            // A lottery draw needs the results of the draws before it.
            None if first => Some((self.lottery_draw(u, p), false)),
            None => None,
        }
    }

    /// Keeps an average of what a draw message takes at rank 0 itself
    /// (`seconds`, outside every call's time).
    pub fn note_message(&mut self, seconds: f64) {
        self.message_s = averaged(self.message_s, seconds);
    }

    /// What a draw message costs: its own time, and what the best's first
    /// call after it takes beyond its average.
    fn message_cost(&self) -> f64 {
        self.switch_s + self.message_s
    }

    /// Keeps an average of what the best's first call after a switch
    /// takes beyond its average: a draw message's cost.
    fn note_switch(&mut self, excess: f64) {
        self.switch_s = averaged(self.switch_s, excess);
    }

    /// The best held for as many calls as it takes the budget to grow by
    /// `short` seconds (a draw message before then could only hold it
    /// again), and for as many as pay for the next message's cost: within
    /// its usual hold and [`ALONE_HOLDS`] of them, or, where messages cost
    /// more, [`MESSAGE_HOLDS`]; a usual hold only until a period of it in
    /// this run has shown no drift.
    fn hold(&self, best: usize, short: f64, best_s: f64, p: &Params, b: &Budget) -> Draw {
        let usual = f64::from(p.usual_ttl(1.0));
        let per_call = b.share * best_s;
        let calls = |s: f64| match per_call > 0.0 {
            true => (s / per_call).ceil(),
            false => f64::INFINITY,
        };
        let wanted = calls(short).min(usual * f64::from(ALONE_HOLDS));
        // A best known only from another run or communicator is checked
        // for drift after a usual hold.
        let most = match self.steady {
            true => usual * f64::from(MESSAGE_HOLDS),
            false => usual,
        };
        let ttl = wanted.max(calls(self.message_cost())).clamp(usual, most);
        Draw {
            index: best,
            ttl: ttl as u32,
        }
    }

    /// A draw of the best (`draw`), held at least as long as the next
    /// message's cost asks under budget `b`.
    fn paid(&self, draw: Draw, best_s: f64, p: &Params, b: &Budget) -> Draw {
        let hold = self.hold(draw.index, 0.0, best_s, p, b);
        Draw {
            ttl: draw.ttl.max(hold.ttl),
            ..draw
        }
    }
}

#[cfg(test)]
mod tests;
