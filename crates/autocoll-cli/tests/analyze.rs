//! `autocoll analyze` on real recordings of tcp processes: one rank of a
//! launched job enters every call late, and the load-imbalance analysis
//! (read from `--json`) names it as the source, over binomial, chain and
//! `hier` trees.
//!
//! The launched ranks are this test binary itself: with
//! `AUTOCOLL_LATE_TEST` set, [`late_rank_body`] plays one rank (without it,
//! it does nothing).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use autocoll::trace::TraceOptions;
use autocoll::{Implementation, Op};

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");

/// The trees, in the order the job runs them.
const TREES: [&str; 3] = [
    "allreduce:binomial",
    "allreduce:chain",
    "allreduce:hier:inner=flat",
];
/// The rank that enters late: a leaf's parent under binomial (4 → 6 → 7),
/// the middle of the chain, and host h3's leader under `hier` (0 → 5 → 6
/// → 7), so that every tree has a path of several nodes down to it.
const LATE_RANK: usize = 6;
/// Far above a call's time and the noise of 8 processes on 2 cores (with
/// other tests beside them).
const LATE: Duration = Duration::from_millis(10);
const CALLS: usize = 30;

/// Four hosts, all 127.0.0.1: h0 (3 slots) and h1 (2) on sw0, h2 (1) and
/// h3 (2) on sw1 under sw0.
const HOSTS: &str = "\
h0 slots=3 addr=127.0.0.1 switch=sw0
h1 slots=2 addr=127.0.0.1 switch=sw0
h2 slots=1 addr=127.0.0.1 switch=sw0/sw1
h3 slots=2 addr=127.0.0.1 switch=sw0/sw1
";

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "autocoll-cli-analyze-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tree's trace directory under `base`.
fn dir_of(base: &Path, imp: &str) -> PathBuf {
    base.join(imp.replace(':', "-"))
}

/// One rank of the launched job: for each tree, a recording into its own
/// directory of `CALLS` allreduces, `LATE_RANK` sleeping before each.
#[test]
fn late_rank_body() {
    let Some(base) = std::env::var_os("AUTOCOLL_LATE_TEST") else {
        return;
    };
    let base = PathBuf::from(base);
    let mut comm = autocoll::init().unwrap();
    let size = comm.size();
    let mine = vec![comm.rank() as f64; size];
    let mut sum = vec![0.0; size];
    let options = TraceOptions {
        capacity_events: 1 << 16,
        ..TraceOptions::default()
    };
    for imp in TREES {
        // Starting a recording writes the previous one.
        comm.trace_with(dir_of(&base, imp), options.clone())
            .unwrap();
        let imp: Implementation = imp.parse().unwrap();
        for _ in 0..CALLS {
            if comm.rank() == LATE_RANK {
                std::thread::sleep(LATE);
            }
            comm.allreduce_with(&imp, &mine, &mut sum, &Op::SUM)
                .unwrap();
        }
        assert_eq!(sum[0], (size * (size - 1) / 2) as f64);
    }
}

fn analyze_json(dir: &Path) -> serde_json::Value {
    let json = dir.join("analysis.json");
    let out = Command::new(AUTOCOLL)
        .arg("analyze")
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn a_late_rank_of_tcp_processes_is_found_as_the_source_for_binomial_chain_and_hier() {
    let base = scratch("late");
    let hosts = base.join("hosts");
    std::fs::write(&hosts, HOSTS).unwrap();
    let me = std::env::current_exe().unwrap();
    let out: Output = Command::new(AUTOCOLL)
        .args(["launch", "-n", "8", "--timeout", "60", "--hostfile"])
        .arg(&hosts)
        .arg("--")
        .arg(me)
        .args([
            "--exact",
            "late_rank_body",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AUTOCOLL_LATE_TEST", &base)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for imp in TREES {
        let doc = analyze_json(&dir_of(&base, imp));
        assert_eq!(doc["transport"], "tcp");
        let groups: Vec<&serde_json::Value> = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["op"] == "allreduce")
            .collect();
        assert_eq!(groups.len(), 1, "{imp}");
        let g = groups[0];
        let canonical = imp.parse::<Implementation>().unwrap().to_string();
        assert_eq!(g["impl"], canonical.as_str());
        assert_eq!(g["calls"], CALLS as u64, "{imp}");
        if imp.contains("hier") {
            // The tree followed the hostfile: h2's rank 5 leads sw1, under
            // the root, with h3's leader 6 under it.
            let node = |r: u64| {
                g["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|n| n["rank"] == r)
                    .unwrap()
                    .clone()
            };
            assert_eq!(node(5)["parent"], 0);
            assert_eq!(node(5)["children"], serde_json::json!([6]));
            assert_eq!(node(6)["children"], serde_json::json!([7]));
        }
        let found = &g["load_imbalance"];
        let sentence = found["sentence"].as_str().unwrap();
        assert_eq!(found["source"], LATE_RANK as u64, "{imp}: {sentence}");
        assert_eq!(found["source_is_subtree"], false, "{imp}: {sentence}");
        // Rank 6 has a child in every tree: the path ends at its entry.
        let end = found["path"].as_array().unwrap().last().unwrap();
        assert_eq!(end["from"], LATE_RANK as u64, "{imp}: {sentence}");
        assert_eq!(end["own"], true, "{imp}: {sentence}");
        assert!(
            sentence.contains(&format!("starts at rank {LATE_RANK}")),
            "{imp}: {sentence}"
        );
        assert_eq!(found["cause"]["kind"], "between_calls", "{imp}: {sentence}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}
