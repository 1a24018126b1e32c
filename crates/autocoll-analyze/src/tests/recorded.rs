//! The analysis of real recordings: ranks of the local transport (threads)
//! recording with `comm.trace`, one of them entering every call late, and
//! the timeline of a real run. (The same over tcp processes is in
//! `tests/analyze.rs`.)

use std::path::{Path, PathBuf};
use std::time::Duration;

use autocoll::trace::format::Reader;
use autocoll::trace::{file_of, TraceOptions};
use autocoll::{local, Implementation, Layout, Op};

use super::support::{check_timeline, run, timeline};
use crate::result::{GroupReport, Report};

/// How late the late rank enters each call: far above the calls' own
/// time (tens to hundreds of µs on threads) and the machine's noise (with
/// other tests running beside these on a few cores, a thread can wait
/// several ms for a core).
const LATE: Duration = Duration::from_millis(25);
const CALLS: usize = 30;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "autocoll-analyze-recorded-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A small buffer: 8 ranks × the default 16 MiB would be touched for
/// nothing.
fn options() -> TraceOptions {
    TraceOptions {
        capacity_events: 1 << 16,
        ..TraceOptions::default()
    }
}

/// Records `CALLS` allreduces over `imp` on `size` threads laid out by
/// `hosts` (one host when `None`); `late` sleeps before entering each.
fn record(dir: &Path, imp: &str, size: usize, hosts: Option<&[&str]>, late: Option<usize>) {
    let imp: Implementation = imp.parse().unwrap();
    let layout = hosts.map(|h| Layout::of_hosts(h.iter().map(|s| s.to_string()).collect()));
    let layout = layout.transpose().unwrap();
    let outcomes = local::run(size, |mut comm| -> autocoll::Result<()> {
        if let Some(l) = &layout {
            comm.set_layout(l.clone())?;
        }
        comm.trace_with(dir, options())?;
        let mine = vec![comm.rank() as f64; size];
        let mut sum = vec![0.0; size];
        for _ in 0..CALLS {
            if Some(comm.rank()) == late {
                std::thread::sleep(LATE);
            }
            comm.allreduce_with(&imp, &mine, &mut sum, &Op::SUM)?;
        }
        assert_eq!(sum[0], (size * (size - 1) / 2) as f64);
        Ok(())
    });
    for outcome in outcomes {
        outcome.unwrap();
    }
}

fn group<'a>(r: &'a Report, imp: &str) -> &'a GroupReport {
    let imp: Implementation = imp.parse().unwrap();
    let g: Vec<&GroupReport> = r.groups.iter().filter(|g| g.op == "allreduce").collect();
    assert_eq!(
        g.len(),
        1,
        "{:?}",
        r.groups.iter().map(|g| &g.imp).collect::<Vec<_>>()
    );
    assert_eq!(g[0].imp, imp.to_string());
    assert_eq!(g[0].calls, CALLS as u64);
    g[0]
}

/// Asserts that the load-imbalance analysis of `imp` names `late` as the
/// source, the rank itself (the heaviest path ends at its own entry, for a
/// rank with children, or at it as a child, for a leaf; every edge on the
/// way is last in most calls), and that it holds itself back between
/// calls.
fn assert_source(dir: &Path, imp: &str, late: usize) {
    let report = run(dir);
    let found = group(&report, imp).load_imbalance.clone().unwrap();
    assert_eq!(found.source, Some(late), "{imp}: {}", found.sentence);
    assert!(!found.source_is_subtree, "{imp}: {}", found.sentence);
    let end = found.path.last().unwrap();
    assert_eq!(end.from, late, "{imp}: {:?}", found.path);
    assert!(
        found.sentence.contains(&format!("starts at rank {late}")),
        "{imp}: {}",
        found.sentence
    );
    let cause = found.cause.unwrap();
    assert_eq!(cause.kind, "between_calls", "{imp}: {}", found.sentence);
    assert!(cause.between_s >= LATE.as_secs_f64(), "{imp}: {cause:?}");
}

/// 8 ranks on 4 hosts of two.
const HOSTS: [&str; 8] = ["h0", "h0", "h1", "h1", "h2", "h2", "h3", "h3"];

#[test]
fn a_late_rank_on_threads_is_found_as_the_source_for_binomial_chain_and_hier() {
    // Rank 5 is a leaf under 4 (binomial), in the middle of the chain
    // (its child 6 waits for it), and h2's second rank under its leader 4
    // (hier).
    for (imp, hosts) in [
        ("allreduce:binomial", None),
        ("allreduce:chain", None),
        ("allreduce:hier:inner=flat", Some(&HOSTS[..])),
    ] {
        let dir = scratch(&imp.replace(':', "-"));
        record(&dir, imp, 8, hosts, Some(5));
        assert_source(&dir, imp, 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Back-to-back allreduces over a chain, nobody late: each call's result
/// goes down the chain, so the ranks near its end leave last and enter the
/// next call last; their contribution, passed up the whole chain, is last
/// at every node. The analysis finds the source at such a rank and says
/// that the collectives make this imbalance themselves: it spends no
/// longer between calls than the others.
///
/// Which rank leaves last is the scheduler's choice when threads
/// outnumber cores, and changes from run to run. So the source is checked
/// against the recording itself: the rank named must enter late and leave
/// late in the raw events, counted here without the analysis. Where the
/// scheduler splits the last place between two ranks, none last in most
/// calls, the analysis rightly names their subtree: such a recording is
/// made again, up to three times, until one rank leads.
#[test]
fn an_imbalance_the_tree_makes_itself_is_told_from_the_programs() {
    let dir = scratch("chain-itself");
    let mut found = None;
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(&dir);
        record(&dir, "allreduce:chain", 8, None, None);
        let report = run(&dir);
        let got = group(&report, "allreduce:chain")
            .load_imbalance
            .clone()
            .unwrap();
        let source = got.source.expect(&got.sentence);
        assert!(
            source > 0,
            "the chain's root is never held back: {}",
            got.sentence
        );
        if !got.source_is_subtree {
            found = Some(got);
            break;
        }
    }
    let found = found.expect("one rank last in most calls in one of three recordings");
    let source = found.source.expect(&found.sentence);
    let (enters, leaves) = lateness(&dir, 8, source);
    assert!(
        enters > 0.0,
        "rank {source} enters {enters} ns after the median: {}",
        found.sentence
    );
    assert!(
        leaves > 0.0,
        "rank {source} leaves {leaves} ns after the median: {}",
        found.sentence
    );
    let cause = found.cause.clone().unwrap();
    assert_eq!(cause.kind, "previous_call", "{}", found.sentence);
    assert!(
        found.sentence.ends_with("which a reshaped tree can change"),
        "{}",
        found.sentence
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How late `rank` enters and leaves the recorded calls, read from the raw
/// events (one clock: threads of one process): the median over calls of
/// its `Enter` and its `Done` less that call's median over ranks, ns.
fn lateness(dir: &Path, size: usize, rank: usize) -> (f64, f64) {
    let mut enter = vec![vec![0u64; size]; CALLS];
    let mut done = vec![vec![0u64; size]; CALLS];
    for r in 0..size {
        let mut reader = Reader::open(&file_of(dir, r)).unwrap();
        let mut i = 0;
        while let Some(call) = reader.next_call().unwrap() {
            for e in &call.events {
                match e.stage {
                    autocoll::observe::Stage::Enter => enter[i][r] = e.time_ns,
                    autocoll::observe::Stage::Done => done[i][r] = e.time_ns,
                    _ => {}
                }
            }
            i += 1;
        }
        assert_eq!(i, CALLS);
    }
    let late = |times: &[Vec<u64>]| {
        let mut by_call: Vec<f64> = times
            .iter()
            .map(|call| {
                let mut sorted = call.clone();
                sorted.sort_unstable();
                call[rank] as f64 - sorted[size / 2] as f64
            })
            .collect();
        by_call.sort_by(f64::total_cmp);
        by_call[CALLS / 2]
    };
    (late(&enter), late(&done))
}

#[test]
fn the_timeline_of_a_real_recording_has_both_ends_of_every_flow_and_nested_slices() {
    let dir = scratch("chrome");
    record(&dir, "allreduce:hier:seg=1K", 6, Some(&HOSTS[..6]), Some(2));
    // Every message sent: a flow with both ends.
    let sent: usize = (0..6)
        .map(|rank| {
            let mut reader = Reader::open(&file_of(&dir, rank)).unwrap();
            let mut sent = 0;
            while let Some(call) = reader.next_call().unwrap() {
                sent += call
                    .events
                    .iter()
                    .filter(|e| e.stage == autocoll::observe::Stage::Sent)
                    .count();
            }
            sent
        })
        .sum();
    // 6 ranks of 6 f64 = 48 bytes: one segment per message, 5 up and 5
    // down the tree in each call.
    assert_eq!(sent, CALLS * 10);
    let text = timeline(&dir, "t.json");
    check_timeline(&text, sent);
    assert!(text.contains(r#""critical":true"#));
    std::fs::remove_dir_all(&dir).unwrap();
}
