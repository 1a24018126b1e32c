//! `autocoll launch --learn DIR`: a tcp job of programs on `init()` keeps
//! the lottery's state and the pattern in DIR, learns a placement from
//! the pattern, and runs the next job under it.
//!
//! The launched ranks are this test binary itself: with
//! `AUTOCOLL_LEARN_RANK` set, [`learn_rank`] plays one rank (without it, it
//! does nothing). The hostfile names two hosts, both this machine's
//! loopback, so that the ranks record two hosts and no agent is needed.

use std::path::Path;
use std::process::Command;

use bytes::Bytes;

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");

/// One rank: 64 KiB to its partner on the other host (rank ± 2) and 1
/// KiB to its neighbour on its own, then a few broadcasts for the
/// lottery.
#[test]
fn learn_rank() {
    if std::env::var_os("AUTOCOLL_LEARN_RANK").is_none() {
        return;
    }
    let mut comm = autocoll::init().unwrap();
    let rank = comm.rank();
    for (peer, len) in [((rank + 2) % 4, 65536), (rank ^ 1, 1024)] {
        comm.send_bytes(peer, 1, Bytes::from(vec![1u8; len]))
            .unwrap();
        assert_eq!(comm.recv_bytes(peer, 1).unwrap().len(), len);
    }
    let mut data = [rank as u64; 512];
    for _ in 0..8 {
        comm.bcast(&mut data, 0).unwrap();
    }
    assert_eq!(data, [0; 512]);
}

/// `autocoll launch --learn L` of four ranks on `hosts`; its stderr.
fn launch(dir: &Path) -> String {
    let me = std::env::current_exe().unwrap();
    let out = Command::new(AUTOCOLL)
        .args(["launch", "--learn", "L", "-n", "4", "--hostfile", "hosts"])
        .args(["--timeout", "20", "--"])
        .arg(me)
        .args([
            "--exact",
            "learn_rank",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AUTOCOLL_LEARN_RANK", "1")
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

#[test]
fn a_launched_job_learns_its_placement_and_runs_the_next_under_it() {
    let dir = std::env::temp_dir().join(format!("autocoll-learn-launch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let hosts = "a slots=2 addr=127.0.0.1\nb slots=2 addr=127.0.0.1\n";
    std::fs::write(dir.join("hosts"), hosts).unwrap();

    let first = launch(&dir);
    assert!(first.contains("placement learned: "), "{first}");
    let placed = std::fs::read_to_string(dir.join("L/hostfile")).unwrap();
    let host = |line: &str| line.split_whitespace().next().unwrap().to_string();
    let on: Vec<String> = placed.lines().map(host).collect();
    assert_eq!(on.len(), 4, "{placed}");
    assert!(on[0] == on[2] && on[1] == on[3], "{placed}");

    let second = launch(&dir);
    assert!(second.contains("placing the ranks by the"), "{second}");
    assert!(second.contains("placement unchanged"), "{second}");
    let pattern = std::fs::read_to_string(dir.join("L/pattern.json")).unwrap();
    let recorded = format!(
        r#""hosts": ["{}", "{}", "{}", "{}"]"#,
        on[0], on[1], on[2], on[3]
    );
    assert!(pattern.contains(&recorded), "{pattern}");
    let state = std::fs::read_to_string(dir.join("L/state.json")).unwrap();
    assert!(state.contains("autocoll.lottery/1"), "{state}");
    std::fs::remove_dir_all(&dir).unwrap();
}
