//! `autocoll adapt --replay FILE`: the lottery run again, without calls,
//! over the fixed series a run recorded.
//!
//! In a recorded run the lottery's k-th call ran in the same round as every
//! fixed series' k-th call, and its time matched that tree's own calls of
//! the same rounds (within 1% on 4 local processes), so the recorded series
//! are what the lottery would have measured had it chosen otherwise. The
//! replay drives the real selector through a one-process [`Group`]: only
//! the clock is replaced. What it cannot know is how a different choice
//! would have changed the machine; what it adds is the run's own cost of a
//! draw message (the median lottery call that followed one, less the
//! median of the others) on every call that follows one.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use autocoll::measure::stats::median;
use autocoll::select::lottery::Params;
use autocoll::select::{Fold, Group};
use autocoll::{Collective, Implementation, Selector};
use serde::Deserialize;
use serde_json::json;

use super::log::{Logged, Trace};
use super::report::{analyse, disturbance, report};
use super::{params_of, Args, Setup};
use crate::Failure;

/// What the replay reads of a recorded run (`autocoll.adapt/1`).
#[derive(Deserialize)]
struct Recorded {
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

/// Replays every run of `path` (`--seeds` times each) and reports them as
/// `adapt` reports live runs.
pub fn run(path: &Path, a: &Args) -> Result<ExitCode, Failure> {
    let params = params_of(a)?;
    if a.plot.is_some() {
        return Err(Failure::Usage(
            "--plot draws a live run: leave it out of --replay".into(),
        ));
    }
    let runs = load(path).map_err(Failure::Run)?;
    let mut reports = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for seed in (r.seed..).take(a.seeds as usize) {
            let doc = replay(r, &params, seed)
                .with_context(|| format!("{}: run {}", path.display(), i + 1))
                .map_err(Failure::Run)?;
            reports.push(doc);
        }
    }
    for doc in &mut reports {
        doc["replay"]["from"] = json!(path.display().to_string());
    }
    report(a, &reports)?;
    Ok(ExitCode::SUCCESS)
}

/// The runs of an `autocoll.adapt/1` or `autocoll.adapt-seeds/1` file.
fn load(path: &Path) -> anyhow::Result<Vec<Recorded>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let runs = match doc["schema"].as_str() {
        Some("autocoll.adapt/1") => vec![doc],
        Some("autocoll.adapt-seeds/1") => match doc["runs"].as_array() {
            Some(runs) => runs.clone(),
            None => bail!("{}: an adapt-seeds file without runs", path.display()),
        },
        other => bail!(
            "{}: schema {other:?}, expected autocoll.adapt/1 or autocoll.adapt-seeds/1 (a --json of autocoll adapt)",
            path.display()
        ),
    };
    runs.into_iter()
        .enumerate()
        .map(|(i, run)| {
            let r: Recorded = serde_json::from_value(run).with_context(|| {
                format!(
                    "{}: run {}: not a recorded run with per-call times",
                    path.display(),
                    i + 1
                )
            })?;
            check(&r).with_context(|| format!("{}: run {}", path.display(), i + 1))?;
            Ok(r)
        })
        .collect()
}

/// A recorded run the replay can use: every candidate's series, all of
/// one length, times that are times.
fn check(r: &Recorded) -> anyhow::Result<()> {
    let calls = r.per_call.lottery.s.len();
    if calls < 2 || r.per_call.lottery.drew.len() != calls {
        bail!("the lottery's per-call record is missing or uneven");
    }
    let names: Vec<&str> = r.per_call.fixed.iter().map(|f| f.imp.as_str()).collect();
    if names != r.candidates.iter().map(String::as_str).collect::<Vec<_>>() {
        bail!("the per-call series are not the run's candidates");
    }
    for f in &r.per_call.fixed {
        if f.s.len() != calls {
            bail!("{} has {} calls, the lottery {calls}", f.imp, f.s.len());
        }
        if let Some(t) = f.s.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
            bail!("{} has a time of {t} s", f.imp);
        }
    }
    if r.ranks == 0 {
        bail!("a run of 0 ranks");
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

/// One replay of `r` with the lottery seeded by `seed`, as a report.
fn replay(r: &Recorded, params: &Params, seed: u64) -> anyhow::Result<serde_json::Value> {
    let op: Collective = r.op.parse().map_err(|e| anyhow!("op {:?}: {e}", r.op))?;
    let candidates = r
        .candidates
        .iter()
        .map(|c| {
            c.parse::<Implementation>()
                .map_err(|e| anyhow!("candidate {c}: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
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
        trace: None,
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
fn drive(r: &Recorded, s: &Setup, message: f64) -> anyhow::Result<Trace> {
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
