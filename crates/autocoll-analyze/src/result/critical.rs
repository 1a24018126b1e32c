//! The critical paths of a group's calls: the ranks and stages they pass
//! through, and the slowest call's path step by step.

use serde::Serialize;

use crate::critical::StepKind;
use crate::group::{Group, Slowest};

/// The critical paths of a group's calls.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalReport {
    /// Calls with a critical path.
    pub calls: u64,
    /// Its mean length.
    pub mean_length_s: f64,
    /// Ranks on it, most often first.
    pub ranks: Vec<CriticalRank>,
    /// Its stages by rank and kind, most time first.
    pub stages: Vec<CriticalStage>,
    /// The slowest call's critical path.
    pub slowest_call: SlowestCall,
}

/// A rank's part in the critical paths.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalRank {
    /// The rank.
    pub rank: usize,
    /// Share of calls whose path passes through it.
    pub share: f64,
    /// Share of calls whose path starts at its entry.
    pub start_share: f64,
    /// Share of the paths' summed length spent on it.
    pub time_share: f64,
}

/// One (rank, kind) on the critical paths.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalStage {
    /// The rank (the receiver, for transfers).
    pub rank: usize,
    /// `receive`, `combine`, `send`, `finish`, `transfer`.
    pub step: StepKind,
    /// Summed over calls.
    pub time_s: f64,
    /// Share of the paths' summed length.
    pub share: f64,
}

/// The slowest call and its path.
#[derive(Clone, Debug, Serialize)]
pub struct SlowestCall {
    /// Its number.
    pub seq: u64,
    /// Its time.
    pub time_s: f64,
    /// Its critical path.
    pub steps: Vec<StepReport>,
}

/// One step of a critical path.
#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    /// The rank (the receiver, for a transfer).
    pub rank: usize,
    /// What it is.
    pub step: StepKind,
    /// The other rank of a transfer, send or receive.
    pub peer: Option<usize>,
    /// Its start, from the start of the path.
    pub start_s: f64,
    /// Its length.
    pub duration_s: f64,
}

pub(super) fn critical_report(g: &Group) -> Option<CriticalReport> {
    let slowest = g.slowest.as_ref()?;
    let total = g.critical_total.max(1.0);
    let calls = g.critical_calls;
    Some(CriticalReport {
        calls,
        mean_length_s: g.critical_total / calls.max(1) as f64 * 1e-9,
        ranks: critical_ranks(g, total),
        stages: critical_stages(g, total),
        slowest_call: slowest_call(slowest),
    })
}

/// The ranks on the group's critical paths, most often first; `total` is
/// the paths' summed length (ns).
fn critical_ranks(g: &Group, total: f64) -> Vec<CriticalRank> {
    let calls = g.critical_calls;
    let mut ranks: Vec<CriticalRank> = g
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.critical_calls > 0)
        .map(|(rank, r)| CriticalRank {
            rank,
            share: r.critical_calls as f64 / calls as f64,
            start_share: r.critical_starts as f64 / calls as f64,
            time_share: r.critical_time.iter().sum::<f64>() / total,
        })
        .collect();
    ranks.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(b.time_share.total_cmp(&a.time_share))
    });
    ranks
}

/// The stages of the group's critical paths by rank and kind, most time
/// first; `total` is the paths' summed length (ns).
fn critical_stages(g: &Group, total: f64) -> Vec<CriticalStage> {
    let mut stages: Vec<CriticalStage> = g
        .ranks
        .iter()
        .enumerate()
        .flat_map(|(rank, r)| {
            StepKind::ALL
                .iter()
                .zip(r.critical_time)
                .filter(|(_, t)| *t > 0.0)
                .map(move |(&step, t)| CriticalStage {
                    rank,
                    step,
                    time_s: t * 1e-9,
                    share: t / total,
                })
        })
        .collect();
    stages.sort_by(|a, b| b.share.total_cmp(&a.share));
    stages
}

/// The slowest call's critical path, its steps' starts counted from the
/// path's start.
fn slowest_call(slowest: &Slowest) -> SlowestCall {
    let origin = slowest.steps.first().map_or(0, |s| s.start);
    SlowestCall {
        seq: slowest.seq,
        time_s: slowest.time * 1e-9,
        steps: slowest
            .steps
            .iter()
            .map(|s| StepReport {
                rank: s.rank,
                step: s.kind,
                peer: s.peer,
                start_s: (s.start - origin) as f64 * 1e-9,
                duration_s: (s.end - s.start) as f64 * 1e-9,
            })
            .collect(),
    }
}
