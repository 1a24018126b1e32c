//! Issue 4: `ol-i` agrees with the shared-clock `truth` for bcast at 4
//! ranks and 64 KiB over tcp, for the chain, backward-chain, binomial and
//! flat trees, within 25% (the benchmark's target is 10%; the README has
//! the measured errors). It checks agreement, not speed.
//!
//! The ranks are processes on four hosts of the emulated 100 Mbit/s
//! cluster, started by `autocoll bench --transport tcp` through the
//! cluster's agent: network namespaces share the machine's clock, so the
//! truth is available, and the links, not this 2-core machine's CPUs, set
//! the pace, as on the paper's Ethernet clusters. (With four processes on
//! two cores and no link between them, the OL_i method's premise that
//! every rank has a processor of its own fails, and ol-i undershoots the
//! truth of the fan-out trees by up to a quarter.) Needs root.

mod support;

use std::path::PathBuf;

use serde_json::Value;
use support::{autocoll, cannot_make_clusters, Cluster};

const TREES: [&str; 4] = [
    "bcast:chain",
    "bcast:backward-chain",
    "bcast:binomial",
    "bcast:flat",
];

#[test]
fn ol_i_agrees_with_truth_over_tcp_on_an_emulated_cluster() {
    if let Some(reason) = cannot_make_clusters() {
        eprintln!("SKIPPED ol_i_agrees_with_truth_over_tcp_on_an_emulated_cluster: {reason}");
        return;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let cluster = Cluster::up("clusters/star8-100m.toml", tmp.join("accuracy"));
    let dir = cluster.dir();
    let json = tmp.join("accuracy.json");
    let out = autocoll()
        .args(["bench", "--transport", "tcp", "--hostfile"])
        .arg(dir.join("hostfile.autocoll"))
        .arg("--agent")
        .arg(dir.join("agent"))
        .args([
            "--op",
            "bcast",
            "--impl",
            &TREES.join(","),
            "-n",
            "4",
            "--bytes",
            "64K",
        ])
        .args([
            "--method",
            "ol-i",
            "--compare-truth",
            "--calls",
            "5",
            "--max-reps",
            "10",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("autocoll runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["schema"], "autocoll.bench/1");
    assert_eq!(doc["transport"], "tcp");
    let rows = doc["results"].as_array().unwrap();
    let row = |imp: &str, method: &str| {
        rows.iter()
            .find(|r| r["impl"] == imp && r["method"] == method)
            .unwrap_or_else(|| panic!("no {method} result for {imp}"))
    };
    for imp in TREES {
        let truth = row(imp, "truth");
        assert!(
            truth["reps"].as_u64().unwrap() >= 3,
            "{imp}: truth kept too few repetitions"
        );
        let ol = row(imp, "ol-i");
        assert_eq!(
            ol["ol_i_s"].as_array().map(Vec::len),
            Some(4),
            "{imp}: OL_i of every rank"
        );
        let err = ol["error_vs_truth"].as_f64().unwrap();
        assert!(
            err.abs() <= 0.25,
            "{imp}: ol-i is {:+.1}% off the truth",
            err * 100.0
        );
    }
}
