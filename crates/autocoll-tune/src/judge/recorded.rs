//! The recorded sweeps of docs/tuning/evidence judged again.

use super::*;
use crate::partial::Partial;
use crate::table::winners;
use crate::Row;
use autocoll::measure::Method;

/// The recorded pair `race` and `full` (files of docs/tuning/evidence)
/// judged again, checked against the verdict recorded in `verdict`;
/// with the race's rows.
fn recorded(race: &str, full: &str, verdict: &str) -> (Verdict, Vec<Row>) {
    let race = evidence(race);
    let full = evidence(full);
    let judged = Verdict {
        points: judge(&race.rows, &full.rows, 0.02),
        tolerance: 0.02,
        seconds: (race.elapsed_s, full.elapsed_s),
    };
    let text = std::fs::read_to_string(evidence_dir().join(verdict)).unwrap();
    assert_eq!(judged.to_string().trim_end(), text.trim_end(), "{verdict}");
    (judged, race.rows)
}

fn evidence_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tuning/evidence")
}

fn evidence(name: &str) -> Partial {
    match crate::partial::load(&evidence_dir().join(name)) {
        Ok(p) if !p.rows.is_empty() => p,
        _ => panic!("{name} is missing or unreadable"),
    }
}

/// The recorded pairs of sweeps (docs/tuning/evidence: a race and a
/// sweep measuring every candidate, over tcp on 2 and on 4 ranks)
/// judged again give the verdicts recorded beside them and quoted in
/// docs/tuning.md.
#[test]
fn issue20_the_recorded_sweeps_are_judged_as_the_docs_say() {
    for (ranks, slower) in [(2, 1), (4, 1)] {
        let (verdict, _) = recorded(
            &format!("tcp-n{ranks}-race.partial.json"),
            &format!("tcp-n{ranks}-exhaustive.partial.json"),
            &format!("tcp-n{ranks}-verdict.txt"),
        );
        assert_eq!(verdict.points.len(), 9);
        assert_eq!(verdict.count(Agreement::Differ), slower);
    }
    // On virtual time, where a call's time is the model's (no noise),
    // the race picks the exhaustive sweep's own winner at every point
    // that sweep finished (8 of 9: it was stopped in the last).
    let (verdict, _) = recorded(
        "sim-n8-race.partial.json",
        "sim-n8-exhaustive.partial.json",
        "sim-n8-verdict.txt",
    );
    assert_eq!(verdict.points.len(), 8);
    assert_eq!(verdict.count(Agreement::Same), 8);
    // On tcp with the heap held steady (2026-11-27), the points where
    // the race's winner and the reference's differ, each judged again
    // by a duel of the two: on 2 ranks the race's won all three; on 4
    // ranks four of five, the fifth clearly slower. Then with the
    // race's final, 2 and 4 ranks in one sweep: eight points apart, the
    // race's winner won six duels outright (one more not told apart,
    // one clearly slower). With a job per point: seven apart, six won;
    // with --min-reps 5, ten apart, seven won (one more within 2%); a
    // third run, eleven apart, six won (two more within 2%). Each of
    // those duels ran in one job; from the tcp-spin run on, in nine
    // (`-jJ` files), judged by the median job: its race seven apart,
    // three won and one more within 2%; measuring everything again,
    // six apart, four won and two more within 2%; a second race
    // against the same reference, six apart, four won and one more
    // within 2%; a third, its finals settled in five jobs each, eleven
    // apart, five won and four more within 2%. From tcp-paired on, a
    // duel's jobs are read by their rounds paired (the files hold the
    // pairing): the tcp-spin race and second exhaustive sweep duelled
    // again that way; a race without settling its finals; five with
    // their finals settled in nine jobs; and those of the history's
    // trials, of settles stopping once decided, and of settling jobs
    // that fell back run again; then with crowded ranks bound, and
    // with a point's race in jobs of a few rounds (the default); then
    // on a second machine, with drops resting on most jobs; there
    // again, quieter, duels asking the more trusted method; there,
    // measuring everything again, and a race's duels run again.
    for (stem, judged, reference, jobs, apart, won, within) in DUELLED {
        let (verdict, rows) = recorded(
            &format!("{judged}.partial.json"),
            &format!("{reference}.partial.json"),
            &format!("{stem}-verdict.txt"),
        );
        let differing = verdict.differing();
        assert_eq!(differing.lines().count(), apart, "{stem}");
        let (mut duels_won, mut duels_within) = (0, 0);
        for line in differing.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let duel = format!("{stem}-duel-{}-{}-{}", f[0], f[1], f[2]);
            let judged = judge(&rows, &duelled(&duel, jobs), 0.02);
            assert_eq!(judged.len(), 1, "{line}");
            duels_won += usize::from(judged[0].agreement == Agreement::Same);
            duels_within += usize::from(judged[0].agreement == Agreement::Within);
        }
        assert_eq!((duels_won, duels_within), (won, within), "{stem}");
    }
}

/// A recorded race decided late, in its sixth job, with
/// `allreduce:ring` ahead by its own figures: its settling jobs put
/// `allreduce:recursive-doubling` ahead in every one, and it won, as
/// in the duels of before (docs/tuning.md, "Late decisions settled
/// too").
#[test]
fn issue20_a_race_decided_late_is_settled_in_jobs_of_its_own() {
    let rows: Vec<Row> = evidence("tcp-epyc-late-c.partial.json")
        .rows
        .into_iter()
        .filter(|r| (r.op.as_str(), r.ranks, r.bytes) == ("allreduce", 2, 65536))
        .collect();
    let row = |id: &str| rows.iter().find(|r| r.imp == id).unwrap();
    let (ring, rd) = (row("allreduce:ring"), row("allreduce:recursive-doubling"));
    let mark = rd.race.as_ref().unwrap();
    assert!(mark.jobs >= crate::across::LATE_JOBS && mark.paired.is_none());
    assert!(ring.median_s < rd.median_s, "the race's own figures");
    let across = mark.across.as_ref().unwrap();
    assert!(across.range[1] < 1.0, "ahead in every settling job");
    let best = winners(&rows);
    assert_eq!(
        best.values().next().unwrap().imp,
        "allreduce:recursive-doubling"
    );
}

/// At bcast, 4 ranks, 64K on the second machine the races timed the
/// candidates with truth and the reference fell back to barrier. The
/// duels first asked barrier, the reference's method (recorded as
/// `STEM-barrier-duel-*`), and had every race's pick behind; asked
/// truth, the race's, they have it ahead or level: the two methods
/// rank these trees apart, and a duel asks the question the race
/// answered.
#[test]
fn issue20_a_point_timed_two_ways_is_duelled_by_the_more_trusted() {
    let reference = evidence(&format!("{EPYC}.partial.json")).rows;
    for (stem, by_barrier, by_truth) in [
        ("tcp-epyc-jobs-a", Agreement::Overlap, Agreement::Same),
        ("tcp-epyc-pooled-a", Agreement::Overlap, Agreement::Same),
        ("tcp-epyc-jobs-b", Agreement::Overlap, Agreement::Same),
        ("tcp-epyc-pooled-b", Agreement::Differ, Agreement::Within),
    ] {
        let race = evidence(&format!("{stem}.partial.json")).rows;
        let point = |r: &&Judged| r.point == ("bcast".into(), 4, 65536);
        let judged = judge(&race, &reference, 0.02);
        let judged = judged.iter().find(point).unwrap();
        assert_eq!(
            (judged.our_method, judged.method),
            (Method::Truth, Method::Barrier)
        );
        assert_eq!(judged.duel_method(), Method::Truth);
        let by = |kind: &str| {
            let duel = duelled(&format!("{stem}-{kind}duel-bcast-4-64K"), 9);
            judge(&race, &duel, 0.02)
                .iter()
                .find(point)
                .unwrap()
                .agreement
        };
        assert_eq!((by("barrier-"), by("")), (by_barrier, by_truth), "{stem}");
    }
}

/// The recorded runs whose differing points were duelled: their
/// stem (`STEM-verdict.txt`, `STEM-duel-*`), the sweep judged and the
/// reference that judges it (exhaustive), jobs a duel ran in, points
/// apart, duels the judged sweep's winner won, and those it lost
/// within 2%.
#[allow(clippy::type_complexity)]
#[rustfmt::skip]
const DUELLED: [(&str, &str, &str, usize, usize, usize, usize); 89] = [
    ("tcp-n2-heap", "tcp-n2-heap-race", "tcp-n2-heap-exhaustive", 1, 3, 3, 0),
    ("tcp-n4-heap", "tcp-n4-heap-race", "tcp-n4-heap-exhaustive", 1, 5, 4, 0),
    ("tcp-final", "tcp-final-race", "tcp-final-exhaustive", 1, 8, 6, 0),
    ("tcp-ppj", "tcp-ppj-race", "tcp-ppj-exhaustive", 1, 7, 6, 0),
    ("tcp-ppj-mr5", "tcp-ppj-mr5-race", "tcp-ppj-mr5-exhaustive", 1, 10, 7, 1),
    ("tcp-ppj3", "tcp-ppj3-race", "tcp-ppj3-exhaustive", 1, 11, 6, 2),
    ("tcp-spin", "tcp-spin-race", SPIN, 9, 7, 3, 1),
    ("tcp-spin-exhaustive2", "tcp-spin-exhaustive2", SPIN, 9, 6, 4, 2),
    ("tcp-spin-race-b", "tcp-spin-race-b", SPIN, 9, 6, 3, 2),
    ("tcp-spin-race-c", "tcp-spin-race-c", SPIN, 9, 11, 5, 4),
    // Duels read by their rounds paired, from here on.
    ("tcp-paired-spin-race", "tcp-spin-race", SPIN, 9, 7, 5, 1),
    ("tcp-paired-spin-exhaustive2", "tcp-spin-exhaustive2", SPIN, 9, 6, 2, 3),
    ("tcp-paired-nofinal", "tcp-paired-nofinal", SPIN, 9, 8, 1, 1),
    ("tcp-paired-a", "tcp-paired-a", SPIN, 9, 6, 5, 1),
    ("tcp-paired-b", "tcp-paired-b", SPIN, 9, 5, 5, 0),
    ("tcp-paired-c", "tcp-paired-c", SPIN, 9, 7, 4, 1),
    ("tcp-paired-d", "tcp-paired-d", SPIN, 9, 8, 4, 1),
    ("tcp-paired-e", "tcp-paired-e", SPIN, 9, 8, 5, 1),
    // Ties and thirds settled too, and the runner-up (not kept).
    ("tcp-tied-a", "tcp-tied-a", SPIN, 9, 9, 4, 3),
    ("tcp-tied-b", "tcp-tied-b", SPIN, 9, 8, 6, 1),
    ("tcp-tied-c", "tcp-tied-c", SPIN, 9, 8, 4, 1),
    ("tcp-tied-d", "tcp-tied-d", SPIN, 9, 9, 5, 1),
    ("tcp-runnerup", "tcp-runnerup", SPIN, 9, 10, 5, 1),
    // Finals settled, a settle stopping once decided.
    ("tcp-settled-a", "tcp-settled-a", SPIN, 9, 9, 6, 1),
    ("tcp-settled-b", "tcp-settled-b", SPIN, 9, 9, 5, 4),
    ("tcp-settled-c", "tcp-settled-c", SPIN, 9, 7, 3, 1),
    ("tcp-settled-d", "tcp-settled-d", SPIN, 9, 10, 5, 1),
    // A settling job that fell back run again.
    ("tcp-retry-a", "tcp-retry-a", SPIN, 9, 6, 2, 2),
    ("tcp-retry-b", "tcp-retry-b", SPIN, 9, 8, 5, 3),
    ("tcp-retry-c", "tcp-retry-c", SPIN, 9, 6, 4, 1),
    ("tcp-retry-d", "tcp-retry-d", SPIN, 9, 6, 3, 1),
    ("tcp-retry-e", "tcp-retry-e", SPIN, 9, 5, 3, 0),
    ("tcp-retry-f", "tcp-retry-f", SPIN, 9, 9, 3, 5),
    ("tcp-retry-g", "tcp-retry-g", SPIN, 9, 9, 4, 2),
    // The ranks of the 4-rank points bound round robin, against a
    // reference measured so.
    ("tcp-bound-a", "tcp-bound-a", BOUND, 9, 6, 4, 1),
    ("tcp-bound-b", "tcp-bound-b", BOUND, 9, 9, 5, 3),
    ("tcp-bound-c", "tcp-bound-c", BOUND, 9, 5, 3, 1),
    ("tcp-bound-d", "tcp-bound-d", BOUND, 9, 7, 4, 2),
    ("tcp-bound-e", "tcp-bound-e", BOUND, 9, 8, 4, 0),
    ("tcp-bound-f", "tcp-bound-f", BOUND, 9, 8, 3, 3),
    ("tcp-bound-exhaustive2", "tcp-bound-exhaustive2", BOUND, 9, 5, 3, 1),
    // A point's race in jobs of five rounds (the default since).
    ("tcp-jobs-a", "tcp-jobs-a", BOUND, 9, 4, 4, 0),
    ("tcp-jobs-b", "tcp-jobs-b", BOUND, 9, 7, 5, 0),
    ("tcp-jobs-c", "tcp-jobs-c", BOUND, 9, 7, 4, 2),
    ("tcp-jobs-d", "tcp-jobs-d", BOUND, 9, 5, 3, 1),
    ("tcp-jobs-e", "tcp-jobs-e", BOUND, 9, 7, 6, 0),
    ("tcp-jobs-f", "tcp-jobs-f", BOUND, 9, 8, 5, 2),
    ("tcp-jobs-g", "tcp-jobs-g", BOUND, 9, 4, 3, 0),
    ("tcp-jobs-h", "tcp-jobs-h", BOUND, 9, 5, 3, 2),
    ("tcp-jobs-i", "tcp-jobs-i", BOUND, 9, 8, 5, 1),
    ("tcp-jobs-j", "tcp-jobs-j", BOUND, 9, 7, 2, 3),
    ("tcp-jobs-k", "tcp-jobs-k", BOUND, 9, 6, 4, 1),
    ("tcp-jobs-l", "tcp-jobs-l", BOUND, 9, 8, 4, 3),
    ("tcp-quiet-a", "tcp-quiet-a", BOUND, 9, 7, 4, 1),
    ("tcp-quiet-b", "tcp-quiet-b", BOUND, 9, 6, 6, 0),
    ("tcp-quiet-c", "tcp-quiet-c", BOUND, 9, 7, 5, 0),
    ("tcp-quiet-d", "tcp-quiet-d", BOUND, 9, 9, 7, 0),
    ("tcp-quiet-e", "tcp-quiet-e", BOUND, 9, 6, 4, 2),
    ("tcp-quiet-f", "tcp-quiet-f", BOUND, 9, 5, 2, 1),
    ("tcp-quiet-g", "tcp-quiet-g", BOUND, 9, 8, 6, 1),
    ("tcp-quiet-h", "tcp-quiet-h", BOUND, 9, 6, 5, 1),
    ("tcp-quiet-i", "tcp-quiet-i", BOUND, 9, 6, 5, 0),
    ("tcp-quiet-j", "tcp-quiet-j", BOUND, 9, 7, 4, 2),
    ("tcp-quiet-k", "tcp-quiet-k", BOUND, 9, 7, 5, 0),
    ("tcp-quiet-l", "tcp-quiet-l", BOUND, 9, 7, 4, 1),
    // Another machine, its own reference; drops resting on most jobs
    // and, for comparison, on pooled figures, one after the other.
    // Duelled by the more trusted method of the race's and the
    // reference's (truth at bcast, 4 ranks, 64K, where the reference
    // fell back to barrier).
    ("tcp-epyc-jobs-a", "tcp-epyc-jobs-a", EPYC, 9, 9, 3, 1),
    ("tcp-epyc-pooled-a", "tcp-epyc-pooled-a", EPYC, 9, 9, 4, 0),
    ("tcp-epyc-jobs-b", "tcp-epyc-jobs-b", EPYC, 9, 7, 4, 1),
    ("tcp-epyc-pooled-b", "tcp-epyc-pooled-b", EPYC, 9, 7, 4, 3),
    // The same machine quieter, a reference of its own; every race
    // judged by its duels from the start.
    ("tcp-epyc-trust-a", "tcp-epyc-trust-a", TRUST, 9, 5, 5, 0),
    ("tcp-epyc-trust-b", "tcp-epyc-trust-b", TRUST, 9, 5, 2, 0),
    ("tcp-epyc-trust-c", "tcp-epyc-trust-c", TRUST, 9, 4, 3, 0),
    ("tcp-epyc-trust-d", "tcp-epyc-trust-d", TRUST, 9, 5, 3, 1),
    ("tcp-epyc-trust-e", "tcp-epyc-trust-e", TRUST, 9, 7, 1, 1),
    // Against the same reference, a race decided late settled like a
    // final (across::LATE_JOBS).
    ("tcp-epyc-late-a", "tcp-epyc-late-a", TRUST, 9, 5, 3, 1),
    ("tcp-epyc-late-b", "tcp-epyc-late-b", TRUST, 9, 6, 3, 1),
    ("tcp-epyc-late-c", "tcp-epyc-late-c", TRUST, 9, 5, 3, 1),
    ("tcp-epyc-late-d", "tcp-epyc-late-d", TRUST, 9, 6, 5, 0),
    ("tcp-epyc-late-e", "tcp-epyc-late-e", TRUST, 9, 7, 4, 0),
    ("tcp-epyc-late-f", "tcp-epyc-late-f", TRUST, 9, 5, 3, 0),
    ("tcp-epyc-late-g", "tcp-epyc-late-g", TRUST, 9, 3, 3, 0),
    // The code before (old) and this (new), interleaved.
    ("tcp-epyc-pair-old-1", "tcp-epyc-pair-old-1", TRUST, 9, 5, 5, 0),
    ("tcp-epyc-pair-new-1", "tcp-epyc-pair-new-1", TRUST, 9, 5, 4, 0),
    ("tcp-epyc-pair-old-2", "tcp-epyc-pair-old-2", TRUST, 9, 6, 4, 0),
    ("tcp-epyc-pair-new-2", "tcp-epyc-pair-new-2", TRUST, 9, 6, 5, 0),
    // Measuring everything again against the same reference, and a
    // race's duels run again (the judge's own noise).
    ("tcp-epyc-exhaustive2", "tcp-epyc-exhaustive2", TRUST, 9, 6, 3, 0),
    ("tcp-epyc-late-g-again", "tcp-epyc-late-g", TRUST, 9, 3, 3, 0),
    ("tcp-epyc-exhaustive3", "tcp-epyc-exhaustive3", TRUST, 9, 3, 2, 0),
    ("tcp-epyc-late-g-again2", "tcp-epyc-late-g", TRUST, 9, 3, 3, 0),
];

/// The reference of the tcp-spin runs and of those after them.
const SPIN: &str = "tcp-spin-exhaustive";

/// The reference of the runs with crowded ranks bound to cores.
const BOUND: &str = "tcp-bound-exhaustive";

/// The reference measured on the second machine (AMD EPYC, 2 cores).
const EPYC: &str = "tcp-epyc-exhaustive";

/// The reference measured on the second machine, quieter (2026-11-28,
/// evening).
const TRUST: &str = "tcp-epyc-trust-exhaustive";

/// A recorded duel's rows: its one file, or its jobs' pooled.
fn duelled(duel: &str, jobs: usize) -> Vec<Row> {
    if jobs == 1 {
        return evidence(&format!("{duel}.partial.json")).rows;
    }
    let each: Vec<Vec<Row>> = (1..=jobs)
        .map(|j| evidence(&format!("{duel}-j{j}.partial.json")).rows)
        .collect();
    pooled(&each)
}
