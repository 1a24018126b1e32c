//! The sim transport through the command. `bench` and
//! `tune` run the real collective code on virtual time at scales this
//! machine cannot run; `sim fit` turns two-rank results into a model and
//! `sim compare` sets predictions beside measurements.

mod support;

use serde_json::Value;
use support::{autocoll, succeeded};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-test-sim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The medians of a bench JSON by implementation.
fn medians(path: &std::path::Path) -> Vec<(String, f64)> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["impl"].as_str().unwrap().to_string(),
                r["median_s"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn bench_on_sim_runs_256_ranks_and_the_flat_tree_loses_by_far() {
    let dir = scratch("bench");
    let json = dir.join("r.json");
    let out = autocoll()
        .args(["bench", "--transport", "sim", "-n", "256", "--op", "bcast"])
        .args(["--impl", "bcast:flat,bcast:binomial,bcast:chain:seg=8K"])
        .args(["--bytes", "64K", "--method", "truth", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // 256 ranks on one process's threads, and no word of crowding: on
    // virtual time every rank has a processor.
    assert!(!stderr.contains("more ranks than cores"), "{stderr}");
    let m = medians(&json);
    assert_eq!(m.len(), 3, "{m:?}");
    let time = |imp: &str| m.iter().find(|(i, _)| i == imp).unwrap().1;
    // Flat: the root's link carries 255 messages of 64 KiB: their bytes'
    // time on the default model's link, and a little.
    let link = 255.0 * 65536.0 * autocoll::sim::Model::default().host_ns_per_byte * 1e-9;
    let flat = time("bcast:flat");
    assert!(flat > link && flat < link * 1.01, "{flat} against {link}");
    for other in ["bcast:binomial", "bcast:chain:seg=8K"] {
        assert!(time(other) < flat / 5.0, "{m:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two-rank flat broadcasts at four sizes on `--transport sim` (on
/// `model`, if given), their results written to `json`.
fn bench_two_ranks(model: Option<&std::path::Path>, json: &std::path::Path) {
    let mut cmd = autocoll();
    cmd.args(["bench", "--transport", "sim", "-n", "2", "--op", "bcast"])
        .args(["--impl", "bcast:flat", "--bytes", "1,16K,64K,256K"])
        .args(["--method", "truth", "--json"])
        .arg(json);
    if let Some(m) = model {
        cmd.arg("--model").arg(m);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two-rank exchanges both ways at once on `model`, their results written
/// to `json`.
fn bench_exchanges(model: &std::path::Path, json: &std::path::Path) {
    succeeded(
        autocoll()
            .args([
                "bench",
                "--transport",
                "sim",
                "-n",
                "2",
                "--op",
                "allreduce",
            ])
            .args([
                "--impl",
                "allreduce:recursive-doubling",
                "--bytes",
                "16K,64K,256K",
            ])
            .args(["--method", "truth", "--model"])
            .arg(model)
            .arg("--json")
            .arg(json),
    );
}

#[test]
fn a_model_fitted_to_two_rank_runs_predicts_them_back() {
    let dir = scratch("fit");
    let (runs, model, predicted) = (dir.join("p2.json"), dir.join("m.toml"), dir.join("s.json"));
    // Two-rank "measurements" made on a known model, fitted, run again.
    // The default model without the ranks' processor time: an
    // allreduce's sums took time enough in a debug build to move the
    // fitted both ways by a point, and the known model is exact.
    let known = dir.join("known.toml");
    let exact = autocoll::sim::Model {
        cpu_scale: 0.0,
        ..autocoll::sim::Model::default()
    };
    std::fs::write(&known, exact.to_toml()).unwrap();
    bench_two_ranks(Some(&known), &runs);
    // Exchanges both ways at once on that model: the fit finds how much
    // slower its links are both ways.
    let exchanges = dir.join("x2.json");
    bench_exchanges(&known, &exchanges);
    let out = succeeded(
        autocoll()
            .args(["sim", "fit"])
            .arg(&runs)
            .arg(&exchanges)
            .arg("--out")
            .arg(&model),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("fitted to 4 two-rank points on two hosts"),
        "{stdout}"
    );
    assert!(
        stdout.contains("fitted to 3 exchanges on two hosts"),
        "{stdout}"
    );
    let fitted = autocoll::sim::Model::load(&model).unwrap();
    let both_ways = autocoll::sim::Model::default().both_ways;
    assert!((fitted.both_ways - both_ways).abs() < 0.01, "{fitted:?}");
    bench_two_ranks(Some(&model), &predicted);
    let out = autocoll()
        .args(["sim", "compare"])
        .arg(&runs)
        .arg("--predicted")
        .arg(&predicted)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("within 15%: 4 of 4 points"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tune_on_sim_writes_rules_for_64_ranks() {
    let dir = scratch("tune");
    let table = dir.join("t.toml");
    succeeded(
        autocoll()
            .args(["tune", "--transport", "sim", "-n", "64", "--op", "bcast"])
            .args(["--impl", "bcast:flat,bcast:binomial,bcast:chain:seg=8K"])
            .args(["--bytes", "1K,256K", "--out"])
            .arg(&table),
    );
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.contains("bcast:chain:seg=8K"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sim_refuses_what_it_cannot_do() {
    let dir = scratch("refuse");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "ranks_per_host = 0\n").unwrap();
    let out = autocoll()
        .args(["bench", "--op", "bcast", "--transport", "sim", "--model"])
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.toml") && stderr.contains("ranks_per_host = 0"),
        "{stderr}"
    );
    let out = autocoll()
        .args(["bench", "--op", "bcast", "--model"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use it with --transport sim"));
    let out = autocoll()
        .args(["adapt", "--op", "bcast", "--transport", "sim"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--transport sim is for bench and tune"));
    std::fs::remove_dir_all(&dir).unwrap();
}
