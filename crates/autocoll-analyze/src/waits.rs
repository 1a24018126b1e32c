//! Wait states as Scalasca names them, and the call's arrival pattern.
//!
//! With e the times ranks enter and l the times they leave (their `Done`),
//! on the common clock, following Scalasca's pattern code
//! (`MPI.pattern`: MPI_LATEBROADCAST, MPI_EARLYREDUCE, MPI_EARLYSCAN,
//! MPI_WAIT_NXN, MPI_NXN_COMPLETION, MPI_BARRIER_WAIT,
//! MPI_BARRIER_COMPLETION):
//! - Late Broadcast (bcast, scatter), each rank but the root:
//!   min(e_root, l_i) − e_i;
//! - Early Reduce (reduce, gather), the root only: min(earliest sender's
//!   e, l_root) − e_root — the time the root sat in the call before any
//!   data could have been sent (the root's wait for the *last* sender is
//!   its arrival wait, a per-node quantity);
//! - Early Scan (scan, exscan), each rank but the first: min(latest e of
//!   the ranks before it, l_i) − e_i;
//! - Wait at N x N (allreduce, allgather, alltoall, reduce-scatter) and
//!   Wait at Barrier,
//!   each rank: min(latest e, l_i) − e_i;
//! - N x N Completion and Barrier Completion, each rank: l_i − earliest l.
//!
//! A negative value is counted as 0, as Scalasca does. Ranks without a file
//! are left out of the latest and earliest times.
//!
//! Arrival pattern (Faraj, Patarasuk and Yuan, 2007): per call, the
//! average-case imbalance mean |e_i − ē| and the worst-case imbalance
//! max e − min e, in ns; the report divides them by the time of one
//! message (see `group.rs`) to give the factors.

use autocoll::Collective;

use super::call::{RankView, View};

/// The Scalasca wait-state pattern of a collective, and its completion
/// pattern where there is one.
pub fn patterns(op: Collective) -> (&'static str, Option<&'static str>) {
    match op {
        Collective::Bcast | Collective::Scatter | Collective::Scatterv => ("Late Broadcast", None),
        Collective::Reduce | Collective::Gather | Collective::Gatherv => ("Early Reduce", None),
        Collective::Allreduce
        | Collective::Allgather
        | Collective::Alltoall
        | Collective::ReduceScatter
        | Collective::Allgatherv
        | Collective::Alltoallv => ("Wait at N x N", Some("N x N Completion")),
        Collective::Barrier => ("Wait at Barrier", Some("Barrier Completion")),
        Collective::Scan | Collective::Exscan => ("Early Scan", None),
    }
}

/// Each rank's (wait, completion) in one call, ns; `None` for ranks the
/// pattern does not apply to, or without a record. Empty when the clocks
/// do not align.
pub fn of_call(view: &View) -> Vec<Option<(f64, Option<f64>)>> {
    let n = view.ranks.len();
    if !view.aligned {
        return vec![None; n];
    }
    let present = || {
        view.ranks
            .iter()
            .enumerate()
            .filter_map(|(r, v)| v.as_ref().map(|v| (r, v)))
    };
    let clamp = |x: i64| x.max(0) as f64;
    let mut out = vec![None; n];
    match view.op {
        Collective::Bcast | Collective::Scatter | Collective::Scatterv => {
            let Some(root) = view.rank(view.root) else {
                return out;
            };
            for (r, v) in present().filter(|&(r, _)| r != view.root) {
                out[r] = Some((clamp(root.enter().min(v.done()) - v.enter()), None));
            }
        }
        Collective::Reduce | Collective::Gather | Collective::Gatherv => {
            let Some(root) = view.rank(view.root) else {
                return out;
            };
            let earliest = present()
                .filter(|&(r, _)| r != view.root)
                .map(|(_, v)| v.enter())
                .min();
            if let Some(e) = earliest {
                out[view.root] = Some((clamp(e.min(root.done()) - root.enter()), None));
            }
        }
        Collective::Scan | Collective::Exscan => {
            // Each rank waits for the latest of the ranks before it.
            let mut latest: Option<i64> = None;
            for (r, v) in present() {
                if let Some(e) = latest {
                    out[r] = Some((clamp(e.min(v.done()) - v.enter()), None));
                }
                latest = Some(latest.map_or(v.enter(), |e| e.max(v.enter())));
            }
        }
        Collective::Allreduce
        | Collective::Allgather
        | Collective::Alltoall
        | Collective::ReduceScatter
        | Collective::Allgatherv
        | Collective::Alltoallv
        | Collective::Barrier => all_to_all(present().collect(), &mut out),
    }
    out
}

/// Wait at N x N: each rank waits for the last to enter, and completes
/// after the first to leave.
fn all_to_all(present: Vec<(usize, &RankView)>, out: &mut [Option<(f64, Option<f64>)>]) {
    let clamp = |x: i64| x.max(0) as f64;
    let latest = present.iter().map(|(_, v)| v.enter()).max().unwrap_or(0);
    let first_out = present.iter().map(|(_, v)| v.done()).min().unwrap_or(0);
    for (r, v) in present {
        let wait = clamp(latest.min(v.done()) - v.enter());
        out[r] = Some((wait, Some(clamp(v.done() - first_out))));
    }
}

/// (average-case, worst-case) imbalance of the call's enter times, ns;
/// `None` with unaligned clocks or fewer than two ranks.
pub fn arrival_pattern(view: &View) -> Option<(f64, f64)> {
    if !view.aligned {
        return None;
    }
    let e: Vec<f64> = view
        .ranks
        .iter()
        .flatten()
        .map(|v: &RankView| v.enter() as f64)
        .collect();
    if e.len() < 2 {
        return None;
    }
    let mean = e.iter().sum::<f64>() / e.len() as f64;
    let average = e.iter().map(|x| (x - mean).abs()).sum::<f64>() / e.len() as f64;
    let worst =
        e.iter().cloned().fold(f64::MIN, f64::max) - e.iter().cloned().fold(f64::MAX, f64::min);
    Some((average, worst))
}

/// The rank that entered last (the lowest of equals).
pub fn last_to_enter(view: &View) -> Option<usize> {
    if !view.aligned {
        return None;
    }
    let mut best: Option<(usize, i64)> = None;
    for (r, v) in view.ranks.iter().enumerate() {
        if let Some(v) = v {
            if best.is_none_or(|b| v.enter() > b.1) {
                best = Some((r, v.enter()));
            }
        }
    }
    best.map(|b| b.0)
}
