//! The analysis against traces whose every quantity is known: a 3-rank
//! allreduce written by hand and worked out by hand, the same with a
//! skewed clock, damaged and incomplete directories, the timeline's
//! structure, and simulated runs with a rank that enters late.

use std::path::{Path, PathBuf};

use autocoll::observe::Stage;
use autocoll::trace::format::{encode, Call, Event, NO_PEER};
use autocoll::{Collective, Implementation};

use super::result::{GroupReport, Report};
use super::synthetic::{self, rank_file, Spec};
use super::{analyse, chrome::Chrome, Options};
use crate::Failure;

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-analyze-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn options() -> Options {
    Options {
        calls: 0..u64::MAX,
        tolerance: 0.1,
    }
}

pub(super) fn run(dir: &Path) -> Report {
    match analyse(dir, &options(), None) {
        Ok(r) => r,
        Err(Failure::Usage(m)) => panic!("usage: {m}"),
        Err(Failure::Run(e)) => panic!("run: {e:#}"),
    }
}

fn error(dir: &Path) -> String {
    match analyse(dir, &options(), None) {
        Ok(_) => panic!("{} was accepted", dir.display()),
        Err(Failure::Usage(m)) => m,
        Err(Failure::Run(e)) => format!("{e:#}"),
    }
}

/// An event: (time, stage, peer, phase).
fn e(t: u64, stage: Stage, peer: Option<u16>, phase: u8) -> Event {
    Event {
        time_ns: t,
        segment: 0,
        peer: peer.unwrap_or(NO_PEER),
        stage,
        phase,
    }
}

use Stage::{Combined as C, Done as D, Enter as N, Received as R, Sent as S};

/// The hand-built run: allreduce over a flat tree, root 0 with children
/// 1 and 2, two calls, times in ns (rank r's events at index r).
fn hand_built() -> (Spec, Vec<Vec<Vec<Event>>>) {
    let spec = Spec::new("allreduce:flat".parse::<Implementation>().unwrap(), 3);
    let call0 = vec![
        vec![
            e(50, N, None, 0),
            e(150, R, Some(1), 0),
            e(160, C, Some(1), 0),
            e(300, R, Some(2), 0),
            e(310, C, Some(2), 0),
            e(330, S, Some(1), 1),
            e(350, S, Some(2), 1),
            e(370, D, None, 0),
        ],
        vec![
            e(100, N, None, 0),
            e(110, S, Some(0), 0),
            e(400, R, Some(0), 1),
            e(410, D, None, 0),
        ],
        vec![
            e(200, N, None, 0),
            e(230, S, Some(0), 0),
            e(450, R, Some(0), 1),
            e(460, D, None, 0),
        ],
    ];
    let call1 = vec![
        vec![
            e(1050, N, None, 0),
            e(1320, R, Some(1), 0),
            e(1330, C, Some(1), 0),
            e(1340, R, Some(2), 0),
            e(1350, C, Some(2), 0),
            e(1360, S, Some(1), 1),
            e(1370, S, Some(2), 1),
            e(1380, D, None, 0),
        ],
        vec![
            e(1300, N, None, 0),
            e(1310, S, Some(0), 0),
            e(1400, R, Some(0), 1),
            e(1410, D, None, 0),
        ],
        vec![
            e(1200, N, None, 0),
            e(1230, S, Some(0), 0),
            e(1450, R, Some(0), 1),
            e(1460, D, None, 0),
        ],
    ];
    (spec, vec![call0, call1])
}

/// Writes `calls` (per call, per rank) with `spec`'s headers, adding
/// `skew[r]` to rank r's times; ranks in `leave_out` get no file.
fn write_run(dir: &Path, spec: &Spec, calls: &[Vec<Vec<Event>>], leave_out: &[usize]) {
    let tree =
        autocoll::Tree::build(spec.imp.shape().unwrap(), spec.size, spec.root, None).unwrap();
    for rank in (0..spec.size).filter(|r| !leave_out.contains(r)) {
        let mine: Vec<Call> = calls
            .iter()
            .enumerate()
            .map(|(k, per_rank)| Call {
                seq: k as u64,
                op: spec.imp.op,
                bytes: spec.bytes,
                root: 0,
                imp: 0,
                tree: 0,
                events: per_rank[rank]
                    .iter()
                    .map(|ev| Event {
                        time_ns: (ev.time_ns as i64 + spec.skew[rank]) as u64,
                        ..*ev
                    })
                    .collect(),
            })
            .collect();
        let bytes = encode(&synthetic::header(spec, Some(&tree), rank), &mine);
        std::fs::write(rank_file(dir, rank), bytes).unwrap();
    }
}

fn ns(x: f64) -> f64 {
    x * 1e-9
}

fn close(got: f64, want_ns: f64) {
    assert!(
        (got - ns(want_ns)).abs() <= 1e-15 + 1e-12 * ns(want_ns).abs(),
        "{got} s against {want_ns} ns"
    );
}

fn only_group(r: &Report) -> &GroupReport {
    assert_eq!(r.groups.len(), 1);
    &r.groups[0]
}

#[test]
fn the_hand_built_three_rank_trace_gives_the_values_worked_out_by_hand() {
    let dir = scratch("hand");
    let (spec, calls) = hand_built();
    write_run(&dir, &spec, &calls, &[]);
    let report = run(&dir);
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
    std::fs::remove_dir_all(&dir).unwrap();
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

/// The structure Perfetto needs: every flow has both ends, slices on one
/// track nest or follow, every track is named.
pub(super) fn check_timeline(text: &str, messages: usize) {
    let doc: serde_json::Value = serde_json::from_str(text).expect("the timeline is JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let mut flows: std::collections::BTreeMap<u64, (u32, u32)> = Default::default();
    let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<(i64, i64)>> = Default::default();
    let mut named = std::collections::BTreeSet::new();
    let to_ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    for ev in events {
        let (pid, tid) = (ev["pid"].as_u64().unwrap(), ev["tid"].as_u64().unwrap());
        match ev["ph"].as_str().unwrap() {
            "M" => {
                if ev["name"] == "thread_name" {
                    named.insert((pid, tid));
                }
            }
            "X" => {
                let ts = to_ns(&ev["ts"]);
                tracks
                    .entry((pid, tid))
                    .or_default()
                    .push((ts, ts + to_ns(&ev["dur"])));
                if let Some(id) = ev.get("bind_id") {
                    let id = id.as_u64().expect("integer flow ids");
                    let slot = flows.entry(id).or_default();
                    match (ev.get("flow_out"), ev.get("flow_in")) {
                        (Some(_), None) => slot.0 += 1,
                        (None, Some(_)) => slot.1 += 1,
                        _ => panic!("flow {id} has no direction"),
                    }
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(flows.len(), messages);
    assert!(flows.values().all(|&ends| ends == (1, 1)), "{flows:?}");
    for (track, mut slices) in tracks {
        assert!(named.contains(&track), "track {track:?} has no name");
        slices.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<i64> = Vec::new();
        for (s, e) in slices {
            while open.last().is_some_and(|&end| end <= s) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(
                    e <= end,
                    "track {track:?}: [{s}, {e}] overlaps a slice ending at {end}"
                );
            }
            open.push(e);
        }
    }
}

pub(super) fn timeline(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let mut chrome = Chrome::create(&path).unwrap();
    let Ok(_) = analyse(dir, &options(), Some(&mut chrome)) else {
        panic!("analysis failed")
    };
    chrome.finish().unwrap();
    std::fs::read_to_string(path).unwrap()
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
    super::synthetic::bench("200x16", Some(&dir)).ok().unwrap();
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
    let cmp = super::compare::compare(&ra, &rb, Some(7)).unwrap();
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
    let (name, svg) = super::compare::figure(c).unwrap().unwrap();
    assert_eq!(name, "allreduce-binomial_8B-compare-rank7.svg");
    assert!(svg.starts_with("<svg") && svg.contains("allreduce:chain"));
    let g = &ra.groups[0];
    let (name, svg) = super::timemap::figure(g, None).unwrap().unwrap();
    assert_eq!(name, "allreduce-binomial_8B-timemap.svg");
    assert!(
        svg.contains("the root&apos;s turn") || svg.contains("the root's turn"),
        "{svg}"
    );
    let (name, _) = super::serialization::figure(g, Some(&[0, 4]))
        .unwrap()
        .unwrap();
    assert_eq!(name, "allreduce-binomial_8B-serialization.svg");
    assert!(super::compare::compare(&ra, &rb, Some(8)).is_err());
    for d in [a, b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// An event of segment `seg`.
fn es(t: u64, stage: Stage, peer: Option<u16>, seg: u32) -> Event {
    Event {
        segment: seg,
        ..e(t, stage, peer, 0)
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
