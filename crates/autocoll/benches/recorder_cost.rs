//! What one recorded event costs on one thread, warm: the clock read every
//! stage makes once observers are installed, and the recorder's own work
//! (an uncontended lock, packing, one 16-byte store); and how fast a full
//! buffer encodes into a file. Gsum end to end is `scripts/trace-overhead`.
//!
//! Run: `cargo bench -p autocoll --bench recorder_cost`

use std::time::Instant;

use autocoll::clock::now_ns;
use autocoll::comm::CallSig;
use autocoll::observe::{Event, Observer, Stage};
use autocoll::trace::format::Header;
use autocoll::trace::{Recorder, DEFAULT_CAPACITY_EVENTS};
use autocoll::{Implementation, Shape, Tree};

/// Nanoseconds per `f` call, the best of 5 rounds of `n`.
fn per_call(n: u64, mut f: impl FnMut(u64)) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for i in 0..n {
                f(i);
            }
            start.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let n = 4_000_000;
    let mut sink = 0u64;
    let clock = per_call(n, |_| sink = sink.wrapping_add(now_ns()));
    let imp: Implementation = "allreduce:binomial".parse().unwrap();
    let tree = Tree::build(&Shape::Binomial, 8, 0, None).unwrap();
    let recorder = Recorder::new(DEFAULT_CAPACITY_EVENTS);
    // A Gsum-like call of 4 stages, the ring wrapping several times.
    let stages = [Stage::Enter, Stage::Received, Stage::Sent, Stage::Done];
    let record = per_call(n, |i| {
        let sig = CallSig {
            seq: i / 4,
            op: imp.op,
            root: 0,
            bytes: 64,
        };
        recorder.event(&Event {
            rank: 2,
            sig,
            imp: &imp,
            tree: Some(&tree),
            stage: stages[(i % 4) as usize],
            phase: 0,
            segment: 0,
            peer: Some(0),
            time_ns: i,
        });
    });
    let header = Header {
        rank: 2,
        size: 8,
        ..Header::default()
    };
    let start = Instant::now();
    let file = recorder.encode(&header);
    let encode = start.elapsed().as_secs_f64();
    let usage = recorder.usage();
    println!("clock read (now_ns):          {clock:6.1} ns");
    println!("recorder, per event:          {record:6.1} ns (lock, pack, one 16-byte store; warm)");
    println!(
        "encoding a full buffer:       {:.1} ms for {} calls, {} events ({:.1} MiB, {:.0} MiB/s)",
        encode * 1e3,
        usage.calls,
        usage.events,
        file.len() as f64 / 1048576.0,
        file.len() as f64 / 1048576.0 / encode
    );
    println!(
        "buffer: {} slots of 16 bytes = {} MiB; 65,536 events per MiB; a call's header takes 2 slots",
        usage.capacity_events,
        usage.capacity_events * 16 / 1048576
    );
    assert!(sink != 0);
}
