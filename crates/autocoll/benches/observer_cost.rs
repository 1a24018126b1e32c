//! The observer hook's cost: time per call of a small segmented broadcast
//! with no observer, and with an observer that does nothing, measured side
//! by side (alternating rounds, best of each). Off, the hook is one test of
//! an `Option` per stage: no clock read, no allocation.
//!
//! Run: `cargo bench -p autocoll --bench observer_cost`

use std::sync::Arc;
use std::time::Instant;

use autocoll::local;
use autocoll::observe::{Event, Observer};

struct Nothing;

impl Observer for Nothing {
    fn event(&self, _: &Event<'_>) {}
}

/// Seconds per call on rank 0 over `calls` calls.
fn per_call(observer: Option<Arc<dyn Observer>>, calls: usize) -> f64 {
    let imp = "bcast:chain:seg=64".parse().unwrap();
    let out = local::run(4, |mut comm| {
        comm.set_observer(observer.clone());
        let mut buf = vec![1u8; 1024];
        let start = Instant::now();
        for _ in 0..calls {
            comm.bcast_with(&imp, &mut buf, 0).unwrap();
        }
        start.elapsed().as_secs_f64() / calls as f64
    });
    out.into_iter().fold(0.0, f64::max)
}

fn main() {
    let calls = 2000;
    let (mut off, mut on) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..7 {
        off = off.min(per_call(None, calls));
        on = on.min(per_call(Some(Arc::new(Nothing)), calls));
    }
    println!("bcast:chain:seg=64, 1 KiB, 4 local ranks (16 segments, ~100 stage events per call)");
    println!("observer off:        {:8.2} µs/call", off * 1e6);
    println!("no-op observer on:   {:8.2} µs/call", on * 1e6);
    println!("on / off:            {:8.3}", on / off);
}
