//! `autocoll compare --report-only`: the report files written from the
//! benches' JSON of a run (made up here: the run itself needs root, an
//! emulated cluster and about 20 minutes; `scripts/compare-mpi` does it).

mod support;

use std::path::PathBuf;

use serde_json::{json, Value};
use support::{autocoll, repo};

fn result(imp: &str, bytes: u64, median_s: f64) -> Value {
    json!({
        "op": imp.split(':').next().unwrap(), "impl": imp, "ranks": 8, "bytes": bytes,
        "root": 0, "method": "barrier", "reps": 3, "discarded": 0,
        "mean_s": median_s, "median_s": median_s, "min_s": median_s, "max_s": median_s,
        "stddev_s": 0.0, "ci95_lo_s": median_s, "ci95_hi_s": median_s, "raw_s": [median_s],
    })
}

#[test]
fn compare_report_only_writes_markdown_json_and_a_plot_per_collective() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare-report");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("raw")).unwrap();
    let mib = 1 << 20;
    let mpi = json!({"schema": "autocoll.bench/1", "transport": "mpi", "hosts": [], "results": [
        result("bcast:mpi", mib, 0.6),
        result("bcast:chain:seg=8K", mib, 0.09),
        result("bcast:binomial", mib, 0.5),
    ]});
    let tcp = json!({"schema": "autocoll.bench/1", "transport": "tcp", "hosts": [], "results": [
        result("bcast:chain:seg=8K", mib, 0.12),
    ]});
    std::fs::write(out.join("raw/mpi-bcast-large.json"), mpi.to_string()).unwrap();
    std::fs::write(out.join("raw/tcp-bcast-large.json"), tcp.to_string()).unwrap();
    let run = autocoll()
        .arg("compare")
        .arg(repo().join("clusters/star8-100m.toml"))
        .arg("--out")
        .arg(&out)
        .args(["--report-only", "--op", "bcast"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["schema"], "autocoll.compare/1");
    assert_eq!(report["cluster"], "star8");
    assert_eq!(report["ranks"], 8);
    let row = &report["rows"][0];
    assert_eq!(row["best_impl"], "bcast:chain:seg=8K");
    assert!((row["ratio"].as_f64().unwrap() - 0.15).abs() < 1e-9);
    // The link bound of 1 MiB at 100 Mbit/s.
    assert!((row["bound_s"].as_f64().unwrap() - mib as f64 / 12.5e6).abs() < 1e-9);
    assert!((row["tcp_ratio"].as_f64().unwrap() - 0.2).abs() < 1e-9);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| 1M | 600.000 | `bcast:chain:seg=8K` | 90.000 | 0.15 |"),
        "{md}"
    );
    let svg = std::fs::read_to_string(out.join("bcast.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("link bound"),
        "{svg}"
    );
}
