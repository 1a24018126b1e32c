//! `autocoll check --transport mpi` under a real mpirun: every
//! implementation on 2, 3 and 4 oversubscribed ranks, each result checked
//! against the serial reference and against the MPI library's own
//! collective. Needs `--features mpi` and mpirun; without them each test
//! says why and does nothing.

use std::process::{Command, Output};

fn missing() -> Option<&'static str> {
    if !cfg!(feature = "mpi") {
        return Some("needs --features mpi");
    }
    let mpirun = Command::new("mpirun").arg("--version").output();
    if !mpirun.is_ok_and(|o| o.status.success()) {
        return Some("needs mpirun (Debian: openmpi-bin)");
    }
    None
}

/// `mpirun -n RANKS autocoll check --transport mpi ARGS`.
fn check(ranks: usize, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            &ranks.to_string(),
        ])
        .arg(env!("CARGO_BIN_EXE_autocoll"))
        .args(["check", "--transport", "mpi", "--timeout", "20"])
        .args(args)
        .output()
        .expect("mpirun runs")
}

/// Requires success and `check: N passed, 0 failed` with N > 0; returns N.
fn passed(out: &Output) -> usize {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("check: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{stdout}"));
    let n: usize = summary
        .strip_prefix("check: ")
        .and_then(|s| s.strip_suffix(" passed, 0 failed"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a clean summary: {summary}"));
    assert!(n > 0, "{summary}");
    n
}

macro_rules! skip_unless_ready {
    ($name:literal) => {
        if let Some(reason) = missing() {
            eprintln!("SKIPPED {}: {reason}", $name);
            return;
        }
    };
}

#[test]
fn every_implementation_passes_on_2_3_and_4_mpi_ranks() {
    skip_unless_ready!("every_implementation_passes_on_2_3_and_4_mpi_ranks");
    for ranks in [2, 3, 4] {
        let out = check(ranks, &["--bytes", "0,1,4097,65539", "--root", "last"]);
        let n = passed(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("transport mpi: {ranks} ranks")),
            "{stdout}"
        );
        // Every case line is printed once, by rank 0 only.
        let lines = stdout.lines().filter(|l| l.starts_with("ok   ")).count();
        assert_eq!(lines, n, "{stdout}");
    }
}

#[test]
fn integer_reductions_match_the_mpi_library_bit_for_bit() {
    skip_unless_ready!("integer_reductions_match_the_mpi_library_bit_for_bit");
    // Wrapping sums and products of full-range integers, and bitwise ops:
    // any difference from MPI_Reduce/MPI_Allreduce fails the case.
    for (dtype, op) in [
        ("i64", "sum"),
        ("u8", "prod"),
        ("i32", "bxor"),
        ("u16", "min"),
    ] {
        let out = check(
            3,
            &[
                "--op",
                "reduce,allreduce",
                "--dtype",
                dtype,
                "--reduce-op",
                op,
                "--bytes",
                "8,65536",
                "--root",
                "all",
            ],
        );
        passed(&out);
    }
}

#[test]
fn a_rank_count_that_disagrees_with_mpirun_is_refused() {
    skip_unless_ready!("a_rank_count_that_disagrees_with_mpirun_is_refused");
    let out = check(2, &["-n", "5", "--op", "bcast"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mpirun started 2 ranks"), "{stderr}");
}

/// Ranks told their host and switch (as the emulated cluster's agent tells
/// them, every rank here on one machine) are laid out by them, and every
/// collective over `hier` passes across those hosts.
#[test]
fn mpi_ranks_take_their_hosts_and_switches_from_the_environment() {
    skip_unless_ready!("mpi_ranks_take_their_hosts_and_switches_from_the_environment");
    let script = "r=$OMPI_COMM_WORLD_RANK; export AUTOCOLL_HOST=node$((r / 2)); \
        [ $r -ge 2 ] && export AUTOCOLL_SWITCH=sw0/sw1 || export AUTOCOLL_SWITCH=sw0; exec \"$@\"";
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "5"])
        .args(["sh", "-c", script, "sh"])
        .arg(env!("CARGO_BIN_EXE_autocoll"))
        .args(["check", "--transport", "mpi", "--timeout", "20"])
        .args(["--impl", "bcast:hier,reduce:hier,scatter:hier,gather:hier,allreduce:hier,allgather:hier,barrier:hier"])
        .args(["--bytes", "0,4099", "--root", "0,3"])
        .output()
        .expect("mpirun runs");
    passed(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("5 ranks on node0 (sw0), node1 (sw0/sw1), node2 (sw0/sw1);"),
        "{stdout}"
    );
}
