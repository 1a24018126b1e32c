//! C and Fortran programs of our own, built with `mpicc`/`mpif90`, run
//! under Open MPI's `mpirun` without the library and with it preloaded:
//! results compared result for result, pass-through counted, the
//! program's own messages untouched (issue 18).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The cdylib cargo built for this test (in `deps/`, beside the test:
/// `cargo test` does not copy it up to the profile's directory, where an
/// older build without the `mpi` feature may lie).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libautocoll_mpi.so");
    assert!(lib.exists(), "{} is missing", lib.display());
    lib
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("programs")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds tests/programs/`source` with `compiler` into `dir`.
fn build(compiler: &str, source: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(source);
    let exe = dir.join(source.split('.').next().unwrap());
    let out = Command::new(compiler)
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("mpicc/mpif90 (scripts/ci-deps installs Open MPI)");
    assert!(
        out.status.success(),
        "{compiler} {source}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// `mpirun -n ranks program args`, with the library and `env` when `lib`.
fn mpirun(ranks: usize, lib: bool, env: &[(&str, &str)], program: &Path, args: &[&Path]) -> Output {
    let mut cmd = Command::new("mpirun");
    if is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "-n", &ranks.to_string()]);
    if lib {
        cmd.arg("-x")
            .arg(format!("LD_PRELOAD={}", library().display()));
        for (k, v) in env {
            cmd.arg("-x").arg(format!("{k}={v}"));
        }
    }
    let out = cmd.arg(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} failed:\n{}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every rank's result file of `dir`, in rank order.
fn results(dir: &Path, ranks: usize) -> Vec<String> {
    (0..ranks)
        .map(|r| std::fs::read_to_string(dir.join(format!("rank-{r}.txt"))).unwrap())
        .collect()
}

fn assert_same(expected: &[String], got: &[String], what: &str) {
    for (rank, (e, g)) in expected.iter().zip(got).enumerate() {
        for (le, lg) in e.lines().zip(g.lines()) {
            assert_eq!(le, lg, "{what}: rank {rank} differs");
        }
        assert_eq!(e.lines().count(), g.lines().count(), "{what}: rank {rank}");
    }
}

/// The summary's `<op> autocoll=N native=N passed=N` counts, by op.
fn summary(stderr: &[u8]) -> Vec<(String, u64, u64, u64)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("autocoll-mpi: "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let op = words.next()?.to_string();
            let mut n = words.map(|w| w.split_once('=').and_then(|(_, v)| v.parse().ok()));
            match (n.next()?, n.next()?, n.next()?) {
                (Some(a), Some(b), Some(c)) => Some((op, a, b, c)),
                _ => None,
            }
        })
        .collect()
}

const OPS: [&str; 7] = [
    "bcast",
    "reduce",
    "scatter",
    "gather",
    "allreduce",
    "allgather",
    "barrier",
];

const FIXED: [&str; 2] = [
    "fixed:bcast:binary:seg=1K,reduce:chain:seg=4K,allreduce:ring,scatter:flat,gather:knomial:k=3,allgather:recursive-doubling,barrier:binomial",
    "fixed:bcast:chain,reduce:binary,allreduce:rabenseifner,scatter:binary,gather:chain,allgather:ring,barrier:dissemination",
];

#[test]
fn issue18_c_collectives_equal_mpi_under_every_selection() {
    let dir = scratch("c");
    let exe = build("mpicc", "collectives.c", &dir);
    for ranks in [4, 5] {
        let reference = dir.join(format!("ref-{ranks}"));
        std::fs::create_dir_all(&reference).unwrap();
        mpirun(ranks, false, &[], &exe, &[&reference]);
        let expected = results(&reference, ranks);
        for select in ["lottery", FIXED[0], FIXED[1]] {
            let out_dir = dir.join(format!("lib-{ranks}-{}", select.len()));
            std::fs::create_dir_all(&out_dir).unwrap();
            let env = [("AUTOCOLL_SELECT", select), ("AUTOCOLL_VERBOSE", "1")];
            let out = mpirun(ranks, true, &env, &exe, &[&out_dir]);
            assert_same(&expected, &results(&out_dir, ranks), select);
            let counts = summary(&out.stderr);
            for op in OPS {
                let (_, autocoll, _, _) = counts
                    .iter()
                    .find(|c| c.0 == op)
                    .unwrap_or_else(|| panic!("{select}: no summary line for {op}"));
                assert!(*autocoll > 0, "{select}: autocoll ran no {op}");
            }
            // Non-commutative user ops go to MPI: 1 reduce and 1 allreduce
            // per communicator, 4 communicators.
            for op in ["reduce", "allreduce"] {
                let passed = counts.iter().find(|c| c.0 == op).unwrap().3;
                assert_eq!(passed, 4, "{select}: {op} passed through");
            }
        }
    }
}

#[test]
fn issue18_fortran_collectives_equal_mpi_and_reach_the_library() {
    let dir = scratch("fortran");
    let exe = build("mpif90", "collectives.f90", &dir);
    let (reference, lib) = (dir.join("ref"), dir.join("lib"));
    std::fs::create_dir_all(&reference).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    mpirun(3, false, &[], &exe, &[&reference]);
    let out = mpirun(
        3,
        true,
        &[("AUTOCOLL_SELECT", FIXED[0]), ("AUTOCOLL_VERBOSE", "1")],
        &exe,
        &[&lib],
    );
    assert_same(&results(&reference, 3), &results(&lib, 3), "fortran");
    let counts = summary(&out.stderr);
    for op in OPS {
        assert!(
            counts.iter().any(|c| c.0 == op && c.1 > 0),
            "no Fortran {op} reached the library: {counts:?}"
        );
    }
}

#[test]
fn issue18_wildcard_receives_never_see_the_library_messages() {
    let dir = scratch("wildcard");
    let exe = build("mpicc", "wildcard.c", &dir);
    let plain = mpirun(4, false, &[], &exe, &[]);
    let with = mpirun(4, true, &[], &exe, &[]);
    assert_eq!(
        String::from_utf8_lossy(&with.stdout),
        "wildcard: ok (0 wrong)\n"
    );
    // Without AUTOCOLL_VERBOSE the library prints nothing.
    assert_eq!(plain.stdout, with.stdout);
    assert!(
        with.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
}

#[test]
fn issue18_intercommunicators_and_vector_types_pass_through_counted() {
    let dir = scratch("passthrough");
    let exe = build("mpicc", "passthrough.c", &dir);
    let out = mpirun(4, true, &[("AUTOCOLL_VERBOSE", "1")], &exe, &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "passthrough: ok\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("autocoll-mpi: bcast passed intercomm=1"),
        "{err}"
    );
    assert!(
        err.contains("autocoll-mpi: bcast passed non-contiguous=1"),
        "{err}"
    );
}

#[test]
fn issue18_a_bad_setting_is_named_and_the_program_runs_on_defaults() {
    let dir = scratch("bad-setting");
    let exe = build("mpicc", "wildcard.c", &dir);
    let out = mpirun(2, true, &[("AUTOCOLL_SELECT", "fastest")], &exe, &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "wildcard: ok (0 wrong)\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("AUTOCOLL_SELECT=\"fastest\"").count(),
        1,
        "{err}"
    );
}
