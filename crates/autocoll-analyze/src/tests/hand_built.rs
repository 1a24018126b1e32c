//! Traces written by hand and worked out by hand: a 3-rank allreduce, the
//! same with a skewed clock and with a rank missing, damaged and
//! incomplete directories, the timeline's structure, and a segmented call.

use std::path::Path;

use autocoll::observe::Stage::{Done as D, Enter as N, Received as R, Sent as S};

use super::support::{
    check_timeline, close, error, es, hand_built, ns, only_group, run, scratch, timeline, write_run,
};
use crate::result::Report;
use crate::synthetic::{self, rank_file, Spec};

/// The analysis of the hand-built 3-rank run, written to (and then
/// removed from) a scratch directory named after `name`.
fn hand_built_report(name: &str) -> Report {
    let dir = scratch(name);
    let (spec, calls) = hand_built();
    write_run(&dir, &spec, &calls, &[]);
    let report = run(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    report
}

#[test]
fn the_hand_built_three_rank_trace_gives_the_root_node_worked_out_by_hand() {
    let report = hand_built_report("hand-root");
    let g = only_group(&report);
    assert_eq!(
        (g.calls, g.tree, report.clock.alignment),
        (2, true, "shared")
    );
    close(g.call_time.mean_s, 410.0);

    // The root: contributions own (entry), child 1, child 2.
    let n = &g.nodes[0];
    assert_eq!((n.rank, n.children.clone()), (0, vec![1, 2]));
    close(n.down_latency.unwrap().mean_s, (80.0 + 40.0) / 2.0);
    close(n.up_latency.unwrap().mean_s, (20.0 + 10.0) / 2.0);
    let c: Vec<(usize, bool, Vec<u64>, u64)> = n
        .contributors
        .iter()
        .map(|c| (c.rank, c.own, c.arrival_order.clone(), c.last))
        .collect();
    assert_eq!(
        c,
        vec![
            (0, true, vec![2], 0),
            (1, false, vec![0, 1, 1], 1),
            (2, false, vec![0, 1, 1], 1)
        ]
    );
    close(n.contributors[0].arrival_wait.mean_s, (180.0 + 260.0) / 2.0);
    close(n.contributors[1].arrival_wait.mean_s, (120.0 + 0.0) / 2.0);
    close(n.contributors[2].arrival_wait.mean_s, (0.0 + 80.0) / 2.0);
    let d: Vec<(usize, Vec<u64>)> = n
        .departures
        .iter()
        .map(|d| (d.rank, d.departure_order.clone()))
        .collect();
    assert_eq!(d, vec![(1, vec![2]), (2, vec![0, 2])]);
    close(n.departures[0].departure_wait.mean_s, 0.0);
    close(n.departures[1].departure_wait.mean_s, (20.0 + 10.0) / 2.0);
    close(n.serialization[0].mean_s, 15.0);
    close(n.serialization[1].mean_s, 30.0);
}

#[test]
fn the_hand_built_three_rank_trace_gives_the_links_and_a_path_worked_out_by_hand() {
    let report = hand_built_report("hand-links");
    let g = only_group(&report);

    // Links: (t4 − t1) − (t3 − t2).
    let l: Vec<(usize, usize, f64)> = g
        .links
        .iter()
        .map(|l| (l.a, l.b, l.two_way_latency.unwrap().mean_s))
        .collect();
    assert_eq!((l[0].0, l[0].1, l[1].0, l[1].1), (1, 0, 2, 0));
    close(l[0].2, (110.0 + 50.0) / 2.0);
    close(l[1].2, (170.0 + 190.0) / 2.0);

    // Rank 2's path, stage by stage.
    let p = g.paths.iter().find(|p| p.rank == 2).unwrap();
    let names: Vec<&str> = p.stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(
        names,
        [
            "arrival wait @2",
            "down latency @2",
            "arrival wait @0",
            "down latency @0",
            "up latency @0",
            "departure wait @0→2",
            "link 0→2",
            "leave @2"
        ]
    );
    for (s, want) in p
        .stages
        .iter()
        .zip([0.0, 30.0, 40.0, 60.0, 15.0, 15.0, 90.0, 10.0])
    {
        close(s.time.mean_s, want);
    }
}

#[test]
fn the_hand_built_three_rank_trace_gives_the_waits_worked_out_by_hand() {
    let report = hand_built_report("hand-waits");
    let g = only_group(&report);

    // Scalasca: Wait at N x N and N x N Completion.
    let w = g.wait_states.as_ref().unwrap();
    assert_eq!(
        (w.pattern, w.completion_pattern),
        ("Wait at N x N", Some("N x N Completion"))
    );
    let by: Vec<(usize, f64)> = w.by_rank.iter().map(|r| (r.rank, r.wait.mean_s)).collect();
    close(by[0].1, 200.0);
    close(by[1].1, 50.0);
    close(by[2].1, 50.0);
    close(w.total_s, 600.0);
    close(w.by_rank[2].completion.unwrap().mean_s, (90.0 + 80.0) / 2.0);

    // Arrival pattern: enters (50, 100, 200) and (1050, 1300, 1200).
    let a = g.arrival_pattern.as_ref().unwrap();
    close(a.worst_case.mean_s, (150.0 + 250.0) / 2.0);
    assert!((a.average_case.mean_s - ns((500.0 / 9.0 + 800.0 / 9.0) / 2.0)).abs() < 1e-15);

    // Rank 0's local stages in call 0: receive 240, combine 20, send 40,
    // finish 20; in call 1: 280, 20, 20, 10.
    let r0 = &g.ranks[0].stages;
    close(r0.receive.mean_s, 260.0);
    close(r0.combine.mean_s, 20.0);
    close(r0.send.mean_s, 30.0);
    close(r0.finish.mean_s, 15.0);
}

#[test]
fn the_hand_built_three_rank_trace_gives_the_critical_paths_worked_out_by_hand() {
    let report = hand_built_report("hand-critical");
    let g = only_group(&report);

    // Critical paths: 2 → 0 → 2 (260 ns), then 1 → 0 → 2 (160 ns).
    let cp = g.critical_path.as_ref().unwrap();
    close(cp.mean_length_s, 210.0);
    let share = |r: usize| cp.ranks.iter().find(|x| x.rank == r).unwrap();
    assert_eq!(
        (share(0).share, share(1).share, share(2).share),
        (1.0, 0.5, 1.0)
    );
    assert_eq!((share(1).start_share, share(2).start_share), (0.5, 0.5));
    let steps: Vec<(usize, &str, Option<usize>, f64)> = cp
        .slowest_call
        .steps
        .iter()
        .map(|s| (s.rank, s.step.name(), s.peer, s.duration_s))
        .collect();
    assert_eq!(cp.slowest_call.seq, 0);
    let want = [
        (2, "send", Some(0), 30.0),
        (0, "transfer", Some(2), 70.0),
        (0, "combine", Some(2), 10.0),
        (0, "send", Some(1), 20.0),
        (0, "send", Some(2), 20.0),
        (2, "transfer", Some(0), 100.0),
        (2, "finish", None, 10.0),
    ];
    assert_eq!(steps.len(), want.len());
    for (got, want) in steps.iter().zip(want) {
        assert_eq!((got.0, got.1, got.2), (want.0, want.1, want.2));
        close(got.3, want.3);
    }

    // Last arrivals split evenly: no single source.
    let i = g.load_imbalance.as_ref().unwrap();
    assert_eq!(i.source, None, "{}", i.sentence);
    assert!(i.sentence.contains("in 50%"), "{}", i.sentence);
}

#[test]
fn two_way_latency_is_right_with_a_skewed_clock_and_a_wrong_offset_estimate() {
    let dir = scratch("skew");
    let (mut spec, calls) = hand_built();
    // Rank 2's clock reads 1 s ahead; its offset estimate is 700 ns off.
    spec.skew[2] = 1_000_000_000;
    spec.offset_error = 700;
    write_run(&dir, &spec, &calls, &[]);
    let report = run(&dir);
    assert_eq!(report.clock.alignment, "estimated");
    assert!((report.clock.uncertainty_s.unwrap() - 1e-6).abs() < 1e-18);
    let g = only_group(&report);
    let l: Vec<f64> = g
        .links
        .iter()
        .map(|l| l.two_way_latency.unwrap().mean_s)
        .collect();
    close(l[0], 80.0);
    close(l[1], 180.0);
    let two = g.links[1].two_way_latency.unwrap();
    close(two.min_s, 170.0);
    close(two.max_s, 190.0);
    // The one-way times do use the estimate: 700 ns off, one way and back.
    close(
        g.links[1].one_way_a_to_b.unwrap().mean_s,
        (70.0 + 110.0) / 2.0 + 700.0,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_rank_is_named_and_analysed_around() {
    let dir = scratch("missing");
    let (spec, calls) = hand_built();
    write_run(&dir, &spec, &calls, &[2]);
    let report = run(&dir);
    assert_eq!(report.missing_ranks, vec![2]);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.starts_with("rank 2 has no file")),
        "{:?}",
        report.warnings
    );
    let g = only_group(&report);
    let n = &g.nodes[0];
    let who: Vec<usize> = n.contributors.iter().map(|c| c.rank).collect();
    assert_eq!(who, vec![0, 1]);
    // Without rank 2's send, rank 1 is the last contribution at the root.
    assert_eq!(n.contributors[1].last, 2);
    assert_eq!(g.links.len(), 1);
    close(g.links[0].two_way_latency.unwrap().mean_s, 80.0);
    assert_eq!(g.ranks.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_trace_files_are_refused_naming_the_file() {
    let (spec, calls) = hand_built();
    let named = |dir: &Path, rank: usize, msg: &str, why: &str| {
        let file = rank_file(dir, rank).display().to_string();
        assert!(msg.contains(&file), "{msg} does not name {file}");
        assert!(msg.contains(why), "{msg} does not say `{why}`");
    };

    let dir = scratch("mixed");
    write_run(&dir, &spec, &calls, &[]);
    let other = Spec {
        seed: 2,
        ..spec.clone()
    };
    write_run(&dir, &other, &calls, &[0, 2]);
    named(&dir, 1, &error(&dir), "different runs");

    let dir = scratch("cut");
    write_run(&dir, &spec, &calls, &[]);
    let path = rank_file(&dir, 2);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 20]).unwrap();
    named(&dir, 2, &error(&dir), "cut short");

    let dir = scratch("corrupt");
    write_run(&dir, &spec, &calls, &[]);
    let path = rank_file(&dir, 0);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 0x04;
    std::fs::write(&path, &bytes).unwrap();
    named(&dir, 0, &error(&dir), "damaged");

    let dir = scratch("unlike");
    write_run(&dir, &spec, &calls, &[]);
    let bigger = Spec {
        bytes: 16,
        ..spec.clone()
    };
    write_run(&dir, &bigger, &calls, &[0, 1]);
    named(&dir, 2, &error(&dir), "not of one run");

    let dir = scratch("empty");
    assert!(error(&dir).contains("no trace files"), "{}", error(&dir));
    for d in ["mixed", "cut", "corrupt", "unlike", "empty"] {
        std::fs::remove_dir_all(scratch(d)).unwrap();
    }
}

#[test]
fn the_timeline_has_both_ends_of_every_flow_and_nested_slices() {
    let dir = scratch("chrome");
    let (spec, calls) = hand_built();
    write_run(&dir, &spec, &calls, &[]);
    // 2 calls × 4 messages.
    let text = timeline(&dir, "t.json");
    check_timeline(&text, 8);
    // Each call's critical path is marked: 7 steps in call 0, 9 in call 1.
    assert_eq!(text.matches(r#""critical":true"#).count(), 16);

    let dir = scratch("chrome-binomial");
    let mut spec = Spec::new("allreduce:binomial".parse().unwrap(), 8);
    spec.skew[7] = -40_000;
    spec.offset_error = 500;
    spec.hosts[7] = "h1".into();
    synthetic::write(&dir, &spec, 20).unwrap();
    // 20 calls × 7 messages up and 7 down.
    check_timeline(&timeline(&dir, "t.json"), 20 * 14);
    for d in ["chrome", "chrome-binomial"] {
        std::fs::remove_dir_all(scratch(d)).unwrap();
    }
}

#[test]
fn a_segmented_call_is_measured_on_its_last_segment() {
    // bcast over a chain 0 → 1 → 2 in two segments.
    let dir = scratch("segments");
    let spec = Spec::new("bcast:chain:seg=4".parse().unwrap(), 3);
    let call = vec![
        vec![
            es(0, N, None, 0),
            es(10, S, Some(1), 0),
            es(20, S, Some(1), 1),
            es(30, D, None, 0),
        ],
        vec![
            es(5, N, None, 0),
            es(15, R, Some(0), 0),
            es(18, S, Some(2), 0),
            es(25, R, Some(0), 1),
            es(29, S, Some(2), 1),
            es(35, D, None, 0),
        ],
        vec![
            es(0, N, None, 0),
            es(22, R, Some(1), 0),
            es(33, R, Some(1), 1),
            es(36, D, None, 0),
        ],
    ];
    write_run(&dir, &spec, &[call], &[]);
    let report = run(&dir);
    let g = only_group(&report);
    // The root's up latency runs from its entry (nothing goes down) to its
    // last segment's departure; rank 1's from the last segment's arrival.
    close(g.nodes[0].up_latency.unwrap().mean_s, 20.0);
    close(g.nodes[1].up_latency.unwrap().mean_s, 4.0);
    assert!(g
        .nodes
        .iter()
        .all(|n| n.down_latency.is_none() && n.contributors.is_empty()));
    let p = g.paths.iter().find(|p| p.rank == 2).unwrap();
    let got: Vec<(&str, f64)> = p
        .stages
        .iter()
        .map(|s| (s.stage.as_str(), s.time.mean_s))
        .collect();
    let want = [
        ("up latency @0", 20.0),
        ("departure wait @0→1", 0.0),
        ("link 0→1", 5.0),
        ("up latency @1", 4.0),
        ("departure wait @1→2", 0.0),
        ("link 1→2", 4.0),
        ("leave @2", 3.0),
    ];
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.0, w.0);
        close(g.1, w.1);
    }
    // Data go one way: no two-way latency, one-way times of the last segment.
    assert!(g.links.iter().all(|l| l.two_way_latency.is_none()));
    close(g.links[0].one_way_b_to_a.unwrap().mean_s, 5.0);
    assert_eq!(g.wait_states.as_ref().unwrap().pattern, "Late Broadcast");
    std::fs::remove_dir_all(&dir).unwrap();
}
