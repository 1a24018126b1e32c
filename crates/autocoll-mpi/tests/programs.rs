//! C and Fortran programs of our own, built with `mpicc`/`mpif90`, run
//! under Open MPI's `mpirun` without the library and with it preloaded:
//! results compared result for result, pass-through counted, the
//! program's own messages untouched. The collectives' programs run under
//! MPICH too (`mpicc.mpich`, `mpiexec.mpich`), with MPICH's build of the
//! library (scripts/build-mpich-lib).

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

/// MPICH's build of the library, `target/release/libautocoll_mpi_mpich.so`
/// (scripts/build-mpich-lib); `None`, said, where it is not built, except
/// under CI, which builds it.
fn mpich_library() -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap();
    let lib = target.join("release").join("libautocoll_mpi_mpich.so");
    if lib.is_file() {
        return Some(lib);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must build {} (scripts/build-mpich-lib)",
        lib.display()
    );
    eprintln!(
        "SKIPPED: {} is not built (scripts/build-mpich-lib)",
        lib.display()
    );
    None
}

/// `mpiexec.mpich -n ranks program args`, with `lib` preloaded and `env`.
fn mpiexec(
    ranks: usize,
    lib: Option<&Path>,
    env: &[(&str, &str)],
    program: &Path,
    args: &[&Path],
) -> Output {
    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-n", &ranks.to_string()]);
    if let Some(lib) = lib {
        cmd.arg("-genv").arg("LD_PRELOAD").arg(lib);
        for (k, v) in env {
            cmd.args(["-genv", k, v]);
        }
    }
    let out = cmd.arg(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} under MPICH failed:\n{}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
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

const OPS: [&str; 15] = [
    "bcast",
    "reduce",
    "scatter",
    "gather",
    "allreduce",
    "allgather",
    "alltoall",
    "scan",
    "exscan",
    "reduce-scatter",
    "gatherv",
    "scatterv",
    "allgatherv",
    "alltoallv",
    "barrier",
];

/// The v-forms the lottery passes through (`sizes-unshared`).
const UNSHARED: [&str; 3] = ["gatherv", "scatterv", "alltoallv"];

const FIXED: [&str; 2] = [
    "fixed:bcast:binary:seg=1K,reduce:chain:seg=4K,allreduce:ring,scatter:flat,gather:knomial:k=3,allgather:recursive-doubling,alltoall:bruck,scan:linear:seg=1K,exscan:recursive-doubling,reduce-scatter:recursive-halving,gatherv:binomial:seg=1K,scatterv:knomial:k=3,allgatherv:recursive-doubling,alltoallv:pairwise,barrier:binomial",
    "fixed:bcast:chain,reduce:binary,allreduce:rabenseifner,scatter:binary,gather:chain,allgather:ring,alltoall:linear,scan:recursive-doubling,exscan:linear,reduce-scatter:ring,gatherv:chain,scatterv:binary:seg=1K,allgatherv:ring,alltoallv:linear:k=2,barrier:dissemination",
];

/// The MPI a test builds its program with and runs it under, each with
/// its own build of the library.
#[derive(Clone, Copy)]
enum Mpi {
    Open,
    Mpich,
}

impl Mpi {
    fn compilers(self) -> (&'static str, &'static str) {
        match self {
            Mpi::Open => ("mpicc", "mpif90"),
            Mpi::Mpich => ("mpicc.mpich", "mpif90.mpich"),
        }
    }

    fn run(
        self,
        ranks: usize,
        lib: bool,
        env: &[(&str, &str)],
        program: &Path,
        args: &[&Path],
    ) -> Output {
        match self {
            Mpi::Open => mpirun(ranks, lib, env, program, args),
            Mpi::Mpich => {
                let lib = lib.then(|| mpich_library().expect("checked by the test"));
                mpiexec(ranks, lib.as_deref(), env, program, args)
            }
        }
    }
}

/// collectives.c without the library and with it, under the lottery and
/// the fixed selections, on 4 and 5 ranks: the same results, every op run
/// by the library, the non-commutative calls passed.
fn c_collectives_equal(mpi: Mpi) {
    let dir = scratch(&format!("c-{}", mpi.compilers().0));
    let exe = build(mpi.compilers().0, "collectives.c", &dir);
    for ranks in [4, 5] {
        let reference = dir.join(format!("ref-{ranks}"));
        std::fs::create_dir_all(&reference).unwrap();
        mpi.run(ranks, false, &[], &exe, &[&reference]);
        let expected = results(&reference, ranks);
        for select in ["lottery", FIXED[0], FIXED[1]] {
            let out_dir = dir.join(format!("lib-{ranks}-{}", select.len()));
            std::fs::create_dir_all(&out_dir).unwrap();
            let env = [("AUTOCOLL_SELECT", select), ("AUTOCOLL_VERBOSE", "1")];
            let out = mpi.run(ranks, true, &env, &exe, &[&out_dir]);
            assert_same(&expected, &results(&out_dir, ranks), select);
            let counts = summary(&out.stderr);
            for op in OPS {
                let (_, autocoll, native, passed) = counts
                    .iter()
                    .find(|c| c.0 == op)
                    .unwrap_or_else(|| panic!("{select}: no summary line for {op}"));
                // The lottery starts every size on the MPI library's own
                // and tries others only as its budget allows: in a program
                // this short, seldom; the v-forms whose ranks do not share
                // their sizes it leaves to MPI. The fixed selections run
                // autocoll's.
                match select {
                    "lottery" if UNSHARED.contains(&op) => {
                        assert!(*passed > 0 && *native == 0, "{select}: {op} was not passed")
                    }
                    "lottery" => assert!(*native > 0, "{select}: the incumbent ran no {op}"),
                    _ => assert!(*autocoll > 0, "{select}: autocoll ran no {op}"),
                }
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
fn c_collectives_equal_mpi_under_every_selection() {
    c_collectives_equal(Mpi::Open);
}

#[test]
fn c_collectives_equal_mpich_with_mpichs_library_under_every_selection() {
    if mpich_library().is_some() {
        c_collectives_equal(Mpi::Mpich);
    }
}

/// collectives.f90 on 3 ranks without the library and with it: the same
/// results, every op reached the library.
fn fortran_collectives_equal(mpi: Mpi) {
    let dir = scratch(&format!("fortran-{}", mpi.compilers().1));
    let exe = build(mpi.compilers().1, "collectives.f90", &dir);
    let (reference, lib) = (dir.join("ref"), dir.join("lib"));
    std::fs::create_dir_all(&reference).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    mpi.run(3, false, &[], &exe, &[&reference]);
    let env = [("AUTOCOLL_SELECT", FIXED[0]), ("AUTOCOLL_VERBOSE", "1")];
    let out = mpi.run(3, true, &env, &exe, &[&lib]);
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
fn fortran_collectives_equal_mpi_and_reach_the_library() {
    fortran_collectives_equal(Mpi::Open);
}

#[test]
fn fortran_collectives_equal_mpich_and_reach_mpichs_library() {
    if mpich_library().is_some() {
        fortran_collectives_equal(Mpi::Mpich);
    }
}

#[test]
fn wildcard_receives_never_see_the_library_messages() {
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
fn intercommunicators_and_reductions_over_vector_types_pass_through_counted() {
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
        err.contains("autocoll-mpi: allreduce passed non-contiguous=1"),
        "{err}"
    );
}

#[test]
fn a_bad_setting_is_named_and_the_program_runs_on_defaults() {
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

#[test]
fn the_pattern_of_a_ring_has_exactly_its_pairs_and_counts() {
    use autocoll::pattern::{Entry, Pattern};
    let dir = scratch("ring");
    let exe = build("mpicc", "ring.c", &dir);
    let file = dir.join("ring.json");
    let path = file.to_str().unwrap();
    let select = "fixed:allreduce:recursive-doubling";
    mpirun(
        4,
        true,
        &[("AUTOCOLL_PATTERN", path), ("AUTOCOLL_SELECT", select)],
        &exe,
        &[],
    );
    let pattern = Pattern::read(&file).unwrap();
    assert_eq!((pattern.ranks, pattern.source.as_str()), (4, "mpi"));
    // One machine runs every rank: one host name, four times.
    let hosts = &pattern.hosts;
    assert_eq!(hosts.len(), 4, "{hosts:?}");
    assert!(
        !hosts[0].is_empty() && hosts.iter().all(|h| h == &hosts[0]),
        "{hosts:?}"
    );
    let mut expected = Vec::new();
    for src in 0..4 {
        let (right, left) = ((src + 1) % 4, (src + 3) % 4);
        let entry = |dst, class, count, bytes| Entry {
            src,
            dst,
            class,
            count,
            bytes,
        };
        expected.push(entry(right, 2, 2, 6)); // persistent, 3 B, started twice
        expected.push(entry(right, 6, 2, 104)); // Isend of 40 B, Sendrecv of 64 B
        expected.push(entry(right, 10, 2, 2000)); // Sendrecv of 1000 B, twice
        expected.push(entry(left, 7, 1, 100)); // through the reversed communicator
    }
    let mut got = pattern.p2p.clone();
    got.sort_by_key(|e| (e.src, e.dst, e.class));
    expected.sort_by_key(|e| (e.src, e.dst, e.class));
    assert_eq!(got, expected);
    // Recursive doubling on 4 ranks: each rank sends 8 B to rank ^ 1 and ^ 2.
    for src in 0..4usize {
        for dst in [src ^ 1, src ^ 2] {
            assert!(
                pattern
                    .collective
                    .iter()
                    .any(|e| e.src == src && e.dst == dst),
                "no collective traffic {src} -> {dst}: {:?}",
                pattern.collective
            );
        }
    }
}

#[test]
fn traces_and_the_lottery_state_are_written_per_communicator() {
    let dir = scratch("trace-state");
    let exe = build("mpicc", "collectives.c", &dir);
    let (out_dir, traces, state) = (dir.join("out"), dir.join("traces"), dir.join("state.json"));
    std::fs::create_dir_all(&out_dir).unwrap();
    let env = [
        ("AUTOCOLL_TRACE", traces.to_str().unwrap()),
        ("AUTOCOLL_STATE", state.to_str().unwrap()),
    ];
    mpirun(4, true, &env, &exe, &[&out_dir]);
    // MPI_COMM_WORLD's traces go to the directory, every other
    // communicator's to comm-<number>-w<world rank of its rank 0>.
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let top = names(&traces);
    for rank in 0..4 {
        assert!(top.contains(&format!("rank-{rank:05}.trace")), "{top:?}");
    }
    let subdirs: Vec<&String> = top.iter().filter(|n| n.starts_with("comm-")).collect();
    // dup, two halves, reversed (whose rank 0 is world rank 3).
    assert_eq!(subdirs.len(), 4, "{top:?}");
    assert!(subdirs.iter().any(|d| d.ends_with("-w3")), "{top:?}");
    // The halves hold 2 ranks' files each, dup and reversed 4.
    let mut sizes: Vec<usize> = subdirs
        .iter()
        .map(|d| names(&traces.join(d)).len())
        .collect();
    sizes.sort();
    assert_eq!(sizes, [2, 2, 4, 4], "{top:?}");
    let state_text = std::fs::read_to_string(&state).unwrap();
    assert!(state_text.contains("bcast"), "{state_text}");
}

#[test]
fn native_selection_passes_every_call_to_mpi() {
    let dir = scratch("native");
    let exe = build("mpicc", "wildcard.c", &dir);
    let out = mpirun(
        2,
        true,
        &[("AUTOCOLL_SELECT", "native"), ("AUTOCOLL_VERBOSE", "1")],
        &exe,
        &[],
    );
    let counts = summary(&out.stderr);
    assert!(!counts.is_empty());
    for (op, autocoll, native, passed) in counts {
        assert_eq!((autocoll, native), (0, 0), "{op}");
        assert!(passed > 0, "{op}");
    }
}

#[test]
fn ranks_that_describe_their_data_differently_are_handled_not_hung() {
    let dir = scratch("layouts");
    let exe = build("mpicc", "layouts.c", &dir);
    let plain = mpirun(4, false, &[], &exe, &[]);
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "layouts: ok\n");
    let select = "fixed:scatter:binomial,bcast:binary,gather:flat,alltoall:bruck";
    let out = mpirun(
        4,
        true,
        &[("AUTOCOLL_SELECT", select), ("AUTOCOLL_VERBOSE", "1")],
        &exe,
        &[],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "layouts: ok\n");
    let counts = summary(&out.stderr);
    for (op, calls) in [("scatter", 2), ("bcast", 1), ("gather", 1), ("alltoall", 1)] {
        let c = counts.iter().find(|c| c.0 == op).unwrap();
        assert_eq!((c.1, c.3), (calls, 0), "{op}: {counts:?}");
    }
}

#[test]
fn a_rank_that_comes_late_is_waited_for_as_mpi_does() {
    let dir = scratch("late");
    let exe = build("mpicc", "late.c", &dir);
    // Beyond the transport's 30 s default timeout, which once failed the
    // waiting ranks' calls.
    let env = [
        (
            "AUTOCOLL_SELECT",
            "fixed:bcast:binomial,allreduce:ring,barrier:binomial",
        ),
        ("AUTOCOLL_VERBOSE", "1"),
    ];
    let out = mpirun(3, true, &env, &exe, &[Path::new("32")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "late: ok (0 wrong)\n");
    let counts = summary(&out.stderr);
    for op in ["bcast", "allreduce"] {
        let handled = counts.iter().find(|c| c.0 == op).map(|c| c.1);
        assert_eq!(handled, Some(1), "{op}: {:?}", counts);
    }
}

#[test]
fn a_freed_communicators_handle_reused_is_not_taken_for_the_old_one() {
    let dir = scratch("reuse");
    let exe = build("mpicc", "reuse.c", &dir);
    let select = "fixed:allreduce:ring,bcast:binomial";
    let out = mpirun(3, true, &[("AUTOCOLL_SELECT", select)], &exe, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("reuse: ok (0 wrong, "), "{text}");
    // The case under test happened: some handle came back.
    let reused: u32 = text
        .trim_end()
        .trim_end_matches(" handles reused)")
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(reused > 0, "{text}");
}

#[test]
fn every_communicator_the_program_makes_learns_into_the_state_file_by_its_shape() {
    use autocoll::select::lottery::{Key, Objective};
    use autocoll::select::state::{Fingerprint, Store};
    use autocoll::Collective;
    let dir = scratch("shapes");
    let exe = build("mpicc", "shapes.c", &dir);
    let state = dir.join("state.json");
    let env = [("AUTOCOLL_STATE", state.to_str().unwrap())];
    let (comms, calls) = (4, 400);
    let n = comms.to_string();
    let k = calls.to_string();
    let out = mpirun(4, true, &env, &exe, &[Path::new(&n), Path::new(&k)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dup_s: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("shapes: dup_s="))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no total in {stdout}"));
    let learned = |ranks: usize| {
        let hosts = vec!["any".to_string(); ranks];
        let fp = Fingerprint::new(&hosts, "mpi").measuring(Objective::Mean);
        Store::new(&state, fp, true).load()
    };
    let key = |ranks| Key::of(Collective::Allreduce, ranks, 1024);
    // The four duplicates share one pool of the world's shape: the time
    // it accounts for is most of all four's (each one's last periods are
    // not yet learnt from when it is freed), not one duplicate's.
    let world = learned(4);
    let spent = world.get(&key(4)).map_or(0.0, |l| l.spent_s);
    assert!(
        spent > 0.5 * dup_s,
        "the world's shape accounts for {spent} s of the duplicates' {dup_s} s"
    );
    // The halves' shape is saved too.
    let halves = learned(2);
    assert!(halves.contains_key(&key(2)), "{:?}", halves.keys());
}
