//! Issue 20: `bench` says when its figures cannot be trusted: it names the
//! methods whose premise the machine breaks, flags their rows in every
//! output, and measures the methods of `--compare-truth` interleaved, so
//! that the error against the truth comes with its spread over pairs of
//! repetitions taken side by side.

mod support;

use serde_json::Value;
use support::autocoll;

#[test]
fn issue20_compare_truth_pairs_the_methods_and_flags_crowded_figures() {
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
