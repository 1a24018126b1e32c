//! Simulated runs (`synthetic`): a rank that enters late, Scalasca's wait
//! states of rooted collectives, the scale measurement's spec, and two
//! configurations compared.

use autocoll::observe::Stage::{Combined as C, Done as D, Enter as N, Received as R, Sent as S};
use autocoll::Collective;

use super::support::{close, e, only_group, run, scratch, write_run};
use crate::synthetic::{self, Spec};

fn source_of(imp: &str, size: usize, late: usize) -> (Option<usize>, String) {
    let dir = scratch(&format!("late-{}", imp.replace(':', "-")));
    let mut spec = Spec::new(imp.parse().unwrap(), size);
    spec.delay = Some((late, 30_000));
    synthetic::write(&dir, &spec, 50).unwrap();
    let report = run(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let i = only_group(&report).load_imbalance.clone().unwrap();
    (i.source, i.sentence)
}

#[test]
fn a_rank_that_enters_late_is_found_as_the_source() {
    for imp in [
        "allreduce:binomial",
        "allreduce:chain",
        "reduce:binary",
        "barrier:knomial:k=3",
        "allreduce:recursive-doubling",
    ] {
        let (source, sentence) = source_of(imp, 8, 5);
        assert_eq!(source, Some(5), "{imp}: {sentence}");
        assert!(
            sentence.ends_with("starts at rank 5")
                || sentence.contains("starts at rank 5.")
                || sentence.contains("starts at rank 5 "),
            "{imp}: {sentence}"
        );
        // Every call of the simulation starts on a common beat: rank 5
        // spends its 30 µs between calls. Over a reduce, whose leaves only
        // send, its time between calls is like the others' (it also left
        // the previous call late, having come late): the analysis names no
        // cause.
        let cause = "the program holds it back (its work between calls), which reshaping the tree does not remove";
        match imp {
            "reduce:binary" => assert!(!sentence.contains(". Rank 5 enters"), "{sentence}"),
            _ => assert!(sentence.ends_with(cause), "{imp}: {sentence}"),
        }
    }
    let (_, chain) = source_of("allreduce:chain", 8, 5);
    assert!(
        chain.starts_with("Rank 5 entered after its children's contributions"),
        "{chain}"
    );
}

#[test]
fn scalasca_wait_states_of_rooted_collectives() {
    // Late Broadcast: the root enters 100 µs late, the others wait for it.
    let dir = scratch("late-bcast");
    let mut spec = Spec::new("bcast:binomial".parse().unwrap(), 4);
    spec.jitter = 0;
    spec.delay = Some((0, 100_000));
    synthetic::write(&dir, &spec, 3).unwrap();
    let report = run(&dir);
    let w = only_group(&report).wait_states.clone().unwrap();
    assert_eq!(w.pattern, "Late Broadcast");
    let ranks: Vec<usize> = w.by_rank.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, vec![1, 2, 3]);
    for r in &w.by_rank {
        close(r.wait.mean_s, 100_000.0);
    }
    std::fs::remove_dir_all(&dir).unwrap();

    // Early Reduce: the root in the call from 0, its one sender from 100.
    let dir = scratch("early-reduce");
    let spec = Spec::new("reduce:flat".parse().unwrap(), 2);
    let call = vec![
        vec![
            e(0, N, None, 0),
            e(120, R, Some(1), 0),
            e(125, C, Some(1), 0),
            e(130, D, None, 0),
        ],
        vec![
            e(100, N, None, 0),
            e(110, S, Some(0), 0),
            e(115, D, None, 0),
        ],
    ];
    write_run(&dir, &spec, &[call], &[]);
    let report = run(&dir);
    let g = only_group(&report);
    let w = g.wait_states.as_ref().unwrap();
    assert_eq!(
        (w.pattern, w.by_rank.len(), w.by_rank[0].rank),
        ("Early Reduce", 1, 0)
    );
    close(w.total_s, 100.0);
    assert_eq!(g.op, Collective::Reduce.name());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_scale_measurement_finds_the_late_rank_across_two_clocks() {
    let dir = scratch("bench-small");
    synthetic::write(&dir, &synthetic::bench_spec(16), 200).unwrap();
    let report = run(&dir);
    assert_eq!(report.clock.alignment, "estimated");
    assert_eq!(report.calls, 200);
    let g = only_group(&report);
    assert_eq!(g.load_imbalance.as_ref().unwrap().source, Some(15));
    assert_eq!(g.classes.iter().map(|c| c.ranks.len()).sum::<usize>(), 16);
    assert!(g.classes.len() < 16, "{} classes", g.classes.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_configurations_compare_stage_by_stage_and_every_plot_draws() {
    let (a, b) = (scratch("cmp-binomial"), scratch("cmp-chain"));
    synthetic::write(&a, &Spec::new("allreduce:binomial".parse().unwrap(), 8), 30).unwrap();
    synthetic::write(&b, &Spec::new("allreduce:chain".parse().unwrap(), 8), 30).unwrap();
    let (ra, rb) = (run(&a), run(&b));
    let cmp = crate::compare::compare(&ra, &rb, Some(7)).unwrap();
    assert_eq!(cmp.len(), 1);
    let c = &cmp[0];
    assert_eq!(
        (c.rank, c.this.imp.as_str(), c.other.imp.as_str()),
        (7, "allreduce:binomial", "allreduce:chain")
    );
    let speedup = ra.groups[0].call_time.mean_s / rb.groups[0].call_time.mean_s;
    assert!(
        (c.speedup - speedup).abs() < 1e-12 && c.speedup < 1.0,
        "{}",
        c.speedup
    );
    // Rank 7's path, summed by kind, is its time in the call in each run.
    let kinds: Vec<&str> = c.rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "arrival wait",
            "down latency",
            "up latency",
            "departure wait",
            "link",
            "leave"
        ]
    );
    for (rows, report) in [
        (c.rows.iter().map(|r| r.1).sum::<f64>(), &ra),
        (c.rows.iter().map(|r| r.2).sum(), &rb),
    ] {
        let rank7 = report.groups[0].ranks.iter().find(|r| r.rank == 7).unwrap();
        assert!(
            (rows * 1e-6 - rank7.time_in_call.mean_s).abs() < 1e-12,
            "{rows} µs"
        );
    }
    let (name, svg) = crate::compare::figure(c).unwrap().unwrap();
    assert_eq!(name, "allreduce-binomial_8B-compare-rank7.svg");
    assert!(svg.starts_with("<svg") && svg.contains("allreduce:chain"));
    let g = &ra.groups[0];
    let (name, svg) = crate::timemap::figure(g, None).unwrap().unwrap();
    assert_eq!(name, "allreduce-binomial_8B-timemap.svg");
    assert!(
        svg.contains("the root&apos;s turn") || svg.contains("the root's turn"),
        "{svg}"
    );
    let (name, _) = crate::serialization::figure(g, Some(&[0, 4]))
        .unwrap()
        .unwrap();
    assert_eq!(name, "allreduce-binomial_8B-serialization.svg");
    assert!(crate::compare::compare(&ra, &rb, Some(8)).is_err());
    for d in [a, b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
