//! Issue 6: the exported selection files do what they say under the real
//! libraries. Open MPI 4.1: for each collective and size, the algorithm
//! function that `mca_coll_tuned.so` binds in `libmpi` (seen through the
//! dynamic linker's binding log; Debian's release build has no tuned
//! verbose output) is the one the rules file names. MPICH 4.0: the JSON
//! file is accepted and every collective runs with it (MPICH aborts on a
//! key or algorithm it does not know, which the test also checks).
//!
//! Needs `mpicc`/`mpirun` (Open MPI) and `mpicc.mpich`/`mpirun.mpich`; a
//! run without them is skipped with a message, except under CI, where
//! `scripts/ci-deps` installs them and their absence is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use autocoll::select::export::{mpi_name, ompi_algorithm, to_mpich, to_ompi};
use autocoll::select::Table;
use autocoll::Collective;

const TABLE: &str = r#"schema = "autocoll.tuning/1"
[[rule]]
op = "bcast"
ranks = "2..8"
bytes = "0..8K"
impl = "bcast:binomial"
[[rule]]
op = "bcast"
ranks = "2..8"
bytes = "8193..64M"
impl = "bcast:chain:seg=16K"
[[rule]]
op = "reduce"
ranks = "2..8"
bytes = "0..8K"
impl = "reduce:flat"
[[rule]]
op = "reduce"
ranks = "2..8"
bytes = "8193..64M"
impl = "reduce:binary:seg=8K"
[[rule]]
op = "allreduce"
ranks = "2..8"
bytes = "0..8K"
impl = "allreduce:recursive-doubling"
[[rule]]
op = "allreduce"
ranks = "2..8"
bytes = "8193..64M"
impl = "allreduce:ring"
[[rule]]
op = "allgather"
ranks = "2..8"
bytes = "0..1K"
impl = "allgather:recursive-doubling"
[[rule]]
op = "allgather"
ranks = "2..8"
bytes = "1025..64M"
impl = "allgather:ring"
[[rule]]
op = "scatter"
ranks = "2..3"
bytes = "0..64M"
impl = "scatter:binomial"
[[rule]]
op = "scatter"
ranks = "4..8"
bytes = "0..64M"
impl = "scatter:flat"
[[rule]]
op = "gather"
ranks = "2..3"
bytes = "0..64M"
impl = "gather:flat"
[[rule]]
op = "gather"
ranks = "4..8"
bytes = "0..64M"
impl = "gather:binomial"
[[rule]]
op = "barrier"
ranks = "2..3"
bytes = "0..0"
impl = "barrier:binomial"
[[rule]]
op = "barrier"
ranks = "4..8"
bytes = "0..0"
impl = "barrier:dissemination"
[[rule]]
op = "alltoall"
ranks = "2..8"
bytes = "0..256"
impl = "alltoall:bruck"
[[rule]]
op = "alltoall"
ranks = "2..8"
bytes = "257..4K"
impl = "alltoall:linear"
[[rule]]
op = "alltoall"
ranks = "2..8"
bytes = "4097..64M"
impl = "alltoall:pairwise"
[[rule]]
op = "scan"
ranks = "2..3"
bytes = "0..64M"
impl = "scan:recursive-doubling"
[[rule]]
op = "scan"
ranks = "4..8"
bytes = "0..64M"
impl = "scan:linear:seg=16K"
[[rule]]
op = "exscan"
ranks = "2..3"
bytes = "0..64M"
impl = "exscan:linear"
[[rule]]
op = "exscan"
ranks = "4..8"
bytes = "0..64M"
impl = "exscan:recursive-doubling"
[[rule]]
op = "reduce-scatter"
ranks = "2..8"
bytes = "0..1K"
impl = "reduce-scatter:binomial"
[[rule]]
op = "reduce-scatter"
ranks = "2..8"
bytes = "1025..16K"
impl = "reduce-scatter:recursive-halving"
[[rule]]
op = "reduce-scatter"
ranks = "2..8"
bytes = "16385..64M"
impl = "reduce-scatter:ring"
"#;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// True when the tools are there; a skip outside CI, a failure inside.
fn tools(list: &[&str]) -> bool {
    let missing: Vec<&&str> = list.iter().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide {missing:?} (scripts/ci-deps)"
    );
    eprintln!("SKIPPED: {missing:?} not installed");
    false
}

fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn compile(mpicc: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mpi/coll.c");
    let exe = dir.join(mpicc.replace('.', "_"));
    let status = Command::new(mpicc)
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "{mpicc} failed");
    exe
}

/// The `ompi_coll_base_<op>_intra_*` (and `_basic_linear`) functions
/// `mca_coll_tuned.so` bound.
fn tuned_bindings(
    exe: &Path,
    rules: &Path,
    dir: &Path,
    coll: Collective,
    ranks: usize,
    bytes: usize,
) -> Vec<String> {
    let op = coll.name();
    let log = dir.join(format!("ld-{op}-{ranks}-{bytes}"));
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            &ranks.to_string(),
        ])
        .args([
            "--mca",
            "coll_tuned_use_dynamic_rules",
            "1",
            "--mca",
            "coll_tuned_dynamic_rules_filename",
        ])
        .arg(rules)
        .args(["--mca", "btl", "self,vader"])
        .arg("-x")
        .arg("LD_DEBUG=bindings")
        .arg("-x")
        .arg(format!("LD_DEBUG_OUTPUT={}", log.display()))
        .arg(exe)
        .args([op, &bytes.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mpirun {op}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prefix = format!("ompi_coll_base_{}_intra_", mpi_name(coll));
    let linear = format!("ompi_coll_base_{}_basic_linear", mpi_name(coll));
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(log.file_name().unwrap().to_str().unwrap())
        {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            if let (true, Some(sym)) = (line.contains("mca_coll_tuned.so"), line.split('`').nth(1))
            {
                let sym = sym.trim_end_matches('\'');
                if (sym.starts_with(&prefix) || sym == linear)
                    && !sym.ends_with("_generic")
                    && !seen.iter().any(|s| s == sym)
                {
                    seen.push(sym.to_string());
                }
            }
        }
        std::fs::remove_file(path).unwrap();
    }
    seen
}

/// The libmpi function of each (collective, algorithm id) of Open MPI 4.1.
fn ompi_function(op: Collective, alg: u32) -> String {
    let c = mpi_name(op);
    let intra = match (op, alg) {
        (Collective::ReduceScatter, 1) => return format!("ompi_coll_base_{c}_basic_linear"),
        (Collective::ReduceScatter, 3) => "recursivehalving",
        (Collective::ReduceScatter, 4) => "butterfly",
        (Collective::Bcast, 3) => "pipeline",
        (Collective::Bcast, 6) => "binomial",
        (Collective::Reduce, 1) => "basic_linear",
        (Collective::Reduce, 4) => "binary",
        (Collective::Allreduce, 3) => "recursivedoubling",
        (Collective::Allreduce, 4) => "ring",
        (Collective::Allgather, 3) => "recursivedoubling",
        (Collective::Allgather, 4) => "ring",
        (Collective::Scatter | Collective::Gather, 1) => "basic_linear",
        (Collective::Scatter | Collective::Gather, 2) => "binomial",
        (Collective::Barrier, 4) => "bruck",
        (Collective::Barrier, 6) => "tree",
        (Collective::Alltoall, 2) => "pairwise",
        (Collective::Alltoall, 3) => "bruck",
        (Collective::Alltoall, 4) => "linear_sync",
        (Collective::Scan | Collective::Exscan, 1) => "linear",
        (Collective::Scan | Collective::Exscan, 2) => "recursivedoubling",
        other => panic!("no function listed for {other:?}"),
    };
    format!("ompi_coll_base_{c}_intra_{intra}")
}

#[test]
fn open_mpi_runs_the_algorithm_the_rules_file_names() {
    if !tools(&["mpicc", "mpirun"]) {
        return;
    }
    let dir = workdir("ompi-rules");
    let exe = compile("mpicc", &dir);
    let table = Table::parse(TABLE, "table").unwrap();
    let rules = dir.join("rules.conf");
    std::fs::write(&rules, to_ompi(&table, 1)).unwrap();
    let points = [
        (Collective::Bcast, 3, 100),
        (Collective::Bcast, 3, 100_000),
        (Collective::Reduce, 3, 800),
        (Collective::Reduce, 3, 80_000),
        (Collective::Allreduce, 4, 800),
        (Collective::Allreduce, 4, 80_000),
        (Collective::Allgather, 4, 100),
        (Collective::Allgather, 4, 10_000),
        (Collective::Scatter, 3, 1000),
        (Collective::Scatter, 4, 1000),
        (Collective::Gather, 3, 1000),
        (Collective::Gather, 4, 1000),
        (Collective::Barrier, 3, 0),
        (Collective::Barrier, 4, 0),
        (Collective::Alltoall, 4, 100),
        (Collective::Alltoall, 4, 1000),
        (Collective::Alltoall, 4, 10_000),
        (Collective::Scan, 3, 800),
        (Collective::Scan, 4, 80_000),
        (Collective::Exscan, 3, 800),
        (Collective::Exscan, 4, 80_000),
        (Collective::ReduceScatter, 4, 800),
        (Collective::ReduceScatter, 4, 8_000),
        (Collective::ReduceScatter, 4, 80_000),
    ];
    for (op, ranks, bytes) in points {
        let imp = table.lookup(op, ranks, bytes).unwrap();
        let (alg, _, _, _) = ompi_algorithm(imp);
        let want = ompi_function(op, alg);
        let seen = tuned_bindings(&exe, &rules, &dir, op, ranks, bytes);
        assert_eq!(
            seen,
            vec![want],
            "{op} on {ranks} ranks at {bytes} bytes ({imp})"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn run_mpich(exe: &Path, json: &Path, op: &str, bytes: usize) -> std::process::Output {
    Command::new("mpirun.mpich")
        .args(["-n", "4"])
        .env("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", json)
        .arg(exe)
        .args([op, &bytes.to_string()])
        .output()
        .unwrap()
}

#[test]
fn mpich_accepts_the_selection_file_and_runs_every_collective() {
    if !tools(&["mpicc.mpich", "mpirun.mpich"]) {
        return;
    }
    let dir = workdir("mpich-json");
    let exe = compile("mpicc.mpich", &dir);
    let table = Table::parse(TABLE, "table").unwrap();
    let json = dir.join("selection.json");
    std::fs::write(&json, to_mpich(&table)).unwrap();
    for op in Collective::ALL {
        for bytes in [800, 800_000] {
            let out = run_mpich(&exe, &json, op.name(), bytes);
            assert!(
                out.status.success(),
                "{op} {bytes}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // The check has teeth: MPICH refuses an algorithm it does not know.
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        to_mpich(&table).replace("MPIR_Bcast_intra_binomial", "MPIR_Bcast_intra_nonsense"),
    )
    .unwrap();
    assert!(!run_mpich(&exe, &bad, "bcast", 800).status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}
