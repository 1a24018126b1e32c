//! `autocoll balance` end to end on local threads, at sizes small enough
//! to finish in seconds on a loaded machine: what the report holds, not
//! how fast anything was.

mod support;

use support::{autocoll, tempdir};

/// Three series of the same calls, identity untouched, each balancer's
/// table a permutation that keeps the root, and the totals the sums of
/// the per-call times.
#[test]
fn balance_reports_three_series_and_identity_never_changes() {
    let dir = tempdir("balance");
    let (json, svg) = (dir.join("b.json"), dir.join("b.svg"));
    let out = autocoll()
        .args(["balance", "--op", "bcast", "-n", "5", "--calls", "40"])
        .args([
            "--load",
            "rank=1,work=100us",
            "--load-moves-at",
            "20:rank=2",
        ])
        .args(["--period", "4", "--bytes", "1K"])
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&svg)
        .output()
        .expect("autocoll runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["schema"], "autocoll.balance/1");
    assert_eq!(doc["load"]["rank"], 1);
    assert_eq!(doc["load_moves"]["rank"], 2);
    let series = doc["series"].as_array().unwrap();
    let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["identity", "swap", "sort"]);
    assert_eq!(series[0]["changes"], 0);
    assert_eq!(series[0]["reduction"], 0.0);
    assert!(series[0]["final_table"].is_null());
    for s in series {
        let inside: Vec<f64> = s["inside_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(inside.len(), 40);
        assert_eq!(s["span_s"].as_array().unwrap().len(), 40);
        let total: f64 = inside.iter().sum();
        assert!((s["total_s"].as_f64().unwrap() - total).abs() <= 1e-9 * total.max(1.0));
        let changes_at = s["changes_at"].as_array().unwrap();
        assert_eq!(changes_at.len() as u64, s["changes"].as_u64().unwrap());
        assert!(changes_at.iter().all(|k| k.as_u64().unwrap() < 40));
        assert!(s["after_move"]["total_s"].as_f64().unwrap() <= total);
        if let Some(table) = s["final_table"].as_array() {
            let mut ranks: Vec<u64> = table.iter().map(|r| r.as_u64().unwrap()).collect();
            assert_eq!(ranks[0], 0, "the root keeps its slot");
            ranks.sort_unstable();
            assert_eq!(ranks, [0, 1, 2, 3, 4]);
        }
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("identity"),
        "an SVG with the series"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("from call 20 on"), "{stdout}");
}

/// Bad input is refused before anything runs, naming the flag, with exit
/// code 2 and no file written.
#[test]
fn balance_refuses_bad_input_naming_the_flag() {
    let dir = tempdir("balance-bad");
    let json = dir.join("never.json");
    for (args, says) in [
        (
            &["--load", "rank=9,work=1ms"][..],
            "--load rank=9,work=1ms: rank 9 is not a rank",
        ),
        (&["--load", "work=fast"], "--load work=fast"),
        (&["--load", "rank=1"], "no work=T"),
        (
            &["--load", "work=1ms", "--load-moves-at", "7"],
            "--load-moves-at 7",
        ),
        (&["--load-moves-at", "5:rank=1"], "give --load too"),
        (&["--op", "reduce"], "bcast only"),
        (
            &["--impl", "bcast:flat", "--op", "allreduce"],
            "--op allreduce",
        ),
        (&["--impl", "allreduce:ring"], "--impl allreduce:ring"),
        (&["--mode", "shuffle"], "--mode"),
        (&["--period", "0"], "period must be at least 1"),
    ] {
        let out = autocoll()
            .args(["balance", "-n", "4", "--calls", "10"])
            .args(args)
            .arg("--json")
            .arg(&json)
            .output()
            .expect("autocoll runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!json.exists());
}
