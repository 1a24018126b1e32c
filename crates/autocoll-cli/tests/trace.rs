//! Recording traces through the command: `AUTOCOLL_TRACE` under
//! `autocoll launch`, `--trace DIR` on bench, adapt and check on both
//! transports, a job whose rank died, and directories that cannot be used.
//!
//! The launched scenarios run this test binary itself as the ranks: with
//! `AUTOCOLL_TRACE_SCENARIO` set, [`traced_rank`] plays one rank (without
//! it, it does nothing).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use autocoll::trace::format::{Header, Reader};
use autocoll::trace::{file_of, TraceOptions};
use autocoll::Op;

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");

fn autocoll(args: &[&str]) -> Output {
    Command::new(AUTOCOLL).args(args).output().unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("autocoll-cli-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Every rank's header and call count, after checking the directory holds
/// exactly the files of `ranks` ranks of one run.
fn read_run(dir: &Path, ranks: usize) -> Vec<(Header, usize)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = (0..ranks).map(|r| format!("rank-{r:05}.trace")).collect();
    assert_eq!(names, expected, "{}", dir.display());
    let out: Vec<(Header, usize)> = (0..ranks)
        .map(|r| {
            let mut reader = Reader::open(&file_of(dir, r)).unwrap();
            let mut calls = 0;
            while reader.next_call().unwrap().is_some() {
                calls += 1;
            }
            (reader.header().clone(), calls)
        })
        .collect();
    assert!(out
        .iter()
        .all(|(h, _)| h.run == out[0].0.run && h.size == ranks as u32));
    out
}

/// Launches `n` copies of this binary playing `scenario` with `env`.
fn scenario(n: usize, scenario: &str, env: &[(&str, &Path)]) -> Output {
    let me = std::env::current_exe().unwrap();
    let mut cmd = Command::new(AUTOCOLL);
    cmd.args(["launch", "-n", &n.to_string(), "--timeout", "20", "--"])
        .arg(me)
        .args([
            "--exact",
            "traced_rank",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AUTOCOLL_TRACE_SCENARIO", scenario);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// One rank of a launched scenario: `env` records through AUTOCOLL_TRACE;
/// `died` records into AUTOCOLL_TRACE_TEST_DIR estimating offsets, and
/// rank 1 leaves without dropping its communicator.
#[test]
fn traced_rank() {
    let Ok(which) = std::env::var("AUTOCOLL_TRACE_SCENARIO") else {
        return;
    };
    let mut comm = autocoll::init().unwrap();
    if which == "died" {
        let dir = std::env::var_os("AUTOCOLL_TRACE_TEST_DIR").unwrap();
        let options = TraceOptions {
            estimate_offsets: true,
            ..TraceOptions::default()
        };
        comm.trace_with(PathBuf::from(dir), options).unwrap();
    }
    let mut sum = [0.0f64; 4];
    for _ in 0..5 {
        comm.allreduce(&[1.0; 4], &mut sum, &Op::SUM).unwrap();
    }
    if which == "died" && comm.rank() == 1 {
        std::process::exit(0);
    }
}

#[test]
fn autocoll_trace_records_every_rank_of_a_launched_tcp_job() {
    let dir = temp_dir("env");
    let out = scenario(3, "env", &[("AUTOCOLL_TRACE", &dir)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (h, calls) in read_run(&dir, 3) {
        assert_eq!(h.transport, "tcp");
        assert_eq!(calls, 5, "rank {}", h.rank);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ranks_that_outlive_a_dead_one_still_write_their_files() {
    let dir = temp_dir("died");
    let start = Instant::now();
    let out = scenario(3, "died", &[("AUTOCOLL_TRACE_TEST_DIR", &dir)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(start.elapsed() < Duration::from_secs(15));
    assert!(!file_of(&dir, 1).exists());
    for rank in [0, 2] {
        let mut r = Reader::open(&file_of(&dir, rank)).unwrap();
        let offset = r.header().offset.expect("offsets were asked for");
        assert!(offset.end.is_some(), "rank {rank} took its end offset");
        let mut calls = 0;
        while r.next_call().unwrap().is_some() {
            calls += 1;
        }
        assert_eq!(calls, 5);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `args` with `--trace DIR` and checks one file per rank.
fn traced(args: &[&str], dir: &Path, ranks: usize) -> Vec<(Header, usize)> {
    let mut all: Vec<&str> = args.to_vec();
    let d = dir.to_str().unwrap();
    all.extend(["--trace", d]);
    let out = autocoll(&all);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    let run = read_run(dir, ranks);
    assert!(run.iter().all(|(_, calls)| *calls > 0), "{args:?}");
    run
}

#[test]
fn trace_on_check_bench_and_adapt_writes_one_file_per_rank() {
    let dir = temp_dir("commands");
    for transport in ["local", "tcp"] {
        let check = [
            "check",
            "--transport",
            transport,
            "-n",
            "3",
            "--op",
            "bcast",
            "--bytes",
            "64",
        ];
        let run = traced(&check, &dir.join(format!("check-{transport}")), 3);
        assert!(run.iter().all(|(h, _)| h.transport == transport));
        let bench = [
            "bench",
            "--transport",
            transport,
            "--op",
            "allreduce",
            "--impl",
            "allreduce:binomial",
            "-n",
            "2",
            "--bytes",
            "64",
            "--max-reps",
            "5",
        ];
        traced(&bench, &dir.join(format!("bench-{transport}")), 2);
        let adapt = [
            "adapt",
            "--transport",
            transport,
            "--op",
            "bcast",
            "-n",
            "2",
            "--bytes",
            "1K",
            "--calls",
            "4",
            "--seeds",
            "2",
        ];
        traced(&adapt, &dir.join(format!("adapt-{transport}")), 2);
    }
    // Several job sizes: a directory each.
    let sizes = dir.join("sizes");
    let out = autocoll(&[
        "check",
        "-n",
        "2,3",
        "--op",
        "barrier",
        "--trace",
        sizes.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    read_run(&sizes.join("n2"), 2);
    read_run(&sizes.join("n3"), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_that_cannot_be_made_is_refused_naming_it() {
    let dir = temp_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let bad = file.join("traces");
    let bad = bad.to_str().unwrap();
    for args in [
        vec!["check", "-n", "2", "--op", "barrier"],
        vec!["bench", "--op", "barrier", "-n", "2"],
        vec!["adapt", "--op", "bcast", "-n", "2", "--calls", "4"],
        vec!["check", "--transport", "tcp", "-n", "2", "--op", "barrier"],
    ] {
        let mut all = args.clone();
        all.extend(["--trace", bad]);
        let out = autocoll(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("trace directory {bad}: cannot create it")),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
