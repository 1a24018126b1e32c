//! `autocoll mpirun`: an unmodified C MPI program, built here
//! with mpicc, run under Open MPI's mpirun with the interposition library
//! preloaded. Needs mpicc (without it the test says SKIPPED) and the
//! library, which a test cannot build: `AUTOCOLL_MPI_LIB`, else
//! libautocoll_mpi.so in the target directory. Without it the test fails
//! and says how to build it. An MPICH program (mpicc.mpich) gets MPICH's
//! build of the library (scripts/build-mpich-lib) and mpiexec.mpich.

use std::path::{Path, PathBuf};
use std::process::Command;

const BUILD: &str = "cargo build --release -p autocoll-mpi --features mpi";

/// What every build of the interposition library holds (its export).
const MARK: &[u8] = b"\0MPI_Bcast\0";

const PROGRAM: &str = r#"
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, sum = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sum %d\n", sum);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 3;
}
"#;

fn have_mpicc() -> bool {
    Command::new("mpicc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_library(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.windows(MARK.len()).any(|w| w == MARK))
}

/// The library: `AUTOCOLL_MPI_LIB`, else the first with `MPI_Bcast` of
/// release/, debug/ and debug/deps/ in the target directories
/// (`CARGO_TARGET_DIR`, the one this test's autocoll was built in, the
/// workspace's `target`).
fn library() -> PathBuf {
    if let Some(path) = std::env::var_os("AUTOCOLL_MPI_LIB") {
        let path = PathBuf::from(path);
        assert!(
            is_library(&path),
            "AUTOCOLL_MPI_LIB={} is not the interposition library; build it with `{BUILD}`",
            path.display()
        );
        return path;
    }
    let exe = Path::new(env!("CARGO_BIN_EXE_autocoll"));
    let mut targets: Vec<PathBuf> = Vec::new();
    targets.extend(std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from));
    targets.extend(exe.parent().and_then(Path::parent).map(Path::to_path_buf));
    targets.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let candidates: Vec<PathBuf> = targets
        .iter()
        .flat_map(|t| {
            ["release", "debug", "debug/deps"].map(|d| t.join(d).join("libautocoll_mpi.so"))
        })
        .collect();
    candidates
        .iter()
        .find(|p| is_library(p))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no interposition library (a libautocoll_mpi.so exporting MPI_Bcast) in {candidates:?}: \
                 build it with `{BUILD}` (same CARGO_TARGET_DIR), or set AUTOCOLL_MPI_LIB"
            )
        })
}

#[test]
fn mpirun_preloads_the_library() {
    if !have_mpicc() {
        eprintln!("SKIPPED mpirun_preloads_the_library: needs mpicc (Debian: libopenmpi-dev)");
        return;
    }
    let lib = library();
    let dir = std::env::temp_dir().join(format!("autocoll-mpirun-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("sum.c");
    let program = dir.join("sum");
    std::fs::write(&source, PROGRAM).unwrap();
    let cc = Command::new("mpicc")
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .output()
        .expect("mpicc runs");
    assert!(
        cc.status.success(),
        "mpicc failed:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );

    let out = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["mpirun", "--verbose", "--lib"])
        .arg(&lib)
        .args(["--", "-n", "3", "--oversubscribe"])
        .arg(&program)
        .output()
        .expect("autocoll runs");
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "autocoll mpirun failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.lines().any(|l| l.trim() == "sum 3"),
        "no `sum 3` in:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("autocoll-mpi: allreduce autocoll="),
        "no summary of the library in:\n{stderr}"
    );
}

#[test]
fn mpirun_passes_on_the_exit_status_of_mpirun() {
    let lib = library();
    let dir = std::env::temp_dir().join(format!("autocoll-mpirun-status-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A stand-in mpirun: Open MPI's --version, then the status its
    // arguments end with, and its arguments on stdout.
    let fake = dir.join("mpirun");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'mpirun (Open MPI) 4.1.4'; exit 0; }\n\
         echo \"$@\"\nfor a; do last=$a; done\nexit $last\n",
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["mpirun", "--select", "native", "--trace", "tr", "--mpirun"])
        .arg(&fake)
        .arg("--lib")
        .arg(&lib)
        .args(["--", "-n", "2", "prog", "7"])
        .current_dir(&dir)
        .output()
        .expect("autocoll runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    let trace = format!("-x AUTOCOLL_TRACE={}", dir.join("tr").display());
    assert!(stdout.contains(&trace), "{stdout}");
    assert!(
        stdout.contains("-x AUTOCOLL_SELECT=native -x AUTOCOLL_TRACE="),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("-n 2 prog 7"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_mpich_program_gets_mpichs_library_and_mpiexec() {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let lib = std::env::var_os("CARGO_TARGET_DIR")
        .map_or(target, PathBuf::from)
        .join("release/libautocoll_mpi_mpich.so");
    let have_mpich = Command::new("mpicc.mpich")
        .arg("-show")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_mpich || !is_library(&lib) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide mpicc.mpich and {} (scripts/build-mpich-lib)",
            lib.display()
        );
        eprintln!(
            "SKIPPED: needs mpicc.mpich and {} (scripts/build-mpich-lib)",
            lib.display()
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("autocoll-mpirun-mpich-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("sum.c"), PROGRAM).unwrap();
    let cc = Command::new("mpicc.mpich")
        .args(["-o", "sum", "sum.c"])
        .current_dir(&dir)
        .output()
        .expect("mpicc.mpich runs");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    // Neither --mpi nor --mpirun: the program says which MPI.
    let out = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["mpirun", "--verbose", "--", "-n", "3", "./sum"])
        .env("AUTOCOLL_MPICH_LIB", &lib)
        .current_dir(&dir)
        .output()
        .expect("autocoll runs");
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let line = format!(
        "autocoll mpirun: mpiexec.mpich -genv LD_PRELOAD {}",
        lib.display()
    );
    assert!(stderr.contains(&line), "no `{line}` in:\n{stderr}");
    assert!(
        stdout.lines().any(|l| l.trim() == "sum 3"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("autocoll-mpi: allreduce autocoll="),
        "no summary of the library in:\n{stderr}"
    );
}

/// `autocoll mpirun` of `args`, in `dir`; its stdout and stderr.
fn learn_run(dir: &Path, lib: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["mpirun", "--lib"])
        .arg(lib)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("autocoll runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The kernels of the mapping experiments, built with `flags`.
fn kernel(dir: &Path, name: &str, flags: &str) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../autocoll-map/kernels/kernel_mpi.c");
    let cc = Command::new("mpicc")
        .args([flags, "-o", name])
        .arg(source)
        .current_dir(dir)
        .output()
        .expect("mpicc runs");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
}

#[test]
fn learn_keeps_what_runs_learned_and_starts_over_for_another_program() {
    if !have_mpicc() {
        eprintln!("SKIPPED: needs mpicc (Debian: libopenmpi-dev)");
        return;
    }
    let lib = library();
    let dir = std::env::temp_dir().join(format!("autocoll-learn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    kernel(&dir, "kernel", "-O2");
    kernel(&dir, "kernel_O0", "-O0");
    // Ranks 0 and 1 say they run on h0, 2 and 3 on h1: the ladder's
    // heavier steps (0-2, 1-3) cross between them, so a placement that
    // keeps them on one host is worth learning.
    std::fs::write(
        dir.join("hosts.sh"),
        "#!/bin/sh\nAUTOCOLL_HOST=h$((OMPI_COMM_WORLD_RANK / 2)) exec \"$@\"\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(dir.join("hosts.sh"))
        .status()
        .unwrap();
    let job = |program: &'static str| {
        [
            "--learn",
            "L",
            "--",
            "-n",
            "4",
            "--oversubscribe",
            "./hosts.sh",
            program,
        ]
        .into_iter()
        .chain(["ladder", "3", "65536", "-c", "1024"])
        .collect::<Vec<_>>()
    };
    let (_, first) = learn_run(&dir, &lib, &job("./kernel"));
    assert!(first.contains("first run"), "{first}");
    assert!(first.contains("placement learned: "), "{first}");
    let pattern = std::fs::read_to_string(dir.join("L/pattern.json")).unwrap();
    assert!(
        pattern.contains(r#""hosts": ["h0", "h0", "h1", "h1"]"#),
        "{pattern}"
    );
    let (_, second) = learn_run(&dir, &lib, &job("./kernel"));
    assert!(
        !second.contains("first run") && !second.contains("changed"),
        "{second}"
    );
    assert!(
        second.contains("hosts are not known before it starts"),
        "{second}"
    );

    let show = Command::new(env!("CARGO_BIN_EXE_autocoll"))
        .args(["learn", "show", "L"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("4 ranks, openmpi; 2 runs"), "{show}");
    assert!(show.contains("placement: the "), "{show}");
    assert!(
        show.lines()
            .any(|l| l.starts_with("collectives: ") && l.contains("pools")),
        "{show}"
    );

    let (_, other) = learn_run(&dir, &lib, &job("./kernel_O0"));
    assert!(other.contains("the program changed"), "{other}");
    let learned = std::fs::read_to_string(dir.join("L/learn.json")).unwrap();
    assert!(learned.contains("\"run_count\": 3"), "{learned}");
    std::fs::remove_dir_all(&dir).unwrap();
}
