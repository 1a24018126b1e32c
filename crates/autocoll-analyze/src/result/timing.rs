//! The group's timing as a whole: one message's time, the arrival pattern
//! scaled by it, and Scalasca's wait states.

use serde::Serialize;

use crate::clocks::Clocks;
use crate::group::Group;
use crate::stats::{some, Stat, Summary};
use crate::waits;

/// The time of one message of the group's size.
#[derive(Clone, Debug, Serialize)]
pub struct MessageTime {
    /// The time.
    pub time_s: f64,
    /// What it was estimated from.
    pub from: &'static str,
}

/// Ratios of an imbalance to one message's time.
#[derive(Clone, Debug, Serialize)]
pub struct Factors {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
}

/// The enter times' spread over calls.
#[derive(Clone, Debug, Serialize)]
pub struct ArrivalPattern {
    /// Mean |e_i − ē| per call.
    pub average_case: Summary,
    /// max e − min e per call.
    pub worst_case: Summary,
    /// `average_case` over one message's time.
    pub average_case_factor: Option<Factors>,
    /// `worst_case` over one message's time.
    pub worst_case_factor: Option<Factors>,
}

/// Scalasca's wait states of the group.
#[derive(Clone, Debug, Serialize)]
pub struct WaitStates {
    /// The wait pattern's name.
    pub pattern: &'static str,
    /// The completion pattern's name, if the collective has one.
    pub completion_pattern: Option<&'static str>,
    /// `shared` or `estimated`: how the ranks' times were compared.
    pub clock: &'static str,
    /// Summed over ranks and calls.
    pub total_s: f64,
    /// The completion pattern's total.
    pub completion_total_s: Option<f64>,
    /// `total_s` over the ranks' summed time in the calls.
    pub share_of_time: f64,
    /// Per rank the pattern applies to.
    pub by_rank: Vec<RankWait>,
}

/// One rank's wait states.
#[derive(Clone, Debug, Serialize)]
pub struct RankWait {
    /// The rank.
    pub rank: usize,
    /// Its wait per call.
    pub wait: Summary,
    /// Summed over calls.
    pub total_s: f64,
    /// Its completion wait per call.
    pub completion: Option<Summary>,
}

/// One message's time: half the median two-way latency where ranks
/// exchange both ways (no clock needed), else the median one-way time.
pub(super) fn message_time(g: &Group) -> Option<MessageTime> {
    if g.halves.count() > 0 {
        return Some(MessageTime {
            time_s: g.halves.quantile(0.5) * 1e-9,
            from: "half the median two-way latency",
        });
    }
    (g.one_way.count() > 0).then(|| MessageTime {
        time_s: g.one_way.quantile(0.5) * 1e-9,
        from: "the median one-way time (common clock)",
    })
}

pub(super) fn arrival_pattern(g: &Group, message: Option<&MessageTime>) -> Option<ArrivalPattern> {
    let (average, worst) = &g.pattern;
    if average.count() == 0 {
        return None;
    }
    let factors = |s: &Stat| {
        let t = message.map(|m| m.time_s * 1e9).filter(|&t| t > 0.0)?;
        Some(Factors {
            mean: s.mean() / t,
            p50: s.quantile(0.5) / t,
            p90: s.quantile(0.9) / t,
            max: s.quantile(1.0) / t,
        })
    };
    Some(ArrivalPattern {
        average_case: average.summary(),
        worst_case: worst.summary(),
        average_case_factor: factors(average),
        worst_case_factor: factors(worst),
    })
}

pub(super) fn wait_states(g: &Group, clocks: &Clocks) -> Option<WaitStates> {
    if !clocks.aligned() {
        return None;
    }
    let (pattern, completion_pattern) = waits::patterns(g.op);
    let by_rank: Vec<RankWait> = g
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.wait.count() > 0)
        .map(|(rank, r)| RankWait {
            rank,
            wait: r.wait.summary(),
            total_s: r.wait.sum() * 1e-9,
            completion: some(&r.completion),
        })
        .collect();
    let total: f64 = g.ranks.iter().map(|r| r.wait.sum()).sum();
    let time: f64 = g.ranks.iter().map(|r| r.time_in_call.sum()).sum();
    Some(WaitStates {
        pattern,
        completion_pattern,
        clock: clocks.word(),
        total_s: total * 1e-9,
        completion_total_s: completion_pattern
            .map(|_| g.ranks.iter().map(|r| r.completion.sum()).sum::<f64>() * 1e-9),
        share_of_time: if time > 0.0 { total / time } else { 0.0 },
        by_rank,
    })
}
