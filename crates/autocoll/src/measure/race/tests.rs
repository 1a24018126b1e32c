use super::*;

fn feed(race: &mut Race, times: &[f64], round: usize) {
    for i in race.contenders() {
        // A little spread, the same for every candidate.
        race.add(i, times[i] * (1.0 + 0.001 * (round % 3) as f64));
    }
}

#[test]
fn a_clearly_slower_candidate_is_dropped_after_min_reps() {
    let rule = Rule::default();
    let mut race = Race::new(3);
    let times = [1.0, 2.0, 1.0005];
    for round in 0..2 {
        feed(&mut race, &times, round);
        assert!(!race.close_round(&rule), "nothing before min_reps");
        assert_eq!(race.contenders(), [0, 1, 2]);
    }
    feed(&mut race, &times, 2);
    // 0 and 2 differ by 0.05%, within the tolerance: tied, 1 dropped.
    assert!(race.close_round(&rule));
    assert_eq!(race.contenders(), [0, 2]);
    assert_eq!(race.ending, Some(Ending::Tied));
    assert_eq!(race.winner(), Some(0));
}

#[test]
fn overlapping_candidates_race_on_until_max_reps() {
    let rule = Rule {
        max_reps: 8,
        final_rounds: 0,
        ..Rule::default()
    };
    let mut race = Race::new(2);
    // Two candidates 5% apart whose repetitions overlap widely.
    let noise = [0.0, 0.3, -0.2, 0.25, -0.3, 0.1, -0.1, 0.2];
    run(&mut race, &rule, |r, i| {
        [1.00, 1.05][i] + noise[(r + 3 * i) % 8]
    });
    assert_eq!(race.ending, Some(Ending::Undecided));
    assert_eq!(race.reps[0].len(), 8);
    assert_eq!(race.winner(), race.best());
}

#[test]
fn a_candidate_short_of_repetitions_does_not_hold_the_others_back() {
    let rule = Rule::default();
    let mut race = Race::new(3);
    for _ in 0..3 {
        race.add(0, 1.0);
        race.add(1, 3.0);
        // Candidate 2 keeps nothing (every call discarded).
        assert!(!race.close_round(&rule));
    }
    assert_eq!(race.contenders(), [0, 2], "1 dropped while 2 has no data");
    assert_eq!(race.ending, None, "2 is not yet measured");
}

#[test]
fn a_candidate_the_method_cannot_measure_ends_the_race_unmeasured() {
    let rule = Rule::default();
    let mut race = Race::new(2);
    for round in 1..=2 * rule.min_reps {
        race.add(0, 1.0);
        // Candidate 1 keeps one repetition in three.
        if round % 3 == 0 {
            race.add(1, 1.0);
        }
        let over = race.close_round(&rule);
        assert_eq!(over, round == 2 * rule.min_reps, "round {round}");
    }
    assert_eq!(race.ending, Some(Ending::Unmeasured));
}

#[test]
fn without_elimination_every_candidate_runs_every_round() {
    let rule = Rule {
        eliminate: false,
        max_reps: 6,
        ..Rule::default()
    };
    let mut race = Race::new(2);
    let mut rounds = 0;
    loop {
        race.add(0, 1.0);
        race.add(1, 5.0);
        rounds += 1;
        if race.close_round(&rule) {
            break;
        }
    }
    assert_eq!(rounds, 6);
    assert_eq!(race.contenders(), [0, 1], "none dropped");
    assert_eq!(race.ending, Some(Ending::Exhausted));
    assert_eq!(race.winner(), Some(0));
}

#[test]
fn a_race_of_one_is_decided_once_it_has_figures() {
    let rule = Rule::default();
    let mut race = Race::new(1);
    for round in 0..rule.min_reps {
        assert!(!race.close_round(&rule), "round {round}: not yet measured");
        race.add(0, 1.0);
    }
    assert!(race.close_round(&rule));
    assert_eq!(race.ending, Some(Ending::Alone));
    assert_eq!(race.winner(), Some(0));
}

/// Races `times(round, candidate)` until decided; the rounds run.
fn run(race: &mut Race, rule: &Rule, times: impl Fn(usize, usize) -> f64) -> usize {
    let mut rounds = 0;
    loop {
        for i in race.contenders() {
            race.add(i, times(rounds, i));
        }
        rounds += 1;
        if race.close_round(rule) {
            return rounds;
        }
    }
}

/// A level that moves by up to ±30% from round to round, the same for
/// every candidate of the round (drift on crowded cores).
fn drift(round: usize) -> f64 {
    1.0 + 0.3 * ((round * 7919 % 13) as f64 / 6.0 - 1.0)
}

#[test]
fn a_final_tells_two_drifting_candidates_apart_by_their_paired_rounds() {
    let rule = Rule {
        max_reps: 10,
        ..Rule::default()
    };
    let mut race = Race::new(3);
    // 1 is 4% faster than 0 in every round, 2 another 1% behind 0;
    // the drift makes all three intervals overlap.
    let speed = [1.0, 0.96, 1.01];
    let rounds = run(&mut race, &rule, |r, i| speed[i] * drift(r));
    let last = race.last.as_ref().expect("a final");
    assert_eq!(last.from, 10);
    assert_eq!(last.pair, [1, 0], "the two lowest medians, the lower first");
    assert_eq!(race.ending, Some(Ending::Alone));
    assert_eq!(race.contenders(), [1]);
    assert_eq!(race.winner(), Some(1));
    assert!(
        rounds < 10 + rule.final_rounds,
        "decided early: {rounds} rounds"
    );
}

#[test]
fn a_final_keeps_which_ran_first_and_splits_its_ratios_by_order() {
    let rule = Rule {
        eliminate: false,
        ..Rule::default()
    };
    let mut race = Race::under(2, &rule);
    // The two are equal, but a round's first call costs 20% more;
    // 0 runs first in even rounds.
    for r in 0..20 {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for (k, &i) in order.iter().enumerate() {
            race.add(i, if k == 0 { 1.2 } else { 1.0 });
        }
        race.close_round(&rule);
    }
    let last = race.last.as_ref().expect("a duel");
    assert_eq!(last.leads.len(), 20);
    let near = |got: Option<[f64; 2]>, want: [f64; 2]| {
        let got = got.expect("both orders paired");
        assert!((0..2).all(|k| (got[k] - want[k]).abs() < 1e-12), "{got:?}");
    };
    near(last.by_order(0), [1.2, 1.0 / 1.2]);
    near(last.by_order(1), [1.2, 1.0 / 1.2]);
    // A final saved before leads were kept has ratios and no leads,
    // and keeps none when it goes on.
    let mut old = race.clone();
    let last = old.last.as_mut().expect("a duel");
    last.leads.clear();
    old.add(0, 1.0);
    old.add(1, 1.0);
    old.close_round(&rule);
    let last = old.last.as_ref().expect("a duel");
    assert_eq!((last.ratios.len(), last.leads.len()), (21, 0));
    assert_eq!(last.by_order(0), None);
}

#[test]
fn a_final_between_equals_ends_tied() {
    let rule = Rule {
        max_reps: 10,
        ..Rule::default()
    };
    let mut race = Race::new(2);
    // Within a round the two differ by ±0.5%, alternately.
    let rounds = run(&mut race, &rule, |r, i| {
        let sign = if (r + i) % 2 == 0 { 1.0 } else { -1.0 };
        drift(r) * (1.0 + 0.005 * sign)
    });
    assert_eq!(race.ending, Some(Ending::Tied));
    assert!(rounds > 10 && rounds < 10 + rule.final_rounds, "{rounds}");
    assert_eq!(race.contenders(), [0, 1]);
}

#[test]
fn a_final_that_cannot_decide_ends_undecided_after_its_rounds() {
    let rule = Rule {
        max_reps: 10,
        final_rounds: 20,
        ..Rule::default()
    };
    let mut race = Race::new(2);
    // The pair swaps places by 10% from round to round.
    let rounds = run(&mut race, &rule, |r, i| {
        let ahead = (r + i) % 2 == 0;
        drift(r) * if ahead { 0.9 } else { 1.1 }
    });
    assert_eq!(rounds, 30);
    assert_eq!(race.ending, Some(Ending::Undecided));
    assert_eq!(race.last.as_ref().map(|f| f.ratios.len()), Some(20));
    // The one ahead in the final's paired median wins; its rival is
    // dropped.
    let last = race.last.as_ref().expect("a final");
    let ahead = match median(&last.ratios) <= 1.0 {
        true => last.pair[0],
        false => last.pair[1],
    };
    assert_eq!(race.contenders(), [ahead]);
    assert_eq!(race.winner(), Some(ahead));
}

#[test]
fn a_final_resumes_from_its_saved_ratios() {
    let rule = Rule {
        max_reps: 10,
        ..Rule::default()
    };
    let speed = [1.0, 0.96];
    let times = |r: usize, i: usize| speed[i] * drift(r);
    let mut whole = Race::new(2);
    run(&mut whole, &rule, times);
    // The same race saved (as JSON) after its final's fifth round.
    let mut race = Race::new(2);
    for r in 0..15 {
        race.add(0, times(r, 0));
        race.add(1, times(r, 1));
        assert!(!race.close_round(&rule));
    }
    let json = serde_json::to_string(&race).expect("saved");
    let mut resumed: Race = serde_json::from_str(&json).expect("read back");
    assert_eq!(resumed.last.as_ref().map(|f| f.ratios.len()), Some(5));
    run(&mut resumed, &rule, |r, i| times(15 + r, i));
    // JSON may round a time's last digit: compare all but the times.
    let shape = |r: &Race| {
        (
            r.live.clone(),
            r.rounds,
            r.ending,
            r.last.clone().map(|f| (f.pair, f.from, f.ratios.len())),
        )
    };
    assert_eq!(shape(&resumed), shape(&whole));
    assert_eq!(whole.rounds, 16, "decided at the final's sixth pair");
}

#[test]
fn two_measured_every_round_are_a_duel_decided_by_their_paired_rounds() {
    // The machine is fast or slow for a few milliseconds at a time,
    // and candidate 0 is 5% ahead of candidate 1 in either state. Both
    // meet the same state in nine rounds of eleven; in the other two,
    // 0 is timed slow and 1 fast, which moves the medians (0 has seven
    // slow repetitions, 1 five) but not the rounds.
    let rule = Rule {
        eliminate: false,
        max_reps: 11,
        ..Rule::default()
    };
    let slow = [2.0, 2.1];
    let fast = [1.0, 1.05];
    let mut rounds = vec![[slow[0], slow[1]]; 5];
    rounds.extend(vec![[fast[0], fast[1]]; 4]);
    rounds.extend(vec![[slow[0], fast[1]]; 2]);
    let mut medians = Race::new(2);
    let mut duel = Race::under(2, &rule);
    for [a, b] in &rounds {
        for race in [&mut medians, &mut duel] {
            race.add(0, *a);
            race.add(1, *b);
        }
        medians.close_round(&rule);
        duel.close_round(&rule);
    }
    assert_eq!(medians.winner(), Some(1), "two medians put 1 ahead");
    assert_eq!(duel.ending, Some(Ending::Exhausted));
    assert_eq!(duel.contenders(), [0], "the rounds put 0 ahead");
    assert_eq!(duel.winner(), Some(0));
    let ratios = &duel
        .last
        .as_ref()
        .expect("paired from the first round")
        .ratios;
    assert_eq!(ratios.len(), 11);
    assert!(
        (median(ratios) - 1.0 / 1.05).abs() < 1e-9,
        "{}",
        median(ratios)
    );
    // More than two candidates, or a race, are not a duel.
    assert!(Race::under(3, &rule).last.is_none());
    assert!(Race::under(2, &Rule::default()).last.is_none());
}

#[test]
fn a_drop_rests_on_most_of_the_jobs_that_measured_both() {
    let rule = Rule::default();
    let mut race = Race::new(3);
    // Candidate 1 runs in a fast state for the first job's eight
    // rounds and slower than 0 in the second job; 2 is slower in both.
    let times = |job: usize, i: usize| [1.0, [0.6, 1.1][job], 2.0][i];
    for job in 0..2 {
        race.begin_job();
        let rounds = [8, 1][job];
        for round in 0..rounds {
            for i in 0..3 {
                race.add(i, times(job, i) * (1.0 + 0.001 * round as f64));
            }
        }
    }
    // 1's nine repetitions put its interval wholly below 0's ...
    let lo = Summary::of(&race.reps[0]).ci95_lo;
    assert!(Summary::of(&race.reps[1]).ci95_hi < lo);
    let mut pooled = race.clone();
    race.close_round(&rule);
    // ... but the second job has 0 ahead: one job of two is not most.
    assert_eq!(race.contenders(), [0, 1], "0 kept, 2 dropped");
    assert_eq!(race.per_job(0).len(), 3, "before any job, and two jobs");
    assert_eq!(race.per_job(0)[2], [1.0]);
    // Without the jobs on record (a file of before), the pooled
    // interval decides alone.
    pooled.job_starts.clear();
    pooled.close_round(&rule);
    assert_eq!(pooled.contenders(), [1]);
}

#[test]
fn a_race_in_jobs_hands_over_before_any_drop_then_every_few_rounds() {
    let rule = Rule {
        max_reps: 14,
        final_rounds: 10,
        ..Rule::default()
    };
    let mut race = Race::new(3);
    let mut handed = Vec::new();
    // Three candidates the rounds cannot tell apart: the race runs to
    // its final.
    for round in 0..40 {
        for i in race.contenders() {
            race.add(i, [1.0, 1.2][(round + i) % 2]);
        }
        if race.close_round(&rule) {
            break;
        }
        if race.hand_over(&rule, 5) {
            handed.push(race.rounds);
        }
    }
    // The first job ends before min_reps (3), so no drop rests on one
    // job; then every five rounds until max_reps; the final stays.
    assert_eq!(handed, [2, 7, 12]);
    assert!(race.last.is_some(), "went to its final");
    assert!(!race.hand_over(&rule, 5), "a final is not handed over");
    assert!(!race.hand_over(&rule, 0), "0: one job");
    let duel = Rule {
        eliminate: false,
        ..rule
    };
    let mut two = Race::under(2, &duel);
    two.rounds = 2;
    assert!(!two.hand_over(&duel, 5), "without elimination, one job");
}
