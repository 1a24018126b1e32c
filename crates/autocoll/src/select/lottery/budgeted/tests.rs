use super::super::{Params, Pool, Rng};
use super::*;
use crate::ids::Collective;
use crate::select::implementation::Implementation;
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
    /// What the incumbent's one more try lost.
    again_loss: f64,
    /// Draw messages.
    messages: u32,
}

/// Runs `calls` calls, each taking `time(pool, call, candidate, first)`
/// seconds (`first`: the first call of its period), charging and
/// settling at every draw message as the selector does, and checks
/// after every charge that the pool lost no more than its budget, the
/// excess of the calls that banned, and the tries the model vouched for
/// (as many losing ones as the budget's misses at most).
fn run(
    l: &mut Pool,
    p: &Params,
    calls: usize,
    seed: u64,
    time: impl FnMut(&Pool, usize, usize, bool) -> f64,
) -> Run {
    run_with_messages(l, p, calls, seed, 0.0, time)
}

/// [`run`], every draw message taking `message_s` at rank 0 besides.
fn run_with_messages(
    l: &mut Pool,
    p: &Params,
    calls: usize,
    seed: u64,
    message_s: f64,
    mut time: impl FnMut(&Pool, usize, usize, bool) -> f64,
) -> Run {
    let b = p.budget.unwrap();
    let mut rng = Rng::new(seed);
    let mut out = Run {
        excess_periods: vec![0; l.candidates.len()],
        ..Run::default()
    };
    let mut periods: Vec<Period> = Vec::new();
    let mut vouched = vec![false; l.candidates.len()];
    let mut again = false;
    while out.used.len() < calls {
        if let Some(i) = l.next_call() {
            let first = periods.last().map(|q| q.number) != Some(l.periods);
            if first {
                periods.push(Period {
                    number: l.periods,
                    candidate: i,
                    times: Vec::new(),
                });
            }
            let t = time(l, out.used.len(), i, first);
            periods.last_mut().unwrap().times.push(t);
            out.used.push(i);
            continue;
        }
        out.tally(l, &b, &periods, &mut vouched, std::mem::take(&mut again));
        l.charge(periods.iter().map(|q| (q.candidate, &q.times[..], true)), p);
        out.check_budget(l, &b);
        settle(l, p, &periods);
        periods.clear();
        again = !l.rechecked;
        draw(l, p, &b, &mut rng, &mut vouched);
        again &= l.rechecked;
        out.messages += 1;
        l.note_message(message_s);
    }
    out
}

/// One period of a run: the pool's number for it, its candidate and
/// what its calls took.
struct Period {
    number: u64,
    candidate: usize,
    times: Vec<f64>,
}

impl Run {
    /// Adds up what the periods of candidates other than the best lost:
    /// a try the model vouched for, everything beyond the best; any
    /// other, what its calls took beyond `far` best averages. `again`:
    /// the periods are the incumbent's one more try, all it lost counted.
    fn tally(
        &mut self,
        l: &Pool,
        b: &Budget,
        periods: &[Period],
        vouched: &mut [bool],
        again: bool,
    ) {
        let Some(best) = l.best() else {
            return;
        };
        let best_s = l.candidates[best].mean_s;
        let loss = |q: &Period| q.times.iter().map(|t| (t - best_s).max(0.0)).sum::<f64>();
        for q in periods.iter().filter(|q| q.candidate != best) {
            if again {
                assert_eq!(Some(q.candidate), l.incumbent(), "one more try of another");
                self.again_loss += loss(q);
                continue;
            }
            if std::mem::take(&mut vouched[q.candidate]) {
                let loss = loss(q);
                self.vouched_loss += loss;
                self.vouched_losers += u32::from(loss > 0.0);
                continue;
            }
            // A period's first call may also carry a switch.
            let allowed = |k: usize| b.far * best_s + if k == 0 { l.switch_s } else { 0.0 };
            let over: f64 = q
                .times
                .iter()
                .enumerate()
                .map(|(k, t)| (t - allowed(k)).max(0.0))
                .sum();
            if over > 0.0 {
                self.excess += over;
                self.excess_periods[q.candidate] += 1;
            }
        }
    }

    /// The budget's promise after a charge: no more lost than its share
    /// of what was spent, its allowance, the excess of the calls that
    /// banned, the vouched tries' losses and the incumbent's one more
    /// try's; and no more vouched tries lost than the budget's misses.
    fn check_budget(&self, l: &Pool, b: &Budget) {
        let allowed =
            b.share * l.spent_s + b.allowance_s + self.excess + self.vouched_loss + self.again_loss;
        assert!(
            l.lost_s <= allowed + 1e-12,
            "lost {} of {} spent (excess {}, vouched {})",
            l.lost_s,
            l.spent_s,
            self.excess,
            self.vouched_loss
        );
        assert!(
            self.vouched_losers <= b.vouch_misses,
            "the model was trusted after it lost {} times",
            self.vouched_losers
        );
    }
}

/// Settles every period on its calls after the first (which may carry a
/// switch), or on its only call.
fn settle(l: &mut Pool, p: &Params, periods: &[Period]) {
    let clean: Vec<(usize, Vec<f64>)> = periods
        .iter()
        .map(|q| {
            let t = &q.times;
            (
                q.candidate,
                t.get(1..).filter(|r| !r.is_empty()).unwrap_or(t).to_vec(),
            )
        })
        .collect();
    l.settle_all(clean.iter().map(|(i, t)| (*i, &t[..])), p);
}

/// The pool's next draw message, as the selector makes it; marks the
/// first draw of a candidate other than the best that the model vouched
/// for.
fn draw(l: &mut Pool, p: &Params, b: &Budget, rng: &mut Rng, vouched: &mut [bool]) {
    let us: Vec<f64> = (0..p.slots()).map(|_| rng.uniform()).collect();
    let draws = l.draw_ahead(&us, p);
    let best_s = best_s(l, f64::INFINITY);
    let best = l.best();
    if let Some(d) = draws
        .iter()
        .find(|d| Some(d.index) != best && l.vouched(d.index, best_s, b))
    {
        vouched[d.index] = true;
    }
    l.adopt(&draws);
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
fn a_wrong_model_costs_its_misses_beyond_the_budget_and_no_more() {
    // The model puts every tree at a third of the incumbent; every
    // one takes just under `far` times the best.
    for seed in 1..20 {
        let p = budgeted();
        let misses = p.budget.unwrap().vouch_misses;
        let far = p.budget.unwrap().far;
        let mut l = pool(&p);
        let third = Some(3e-3);
        l.set_predictions(&[third, third, third, third, None], 1.5);
        let r = run(&mut l, &p, 5_000, seed, |l, _, i, _| match i {
            4 => 1e-2,
            _ => far * best_s(l, 1e-2) * 0.999,
        });
        assert_eq!(r.vouched_losers, misses, "seed {seed}");
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
fn draw_messages_timed_outside_the_calls_are_paid_for_by_longer_holds() {
    // Every candidate slower; each message takes ten calls' time before
    // the call that follows, which does not see it.
    let p = budgeted();
    let share = p.budget.unwrap().share;
    let mut l = pool(&p);
    let calls = 200_000;
    let r = run_with_messages(&mut l, &p, calls, 5, 1e-3, |_, _, i, _| match i {
        4 => 1e-4,
        _ => 2e-4,
    });
    let overhead = f64::from(r.messages) * 1e-3 / (calls as f64 * 1e-4);
    assert!(overhead < 1.5 * share, "{} messages", r.messages);
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

#[test]
fn a_size_called_six_times_from_an_empty_state_tries_what_the_model_vouches_for() {
    // Calls of a second, nothing measured before. The model rates trees
    // 2 and 3 alike at 0.57 s against the incumbent's 1.2 s; tree 2 takes
    // as long as the incumbent (the model is wrong about it), tree 3
    // 0.7 s. The incumbent runs two calls, tree 2 is tried and caught,
    // tree 3 is tried on the model's word still, and kept (the budget
    // never pays for the incumbent's one more try at these times).
    let p = budgeted();
    let mut l = pool(&p);
    let alike = Some(0.57);
    l.set_predictions(&[Some(3.0), Some(3.0), alike, alike, None], 1.5);
    let r = run(&mut l, &p, 8, 1, |_, _, i, _| [3.0, 3.0, 1.2, 0.7, 1.2][i]);
    assert_eq!(&r.used[..2], [4, 4]);
    assert!(r.used[2..4].iter().all(|&i| i == 2), "{:?}", r.used);
    assert!(r.used[4..].iter().all(|&i| i == 3), "{:?}", r.used);
    assert_eq!(l.best(), Some(3));
}

#[test]
fn a_tree_that_beat_only_the_incumbents_first_calls_holds_until_the_budget_pays_one_more_try() {
    // The incumbent's first two calls meet a new communicator (three times
    // its usual 0.1 ms); the model vouches for tree 2, which takes 0.15 ms,
    // and rules out the others. Once the budget covers two calls of the
    // incumbent at its first time, it runs once more, its new time
    // replaces the first, and it holds: well before a warm-up try of it,
    // which reserves `far` times the tree's time, would have come.
    let p = budgeted();
    let mut l = pool(&p);
    let out = Some(1e-3);
    l.set_predictions(&[out, out, Some(0.5e-4), out, None], 1.5);
    let r = run_with_messages(&mut l, &p, 2_000, 1, 1e-4, |_, call, i, _| match i {
        4 if call < 2 => 3e-4,
        4 => 1e-4,
        _ => 1.5e-4,
    });
    let tree = r.used.iter().filter(|&&i| i != 4).count();
    assert!(tree < 150, "{tree} calls of the tree");
    assert_eq!(l.best(), Some(4));
}

#[test]
fn the_incumbent_is_tried_once_more_in_a_run_and_no_more() {
    // Tree 2 is truly faster: the incumbent's one more try (once the
    // budget pays for it) is all it runs after its first period, however
    // long the run.
    let p = budgeted();
    let mut l = pool(&p);
    l.set_predictions(&[None, None, Some(0.5), None, None], 1.5);
    let r = run(&mut l, &p, 2_000, 1, |_, _, i, _| match i {
        4 => 3.0,
        2 => 0.6,
        _ => 6.0,
    });
    let incumbent = r.used.iter().filter(|&&i| i == 4).count();
    assert_eq!(incumbent, 4, "{:?}", &r.used[..12]);
    assert_eq!(l.best(), Some(2));
}

#[test]
fn without_a_model_the_incumbent_holds_a_usual_period_first() {
    // No draw message until a usual hold has run: one period so far.
    let p = budgeted();
    let mut l = pool(&p);
    let calls = p.usual_ttl(1.0) as usize;
    let r = run(&mut l, &p, calls, 1, |_, _, i, _| {
        [0.1, 0.1, 0.1, 0.1, 1.0][i]
    });
    assert!(r.used.iter().all(|&i| i == 4), "{:?}", r.used);
    assert_eq!(l.periods, 1);
}
