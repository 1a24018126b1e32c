//! The tcp transport across processes: `autocoll check --transport tcp`,
//! `autocoll launch`, and ranks that die, hang or disagree.
//!
//! The fault scenarios run this test binary itself as the ranks: launched
//! with `AUTOCOLL_FAULT` set, [`rank_body`] plays one rank of a scenario
//! (without it, it does nothing).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use autocoll::{Builtin, Op};

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");

fn autocoll(args: &[&str]) -> Output {
    Command::new(AUTOCOLL).args(args).output().unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

#[test]
fn check_over_tcp_processes_passes_a_sample_of_the_matrix() {
    let out = autocoll(&[
        "check",
        "--transport",
        "tcp",
        "-n",
        "3",
        "--op",
        "all",
        "--impl",
        "all",
        "--bytes",
        "0,65539",
        "--root",
        "0,last",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("ok   n=3 bytes=65539 root=2 bcast:chain"),
        "{stdout}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn launch_forwards_output_and_returns_the_first_failing_status() {
    let start = Instant::now();
    let out = autocoll(&[
        "launch",
        "-n",
        "3",
        "--",
        "sh",
        "-c",
        "echo hello $AUTOCOLL_RANK of $AUTOCOLL_SIZE; [ $AUTOCOLL_RANK = 2 ] && sleep 2 && exit 7; sleep 30",
    ]);
    let took = start.elapsed();
    let stdout = text(&out.stdout);
    for r in 0..3 {
        assert!(
            stdout.contains(&format!("[rank {r}] hello {r} of 3")),
            "{stdout}"
        );
    }
    assert_eq!(out.status.code(), Some(7));
    assert!(text(&out.stderr).contains("rank 2 failed with status 7"));
    // The sleeping ranks were killed, not waited for.
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

/// A process that exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// When one rank fails, the others are killed with everything they
/// started: a rank behind an agent or a wrapper is the agent's child, and
/// killing the agent alone left it running.
#[test]
fn launch_kills_what_a_failed_job_s_other_ranks_started() {
    let dir = std::env::temp_dir().join(format!("autocoll-tree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("sleep.pid");
    let script = format!(
        "if [ $AUTOCOLL_RANK = 1 ]; then sleep 0.5; exit 3; fi; sleep 60 & echo $! > {}; wait",
        pidfile.display()
    );
    let out = autocoll(&["launch", "-n", "2", "--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("rank 0 started its child")
        .trim()
        .parse()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(pid), "rank 0's child {pid} outlived the job");
}

#[test]
fn launch_refuses_bad_hostfiles_with_the_line() {
    let path = std::env::temp_dir().join(format!("autocoll-hf-{}", std::process::id()));
    std::fs::write(&path, "127.0.0.1 slots=2\nnode2 slots=two\n").unwrap();
    let out = autocoll(&[
        "launch",
        "-n",
        "2",
        "--hostfile",
        path.to_str().unwrap(),
        "--",
        "true",
    ]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(":2: slots=`two`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn launch_runs_ranks_through_a_hostfile_and_an_agent() {
    let path = std::env::temp_dir().join(format!("autocoll-hf2-{}", std::process::id()));
    std::fs::write(
        &path,
        "127.0.0.1 slots=2\nlocalhost slots=1 addr=127.0.0.1\n",
    )
    .unwrap();
    let out = autocoll(&[
        "check",
        "--transport",
        "tcp",
        "-n",
        "3",
        "--op",
        "bcast,allreduce",
        "--bytes",
        "1000",
        "--hostfile",
        path.to_str().unwrap(),
        "--agent",
        "env HOST_IS={host}",
    ]);
    let _ = std::fs::remove_file(&path);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// Launches `n` copies of this binary playing `scenario`; returns stdout.
fn scenario(n: usize, scenario: &str, timeout: &str) -> String {
    launched(n, scenario, &["--timeout", timeout], &[])
}

/// [`scenario`] with `extra` arguments to `autocoll launch` and `env`
/// set for it (and so for the ranks).
fn launched(n: usize, scenario: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let me = std::env::current_exe().unwrap();
    let out = Command::new(AUTOCOLL)
        .args(["launch", "-n", &n.to_string()])
        .args(extra)
        .arg("--")
        .arg(me)
        .args(["--exact", "rank_body", "--nocapture", "--test-threads", "1"])
        .env("AUTOCOLL_FAULT", scenario)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    stdout
}

/// One rank of a fault scenario; prints `VERDICT ...` lines the tests read.
#[test]
fn rank_body() {
    let Ok(fault) = std::env::var("AUTOCOLL_FAULT") else {
        return;
    };
    let mut comm = autocoll::init().unwrap();
    let me = comm.rank();
    if fault == "where" {
        println!("WHERE rank {me} {}", cores_of_threads());
        return;
    }
    if fault == "split" {
        println!("SPLIT rank {me} {}", split_body(&mut comm));
        return;
    }
    comm.barrier().unwrap();
    let start = Instant::now();
    let mut buf = [me as f64; 4];
    let outcome = match (fault.as_str(), me) {
        ("die", 1) => std::process::exit(0),
        ("hang", 1) => {
            // Alive and silent until the others give up and leave.
            comm.set_timeout(Duration::from_secs(120));
            let _ = comm.recv_bytes(0, 77);
            return;
        }
        ("mismatch", 0) => comm.bcast(&mut buf, 0),
        ("mismatch", _) => {
            let send = buf;
            comm.reduce(&send, &mut buf, &Op::Builtin(Builtin::Sum), 1)
        }
        _ => {
            let send = buf;
            comm.allreduce(&send, &mut buf, &Op::Builtin(Builtin::Sum))
        }
    };
    let ms = start.elapsed().as_millis();
    match outcome {
        Ok(()) => println!("VERDICT rank {me} ok after {ms} ms"),
        Err(e) => println!("VERDICT rank {me} error after {ms} ms: {e}"),
    }
}

/// Splits the job into odd and even ranks and checks every collective on
/// each half against the reference, with a call of the whole job between
/// the half's calls; then a dup of the job and a half of it. `ok`, or what
/// went wrong.
fn split_body(comm: &mut autocoll::Communicator) -> String {
    use autocoll::check::{self, Case};
    let mut half = comm
        .split(Some((comm.rank() % 2) as u32), 0)
        .unwrap()
        .unwrap();
    let config = check::Config::default();
    let mut failures = Vec::new();
    for op in autocoll::Collective::ALL {
        for imp in check::all_implementations(op, half.size(), 4099, 1) {
            let case = Case {
                imp,
                bytes: 4099,
                root: 1,
            };
            failures.extend(check::run(&mut half, &[case], &config));
            let mut sum = [0u32];
            comm.allreduce(&[1u32], &mut sum, &Op::Builtin(Builtin::Sum))
                .unwrap();
            if sum[0] as usize != comm.size() {
                return format!("the job's allreduce gave {}", sum[0]);
            }
        }
    }
    let mut dup = comm.dup().unwrap();
    let mut ranks = vec![0u32; dup.size()];
    dup.allgather(&[dup.rank() as u32], &mut ranks).unwrap();
    let mut quarter = half.dup().unwrap();
    quarter.barrier().unwrap();
    match failures.is_empty() && ranks.iter().enumerate().all(|(i, &r)| r as usize == i) {
        true => "ok".into(),
        false => format!("{failures:?} {ranks:?}"),
    }
}

/// The cores this process's main thread may run on (`/proc`'s list, e.g.
/// `0-1`), and `all` when every thread of the process shares them.
fn cores_of_threads() -> String {
    let allowed = |status: &str| {
        std::fs::read_to_string(status)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|l| l.trim().to_string())
            .unwrap_or_default()
    };
    let main = allowed("/proc/self/status");
    let every = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .all(|t| allowed(&format!("{}/status", t.path().display())) == main);
    format!("cores {main} {}", if every { "all" } else { "some" })
}

/// Each rank's `cores LIST all|some` from a `where` scenario.
fn cores_by_rank(stdout: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|r| {
            let tag = format!("WHERE rank {r} ");
            stdout
                .lines()
                .find_map(|l| l.split_once(&tag).map(|(_, rest)| rest.to_string()))
                .unwrap_or_else(|| panic!("rank {r} did not say where it runs in\n{stdout}"))
        })
        .collect()
}

/// Where ranks outnumber cores, each rank of a machine is bound to one
/// core, round robin, with every thread of its process: which ranks share
/// a core decided which tree was faster, job by job. `--bind-to none`
/// leaves them where they were.
#[test]
fn crowded_tcp_ranks_are_bound_round_robin_to_cores() {
    let before = cores_of_threads();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Two cores counted, three ranks: crowded on any machine.
    let bound = cores_by_rank(&launched(3, "where", &[], &[("AUTOCOLL_CORES", "2")]), 3);
    for b in &bound {
        assert!(b.ends_with(" all"), "a thread left unbound: {bound:?}");
        let list = b.split_whitespace().nth(1).unwrap();
        assert!(list.parse::<usize>().is_ok(), "not one core: {bound:?}");
    }
    assert_eq!(bound[0], bound[2], "{bound:?}");
    if cores >= 2 {
        assert_ne!(bound[0], bound[1], "{bound:?}");
    }
    let free = cores_by_rank(
        &launched(
            3,
            "where",
            &["--bind-to", "none"],
            &[("AUTOCOLL_CORES", "2")],
        ),
        3,
    );
    assert!(
        free.iter().all(|f| *f == before),
        "{free:?} against {before}"
    );
    // As many ranks as cores: left alone unless asked.
    let roomy = cores_by_rank(&launched(1, "where", &[], &[]), 1);
    assert_eq!(roomy[0], before);
}

fn verdict(stdout: &str, rank: usize) -> (u128, String) {
    let tag = format!("VERDICT rank {rank} ");
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(&tag).map(|(_, rest)| rest.to_string()))
        .unwrap_or_else(|| panic!("no verdict of rank {rank} in\n{stdout}"));
    let ms = line
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap();
    (ms, line)
}

/// Ranks 0 and 2 must report an error, well before 20 s.
fn assert_others_failed(stdout: &str) {
    for rank in [0, 2] {
        let (ms, line) = verdict(stdout, rank);
        assert!(line.starts_with("error"), "{line}");
        assert!(ms < 20_000, "{line}");
    }
}

#[test]
fn a_rank_process_that_dies_fails_the_others_long_before_the_timeout() {
    // With a 60 s timeout, an error within 20 s came from the closed socket.
    assert_others_failed(&scenario(3, "die", "60"));
}

#[test]
fn a_rank_process_that_hangs_makes_the_others_time_out() {
    assert_others_failed(&scenario(3, "hang", "1"));
}

#[test]
fn mismatched_calls_across_processes_name_both() {
    let stdout = scenario(2, "mismatch", "30");
    let (_, line) = verdict(&stdout, 1);
    assert!(
        line.contains("rank 1 is in call #1 reduce root=1 bytes=32"),
        "{line}"
    );
    assert!(
        line.contains("rank 0 sent for call #1 bcast root=0 bytes=32"),
        "{line}"
    );
}

#[test]
fn split_and_dup_run_every_collective_across_tcp_processes() {
    let stdout = scenario(4, "split", "30");
    for rank in 0..4 {
        assert!(
            stdout.contains(&format!("SPLIT rank {rank} ok")),
            "{stdout}"
        );
    }
}

/// An agent (ssh, `env -i`) passes no environment on: the launcher puts
/// the AUTOCOLL_* settings of its own environment on the rank's command
/// line (AUTOCOLL_MAX_FRAME once reached only ranks started without one),
/// and a stray job variable of its own (a launcher started inside a rank)
/// does not leak into the job.
#[test]
fn launch_passes_its_autocoll_settings_through_an_agent() {
    let path = std::env::temp_dir().join(format!("autocoll-hf3-{}", std::process::id()));
    std::fs::write(&path, "127.0.0.1 slots=2\n").unwrap();
    let out = Command::new(AUTOCOLL)
        .args(["launch", "-n", "2", "--hostfile", path.to_str().unwrap()])
        .args(["--agent", "env -i HOST_IS={host}", "--", "/bin/sh", "-c"])
        .arg("echo setting=$AUTOCOLL_SOMETHING frame=$AUTOCOLL_MAX_FRAME size=$AUTOCOLL_SIZE")
        .env("AUTOCOLL_SOMETHING", "kept")
        .env("AUTOCOLL_MAX_FRAME", "2M")
        .env("AUTOCOLL_SIZE", "99")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for rank in 0..2 {
        assert!(
            stdout.contains(&format!("[rank {rank}] setting=kept frame=2M size=2")),
            "{stdout}"
        );
    }
}
