//! The lottery run again, without calls, over the fixed series a run
//! recorded (`autocoll adapt --replay FILE`).
//!
//! In a recorded run the lottery's k-th call ran in the same round as every
//! fixed series' k-th call, and its time matches that tree's own calls of
//! the same rounds, so the recorded series are what the lottery would have measured had it chosen otherwise. The
//! replay drives the real selector through a one-process [`Group`]: only
//! the clock is replaced. What it cannot know is how a different choice
//! would have changed the machine; what it adds is the run's own cost of a
//! draw message (the median lottery call that followed one, less the
//! median of the others) on every call that follows one.

use std::time::Duration;

use autocoll::measure::stats::median;
use autocoll::select::lottery::Params;
use autocoll::select::{Fold, Group};
use autocoll::{Collective, Implementation, Selector};
use serde::Deserialize;
use serde_json::json;

use super::log::{Logged, Trace};
use super::report::{analyse, disturbance};
use super::setup::Setup;
use crate::Error;

/// What the replay reads of a recorded run (`autocoll.adapt/1`).
#[derive(Deserialize)]
pub struct Recorded {
    op: String,
    ranks: usize,
    bytes: usize,
    seed: u64,
    #[serde(default)]
    hosts: Vec<String>,
    candidates: Vec<String>,
    per_call: PerCall,
    disturb: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct PerCall {
    fixed: Vec<Series>,
    lottery: LotteryCalls,
}

#[derive(Deserialize)]
struct Series {
    #[serde(rename = "impl")]
    imp: String,
    s: Vec<f64>,
}

#[derive(Deserialize)]
struct LotteryCalls {
    s: Vec<f64>,
    drew: Vec<bool>,
}

/// One rank standing for all: the recorded times already are what all
/// ranks agreed on.
struct Replayed {
    ranks: usize,
}

impl Group for Replayed {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        self.ranks
    }
    fn shared_clock(&self) -> bool {
        true
    }
    fn fold_to_rank0(&mut self, _values: &mut [f64], _how: Fold) -> autocoll::Result<()> {
        Ok(())
    }
    fn share_rank0(&mut self, _values: &mut [u64]) -> autocoll::Result<()> {
        Ok(())
    }
}

/// The runs of an `autocoll.adapt/1` or `autocoll.adapt-seeds/1` file's
/// `text`.
pub fn runs(text: &str) -> Result<Vec<Recorded>, Error> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(Error::NotJson)?;
    let runs = match doc["schema"].as_str() {
        Some("autocoll.adapt/1") => vec![doc],
        Some("autocoll.adapt-seeds/1") => match doc["runs"].as_array() {
            Some(runs) => runs.clone(),
            None => return Err(Error::Recorded("an adapt-seeds file without runs".into())),
        },
        other => return Err(Error::Recorded(format!(
            "schema {other:?}, expected autocoll.adapt/1 or autocoll.adapt-seeds/1 (a --json of autocoll adapt)"
        ))),
    };
    (1..)
        .zip(runs)
        .map(|(run, doc)| {
            let r: Recorded =
                serde_json::from_value(doc).map_err(|source| Error::NotARun { run, source })?;
            check(&r).map_err(|why| Error::Unusable { run, why })?;
            Ok(r)
        })
        .collect()
}

/// A recorded run the replay can use: every candidate's series, all of
/// one length, times that are times.
fn check(r: &Recorded) -> Result<(), String> {
    let calls = r.per_call.lottery.s.len();
    if calls < 2 || r.per_call.lottery.drew.len() != calls {
        return Err("the lottery's per-call record is missing or uneven".into());
    }
    let names: Vec<&str> = r.per_call.fixed.iter().map(|f| f.imp.as_str()).collect();
    if names != r.candidates.iter().map(String::as_str).collect::<Vec<_>>() {
        return Err("the per-call series are not the run's candidates".into());
    }
    for f in &r.per_call.fixed {
        if f.s.len() != calls {
            return Err(format!(
                "{} has {} calls, the lottery {calls}",
                f.imp,
                f.s.len()
            ));
        }
        if let Some(t) = f.s.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
            return Err(format!("{} has a time of {t} s", f.imp));
        }
    }
    if r.ranks == 0 {
        return Err("a run of 0 ranks".into());
    }
    Ok(())
}

/// The run's cost of a draw message: the median lottery call that followed
/// one, less the median of the others (0 when either is missing).
fn draw_cost(l: &LotteryCalls) -> f64 {
    let part = |drew: bool| -> Vec<f64> {
        let pairs = l.s.iter().zip(&l.drew);
        pairs.filter(|(_, &d)| d == drew).map(|(&t, _)| t).collect()
    };
    let (after, others) = (part(true), part(false));
    if after.is_empty() || others.is_empty() {
        return 0.0;
    }
    (median(&after) - median(&others)).max(0.0)
}

/// Every run of `runs` replayed `seeds` times, with the lottery seeded
/// by the run's seed, + 1, …: the reports, run by run.
pub fn replay_all(
    runs: &[Recorded],
    params: &Params,
    seeds: u64,
) -> Result<Vec<serde_json::Value>, Error> {
    let mut reports = Vec::new();
    for (run, r) in (1..).zip(runs) {
        for seed in (r.seed..).take(seeds as usize) {
            let doc = replay(r, params, seed).map_err(|e| Error::Replay {
                run,
                source: Box::new(e),
            })?;
            reports.push(doc);
        }
    }
    Ok(reports)
}

/// One replay of `r` with the lottery seeded by `seed`, as a report of
/// [`super::report::analyse`] with the cost of a draw message it added.
pub fn replay(r: &Recorded, params: &Params, seed: u64) -> Result<serde_json::Value, Error> {
    let op: Collective =
        r.op.parse()
            .map_err(|e| Error::Recorded(format!("op {:?}: {e}", r.op)))?;
    let candidates = r
        .candidates
        .iter()
        .map(|c| {
            c.parse::<Implementation>()
                .map_err(|e| Error::Recorded(format!("candidate {c}: {e}")))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let setup = Setup {
        op,
        ranks: r.ranks,
        bytes: r.bytes,
        root: 0,
        calls: r.per_call.lottery.s.len(),
        candidates,
        params: params.clone(),
        seed,
        seeds: 1,
        state: None,
        disturb: None,
        timeout: Duration::ZERO,
    };
    let message = draw_cost(&r.per_call.lottery);
    let trace = drive(r, &setup, message)?;
    let mut doc = analyse(&setup, r.ranks, &trace, seed);
    if let Some(spec) = r.disturb.as_ref().and_then(|d| d["spec"].as_str()) {
        doc["disturb"] = disturbance(&r.candidates, &trace, spec.to_string());
    }
    doc["replay"] = json!({"draw_message_s": message});
    Ok(doc)
}

/// Runs the lottery over the recorded rounds.
fn drive(r: &Recorded, s: &Setup, message: f64) -> Result<Trace, Error> {
    let (mut selector, log) = Logged::new(s.lottery(), s.calls);
    let mut group = Replayed { ranks: r.ranks };
    let mut times = Vec::with_capacity(s.calls);
    let mut clock = 0u64;
    for k in 0..s.calls {
        let imp = selector.select(&mut group, s.op, s.bytes)?;
        let (index, drew) = {
            let log = log.lock().unwrap_or_else(|e| e.into_inner());
            (log.chosen[k], log.drew[k])
        };
        let t = r.per_call.fixed[index].s[k] + if drew { message } else { 0.0 };
        let ns = (t * 1e9).round() as u64;
        selector.record(&imp, s.bytes, clock, clock + ns);
        clock += ns;
        times.push(t);
    }
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    let fixed = r.per_call.fixed.iter().map(|f| f.s.clone()).collect();
    Ok(log.trace(&r.candidates, r.hosts.clone(), fixed, times))
}
