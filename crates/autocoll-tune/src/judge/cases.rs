//! The judge's whole path on small made-up sweeps: a race judged by a
//! sweep of everything, the points apart duelled, a late race settled,
//! a point timed two ways. Each test says the case it builds.

use autocoll::measure::race::Ending;
use autocoll::measure::Method;

use super::fixtures::{duel_row, row};
use super::judged::{judge, Agreement};
use super::pool::pooled;
use super::verdict::Verdict;
use crate::across::{self, LATE_JOBS};
use crate::mark::Mark;
use crate::row::Row;

/// `imp`'s row at bcast on 4 ranks at `bytes`.
fn at(bytes: usize, imp: &str, median: f64, lo: f64, hi: f64) -> Row {
    let mut r = row(imp, median, lo, hi);
    r.bytes = bytes;
    r
}

/// A duel of `ours` against `theirs` at `bytes`, a job per ratio (ours
/// over theirs, paired by round), pooled.
fn duel(bytes: usize, ours: &str, theirs: &str, ratios: &[f64]) -> Vec<Row> {
    let jobs: Vec<Vec<Row>> = ratios
        .iter()
        .map(|&r| {
            let mut a = duel_row(ours, 1.0, theirs, r);
            let mut b = duel_row(theirs, 1.0, ours, 1.0 / r);
            (a.bytes, b.bytes) = (bytes, bytes);
            vec![a, b]
        })
        .collect();
    pooled(&jobs)
}

/// Case: a race of four points judged by a sweep of everything, one
/// point each way (the same, another name for the same messages, within
/// the tolerance, clearly slower). The verdict's text gives the counts,
/// a line for every point not the same by name, and the two times; the
/// two points apart are listed for duels, and duelled, one is won and
/// one lost within 2%.
#[test]
fn a_race_judged_by_a_sweep_of_everything_then_by_duels() {
    let race = [
        at(1024, "bcast:flat", 0.5, 0.5, 0.5),
        at(2048, "bcast:kary:k=3", 0.5, 0.5, 0.5),
        at(4096, "bcast:chain", 0.5, 0.5, 0.5),
        at(8192, "bcast:binomial", 0.5, 0.5, 0.5),
    ];
    let mut everything = Vec::new();
    for bytes in [1024, 2048, 4096, 8192] {
        everything.push(at(bytes, "bcast:flat", 1.00, 0.95, 1.05));
        everything.push(at(bytes, "bcast:chain", 1.01, 0.99, 1.03));
        everything.push(at(bytes, "bcast:binomial", 1.50, 1.40, 1.60));
    }
    let verdict = Verdict {
        points: judge(&race, &everything, 0.02),
        tolerance: 0.02,
        seconds: (10.0, 100.0),
    };
    assert_eq!(
        verdict.to_string(),
        "against the other sweep, at 4 points both measured: the same winner at 2 \
         (1 of them by another name: the same messages), within 2% at 1, not told apart \
         (95% intervals overlap) at 0, clearly slower at 1 (75% same or within)\n\
         \x20 bcast on 4 ranks at 2K: bcast:kary:k=3, the same messages as bcast:flat\n\
         \x20 bcast on 4 ranks at 4K: bcast:chain (+1.0% by the other's figures) for bcast:flat\n\
         \x20 bcast on 4 ranks at 8K: bcast:binomial (+50.0% by the other's figures) for bcast:flat\n\
         measuring time: this sweep 10 s, the other 100 s (0.10 of it)"
    );
    let differing = verdict.differing();
    assert_eq!(
        differing,
        "bcast\t4\t4K\tbcast:chain\tbcast:flat\ttruth\n\
         bcast\t4\t8K\tbcast:binomial\tbcast:flat\ttruth\n"
    );
    // Duelled: chain ahead in the median job, binomial 1.2% behind.
    let duels = [
        duel(4096, "bcast:chain", "bcast:flat", &[0.98, 0.99, 1.01]),
        duel(8192, "bcast:binomial", "bcast:flat", &[1.01, 1.012, 1.015]),
    ];
    let outcomes: Vec<Agreement> = duels
        .iter()
        .map(|d| {
            let judged = judge(&race, d, 0.02);
            assert_eq!(judged.len(), 1, "a duel holds one point");
            judged[0].agreement
        })
        .collect();
    assert_eq!(outcomes, [Agreement::Same, Agreement::Within]);
}

/// Case: a race decided only in its sixth job, `ring` ahead by its own
/// few rounds a job, `recursive-doubling` ahead in every settling job:
/// the settle runs until the median job is known (five of nine) and
/// makes `recursive-doubling` the winner.
#[test]
fn a_race_decided_late_is_settled_in_jobs_of_its_own() {
    let raced = |imp: &str, median: f64, live: bool| {
        let mut r = row(imp, median, median, median);
        (r.op, r.ranks, r.bytes) = ("allreduce".into(), 2, 65536);
        r.race = Some(Mark {
            live,
            ending: Ending::Alone,
            rounds: 28,
            jobs: LATE_JOBS + 1,
            same_as: None,
            paired: None,
            across: None,
        });
        r
    };
    let mut rows = vec![
        raced("allreduce:ring", 75e-6, true),
        raced("allreduce:recursive-doubling", 83e-6, false),
        raced("allreduce:binomial", 120e-6, false),
    ];
    rows[1].reps = 20;
    rows[2].reps = 6;
    let mut jobs = 0;
    let settled = across::settle_in_jobs(
        &mut rows,
        9,
        || false,
        |a, b, method| {
            jobs += 1;
            assert_eq!((a, b), ("allreduce:ring", "allreduce:recursive-doubling"));
            let mut ring = duel_row(a, 80e-6, b, 1.2);
            let mut rd = duel_row(b, 67e-6, a, 1.0 / 1.2);
            for r in [&mut ring, &mut rd] {
                (r.op, r.ranks, r.bytes, r.method) = ("allreduce".into(), 2, 65536, method);
            }
            Ok::<_, ()>(vec![ring, rd])
        },
    );
    assert_eq!(settled, Ok(()));
    assert_eq!(jobs, 5, "stopped once five of nine put one side ahead");
    assert!(
        rows[0].median_s < rows[1].median_s,
        "the race's own figures"
    );
    let across = rows[1].race.as_ref().unwrap().across.as_ref().unwrap();
    assert!(across.range[1] < 1.0, "ahead in every settling job");
    let best = crate::table::winners(&rows);
    assert_eq!(
        best.values().next().unwrap().imp,
        "allreduce:recursive-doubling"
    );
}

/// Case: the race timed a point with `truth`, the sweep of everything
/// fell back to `barrier` there. The duel asks `truth`, the question the
/// race answered; by `barrier` the race's pick would have lost.
#[test]
fn a_point_timed_two_ways_is_duelled_by_the_more_trusted_method() {
    let bytes = 65536;
    let race = [at(bytes, "bcast:binary:seg=32K", 0.5, 0.5, 0.5)];
    let theirs = |imp: &str, median: f64| {
        let mut r = at(bytes, imp, median, median * 0.97, median * 1.03);
        r.method = Method::Barrier;
        r
    };
    let reference = [
        theirs("bcast:kary:k=3:seg=32K", 1.0),
        theirs("bcast:binary:seg=32K", 1.05),
    ];
    let judged = &judge(&race, &reference, 0.02)[0];
    assert_eq!(
        (judged.our_method, judged.method),
        (Method::Truth, Method::Barrier)
    );
    assert_eq!(judged.duel_method(), Method::Truth);
    let (ours, other) = ("bcast:binary:seg=32K", "bcast:kary:k=3:seg=32K");
    let mut by_barrier = duel(bytes, ours, other, &[1.03, 1.05, 1.12]);
    for r in &mut by_barrier {
        r.method = Method::Barrier;
    }
    let by_truth = duel(bytes, ours, other, &[0.66, 0.8, 0.9]);
    let by = |rows: &[Row]| judge(&race, rows, 0.02)[0].agreement;
    assert_eq!(by(&by_barrier), Agreement::Differ);
    assert_eq!(by(&by_truth), Agreement::Same);
}

/// Case: the race's pick at a point was never timed by the other sweep
/// (a duel whose jobs all fell back, a sweep over fewer candidates): the
/// verdict says so instead of printing a figure it does not have.
#[test]
fn a_pick_the_other_sweep_never_timed_is_said_so() {
    let race = [at(1024, "bcast:chain", 0.5, 0.5, 0.5)];
    let other = [at(1024, "bcast:flat", 1.0, 0.95, 1.05)];
    let points = judge(&race, &other, 0.02);
    assert_eq!(points[0].agreement, Agreement::Differ);
    let text = Verdict {
        points,
        tolerance: 0.02,
        seconds: (1.0, 1.0),
    }
    .to_string();
    assert!(
        text.contains("bcast:chain (not timed by the other) for bcast:flat"),
        "{text}"
    );
    assert!(!text.contains("NaN"), "{text}");
}
