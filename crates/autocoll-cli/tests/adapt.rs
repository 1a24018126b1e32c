//! `autocoll adapt` end to end on local threads, live and replayed, at
//! sizes small enough to finish in seconds on a loaded machine.

mod support;

use std::path::Path;

use support::{autocoll, tempdir};

fn adapt(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let setup = ["-n", "3", "--bytes", "8K"];
    adapt_on(dir, &setup, "bcast:flat,bcast:chain:seg=1K", extra)
}

/// [`adapt`] on `setup` (ranks, bytes) with the candidates `imps`.
fn adapt_on(dir: &Path, setup: &[&str], imps: &str, extra: &[&str]) -> serde_json::Value {
    let json = dir.join("a.json");
    let out = autocoll()
        .args(["adapt", "--op", "bcast"])
        .args(setup)
        .args(["--impl", imps])
        .arg("--json")
        .arg(&json)
        .args(extra)
        .output()
        .expect("autocoll runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn adapt_reports_the_schema_with_consistent_ratios() {
    let dir = tempdir("adapt");
    let r = adapt(&dir, &["--calls", "100"]);
    assert_eq!(r["schema"], "autocoll.adapt/1");
    for key in [
        "op",
        "ranks",
        "bytes",
        "calls",
        "candidates",
        "alpha",
        "fixed",
        "oracle",
        "lottery",
        "mean_ratio",
        "median_ratio",
    ] {
        assert!(!r[key].is_null(), "{key} missing");
    }
    for key in [
        "mean_s",
        "median_s",
        "settled_at_call",
        "explore_share",
        "final_impl",
    ] {
        assert!(r["lottery"].get(key).is_some(), "lottery.{key} missing");
    }
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let ratio = f(&r["lottery"]["mean_s"]) / f(&r["oracle"]["mean_s"]);
    assert!((ratio - f(&r["mean_ratio"])).abs() < 1e-9);
    let ratio = f(&r["lottery"]["median_s"]) / f(&r["oracle"]["median_s"]);
    assert!((ratio - f(&r["median_ratio"])).abs() < 1e-9);
    let best = r["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| f(&x["mean_s"]))
        .fold(f64::INFINITY, f64::min);
    assert_eq!(
        best,
        f(&r["oracle"]["mean_s"]),
        "the oracle is the best fixed candidate"
    );
}

#[test]
fn adapt_with_seeds_reports_every_run_and_their_spread() {
    let dir = tempdir("adapt-seeds");
    let r = adapt(&dir, &["--calls", "60", "--seed", "5", "--seeds", "3"]);
    assert_eq!(r["schema"], "autocoll.adapt-seeds/1");
    let runs = r["runs"].as_array().unwrap();
    let seeds: Vec<u64> = runs.iter().map(|x| x["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [5, 6, 7]);
    let mut medians: Vec<f64> = runs
        .iter()
        .map(|x| x["median_ratio"].as_f64().unwrap())
        .collect();
    medians.sort_by(f64::total_cmp);
    let s = &r["summary"];
    assert_eq!(s["runs"], 3);
    assert_eq!(s["median_ratio"]["median"].as_f64().unwrap(), medians[1]);
    assert_eq!(s["median_ratio"]["max"].as_f64().unwrap(), medians[2]);
    let within = medians.iter().filter(|&&m| m <= 1.03).count();
    assert_eq!(s["median_ratio"]["within_target"], within);
}

/// With `--state`, every run after the first starts from what the runs
/// before it saved, and the spread reports those runs' first 50 calls
/// against the oracle's calls of the same rounds.
#[test]
fn adapt_with_a_state_reports_the_first_calls_of_the_runs_that_start_from_it() {
    let dir = tempdir("adapt-state");
    let state = dir.join("state.json");
    let r = adapt(
        &dir,
        &[
            "--calls",
            "60",
            "--seeds",
            "3",
            "--state",
            state.to_str().unwrap(),
        ],
    );
    let runs = r["runs"].as_array().unwrap();
    let restored: Vec<bool> = runs
        .iter()
        .map(|x| x["lottery"]["from_saved_state"].as_bool().unwrap())
        .collect();
    assert_eq!(restored, [false, true, true]);
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    for run in runs {
        let per_call = &run["per_call"];
        let oracle = run["oracle"]["impl"].as_str().unwrap();
        let series = per_call["fixed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["impl"] == oracle)
            .unwrap();
        let mean = |v: &serde_json::Value| {
            let xs = v.as_array().unwrap();
            xs[..50].iter().map(f).sum::<f64>() / 50.0
        };
        let ratio = mean(&per_call["lottery"]["s"]) / mean(&series["s"]);
        assert!((ratio - f(&run["first50_mean_ratio"])).abs() < 1e-9);
    }
    let first = &r["summary"]["first50_ratio_from_saved_state"];
    assert_eq!(first["runs"], 2);
    let worst = f(&runs[1]["first50_mean_ratio"]).max(f(&runs[2]["first50_mean_ratio"]));
    assert_eq!(f(&first["max"]), worst);
}

/// The call after a draw message pays for the message and is not learned
/// from, so the period it begins holds at least one more call of the same
/// candidate: a lone call there (the warm-up's first try, a readmitted
/// candidate's one trial) taught the lottery only the message's cost.
#[test]
fn every_draw_message_is_followed_by_a_call_the_lottery_learns_from() {
    let dir = tempdir("adapt-after-message");
    let r = adapt(&dir, &["--calls", "200"]);
    let lottery = &r["per_call"]["lottery"];
    let drew = lottery["drew"].as_array().unwrap();
    let imp = lottery["impl"].as_array().unwrap();
    let messages: Vec<usize> = (0..drew.len() - 1).filter(|&i| drew[i] == true).collect();
    assert!(
        messages.len() >= 3,
        "warm-up and lottery draws: {messages:?}"
    );
    for i in messages {
        assert!(
            imp[i + 1] == imp[i] && drew[i + 1] == false,
            "call {i} carried a message and call {} is not its period's: {:?}",
            i + 1,
            &imp[i..i + 2]
        );
    }
}

/// Calls of the disturbed runs. The disturbance begins halfway, at call
/// 240, and a candidate alone in the lottery may hold up to 155 calls past
/// a change before the drift rule sees it (`ALONE_HOLDS`): with fewer
/// calls the last hold could outlast the run.
const DISTURBED_CALLS: &str = "480";

/// A 3 ms sleep on every segment rank 1 receives costs the 8-segment chain
/// 8 sleeps per call and the flat tree one: the lottery must end on flat.
#[test]
fn adapt_disturbed_by_a_local_delay_moves_the_lottery() {
    let dir = tempdir("adapt-disturb");
    let extra = ["--calls", DISTURBED_CALLS, "--disturb", "rank=1,delay=3ms"];
    let r = adapt(&dir, &extra);
    assert_eq!(r["disturb"]["best_after"], "bcast:flat");
    assert_eq!(r["lottery"]["final_impl"], "bcast:flat");
}

/// A sleep after every segment the root sends (its outgoing link slowed,
/// as the emulated cluster's throttle of the root's host) costs the flat
/// tree 12 sleeps a call (3 children, 4 segments each) and the chain 4:
/// the lottery must move to the chain.
#[test]
fn adapt_a_slow_outgoing_link_at_the_root_moves_the_lottery_to_the_chain() {
    let dir = tempdir("adapt-send-delay");
    let setup = ["-n", "4", "--bytes", "8K"];
    let imps = "bcast:flat:seg=2K,bcast:chain:seg=2K";
    let disturb = "rank=0,send-delay=2ms";
    let extra = ["--calls", DISTURBED_CALLS, "--disturb", disturb];
    let r = adapt_on(&dir, &setup, imps, &extra);
    assert_eq!(r["disturb"]["best_after"], "bcast:chain:seg=2K");
    assert_eq!(r["lottery"]["final_impl"], "bcast:chain:seg=2K");
    let chosen = r["per_call"]["lottery"]["impl"].as_array().unwrap();
    let on_chain = chosen[chosen.len() - 40..]
        .iter()
        .filter(|i| *i == "bcast:chain:seg=2K")
        .count();
    // A majority, not all: after the drift rule fires, flat's stale
    // average (from before the slowdown) counts as one of its times, and
    // its explorations go on.
    assert!(
        on_chain > 20,
        "the chain ran {on_chain} of the last 40 calls"
    );
}

fn replay(file: &Path, extra: &[&str]) -> std::process::Output {
    autocoll()
        .args(["adapt", "--replay"])
        .arg(file)
        .args(extra)
        .output()
        .expect("autocoll runs")
}

/// A successful replay of `file`, read back from its `--json`.
fn replayed(file: &Path, json: &Path) -> serde_json::Value {
    let out = replay(file, &["--json", json.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// What a replay of `file` that must fail (exit 1) says.
fn replay_error(file: &Path) -> String {
    let out = replay(file, &[]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    err
}

/// The replay charges each lottery call the recorded time of its
/// candidate's call in the same round, plus the draw message's cost after
/// a message, and draws the same way every time.
#[test]
fn adapt_replay_runs_the_lottery_over_the_recorded_series() {
    let dir = tempdir("adapt-replay");
    let recorded = adapt(&dir, &["--calls", "120", "--seed", "7"]);
    let r = replayed(&dir.join("a.json"), &dir.join("replayed.json"));
    assert_eq!(r["schema"], "autocoll.adapt/1");
    assert_eq!(r["candidates"], recorded["candidates"]);
    assert_eq!(r["per_call"]["fixed"], recorded["per_call"]["fixed"]);
    let cost = r["replay"]["draw_message_s"].as_f64().unwrap();
    assert!(cost >= 0.0);
    let fixed: std::collections::HashMap<&str, Vec<f64>> = r["per_call"]["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["impl"].as_str().unwrap(),
                serde_json::from_value(f["s"].clone()).unwrap(),
            )
        })
        .collect();
    let lottery = &r["per_call"]["lottery"];
    let times = lottery["s"].as_array().unwrap();
    assert_eq!(times.len(), 120);
    for (k, t) in times.iter().enumerate() {
        let imp = lottery["impl"][k].as_str().unwrap();
        let extra = if lottery["drew"][k] == true {
            cost
        } else {
            0.0
        };
        let want = fixed[imp][k] + extra;
        assert!(
            (t.as_f64().unwrap() - want).abs() < 1e-12,
            "call {k}: {t} against {want}"
        );
    }
    let again = replayed(&dir.join("a.json"), &dir.join("again.json"));
    assert_eq!(again["per_call"]["lottery"], r["per_call"]["lottery"]);
}

#[test]
fn adapt_replay_names_what_is_wrong_with_its_file() {
    let dir = tempdir("adapt-replay-bad");
    let mut recorded = adapt(&dir, &["--calls", "40"]);
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, r#"{"schema": "autocoll.bench/1"}"#).unwrap();
    let err = replay_error(&foreign);
    assert!(
        err.contains("foreign.json") && err.contains("schema"),
        "{err}"
    );
    recorded["per_call"]["fixed"][1]["s"]
        .as_array_mut()
        .unwrap()
        .truncate(10);
    let short = dir.join("short.json");
    std::fs::write(&short, recorded.to_string()).unwrap();
    let err = replay_error(&short);
    assert!(
        err.contains("short.json: run 1") && err.contains("has 10 calls, the lottery 40"),
        "{err}"
    );
}
