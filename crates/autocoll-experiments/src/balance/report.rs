//! From rank 0's times to the report: per series, the total time inside
//! the broadcast and its reduction against the identity table (over the
//! whole run, and from the call the load moved at), the per-call span,
//! and what the balancer did to its table: as a table ([`text`]) and as
//! `autocoll.balance/1` JSON (docs/formats.md).

use std::fmt::Write;

use autocoll::measure::stats::median;
use serde::Serialize;

use super::run::{SeriesTrace, Trace};
use super::setup::Setup;

/// The schema name of the JSON.
pub const SCHEMA: &str = "autocoll.balance/1";

/// The whole report, as `--json` writes it.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `autocoll.balance/1`.
    pub schema: &'static str,
    /// The collective (bcast).
    pub op: String,
    #[serde(rename = "impl")]
    /// The broadcast's implementation.
    pub imp: String,
    /// Ranks of the job.
    pub ranks: usize,
    /// Bytes per broadcast.
    pub bytes: usize,
    /// Calls per series.
    pub calls: usize,
    /// The root of every broadcast.
    pub root: usize,
    /// Where the ranks ran.
    pub transport: String,
    /// Distinct hosts of the job.
    pub hosts: usize,
    /// The ranks shared a clock.
    pub shared_clock: bool,
    /// The pseudo-load, if any.
    pub load: Option<LoadOut>,
    /// Where the load moved, if it did.
    pub load_moves: Option<MoveOut>,
    /// The balancers' period N.
    pub period: u32,
    /// The balancers' threshold, s.
    pub threshold_s: f64,
    /// Seed of the order of the series.
    pub seed: u64,
    /// Identity, then each balancer.
    pub series: Vec<Series>,
}

/// The pseudo-load.
#[derive(Debug, Serialize)]
pub struct LoadOut {
    /// The loaded rank.
    pub rank: usize,
    /// Its work before every call, s.
    pub work_s: f64,
}

/// Where the load moved.
#[derive(Debug, Serialize)]
pub struct MoveOut {
    /// From this call on (0-based) …
    pub call: usize,
    /// … this rank is loaded.
    pub rank: usize,
}

/// One series' results.
#[derive(Debug, Serialize)]
pub struct Series {
    /// identity, swap or sort.
    pub name: String,
    /// Time inside the broadcast, summed over ranks and calls, s.
    pub total_s: f64,
    /// 1 − total ÷ identity's total.
    pub reduction: f64,
    /// Median per-call span, s.
    pub median_span_s: f64,
    /// Mean per-call span, s.
    pub mean_span_s: f64,
    /// The call from which the table held still.
    pub still_from_call: u64,
    /// Times the table changed.
    pub changes: u64,
    /// Changes undone.
    pub reverts: u64,
    /// Decisions taken.
    pub decisions: u32,
    /// The table at the end; `None` for identity.
    pub final_table: Option<Vec<usize>>,
    /// The calls at which the table changed.
    pub changes_at: Vec<usize>,
    /// The series from the call the load moved at.
    pub after_move: Option<AfterMove>,
    /// Each call's span, s.
    pub span_s: Vec<f64>,
    /// Each call's time inside, summed over the ranks, s.
    pub inside_s: Vec<f64>,
}

/// A series from the call the load moved at.
#[derive(Debug, Serialize)]
pub struct AfterMove {
    /// Time inside from the move on, s.
    pub total_s: f64,
    /// 1 − total ÷ identity's from the move on.
    pub reduction: f64,
    /// Table changes from the move on.
    pub changes: usize,
    /// Periods from the move to the last change.
    pub last_change_periods: f64,
    /// The gain over identity before the move.
    pub gain_before: f64,
    /// Periods after the move until the gain is back; `None`: never.
    pub back_after_periods: Option<f64>,
}

/// How much of the gain before the move counts as having it back: the
/// windows compared hold 2N calls each, whose medians move by ~10% on a
/// shared machine.
const BACK_SHARE: f64 = 0.9;

/// The gain of `series` over `identity` in the second half of the calls
/// before `at` (the first half holds the learning), and how many periods
/// of `period` calls after `at` the first window of 2 periods starts
/// whose median time is that gain (×[`BACK_SHARE`]) below identity's
/// median in the same window; `None` if none is.
fn gain_back(series: &[f64], identity: &[f64], at: usize, period: usize) -> (f64, Option<f64>) {
    let gain = 1.0 - sum(&series[at / 2..at]) / sum(&identity[at / 2..at]);
    let width = 2 * period;
    let back = (at..series.len().saturating_sub(width)).find(|&c| {
        let window = c..c + width;
        1.0 - median(&series[window.clone()]) / median(&identity[window]) >= BACK_SHARE * gain
    });
    (gain, back.map(|c| (c - at) as f64 / period as f64))
}

/// The report of `trace`, a run of `setup` on `transport`.
pub fn analyse(setup: &Setup, transport: &str, trace: &Trace) -> Report {
    let identity = &trace.series[0].inside_s;
    let series = setup
        .names()
        .into_iter()
        .zip(&trace.series)
        .map(|(name, t)| series_of(setup, name, t, identity))
        .collect();
    Report {
        schema: SCHEMA,
        op: "bcast".into(),
        imp: setup.imp.to_string(),
        ranks: setup.ranks,
        bytes: setup.bytes,
        calls: setup.calls,
        root: setup.root,
        transport: transport.into(),
        hosts: trace.hosts,
        shared_clock: trace.shared_clock,
        load: setup.load.map(|l| LoadOut {
            rank: l.rank,
            work_s: l.work.as_secs_f64(),
        }),
        load_moves: setup.moves.map(|(call, rank)| MoveOut { call, rank }),
        period: setup.params.period,
        threshold_s: setup.params.threshold.as_secs_f64(),
        seed: setup.seed,
        series,
    }
}

/// The results of series `t`, named `name`; `identity` is the identity
/// series' time inside of each call.
fn series_of(setup: &Setup, name: String, t: &SeriesTrace, identity: &[f64]) -> Series {
    let total = sum(&t.inside_s);
    let status = t.status.as_ref();
    Series {
        name,
        total_s: total,
        reduction: 1.0 - total / sum(identity),
        median_span_s: median(&t.span_s),
        mean_span_s: sum(&t.span_s) / t.span_s.len() as f64,
        still_from_call: status.map_or(0, |s| s.still_since),
        changes: status.map_or(0, |s| s.changes),
        reverts: status.map_or(0, |s| s.reverts),
        decisions: status.map_or(0, |s| s.decisions),
        final_table: status.map(|s| s.table.clone()),
        changes_at: t.changes_at.clone(),
        after_move: after_move(setup, t, identity),
        span_s: t.span_s.clone(),
        inside_s: t.inside_s.clone(),
    }
}

/// Series `t` from the call the load moved at, if it moved.
fn after_move(setup: &Setup, t: &SeriesTrace, identity: &[f64]) -> Option<AfterMove> {
    let (at, _) = setup.moves?;
    let period = setup.params.period;
    let total = sum(&t.inside_s[at..]);
    let later: Vec<usize> = t.changes_at.iter().copied().filter(|&k| k >= at).collect();
    let (gain_before, back) = gain_back(&t.inside_s, identity, at, period as usize);
    Some(AfterMove {
        total_s: total,
        reduction: 1.0 - total / sum(&identity[at..]),
        changes: later.len(),
        last_change_periods: later
            .last()
            .map_or(0.0, |&k| (k - at) as f64 / f64::from(period)),
        gain_before,
        back_after_periods: back,
    })
}

fn sum(xs: &[f64]) -> f64 {
    xs.iter().sum()
}

/// The report as a table, a line each series (and each series again
/// from the call the load moved at).
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<9} {:>14} {:>12} {:>15} {:>16} {:>8} {:>8}  final table",
        "series",
        "total inside s",
        "vs identity",
        "median span µs",
        "still from call",
        "changes",
        "reverts"
    );
    for s in &r.series {
        let _ = writeln!(
            out,
            "{:<9} {:>14.6} {:>11.1}% {:>15.1} {:>16} {:>8} {:>8}  {}",
            s.name,
            s.total_s,
            -100.0 * s.reduction,
            s.median_span_s * 1e6,
            s.still_from_call,
            s.changes,
            s.reverts,
            s.final_table
                .as_ref()
                .map_or("identity".into(), |t| format!("{t:?}")),
        );
    }
    let Some(moved) = &r.load_moves else {
        return out;
    };
    let _ = writeln!(
        out,
        "from call {} on (the load on rank {}):",
        moved.call, moved.rank
    );
    for s in &r.series {
        if let Some(a) = &s.after_move {
            let back = match a.back_after_periods {
                Some(p) => format!("{p:.1}"),
                None => "never".into(),
            };
            let _ = writeln!(
    out,
                "{:<9} {:>14.6} {:>11.1}%  {} changes, the last {:.1} periods after the move; gain before {:.1}%, back after {back} periods",
                s.name,
                a.total_s,
                -100.0 * a.reduction,
                a.changes,
                a.last_change_periods,
                100.0 * a.gain_before,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gain_is_back_at_the_first_window_that_holds_most_of_it() {
        let identity = vec![1.0; 30];
        // Half identity's time before the move at call 10, identity's for
        // five calls after it, then half again from call 15 on.
        let series: Vec<f64> = (0..30)
            .map(|k| if (10..15).contains(&k) { 1.0 } else { 0.5 })
            .collect();
        let (gain, back) = gain_back(&series, &identity, 10, 2);
        assert!((gain - 0.5).abs() < 1e-12, "{gain}");
        // The window of 4 calls from call 14 holds one slow call and three
        // fast: its median is the gain; the one from 13 holds two of each.
        assert_eq!(back, Some(2.0));
        let never: Vec<f64> = (0..30).map(|k| if k < 10 { 0.5 } else { 1.0 }).collect();
        assert_eq!(gain_back(&never, &identity, 10, 2).1, None);
    }
}
