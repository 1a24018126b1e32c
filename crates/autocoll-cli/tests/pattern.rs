//! `AUTOCOLL_PATTERN` under `autocoll launch`: a tcp job's ranks count
//! their sends and rank 0 writes the job's pattern when they end; a value
//! that cannot be used stops `init()` with the variable named.
//!
//! The launched ranks are this test binary itself: with
//! `AUTOCOLL_PATTERN_SCENARIO` set, [`pattern_rank`] plays one rank
//! (without it, it does nothing).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use autocoll::pattern::{Entry, Pattern, SCHEMA};
use bytes::Bytes;

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");
const RANKS: usize = 3;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "autocoll-cli-pattern-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Launches `RANKS` copies of this binary playing `scenario`, with
/// `AUTOCOLL_PATTERN=pattern`.
fn launch(scenario: &str, pattern: &Path) -> Output {
    let me = std::env::current_exe().unwrap();
    Command::new(AUTOCOLL)
        .args(["launch", "-n", &RANKS.to_string(), "--timeout", "20", "--"])
        .arg(me)
        .args([
            "--exact",
            "pattern_rank",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AUTOCOLL_PATTERN_SCENARIO", scenario)
        .env("AUTOCOLL_PATTERN", pattern)
        .output()
        .unwrap()
}

/// One rank of a launched scenario. `ring`: two messages of 1000 bytes
/// and one of 10 to the next rank, then a broadcast. `init`: reports
/// init()'s error and exits with status 3.
#[test]
fn pattern_rank() {
    let Ok(which) = std::env::var("AUTOCOLL_PATTERN_SCENARIO") else {
        return;
    };
    let mut comm = match autocoll::init() {
        Ok(comm) => comm,
        Err(e) if which == "init" => {
            eprintln!("init failed: {e}");
            std::process::exit(3);
        }
        Err(e) => panic!("{e}"),
    };
    let (rank, size) = (comm.rank(), comm.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    for len in [1000, 1000, 10] {
        comm.send_bytes(next, 1, Bytes::from(vec![rank as u8; len]))
            .unwrap();
    }
    for len in [1000, 1000, 10] {
        let got = comm.recv_bytes(prev, 1).unwrap();
        assert_eq!(got.len(), len);
    }
    let mut data = [rank as u64; 32];
    comm.bcast(&mut data, 0).unwrap();
    assert_eq!(data, [0; 32]);
}

#[test]
fn a_launched_tcp_job_writes_exactly_its_ring() {
    let dir = temp_dir("ring");
    let path = dir.join("out/ring.json");
    let out = launch("ring", &path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Pattern::read(&path).unwrap();
    assert_eq!(
        (p.schema.as_str(), p.ranks, p.source.as_str()),
        (SCHEMA, RANKS, "tcp")
    );
    let ring: Vec<Entry> = (0..RANKS)
        .flat_map(|src| {
            let dst = (src + 1) % RANKS;
            [
                Entry {
                    src,
                    dst,
                    class: 4,
                    count: 1,
                    bytes: 10,
                },
                Entry {
                    src,
                    dst,
                    class: 10,
                    count: 2,
                    bytes: 2000,
                },
            ]
        })
        .collect();
    assert_eq!(p.p2p, ring);
    // The broadcast's 256 bytes leave the root, whatever its tree.
    let from_root: u64 = p
        .collective
        .iter()
        .filter(|e| e.src == 0)
        .map(|e| e.bytes)
        .sum();
    assert!(from_root >= 256, "{:?}", p.collective);
    assert!(p.collective.iter().all(|e| e.count > 0 && e.dst < RANKS));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pattern_path_that_cannot_be_used_stops_init_naming_the_variable() {
    let dir = temp_dir("bad");
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    for (path, why) in [
        (PathBuf::new(), "AUTOCOLL_PATTERN is set but empty"),
        (blocker.join("p.json"), "cannot create its directory"),
    ] {
        let out = launch("init", &path);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        let all = format!("{stdout}{stderr}");
        assert!(
            all.contains("init failed: configuration: AUTOCOLL_PATTERN") && all.contains(why),
            "{all}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
