//! The measurement: every rank of the job runs the same plan.

use std::time::Instant;

use autocoll::Communicator;
use bytes::Bytes;

use super::plan::{Curve, Mode, Point};

/// The tag of the probe's messages.
const TAG: u64 = 0x9_0be;

/// Messages per repetition: enough that small ones are not all latency
/// (about 256 KiB a repetition for tables, 1 MiB for streams), at most 64.
pub fn calls(mode: Mode, bytes: u64) -> usize {
    let target: u64 = match mode {
        Mode::Stream => 1 << 20,
        _ => 1 << 18,
    };
    (target / bytes.max(1)).clamp(1, 64) as usize
}

/// Measures `plan` with every rank of `comm` (one per processing
/// element, rank i on processing element i); `reps` timed repetitions per
/// length after one untimed one. Rank 0 gets the points of every curve
/// (the others an empty list); `progress` is called on rank 0 after
/// each curve with the number done.
pub fn run(
    comm: &mut Communicator,
    plan: &[Curve],
    reps: usize,
    progress: &mut dyn FnMut(usize),
) -> autocoll::Result<Vec<Vec<Point>>> {
    let mut all = Vec::new();
    for (i, curve) in plan.iter().enumerate() {
        let mut points = Vec::new();
        for &len in &curve.lengths {
            let calls = calls(curve.mode, len);
            let data = Bytes::from(vec![0u8; len as usize]);
            let mut rates = Vec::new();
            for rep in 0..=reps {
                comm.barrier()?;
                let start = Instant::now();
                let mut mine = [time(comm, curve, &data, calls)?];
                if curve.pairs.len() > 1 {
                    // Pairs leave the barrier at different times: what the
                    // switch or link carried is the bytes over the window
                    // from the first start to the last end, which the
                    // closing barrier bounds (each pair's own time would
                    // overstate it).
                    comm.barrier()?;
                    mine[0] = start.elapsed().as_secs_f64();
                }
                let mut times = vec![0.0f64; comm.size()];
                comm.gather(&mine, &mut times, 0)?;
                let slowest = curve.pairs.iter().map(|p| times[p.0]).fold(0.0, f64::max);
                if rep > 0 && slowest > 0.0 {
                    let moved = (curve.pairs.len() * calls) as f64 * len as f64;
                    rates.push(moved / slowest);
                }
            }
            if comm.rank() == 0 {
                points.push(point(len, rates));
            }
        }
        if comm.rank() == 0 {
            all.push(points);
            progress(i + 1);
        }
    }
    Ok(all)
}

/// The median, lowest and highest of `rates`.
fn point(bytes: u64, mut rates: Vec<f64>) -> Point {
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median = match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => rates[n / 2],
        _ => (rates[n / 2 - 1] + rates[n / 2]) / 2.0,
    };
    Point {
        bytes,
        median,
        low: rates.first().copied().unwrap_or(f64::NAN),
        high: rates.last().copied().unwrap_or(f64::NAN),
    }
}

/// This rank's part in one repetition: its one-way time (seconds for
/// `calls` messages one way) if it times a pair, else 0.
fn time(
    comm: &mut Communicator,
    curve: &Curve,
    data: &Bytes,
    calls: usize,
) -> autocoll::Result<f64> {
    let me = comm.rank();
    let Some(&(a, b)) = curve.pairs.iter().find(|p| p.0 == me || p.1 == me) else {
        return Ok(0.0);
    };
    let start = Instant::now();
    match (curve.mode, me == a) {
        (Mode::OneWay, true) => {
            for _ in 0..calls {
                comm.send_bytes(b, TAG, data.clone())?;
                comm.recv_bytes(b, TAG)?;
            }
            return Ok(start.elapsed().as_secs_f64() / 2.0);
        }
        (Mode::OneWay, false) => {
            for _ in 0..calls {
                let back = comm.recv_bytes(a, TAG)?;
                comm.send_bytes(a, TAG, back)?;
            }
        }
        (Mode::BothWays, first) => {
            let peer = if first { b } else { a };
            for _ in 0..calls {
                comm.send_bytes(peer, TAG, data.clone())?;
                comm.recv_bytes(peer, TAG)?;
            }
            // Sends are queued: the first rank's own messages are known to
            // have arrived only when the second says so.
            match first {
                true => drop(comm.recv_bytes(b, TAG)?),
                false => comm.send_bytes(a, TAG, Bytes::from_static(&[1]))?,
            }
        }
        (Mode::Stream, true) => {
            for _ in 0..calls {
                comm.send_bytes(b, TAG, data.clone())?;
            }
            comm.recv_bytes(b, TAG)?;
        }
        (Mode::Stream, false) => {
            for _ in 0..calls {
                comm.recv_bytes(a, TAG)?;
            }
            comm.send_bytes(a, TAG, Bytes::from_static(&[1]))?;
        }
    }
    Ok(match me == a {
        true => start.elapsed().as_secs_f64(),
        false => 0.0,
    })
}
