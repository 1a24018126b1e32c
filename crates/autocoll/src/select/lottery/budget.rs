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
//! outcome. A model whose candidate ran slower than it allowed is not
//! believed again in the pool: beyond its budget a pool loses at most one
//! such try.
//!
//! Reservations need no bookkeeping across draw messages: every period
//! drawn at one message ends before the next, where all of them are
//! charged ([`Pool::charge`]) before anything is drawn again.
//!
//! The draw messages cost too (a small reduction and broadcast, paid by
//! the call after each): the first call of the best after a switch runs
//! that much over its average. The pool keeps an average of that excess,
//! and holds the best for at least as many calls as it takes the budget's
//! share of them to pay for one message, so the messages cost at most
//! about another `share` of the pool's time.

use serde::{Deserialize, Serialize};

use super::{Draw, Params, Pool, ALONE_HOLDS, TRY_CALLS};

/// How many usual holds the best may hold at most where draw messages are
/// dear (tiny calls): the drift rule looks at a period only when it ends.
pub const MESSAGE_HOLDS: u32 = 16;

/// Weight of a new switch's excess in its average.
const SWITCH_WEIGHT: f64 = 0.2;

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
}

fn vouch_by_default() -> bool {
    true
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            share: 0.03,
            allowance_s: 0.0,
            far: 3.0,
            model_slack: 1.5,
            vouch: vouch_by_default(),
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
    /// best, and no candidate measured in this pool has run slower than
    /// the model allowed it. A try it vouches for is drawn without a
    /// reserve; one that loses shows the model wrong, so a pool pays for
    /// at most one such try beyond its budget.
    fn vouched(&self, i: usize, best_s: f64) -> bool {
        let caught = (0..self.candidates.len()).any(|j| {
            let s = &self.candidates[j];
            s.count > 0 && self.ceiling(j).is_some_and(|c| s.mean_s > c)
        });
        self.candidates[i].count == 0 && !caught && self.ceiling(i).is_some_and(|c| c < best_s)
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
        b.reserve(calls, best_s) + 2.0 * self.switch_s
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
                ttl: p.usual_ttl(1.0),
            }];
        };
        let best_s = self.candidates[best].mean_s;
        let mut left = self.budget_left(&b);
        let mut planned = vec![0u32; self.candidates.len()];
        let mut out = Vec::new();
        for &u in us {
            let (draw, warm_up) = match self.warm_up(p, &planned) {
                Some(i) => (
                    Draw {
                        index: i,
                        ttl: TRY_CALLS,
                    },
                    true,
                ),
                // A lottery draw needs the results of the draws before it.
                None if out.is_empty() => (self.lottery_draw(u, p), false),
                None => break,
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
            if b.vouch && self.vouched(draw.index, best_s) {
                out.push(draw);
                break;
            }
            let reserve = self.try_cost(&b, draw.ttl, best_s);
            if reserve > left {
                out.push(self.hold(best, reserve - left, best_s, p, &b));
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

    /// Keeps an average of what the best's first call after a switch
    /// takes beyond its average: a draw message's cost.
    fn note_switch(&mut self, excess: f64) {
        self.switch_s = match self.switch_s {
            0.0 => excess,
            s => s + SWITCH_WEIGHT * (excess - s),
        };
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
        let ttl = wanted.max(calls(self.switch_s)).clamp(usual, most);
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
mod tests {
    use super::super::{Params, Pool, Rng};
    use super::*;
    use crate::select::{Collective, Implementation};
    use crate::tree::Shape;

    /// Four trees and, last, the MPI library's own as the incumbent.
    fn pool(p: &Params) -> Pool {
        let mut imps: Vec<Implementation> = (2..6)
            .map(|k| Implementation::tree(Collective::Bcast, Shape::Kary(k), None).unwrap())
            .collect();
        imps.push(Implementation::native(Collective::Bcast));
        let mut pool = Pool::new(imps);
        pool.set_home(p);
        pool.set_incumbent(4);
        pool
    }

    fn budgeted() -> Params {
        Params {
            budget: Some(Budget::default()),
            ..Params::default()
        }
    }

    /// What a run of a budgeted pool did.
    #[derive(Default)]
    struct Run {
        used: Vec<usize>,
        /// What calls took beyond `far` best averages, per candidate, and
        /// in how many periods.
        excess: f64,
        excess_periods: Vec<u32>,
        /// What tries the model vouched for lost, and how many lost.
        vouched_loss: f64,
        vouched_losers: u32,
    }

    /// Runs `calls` calls, each taking `time(pool, call, candidate, first)`
    /// seconds (`first`: the first call of its period), charging and
    /// settling at every draw message as the selector does, and checks
    /// after every charge that the pool lost no more than its budget, the
    /// excess of the calls that banned, and one try the model vouched for.
    fn run(
        l: &mut Pool,
        p: &Params,
        calls: usize,
        seed: u64,
        mut time: impl FnMut(&Pool, usize, usize, bool) -> f64,
    ) -> Run {
        let b = p.budget.unwrap();
        let mut rng = Rng::new(seed);
        let mut out = Run {
            excess_periods: vec![0; l.candidates.len()],
            ..Run::default()
        };
        let mut periods: Vec<(u64, usize, Vec<f64>)> = Vec::new();
        let mut vouched = vec![false; l.candidates.len()];
        while out.used.len() < calls {
            if let Some(i) = l.next_call() {
                let first = periods.last().map(|p| p.0) != Some(l.periods);
                if first {
                    periods.push((l.periods, i, Vec::new()));
                }
                let t = time(l, out.used.len(), i, first);
                periods.last_mut().unwrap().2.push(t);
                out.used.push(i);
                continue;
            }
            if let Some(best) = l.best() {
                let best_s = l.candidates[best].mean_s;
                for (_, i, times) in periods.iter().filter(|(_, i, _)| *i != best) {
                    if std::mem::take(&mut vouched[*i]) {
                        let loss: f64 = times.iter().map(|t| (t - best_s).max(0.0)).sum();
                        out.vouched_loss += loss;
                        out.vouched_losers += u32::from(loss > 0.0);
                        continue;
                    }
                    // A period's first call may also carry a switch.
                    let allowed = |k: usize| b.far * best_s + if k == 0 { l.switch_s } else { 0.0 };
                    let over: f64 = times
                        .iter()
                        .enumerate()
                        .map(|(k, t)| (t - allowed(k)).max(0.0))
                        .sum();
                    if over > 0.0 {
                        out.excess += over;
                        out.excess_periods[*i] += 1;
                    }
                }
            }
            l.charge(periods.iter().map(|(_, i, t)| (*i, &t[..], true)), p);
            let allowed = b.share * l.spent_s + b.allowance_s + out.excess + out.vouched_loss;
            assert!(
                l.lost_s <= allowed + 1e-12,
                "lost {} of {} spent (excess {}, vouched {})",
                l.lost_s,
                l.spent_s,
                out.excess,
                out.vouched_loss
            );
            assert!(
                out.vouched_losers <= 1,
                "the model was trusted after it lost"
            );
            let clean: Vec<(usize, Vec<f64>)> = periods
                .iter()
                .map(|(_, i, t)| {
                    (
                        *i,
                        t.get(1..).filter(|r| !r.is_empty()).unwrap_or(t).to_vec(),
                    )
                })
                .collect();
            l.settle_all(clean.iter().map(|(i, t)| (*i, &t[..])), p);
            periods.clear();
            let us: Vec<f64> = (0..p.slots()).map(|_| rng.uniform()).collect();
            let draws = l.draw_ahead(&us, p);
            let best_s = best_s(l, f64::INFINITY);
            let best = l.best();
            if let Some(d) = draws
                .iter()
                .find(|d| Some(d.index) != best && l.vouched(d.index, best_s))
            {
                vouched[d.index] = true;
            }
            l.adopt(&draws);
        }
        out
    }

    /// The best average so far, or `fallback` before any.
    fn best_s(l: &Pool, fallback: f64) -> f64 {
        l.best().map_or(fallback, |b| l.candidates[b].mean_s)
    }

    #[test]
    fn the_incumbent_holds_from_the_first_call() {
        let p = budgeted();
        let mut l = pool(&p);
        let r = run(&mut l, &p, 31, 1, |_, _, _, _| 1e-3);
        assert!(r.used.iter().all(|&i| i == 4), "{:?}", r.used);
    }

    #[test]
    fn a_size_called_three_times_runs_the_incumbent_only() {
        // Calls of a second: a try's reserve (two calls at twice the best)
        // is far above 3% of three seconds and the allowance.
        let p = budgeted();
        let mut l = pool(&p);
        let r = run(&mut l, &p, 3, 1, |_, _, _, _| 1.0);
        assert_eq!(r.used, [4, 4, 4]);
        assert_eq!(l.lost_s, 0.0);
    }

    #[test]
    fn the_budget_is_never_overspent_by_candidates_within_far_of_the_best() {
        // The adversary makes every call of a candidate other than the
        // best as slow as it can be without being banned, or, at random,
        // any time below that.
        for seed in 1..30 {
            let p = budgeted();
            let far = p.budget.unwrap().far;
            let mut l = pool(&p);
            let mut noise = Rng::new(seed * 7);
            let r = run(&mut l, &p, 20_000, seed, |l, _, i, _| {
                let best = best_s(l, 1e-4);
                match l.best() {
                    None => 1e-4,
                    Some(b) if b == i => best,
                    _ if noise.uniform() < 0.5 => far * best * 0.999,
                    _ => far * best * noise.uniform(),
                }
            });
            assert_eq!(r.excess, 0.0, "seed {seed}");
            let tries = r.used.iter().filter(|&&i| i != 4).count();
            assert!(tries > 0, "seed {seed}: nothing was ever tried");
        }
    }

    #[test]
    fn a_candidate_past_far_costs_one_period_and_is_not_tried_again() {
        for seed in 1..30 {
            let p = budgeted();
            let mut l = pool(&p);
            let mut noise = Rng::new(seed * 11);
            let r = run(&mut l, &p, 20_000, seed, |l, _, i, _| {
                let best = best_s(l, 1e-4);
                match i {
                    4 => 1e-4,
                    // Now and then a call a hundred times the best.
                    _ if noise.uniform() < 0.3 => 100.0 * best,
                    _ => 0.8 * best + 2.0 * best * noise.uniform(),
                }
            });
            for (i, &n) in r.excess_periods.iter().enumerate() {
                assert!(
                    n <= 1,
                    "seed {seed}: candidate {i} went past far in {n} periods"
                );
                if n == 1 {
                    assert!(l.candidates[i].banned, "seed {seed}: {i}");
                }
            }
        }
    }

    #[test]
    fn a_long_run_still_finds_a_faster_tree() {
        for seed in 1..11 {
            let p = budgeted();
            let mut l = pool(&p);
            let mut noise = Rng::new(seed);
            // Tree 2 is 40% faster than the incumbent, the others slower.
            let times = [1.3e-4, 1.6e-4, 0.6e-4, 1.1e-4, 1e-4];
            let r = run(&mut l, &p, 100_000, seed, |_, _, i, _| {
                times[i] * (0.9 + 0.2 * noise.uniform())
            });
            assert_eq!(l.best(), Some(2), "seed {seed}");
            let late = &r.used[50_000..];
            let share = late.iter().filter(|&&i| i == 2).count() as f64 / late.len() as f64;
            assert!(share > 0.7, "seed {seed}: {share}");
        }
    }

    #[test]
    fn a_candidate_the_model_rules_out_is_never_tried() {
        let p = budgeted();
        let mut l = pool(&p);
        // Trees 0 and 1 predicted at ten times the incumbent's time.
        l.set_predictions(&[Some(1e-3), Some(1e-3), None, None, None], 1.5);
        let r = run(&mut l, &p, 50_000, 1, |_, _, i, _| {
            [0.5e-4, 0.5e-4, 2e-4, 2e-4, 1e-4][i]
        });
        assert!(!r.used.iter().any(|&i| i < 2));
        assert!(r.used.contains(&2), "the others are still tried");
    }

    #[test]
    fn a_size_called_a_few_times_switches_to_the_tree_the_model_vouches_for() {
        // Calls of a second, too dear for the budget, whose incumbent an
        // earlier run measured; the model puts tree 2 at 0.4 s, so that
        // even 1.5 times that beats the incumbent.
        let p = budgeted();
        let mut earlier = pool(&p);
        earlier.candidates[4].mean_s = 1.0;
        earlier.candidates[4].count = 5;
        let mut l = pool(&p);
        l.resume(&earlier.saved(), &p);
        l.set_predictions(&[Some(2.0), Some(2.0), Some(0.4), Some(1.2), None], 1.5);
        let r = run(&mut l, &p, 8, 1, |_, _, i, _| [2.0, 2.0, 0.4, 1.2, 1.0][i]);
        let tree = r.used.iter().filter(|&&i| i == 2).count();
        assert!(tree >= 6, "{:?}", r.used);
        assert!(!r.used.iter().any(|&i| i == 0 || i == 1 || i == 3));
    }

    #[test]
    fn without_vouching_a_sure_model_only_admits_what_the_budget_pays_for() {
        let p = Params {
            budget: Some(Budget {
                vouch: false,
                ..Budget::default()
            }),
            ..Params::default()
        };
        let mut earlier = pool(&p);
        earlier.candidates[4].mean_s = 1.0;
        earlier.candidates[4].count = 5;
        let mut l = pool(&p);
        l.resume(&earlier.saved(), &p);
        l.set_predictions(&[None, None, Some(0.4), None, None], 1.5);
        let r = run(&mut l, &p, 8, 1, |_, _, i, _| [2.0, 2.0, 0.4, 1.2, 1.0][i]);
        assert!(r.used.iter().all(|&i| i == 4), "{:?}", r.used);
    }

    #[test]
    fn a_wrong_model_costs_one_try_beyond_the_budget() {
        // The model puts every tree at a third of the incumbent; every
        // one takes just under `far` times the best.
        for seed in 1..20 {
            let p = budgeted();
            let far = p.budget.unwrap().far;
            let mut l = pool(&p);
            let third = Some(3e-3);
            l.set_predictions(&[third, third, third, third, None], 1.5);
            let r = run(&mut l, &p, 5_000, seed, |l, _, i, _| match i {
                4 => 1e-2,
                _ => far * best_s(l, 1e-2) * 0.999,
            });
            assert_eq!(r.vouched_losers, 1, "seed {seed}");
            assert_eq!(l.best(), Some(4));
        }
    }

    #[test]
    fn the_best_holds_long_enough_for_the_budget_to_pay_each_draw_message() {
        let p = budgeted();
        let share = p.budget.unwrap().share;
        let mut l = pool(&p);
        // Every candidate slower; a period's first call carries a draw
        // message costing ten calls (all periods, to be sure, not only
        // those after a message).
        let mut late_periods = 0;
        run(&mut l, &p, 200_000, 5, |_, call, i, first| {
            late_periods += usize::from(first && call >= 100_000);
            let t = if i == 4 { 1e-4 } else { 2e-4 };
            t + if first { 1e-3 } else { 0.0 }
        });
        let mean_hold = 100_000.0 / late_periods as f64;
        // The messages' cost over the holds' time stays near the share.
        let overhead = 10.0 / mean_hold;
        assert!(overhead < 1.5 * share, "holds of {mean_hold:.0} calls");
    }

    #[test]
    fn a_best_from_another_run_that_is_slow_now_holds_one_usual_period_only() {
        let p = budgeted();
        // An earlier run saw tree 0 at half the incumbent's time; here it
        // takes twenty times that.
        let mut earlier = pool(&p);
        earlier.candidates[0].mean_s = 0.5e-4;
        earlier.candidates[0].count = 50;
        earlier.candidates[4].mean_s = 1e-4;
        earlier.candidates[4].count = 50;
        let mut l = pool(&p);
        l.resume(&earlier.saved(), &p);
        l.switch_s = 1e-3;
        assert_eq!(l.best(), Some(0));
        let r = run(&mut l, &p, 2_000, 9, |_, _, i, _| match i {
            0 => 1e-3,
            4 => 1e-4,
            _ => 3e-4,
        });
        let slow = r.used.iter().filter(|&&i| i == 0).count();
        assert!(slow <= p.usual_ttl(1.0) as usize + 2, "{slow} slow calls");
        assert_eq!(l.best(), Some(4));
    }

    #[test]
    fn a_slowdown_of_the_best_resumes_exploring_within_the_budget() {
        let p = budgeted();
        let mut l = pool(&p);
        // The incumbent turns three times slower halfway: tree 3, slower
        // before, is the faster after.
        let r = run(&mut l, &p, 60_000, 3, |_, call, i, _| {
            match (i, call < 30_000) {
                (4, true) => 1e-4,
                (4, false) => 3e-4,
                (3, _) => 1.5e-4,
                _ => 5e-4,
            }
        });
        assert_eq!(l.best(), Some(3));
        let late = &r.used[50_000..];
        let share = late.iter().filter(|&&i| i == 3).count() as f64 / late.len() as f64;
        assert!(share > 0.7, "{share}");
    }
}
