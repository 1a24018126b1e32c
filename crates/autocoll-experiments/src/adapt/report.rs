//! The report of a run: the series' means and medians, the oracle, the
//! lottery's ratios to it and when it settled ([`analyse`], the JSON of
//! `autocoll adapt --json`), told for one run or as the spread over
//! several seeds ([`report`]). Live runs and replays report alike.

use std::fmt::Write;

use autocoll::measure::stats::Summary;
use serde_json::json;

use super::log::Trace;
use super::setup::Setup;

/// Width of the windows that define when the lottery settled.
pub const WINDOW: usize = 50;

/// Candidates whose mean is within this ratio of the oracle's count as
/// near-best for `near_best_from_call`.
const NEAR: f64 = 1.03;

/// The runs (one, or several seeds') as a document and as text: one
/// run's report as it is, several as `autocoll.adapt-seeds/1` with their
/// spread.
pub fn report(reports: &[serde_json::Value]) -> (serde_json::Value, String) {
    if let [one] = reports {
        return (one.clone(), run_text(one));
    }
    let summary = spread(reports);
    let text = spread_text(reports, &summary);
    let doc = json!({"schema": "autocoll.adapt-seeds/1", "summary": summary, "runs": reports});
    (doc, text)
}

/// The first call (0-based, ≥ `from`) from which `choice` holds the
/// majority of every later window of [`WINDOW`] calls; a run shorter than
/// a window from `from` is one window.
pub fn settled_at(chosen: &[String], choice: &str, from: usize) -> Option<usize> {
    settled_among(chosen, |c| c == choice, from)
}

/// [`settled_at`] for any of the choices `among` accepts.
fn settled_among(chosen: &[String], among: impl Fn(&str) -> bool, from: usize) -> Option<usize> {
    let n = chosen.len();
    if from >= n {
        return None;
    }
    let majority = |lo: usize, hi: usize| {
        let hits = chosen[lo..hi].iter().filter(|c| among(c)).count();
        2 * hits > hi - lo
    };
    if n - from < WINDOW {
        return majority(from, n).then_some(from);
    }
    let mut settled = None;
    for start in (from..=n - WINDOW).rev() {
        if !majority(start, start + WINDOW) {
            break;
        }
        settled = Some(start);
    }
    settled
}

/// The results, in the schema of `--json`.
pub fn analyse(s: &Setup, ranks: usize, t: &Trace, seed: u64) -> serde_json::Value {
    let names = s.names();
    let fixed: Vec<Summary> = t.fixed.iter().map(|xs| Summary::of(xs)).collect();
    let oracle = (0..fixed.len())
        .min_by(|&a, &b| fixed[a].mean.total_cmp(&fixed[b].mean))
        .expect("at least one candidate");
    let lot = Summary::of(&t.lottery);
    let o = &fixed[oracle];
    let z = names.len() as f64;
    let bound = z * z.log2().max(1.0) / (1.0 - s.params.alpha) * 10.0;
    let (first_mean, oracle_first_mean) = first_means(t, oracle);
    let near_best = near_best(&names, &fixed, o.mean);
    let mut doc = json!({
        "schema": "autocoll.adapt/1",
        "seed": seed,
        "op": s.op.to_string(),
        "ranks": ranks,
        "bytes": s.bytes,
        "calls": s.calls,
        "hosts": t.hosts,
        "candidates": names,
        "alpha": s.params.alpha,
        "fixed": names.iter().zip(&fixed).map(|(n, f)| json!({
            "impl": n, "mean_s": f.mean, "median_s": f.median,
        })).collect::<Vec<_>>(),
        "oracle": {"impl": names[oracle], "mean_s": o.mean, "median_s": o.median},
        "lottery": lottery(t, &lot, &near_best, first_mean),
        "mean_ratio": lot.mean / o.mean,
        "median_ratio": lot.median / o.median,
        "first50_mean_ratio": first_mean / oracle_first_mean,
        "settle_bound_calls": bound,
        "per_call": per_call(&names, t),
    });
    if let Some(d) = &s.disturb {
        doc["disturb"] = disturbance(&names, t, d.to_string());
    }
    doc
}

/// The mean of the lottery's first [`WINDOW`] calls and that of the
/// oracle's calls of the same rounds: over 50 calls the machine's speed
/// can sit well off its average for the run, and against the whole run's
/// mean that drift, not the lottery, would decide the ratio of the first
/// 50 calls.
fn first_means(t: &Trace, oracle: usize) -> (f64, f64) {
    let first = &t.lottery[..t.lottery.len().min(WINDOW)];
    let oracle_first = &t.fixed[oracle][..t.fixed[oracle].len().min(WINDOW)];
    (Summary::of(first).mean, Summary::of(oracle_first).mean)
}

/// The candidates within [`NEAR`] of the oracle's mean: among them the
/// lottery may trade places at random without costing more than that.
fn near_best<'a>(names: &'a [String], fixed: &[Summary], oracle_mean: f64) -> Vec<&'a str> {
    names
        .iter()
        .zip(fixed)
        .filter(|(_, f)| f.mean <= NEAR * oracle_mean)
        .map(|(n, _)| n.as_str())
        .collect()
}

/// The lottery's part of the results.
fn lottery(t: &Trace, lot: &Summary, near_best: &[&str], first_mean: f64) -> serde_json::Value {
    let explored = t.explored.iter().filter(|&&e| e).count();
    json!({
        "mean_s": lot.mean,
        "median_s": lot.median,
        "settled_at_call": settled_at(&t.chosen, &t.final_impl, 0).map(|c| c + 1),
        "near_best_from_call": settled_among(&t.chosen, |c| near_best.contains(&c), 0).map(|c| c + 1),
        "explore_share": explored as f64 / t.lottery.len().max(1) as f64,
        "final_impl": t.final_impl,
        "first50_mean_s": first_mean,
        "from_saved_state": t.restored,
    })
}

/// Every call, in order: a fixed series' k-th call ran in the same round
/// as the lottery's k-th, so the two can be set side by side.
fn per_call(names: &[String], t: &Trace) -> serde_json::Value {
    json!({
        "fixed": names.iter().zip(&t.fixed).map(|(n, xs)| json!({
            "impl": n, "s": xs,
        })).collect::<Vec<_>>(),
        "lottery": {"s": t.lottery, "impl": t.chosen, "drew": t.drew},
    })
}

/// How the lottery followed a disturbance that began halfway (`spec`).
pub fn disturbance(names: &[String], t: &Trace, spec: String) -> serde_json::Value {
    let at = t.lottery.len() / 2;
    let after: Vec<f64> = t
        .fixed
        .iter()
        .map(|xs| Summary::of(&xs[at..]).mean)
        .collect();
    let best = (0..after.len())
        .min_by(|&a, &b| after[a].total_cmp(&after[b]))
        .expect("at least one candidate");
    let on_best = settled_at(&t.chosen, &names[best], at).map(|c| c - at);
    json!({
        "spec": spec,
        "at_call": at + 1,
        "best_after": names[best],
        "best_after_mean_s": after[best],
        "lottery_on_best_after_calls": on_best,
    })
}

/// One run's report as a table of the series and lines on the lottery.
fn run_text(r: &serde_json::Value) -> String {
    let mut out = String::new();
    let us = |v: &serde_json::Value| v.as_f64().map_or("-".into(), |x| format!("{:.1}", x * 1e6));
    let _ = writeln!(
        out,
        "{:<34} {:>11} {:>11}",
        "series", "mean µs", "median µs"
    );
    for f in r["fixed"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{:<34} {:>11} {:>11}",
            f["impl"].as_str().unwrap_or(""),
            us(&f["mean_s"]),
            us(&f["median_s"])
        );
    }
    let l = &r["lottery"];
    let _ = writeln!(
        out,
        "{:<34} {:>11} {:>11}",
        "lottery",
        us(&l["mean_s"]),
        us(&l["median_s"])
    );
    let _ = writeln!(
        out,
        "oracle {}; lottery/oracle: mean {:.3}, median {:.3}; first 50 calls {:.3} (the oracle's same 50){}",
        r["oracle"]["impl"].as_str().unwrap_or(""),
        r["mean_ratio"].as_f64().unwrap_or(f64::NAN),
        r["median_ratio"].as_f64().unwrap_or(f64::NAN),
        r["first50_mean_ratio"].as_f64().unwrap_or(f64::NAN),
        if l["from_saved_state"].as_bool() == Some(true) {
            ", from a saved state"
        } else {
            ""
        },
    );
    let _ = writeln!(
        out,
        "settled on {} at call {} (bound {:.0}), on the near-best (within {:.0}% of the oracle) from call {}; exploring {:.1}% of calls",
        l["final_impl"].as_str().unwrap_or(""),
        call(&l["settled_at_call"]),
        r["settle_bound_calls"].as_f64().unwrap_or(f64::NAN),
        (NEAR - 1.0) * 100.0,
        call(&l["near_best_from_call"]),
        l["explore_share"].as_f64().unwrap_or(f64::NAN) * 100.0
    );
    if let Some(d) = r.get("disturb") {
        let _ = writeln!(
            out,
            "disturbed at call {}: best after is {}; lottery on it after {} calls",
            d["at_call"],
            d["best_after"].as_str().unwrap_or(""),
            call(&d["lottery_on_best_after_calls"])
        );
    }
    out
}

/// A call number of the report, or `never` where it has none.
fn call(v: &serde_json::Value) -> String {
    v.as_u64().map_or("never".to_string(), |c| c.to_string())
}

/// The targets of the lottery, as ratios to the oracle.
const MEAN_TARGET: f64 = 1.10;
const MEDIAN_TARGET: f64 = 1.03;

/// Over runs: the median and worst of each ratio, and how many runs met
/// each target.
fn spread(runs: &[serde_json::Value]) -> serde_json::Value {
    let ratios = |key: &str| -> Vec<f64> { runs.iter().filter_map(|r| r[key].as_f64()).collect() };
    let over_runs = |key: &str, target: f64| ratio_spread(&ratios(key), target);
    let settled = |key: &str| {
        runs.iter()
            .filter(|r| {
                let bound = r["settle_bound_calls"].as_f64().unwrap_or(0.0);
                r["lottery"][key].as_f64().is_some_and(|c| c <= bound)
            })
            .count()
    };
    let restored: Vec<f64> = runs
        .iter()
        .filter(|r| r["lottery"]["from_saved_state"].as_bool() == Some(true))
        .filter_map(|r| r["first50_mean_ratio"].as_f64())
        .collect();
    let first50 = (!restored.is_empty()).then(|| ratio_spread(&restored, MEAN_TARGET));
    json!({
        "runs": runs.len(),
        "first50_ratio_from_saved_state": first50,
        "mean_ratio": over_runs("mean_ratio", MEAN_TARGET),
        "median_ratio": over_runs("median_ratio", MEDIAN_TARGET),
        "settled_within_bound": settled("settled_at_call"),
        "near_best_within_bound": settled("near_best_from_call"),
    })
}

/// The median and worst of `ratios`, and how many are within `target`.
fn ratio_spread(ratios: &[f64], target: f64) -> serde_json::Value {
    let s = Summary::of(ratios);
    let within = ratios.iter().filter(|&&x| x <= target).count();
    json!({"runs": ratios.len(), "median": s.median, "max": s.max, "within_target": within, "target": target})
}

/// Several runs' reports as a line each and their spread.
fn spread_text(runs: &[serde_json::Value], summary: &serde_json::Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>6} {:<28} {:>10} {:>12} {:>8} {:>10}",
        "seed", "oracle", "mean ratio", "median ratio", "settled", "near-best"
    );
    for r in runs {
        let l = &r["lottery"];
        let _ = writeln!(
            out,
            "{:>6} {:<28} {:>10.3} {:>12.3} {:>8} {:>10}",
            r["seed"].as_u64().unwrap_or(0),
            r["oracle"]["impl"].as_str().unwrap_or(""),
            r["mean_ratio"].as_f64().unwrap_or(f64::NAN),
            r["median_ratio"].as_f64().unwrap_or(f64::NAN),
            call(&l["settled_at_call"]),
            call(&l["near_best_from_call"]),
        );
    }
    let line = |out: &mut String, name: &str, v: &serde_json::Value| {
        if v.is_null() {
            return;
        }
        let _ = writeln!(
            out,
            "{name}: median over runs {:.3}, worst {:.3}; within {:.2} in {} of {} runs",
            v["median"].as_f64().unwrap_or(f64::NAN),
            v["max"].as_f64().unwrap_or(f64::NAN),
            v["target"].as_f64().unwrap_or(f64::NAN),
            v["within_target"],
            v["runs"]
        );
    };
    line(&mut out, "lottery mean ÷ oracle", &summary["mean_ratio"]);
    line(
        &mut out,
        "lottery median ÷ oracle",
        &summary["median_ratio"],
    );
    line(
        &mut out,
        "first 50 calls ÷ the oracle's same 50, runs from a saved state",
        &summary["first50_ratio_from_saved_state"],
    );
    let _ = writeln!(
        out,
        "settled within the bound in {} of {} runs (on the near-best in {})",
        summary["settled_within_bound"], summary["runs"], summary["near_best_within_bound"]
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settling_needs_a_majority_of_every_later_window() {
        let mut chosen: Vec<String> = (0..100)
            .map(|i| if i % 2 == 0 { "a" } else { "b" }.into())
            .collect();
        chosen.extend((0..200).map(|_| "b".to_string()));
        let at = settled_at(&chosen, "b", 0).unwrap();
        // The window starting at `at` holds 26 b's of 50: just a majority.
        assert!((50..=100).contains(&at), "{at}");
        assert_eq!(settled_at(&chosen, "a", 0), None);
        assert_eq!(settled_at(&chosen, "b", 150), Some(150));
    }
}
