//! Recording allocates nothing per call once warm: a call with the
//! recorder on allocates exactly what it allocates with it off, also when
//! the implementation and the tree change from call to call (they are
//! interned once, compared after).

mod support;

use std::sync::{Arc, Mutex};

use autocoll::comm::CallSig;
use autocoll::observe::{Event, Observer, Stage};
use autocoll::trace::Recorder;
use autocoll::{local, Communicator, Implementation, Op, Shape, Tree};
use support::counting::{thread_allocations as allocations, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// The counts are the calling thread's; one test at a time all the same.
static SERIAL: Mutex<()> = Mutex::new(());

/// Allocations of `rounds` rounds of allreduces alternating between two
/// trees and two roots' broadcasts.
fn round_allocations(comm: &mut Communicator, rounds: usize) -> usize {
    let imps: Vec<Implementation> = ["allreduce:binomial", "allreduce:chain"]
        .iter()
        .map(|id| id.parse().unwrap())
        .collect();
    let bcast: Implementation = "bcast:binary".parse().unwrap();
    let mut sum = [0.0f64; 1];
    let mut buf = [0u8; 8];
    let before = allocations();
    for _ in 0..rounds {
        for imp in &imps {
            comm.allreduce_with(imp, &[1.0], &mut sum, &Op::SUM)
                .unwrap();
        }
        comm.bcast_with(&bcast, &mut buf, 0).unwrap();
    }
    allocations() - before
}

#[test]
fn a_warm_recorder_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (off, on) = local::run(1, |mut comm| {
        let recorder: Arc<dyn Observer> = Arc::new(Recorder::new(64));
        comm.add_observer(recorder.clone());
        // Warm: every implementation and tree place seen, the ring wrapped.
        round_allocations(&mut comm, 50);
        let on = round_allocations(&mut comm, 200);
        comm.remove_observer(&recorder);
        round_allocations(&mut comm, 50);
        let off = round_allocations(&mut comm, 200);
        (off, on)
    })
    .pop()
    .unwrap();
    assert_eq!(
        on,
        off,
        "recording allocated {} times in 600 calls",
        on - off
    );
}

/// The recorder alone, fed on one thread: calls alternating between three
/// implementations and three tree places, the ring wrapping many times.
#[test]
fn recording_events_allocates_nothing_once_every_place_was_seen() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let imps: Vec<Implementation> = ["bcast:binomial", "bcast:chain", "bcast:flat"]
        .iter()
        .map(|id| id.parse().unwrap())
        .collect();
    let trees: Vec<Tree> = [Shape::Binomial, Shape::Chain, Shape::Flat]
        .iter()
        .map(|s| Tree::build(s, 8, 0, None).unwrap())
        .collect();
    let recorder = Recorder::new(256);
    let feed = |calls: u64| {
        for seq in 0..calls {
            let k = (seq % 3) as usize;
            let sig = CallSig {
                seq,
                op: imps[k].op,
                root: 0,
                bytes: 64,
            };
            for (stage, peer) in [
                (Stage::Enter, None),
                (Stage::Received, Some(0)),
                (Stage::Sent, Some(4)),
                (Stage::Done, None),
            ] {
                recorder.event(&Event {
                    rank: 2,
                    sig,
                    imp: &imps[k],
                    tree: Some(&trees[k]),
                    stage,
                    phase: 0,
                    segment: 0,
                    peer,
                    time_ns: seq,
                });
            }
        }
    };
    feed(3);
    let before = allocations();
    feed(10_000);
    assert_eq!(allocations() - before, 0);
    let usage = recorder.usage();
    assert_eq!(usage.calls + usage.dropped_calls, 10_003);
}
