//! Recording traces on local ranks: what the files hold, when they are
//! written, the flight recorder's drops, clock offsets, bad directories.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use autocoll::observe::{Event, Observer, Stage};
use autocoll::trace::format::{Call, Header, Reader, TreePlace, NO_PEER};
use autocoll::trace::{file_of, TraceOptions};
use autocoll::{local, Implementation, Op};

fn imp(id: &str) -> Implementation {
    id.parse().unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read(path: &Path) -> (Header, Vec<Call>) {
    let mut r = Reader::open(path).unwrap();
    let mut calls = Vec::new();
    while let Some(c) = r.next_call().unwrap() {
        calls.push(c);
    }
    (r.header().clone(), calls)
}

fn options(capacity_events: usize) -> TraceOptions {
    TraceOptions {
        capacity_events,
        ..TraceOptions::default()
    }
}

#[test]
fn a_traced_local_run_reads_back_call_by_call() {
    let dir = temp_dir("readback");
    let chain = imp("bcast:chain:seg=1K");
    local::run(4, |mut comm| {
        comm.trace_with(&dir, options(4096)).unwrap();
        for _ in 0..3 {
            let mut buf = vec![comm.rank() as u8; 4096];
            comm.bcast_with(&chain, &mut buf, 0).unwrap();
        }
        let mut sum = [0.0f64; 4];
        comm.allreduce_with(&imp("allreduce:ring"), &[1.0; 4], &mut sum, &Op::SUM)
            .unwrap();
        // Files are written when the communicator is dropped, not before.
        assert!(!file_of(&dir, comm.rank()).exists());
    });
    let mut runs = Vec::new();
    for rank in 0..4 {
        let (h, calls) = read(&file_of(&dir, rank));
        assert_eq!((h.rank, h.size), (rank as u32, 4));
        assert_eq!((h.transport.as_str(), h.shared_clock), ("local", true));
        assert_eq!(h.offset, None, "one clock: no offsets");
        assert_eq!((h.dropped_calls, h.capacity_events), (0, 4096));
        assert_eq!(h.impls, vec!["bcast:chain:seg=1K", "allreduce:ring"]);
        let place = TreePlace {
            parent: rank.checked_sub(1).map(|p| p as u32),
            children: if rank < 3 {
                vec![rank as u32 + 1]
            } else {
                vec![]
            },
        };
        assert_eq!(h.trees, vec![place]);
        runs.push(h.run.clone());
        assert_eq!(calls.len(), 4, "rank {rank}");
        let seqs: Vec<u64> = calls.iter().map(|c| c.seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
        for call in &calls[..3] {
            assert_eq!((call.imp, call.tree, call.bytes), (0, 0, 4096));
            let mut expect = vec![(Stage::Enter, 0, NO_PEER)];
            for k in 0..4 {
                if rank > 0 {
                    expect.push((Stage::Received, k, rank as u16 - 1));
                }
                if rank < 3 {
                    expect.push((Stage::Sent, k, rank as u16 + 1));
                }
            }
            expect.push((Stage::Done, 0, NO_PEER));
            let got: Vec<_> = call
                .events
                .iter()
                .map(|e| (e.stage, e.segment, e.peer))
                .collect();
            assert_eq!(got, expect, "rank {rank}");
            let times: Vec<u64> = call.events.iter().map(|e| e.time_ns).collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        }
        let ring = &calls[3];
        assert_eq!((ring.imp, ring.bytes), (1, 32));
        assert_eq!(ring.tree, autocoll::trace::format::NO_TREE);
        // A ring's reduce-scatter and allgather steps are phases 0 and 1.
        let phases: std::collections::BTreeSet<u8> = ring
            .events
            .iter()
            .filter(|e| e.stage == Stage::Sent)
            .map(|e| e.phase)
            .collect();
        assert!(phases.len() >= 2, "{phases:?}");
    }
    assert!(runs.iter().all(|r| *r == runs[0] && r.len() == 32));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn write_trace_writes_now_and_recording_goes_on() {
    let dir = temp_dir("on-demand");
    let barrier = imp("barrier:dissemination");
    local::run(3, |mut comm| {
        comm.trace_with(&dir, options(1024)).unwrap();
        comm.barrier_with(&barrier).unwrap();
        let path = comm.write_trace().unwrap();
        assert_eq!(path, file_of(&dir, comm.rank()));
        assert_eq!(read(&path).1.len(), 1);
        comm.barrier_with(&barrier).unwrap();
        comm.barrier_with(&barrier).unwrap();
    });
    for rank in 0..3 {
        assert_eq!(read(&file_of(&dir, rank)).1.len(), 3, "rank {rank}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stop_trace_writes_and_ends_the_recording() {
    let dir = temp_dir("stop");
    let barrier = imp("barrier:dissemination");
    local::run(3, |mut comm| {
        assert_eq!(comm.stop_trace().unwrap(), None, "nothing to stop");
        comm.barrier_with(&barrier).unwrap();
        comm.trace_with(&dir, options(1024)).unwrap();
        comm.barrier_with(&barrier).unwrap();
        comm.barrier_with(&barrier).unwrap();
        let path = comm.stop_trace().unwrap().unwrap();
        assert_eq!(path, file_of(&dir, comm.rank()));
        assert!(comm.recorder().is_none());
        comm.barrier_with(&barrier).unwrap();
    });
    // The calls before the stop, and not the one after it (the drop wrote
    // nothing more).
    for rank in 0..3 {
        let calls = read(&file_of(&dir, rank)).1;
        assert_eq!(calls.len(), 2, "rank {rank}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_buffer_keeps_the_latest_calls_and_says_how_many_it_dropped() {
    let dir = temp_dir("flight");
    let barrier = imp("barrier:dissemination");
    local::run(2, |mut comm| {
        // A 2-rank dissemination barrier: enter, sent, received, done and
        // a 2-slot header, 6 slots a call; 64 slots hold 10 calls.
        comm.trace_with(&dir, options(64)).unwrap();
        for _ in 0..100 {
            comm.barrier_with(&barrier).unwrap();
        }
    });
    for rank in 0..2 {
        let (h, calls) = read(&file_of(&dir, rank));
        assert_eq!(calls.len(), 10, "rank {rank}");
        assert_eq!((h.dropped_calls, h.dropped_events), (90, 360));
        let last = calls.last().unwrap().seq;
        let seqs: Vec<u64> = calls.iter().map(|c| c.seq).collect();
        assert_eq!(seqs, (last - 9..=last).collect::<Vec<_>>());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn estimated_offsets_of_one_clock_are_within_half_a_round_trip_of_zero() {
    let dir = temp_dir("offsets");
    local::run(3, |mut comm| {
        let opts = TraceOptions {
            estimate_offsets: true,
            ..options(64)
        };
        comm.trace_with(&dir, opts).unwrap();
        comm.barrier().unwrap();
    });
    for rank in 0..3 {
        let (h, _) = read(&file_of(&dir, rank));
        let offset = h.offset.expect("offsets were asked for");
        let end = offset.end.expect("the end exchange ran");
        for s in [offset.start, end] {
            assert!(s.at_ns > 0);
            if rank == 0 {
                assert_eq!((s.offset_ns, s.rtt_ns), (0, 0));
            } else {
                assert!(s.rtt_ns > 0);
                assert!(
                    s.offset_ns.unsigned_abs() <= s.rtt_ns / 2 + 1,
                    "rank {rank}: {s:?}"
                );
            }
        }
        assert!(end.at_ns > offset.start.at_ns);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_that_cannot_be_made_is_an_error_on_every_rank_naming_it() {
    let dir = temp_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let blocked = dir.join("a-file");
    std::fs::write(&blocked, b"not a directory").unwrap();
    let target = blocked.join("traces");
    let errors = local::run(3, |mut comm| {
        let err = comm.trace(&target).unwrap_err().to_string();
        // The communicator goes on working, untraced.
        comm.barrier().unwrap();
        assert!(comm.recorder().is_none());
        err
    });
    for err in errors {
        assert!(err.contains(&target.display().to_string()), "{err}");
        assert!(err.contains("cannot create it"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Counts the events it sees.
#[derive(Default)]
struct Count(AtomicUsize);

impl Observer for Count {
    fn event(&self, _: &Event<'_>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn several_observers_see_the_same_events_and_leave_when_asked() {
    let dir = temp_dir("observers");
    let out = local::run(3, |mut comm| {
        let (mine, added) = (Arc::new(Count::default()), Arc::new(Count::default()));
        comm.set_observer(Some(mine.clone()));
        let added_dyn: Arc<dyn Observer> = added.clone();
        comm.add_observer(added_dyn.clone());
        comm.trace_with(&dir, options(1024)).unwrap();
        // The recording's own start is not seen.
        assert_eq!(mine.0.load(Ordering::Relaxed), 0);
        let mut buf = [0u32; 300];
        comm.bcast_with(&imp("bcast:binomial:seg=256"), &mut buf, 1)
            .unwrap();
        let recorded = comm.recorder().unwrap().usage().events as usize;
        let seen = (
            mine.0.load(Ordering::Relaxed),
            added.0.load(Ordering::Relaxed),
        );
        assert!(comm.remove_observer(&added_dyn));
        assert!(!comm.remove_observer(&added_dyn));
        comm.bcast_with(&imp("bcast:binomial:seg=256"), &mut buf, 1)
            .unwrap();
        (recorded, seen, added.0.load(Ordering::Relaxed))
    });
    for (recorded, (mine, added), after) in out {
        assert!(recorded >= 2);
        assert_eq!((mine, added), (recorded, recorded));
        assert_eq!(after, added, "a removed observer hears nothing more");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
