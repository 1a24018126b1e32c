//! `bench` says when its figures cannot be trusted: it names the
//! methods whose premise the machine breaks, flags their rows in every
//! output, and measures the methods of `--compare-truth` interleaved, so
//! that the error against the truth comes with its spread over pairs of
//! repetitions taken side by side.

mod support;

use serde_json::Value;
use support::{autocoll, succeeded};

#[test]
fn compare_truth_pairs_the_methods_and_flags_crowded_figures() {
    let dir = std::env::temp_dir().join(format!("autocoll-test-flags-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (json, csv) = (dir.join("r.json"), dir.join("r.csv"));
    let out = autocoll()
        .env("AUTOCOLL_CORES", "1")
        .args(["bench", "--op", "bcast", "--impl", "bcast:flat", "-n", "2"])
        .args(["--bytes", "4K", "--method", "ol-i", "--compare-truth"])
        .args(["--calls", "4", "--max-reps", "8", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("2 ranks on 1 core").count(), 1, "{stderr}");
    assert!(
        stderr.contains("ol-i assumes a processor per rank"),
        "{stderr}"
    );
    assert!(
        stderr.contains("truth assumes that the ranks enter"),
        "{stderr}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert!(
            r["flags"].as_array().unwrap().contains(&"crowded".into()),
            "{r}"
        );
    }
    let ol = rows.iter().find(|r| r["method"] == "ol-i").unwrap();
    let err = ol["error_vs_truth"].as_f64().unwrap();
    let [lo, hi] = [0, 1].map(|i| ol["error_ci95"][i].as_f64().unwrap());
    assert!(lo <= err && err <= hi, "{ol}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.ends_with("error_ci95_lo,error_ci95_hi,flags"),
        "{header}"
    );
    assert!(
        text.lines().skip(1).all(|l| l.contains("crowded")),
        "{text}"
    );
    assert!(
        stdout.lines().skip(1).all(|l| l.ends_with("crowded")),
        "{stdout}"
    );
}

/// `bench --best` races the candidates as `tune` does and shows
/// only each point's winner; the JSON keeps every candidate, marked.
#[test]
fn bench_best_shows_the_winner_of_a_race() {
    let dir = std::env::temp_dir().join(format!("autocoll-test-best-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let out = succeeded(
        autocoll()
            .args(["bench", "--op", "bcast", "-n", "4", "--bytes", "1K,4K"])
            .args(["--impl", "bcast:flat,bcast:kary:k=3,bcast:chain"])
            .args(["--best", "--calls", "2", "--max-reps", "5", "--warmup", "1"])
            .arg("--json")
            .arg(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "every candidate at both sizes");
    for (bytes, text) in [(1024, "1K"), (4096, "4K")] {
        let shown: Vec<&str> = stdout
            .lines()
            .skip(1)
            .filter(|l| l.split_whitespace().nth(2) == Some(text))
            .collect();
        assert_eq!(shown.len(), 1, "one winner at {bytes}: {stdout}");
        let imp = shown[0].split_whitespace().next().unwrap();
        let row = rows
            .iter()
            .find(|r| r["bytes"] == bytes && r["impl"] == imp)
            .unwrap();
        assert_eq!(row["race"]["live"], true, "{row}");
        assert!(row["race"]["same_as"].is_null(), "{row}");
    }
}

#[test]
fn bench_best_with_several_methods_is_refused() {
    let out = autocoll()
        .args([
            "bench",
            "--op",
            "bcast",
            "-n",
            "2",
            "--best",
            "--compare-truth",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--best reports one winner per point"),
        "{stderr}"
    );
}
