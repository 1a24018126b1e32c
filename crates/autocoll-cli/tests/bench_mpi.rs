//! `autocoll bench --transport mpi --baseline` under a real mpirun: the MPI
//! library's own collective is timed beside autocoll's, as `<op>:mpi` rows
//! interleaved per size, and `--baseline-alg N` makes Open MPI run its
//! tuned algorithm N (seen through the dynamic linker's binding log, as
//! `autocoll/tests/mpi_rules.rs` does: the function `mca_coll_tuned.so`
//! binds in libmpi is the algorithm that ran). Needs `--features mpi` and
//! mpirun; without them each test says why and does nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn missing() -> Option<&'static str> {
    if !cfg!(feature = "mpi") {
        return Some("needs --features mpi");
    }
    let mpirun = Command::new("mpirun").arg("--version").output();
    if !mpirun.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide mpirun (scripts/ci-deps)"
        );
        return Some("needs mpirun (Debian: openmpi-bin)");
    }
    None
}

macro_rules! skip_unless_ready {
    ($name:literal) => {
        if let Some(reason) = missing() {
            eprintln!("SKIPPED {}: {reason}", $name);
            return;
        }
    };
}

fn workdir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("work directory");
    dir
}

/// `mpirun -n RANKS [mpirun args] autocoll bench --transport mpi ARGS`,
/// on shared memory.
fn bench(ranks: usize, mpirun_args: &[&str], args: &[&str]) -> Output {
    Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n"])
        .arg(ranks.to_string())
        .args(["--mca", "btl", "self,vader"])
        .args(mpirun_args)
        .arg(env!("CARGO_BIN_EXE_autocoll"))
        .args(["bench", "--transport", "mpi", "--timeout", "30"])
        .args(["--method", "barrier", "--calls", "2", "--min-reps", "2"])
        .args(["--max-reps", "3", "--warmup", "1"])
        .args(args)
        .output()
        .expect("mpirun runs")
}

fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "bench failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The (impl, bytes) of every result in a bench JSON, in order.
fn results(path: &Path) -> Vec<(String, u64, f64)> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("--json written"))
        .expect("--json is JSON");
    assert_eq!(doc["transport"], "mpi");
    doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["impl"].as_str().expect("impl").to_string(),
                r["bytes"].as_u64().expect("bytes"),
                r["median_s"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

#[test]
fn bench_baseline_times_the_mpi_library_beside_autocoll_per_size() {
    skip_unless_ready!("bench_baseline_times_the_mpi_library_beside_autocoll_per_size");
    let dir = workdir("bench-baseline");
    let json = dir.join("out.json");
    let out = bench(
        3,
        &[],
        &[
            "--baseline",
            "--op",
            "reduce",
            "--root",
            "2",
            "--impl",
            "reduce:binomial,reduce:chain:seg=1K",
            "--bytes",
            "1K,16K",
            "--json",
            json.to_str().expect("UTF-8 path"),
        ],
    );
    succeeded(&out);
    let got = results(&json);
    let ids: Vec<(&str, u64)> = got.iter().map(|(i, b, _)| (i.as_str(), *b)).collect();
    assert_eq!(
        ids,
        [
            ("reduce:mpi", 1024),
            ("reduce:binomial", 1024),
            ("reduce:chain:seg=1K", 1024),
            ("reduce:mpi", 16384),
            ("reduce:binomial", 16384),
            ("reduce:chain:seg=1K", 16384),
        ]
    );
    for (imp, bytes, median) in &got {
        assert!(
            median.is_finite() && *median > 0.0,
            "{imp} at {bytes}: {median}"
        );
    }
    // The table is printed once, by rank 0.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("reduce:mpi "))
            .count(),
        2,
        "{stdout}"
    );
}

#[test]
fn bench_mpi_refuses_what_cannot_run() {
    skip_unless_ready!("bench_mpi_refuses_what_cannot_run");
    let out = bench(2, &[], &["--op", "bcast", "-n", "4"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mpirun started 2 ranks"), "{stderr}");
    let local = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["bench", "--op", "bcast", "--baseline"])
        .output()
        .expect("autocoll runs");
    assert_eq!(local.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&local.stderr).contains("needs --transport mpi"));
    let bad_alg = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args([
            "bench",
            "--transport",
            "mpi",
            "--op",
            "gather",
            "--baseline",
        ])
        .args(["--baseline-alg", "9"])
        .output()
        .expect("autocoll runs");
    assert_eq!(bad_alg.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_alg.stderr).contains("no gather algorithm 9"));
    let seg_alone = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["bench", "--transport", "mpi", "--op", "bcast", "--baseline"])
        .args(["--baseline-seg", "8K"])
        .output()
        .expect("autocoll runs");
    assert_eq!(seg_alone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&seg_alone.stderr).contains("give --baseline-alg"));
}

/// The `ompi_coll_base_allreduce_intra_*` functions `mca_coll_tuned.so`
/// bound while the bench ran with `extra` arguments, and the ids of the
/// baseline rows.
fn allreduce_bindings(dir: &Path, extra: &[&str]) -> (Vec<String>, Vec<String>) {
    let log = dir.join("ld");
    let json = dir.join("out.json");
    let debug = [
        "-x",
        "LD_DEBUG=bindings",
        "-x",
        &format!("LD_DEBUG_OUTPUT={}", log.display()),
    ];
    let mut args = vec![
        "--baseline",
        "--op",
        "allreduce",
        "--impl",
        "allreduce:ring",
        "--bytes",
        "64K",
        "--json",
        json.to_str().expect("UTF-8 path"),
    ];
    args.extend(extra);
    succeeded(&bench(4, &debug, &args));
    let mut seen: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(dir).expect("work directory") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        if !name.starts_with("ld.") {
            continue;
        }
        let text = std::fs::read(&path).expect("binding log");
        for line in String::from_utf8_lossy(&text).lines() {
            if !line.contains("mca_coll_tuned.so") {
                continue;
            }
            let Some(sym) = line.split('`').nth(1).map(|s| s.trim_end_matches('\'')) else {
                continue;
            };
            let generic = sym.ends_with("_generic");
            if sym.starts_with("ompi_coll_base_allreduce_intra_")
                && !generic
                && !seen.iter().any(|s| s == sym)
            {
                seen.push(sym.to_string());
            }
        }
        std::fs::remove_file(path).expect("log removed");
    }
    let ids = results(&json)
        .into_iter()
        .map(|r| r.0)
        .filter(|i| i.contains(":mpi"))
        .collect();
    (seen, ids)
}

#[test]
fn baseline_alg_makes_open_mpi_run_the_named_algorithm() {
    skip_unless_ready!("baseline_alg_makes_open_mpi_run_the_named_algorithm");
    let dir = workdir("baseline-alg");
    for (alg, function) in [("4", "ring"), ("3", "recursivedoubling")] {
        let (seen, ids) = allreduce_bindings(&dir, &["--baseline-alg", alg]);
        assert_eq!(
            seen,
            [format!("ompi_coll_base_allreduce_intra_{function}")],
            "--baseline-alg {alg}"
        );
        assert_eq!(ids, [format!("allreduce:mpi:alg={alg}")]);
    }
}
