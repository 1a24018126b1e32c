//! Trees that follow the cluster. `hier` over tcp processes
//! placed on several hosts (names that all stand for 127.0.0.1) and over
//! local threads laid out by a hostfile, and trees read from a file.
//!
//! [`layout_body`] is one rank of a launched job when `AUTOCOLL_LAYOUT_TEST`
//! is set (without it, it does nothing): it prints what its communicator
//! knows of the layout and its place in a `hier` tree.

use std::path::PathBuf;
use std::process::{Command, Output};

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");

fn autocoll(args: &[&str]) -> Output {
    Command::new(AUTOCOLL).args(args).output().unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A file of this test run with `contents`.
fn file(name: &str, contents: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("autocoll-{name}-{}", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    path
}

/// Four hosts, all 127.0.0.1: h0 (3 slots) and h1 (2) on sw0, h2 (1) and
/// h3 (2) on sw1 under sw0.
const HOSTS: &str = "\
h0 slots=3 addr=127.0.0.1 switch=sw0
h1 slots=2 addr=127.0.0.1 switch=sw0
h2 slots=1 addr=127.0.0.1 switch=sw0/sw1
h3 slots=2 addr=127.0.0.1 switch=sw0/sw1
";

/// Every collective over two `hier` variants, at every root.
const HIER: &str = "bcast:hier,reduce:hier:inner=flat:outer=chain:seg=1K,scatter:hier,gather:hier:top=flat,\
allreduce:hier:inner=flat:outer=binomial:top=binomial:seg=1K,allgather:hier:outer=kary3,barrier:hier:inner=chain";

fn assert_passed(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    stdout
}

#[test]
fn hier_passes_check_over_tcp_across_hosts() {
    let hosts = file("hier-hosts", HOSTS);
    let out = autocoll(&[
        "check",
        "--transport",
        "tcp",
        "-n",
        "8",
        "--impl",
        HIER,
        "--bytes",
        "0,4099",
        "--root",
        "0,4,7",
        "--hostfile",
        hosts.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&hosts);
    let stdout = assert_passed(&out);
    assert!(
        stdout.contains(
            "ok   n=8 bytes=4099 root=4 bcast:hier:inner=binomial:outer=binomial:top=binomial"
        ),
        "{stdout}"
    );
}

#[test]
fn hier_passes_check_on_threads_laid_out_by_a_hostfile() {
    let hosts = file("hier-local", HOSTS);
    let out = autocoll(&[
        "check",
        "-n",
        "3,8",
        "--impl",
        HIER,
        "--bytes",
        "0,4099",
        "--root",
        "all",
        "--hostfile",
        hosts.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&hosts);
    assert_passed(&out);
    let out = autocoll(&["check", "--agent", "ssh", "--impl", "bcast:hier"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--agent starts the ranks of a tcp check"));
}

/// The launcher tells every rank its host and switch from the hostfile,
/// the ranks agree on the layout, and `hier` puts each host's ranks under
/// one leader and the hosts under their switch's leader.
#[test]
fn launched_ranks_learn_their_hosts_and_switches() {
    let hosts = file("hier-layout", HOSTS);
    let me = std::env::current_exe().unwrap();
    let out = Command::new(AUTOCOLL)
        .args(["launch", "-n", "8", "--hostfile", hosts.to_str().unwrap()])
        .arg("--")
        .arg(me)
        .args([
            "--exact",
            "layout_body",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AUTOCOLL_LAYOUT_TEST", "1")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&hosts);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let expect = [
        "rank 0 h0 sw0 parent -",
        "rank 1 h0 sw0 parent 0",
        "rank 2 h0 sw0 parent 0",
        "rank 3 h1 sw0 parent 0",
        "rank 4 h1 sw0 parent 3",
        "rank 5 h2 sw0/sw1 parent 0",
        "rank 6 h3 sw0/sw1 parent 5",
        "rank 7 h3 sw0/sw1 parent 6",
    ];
    for line in expect {
        assert!(stdout.contains(line), "no `{line}` in\n{stdout}");
    }
}

/// One rank of [`launched_ranks_learn_their_hosts_and_switches`].
#[test]
fn layout_body() {
    if std::env::var_os("AUTOCOLL_LAYOUT_TEST").is_none() {
        return;
    }
    let mut comm = autocoll::init().unwrap();
    let me = comm.rank();
    let layout = comm.layout().unwrap().clone();
    let shape = "bcast:hier:inner=flat"
        .parse::<autocoll::Implementation>()
        .unwrap();
    let tree = comm.tree(shape.shape().unwrap(), 0).unwrap();
    let switch = layout.switch(me).map_or("-", |s| layout.switch_path(s));
    let parent = tree.parent(me).map_or("-".into(), |p| p.to_string());
    println!(
        "rank {me} {} {switch} parent {parent}",
        layout.host_name(layout.host(me))
    );
}

/// Rank 3 at the root of two hosts of three: ranks 0–2 on one host (rank 0
/// leading), ranks 3–5 on the other.
const TREE: &str = "# two hosts of three\n3\n0\n0\n-\n3\n3\n";

#[test]
fn a_tree_file_runs_every_collective_from_its_root() {
    let tree = file("tree", TREE);
    let out = autocoll(&[
        "check",
        "--tree-file",
        tree.to_str().unwrap(),
        "--bytes",
        "0,4099",
    ]);
    let _ = std::fs::remove_file(&tree);
    let stdout = assert_passed(&out);
    // Positions from root 3: rank 3+v mod 6 at v, so rank 0 (position 3)
    // under the root and ranks 1, 2 (positions 4, 5) under rank 0.
    let id = "bcast:user:parents=0.0.0.0.3.3";
    assert!(
        stdout.contains(&format!("n=6 bytes=4099 root=3 {id}")),
        "{stdout}"
    );
    // Rootless collectives run trees from rank 0: said on stderr.
    assert!(
        text(&out.stderr).contains("allreduce runs the tree of"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_tree_file_that_is_not_a_tree_is_refused_with_its_line() {
    let tree = file("bad-tree", "-\n2\n1\n");
    let path = tree.to_str().unwrap();
    for cmd in ["check", "bench", "tune", "adapt"] {
        let mut args = vec![cmd, "--tree-file", path, "--op", "bcast"];
        if cmd == "tune" {
            args.extend(["--out", "/nonexistent/never-written.toml"]);
        }
        let out = autocoll(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(
            stderr.contains(":2: rank 1's parents go round in a circle (1 -> 2 -> 1)"),
            "{cmd}: {stderr}"
        );
    }
    let out = autocoll(&["check", "--tree-file", path, "-n", "4"]);
    let _ = std::fs::remove_file(&tree);
    assert_eq!(out.status.code(), Some(2));
}

/// `bench` times the file's tree beside --impl's.
#[test]
fn bench_times_a_tree_file_beside_the_implementations_named() {
    let tree = file("bench-tree", TREE);
    let out = autocoll(&[
        "bench",
        "--op",
        "reduce",
        "--impl",
        "reduce:binomial",
        "--tree-file",
        tree.to_str().unwrap(),
        "--bytes",
        "1K",
        "--min-reps",
        "1",
        "--max-reps",
        "1",
        "--calls",
        "2",
        "--warmup",
        "1",
    ]);
    let _ = std::fs::remove_file(&tree);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("reduce:binomial"), "{stdout}");
    assert!(
        stdout.contains("reduce:user:parents=0.0.0.0.3.3"),
        "{stdout}"
    );
}

#[test]
fn list_names_hier_and_its_levels() {
    let out = autocoll(&["list", "--op", "bcast"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("bcast:hier[:inner=<level>][:outer=<level>][:top=<level>][:seg=<bytes>]"),
        "{stdout}"
    );
    assert!(stdout.contains("kary<k>"), "{stdout}");
}
