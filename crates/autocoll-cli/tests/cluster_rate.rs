//! The emulated cluster delivers the rates its spec names: bring
//! `clusters/slow-host.toml` up, time a stream between two hosts on
//! 100 Mbit/s links and one to the host on a 10 Mbit/s link, require each
//! within 15% of the slower link's rate, and bring the cluster down.
//!
//! Needs root (namespaces, bridges, qdiscs), mpirun and `--features mpi`;
//! without them it says why and does nothing. The stream runs over the mpi
//! transport (Open MPI's TCP BTL on the cluster's links); once the tcp
//! transport is in, the same program runs under `autocoll launch` too.

use std::path::{Path, PathBuf};
use std::process::Command;

const SPEC: &str = "clusters/slow-host.toml";
const TOLERANCE: f64 = 0.15;
/// Seconds each stream should last at the expected rate.
const SECONDS: f64 = 1.5;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn autocoll() -> Command {
    Command::new(env!("CARGO_BIN_EXE_autocoll"))
}

/// Why this machine cannot run the test, if it cannot.
fn missing() -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        return Some("needs root to make network namespaces");
    }
    if !cfg!(feature = "mpi") {
        return Some("needs --features mpi (the stream runs over the mpi transport)");
    }
    let mpirun = Command::new("mpirun").arg("--version").output();
    if !mpirun.is_ok_and(|o| o.status.success()) {
        return Some("needs mpirun (Debian: openmpi-bin)");
    }
    None
}

/// Brings the cluster down when the test ends, passed or not.
struct Cluster {
    out: PathBuf,
}

impl Cluster {
    fn up(out: PathBuf) -> Cluster {
        // Leftovers of an earlier, killed run would make `up` reuse them.
        let cluster = Cluster { out };
        let up = cluster.run("up");
        assert!(
            up.status.success(),
            "cluster up failed: {}",
            String::from_utf8_lossy(&up.stderr)
        );
        cluster
    }

    fn run(&self, action: &str) -> std::process::Output {
        autocoll()
            .args(["cluster", action])
            .arg(repo().join(SPEC))
            .arg("--out")
            .arg(&self.out)
            .output()
            .expect("autocoll runs")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let down = self.run("down");
        if !down.status.success() {
            eprintln!(
                "cluster down failed: {}",
                String::from_utf8_lossy(&down.stderr)
            );
        }
    }
}

/// A host's link rate in Mbit/s, and the cluster's name and subnet.
fn spec() -> toml::Table {
    let text = std::fs::read_to_string(repo().join(SPEC)).expect("spec readable");
    text.parse().expect("spec is TOML")
}

fn rate_mbit(spec: &toml::Table, host: &str) -> f64 {
    let hosts = spec["host"].as_array().expect("hosts");
    let entry = hosts
        .iter()
        .find(|h| h["name"].as_str() == Some(host))
        .unwrap_or_else(|| panic!("no host {host} in {SPEC}"));
    let rate = entry["rate"].as_str().expect("rate is text");
    rate.strip_suffix("mbit")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("rate {rate} of {host} is not in mbit"))
}

/// The example program the ranks run, built beside this test.
fn program() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let path = profile.join("examples/p2p_rate");
    // `cargo test` builds examples with the tests; `--test cluster_rate` alone does not.
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p autocoll-cli --features mpi` (builds the examples)",
        path.display()
    );
    path
}

/// Streams from `from` to `to` over mpirun and returns the Mbit/s seen.
fn mpi_stream(dir: &Path, subnet: &str, from: &str, to: &str, mb: f64) -> f64 {
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "-n",
            "2",
            "--host",
            &format!("{from},{to}"),
        ])
        .arg("--mca")
        .arg("plm_rsh_agent")
        .arg(dir.join("agent"))
        .args(["--mca", "btl", "tcp,self"])
        .args(["--mca", "btl_tcp_if_include", subnet])
        .args(["--mca", "oob_tcp_if_include", subnet])
        .arg(program())
        .arg(format!("{mb:.1}"))
        .output()
        .expect("mpirun runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "p2p_rate {from}->{to} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("rate_mbit="))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no rate in the output: {stdout}"))
}

#[test]
fn emulated_links_run_within_15_percent_of_their_spec_rate() {
    if let Some(reason) = missing() {
        eprintln!("SKIPPED emulated_links_run_within_15_percent_of_their_spec_rate: {reason}");
        return;
    }
    let spec = spec();
    let name = spec["name"].as_str().expect("name");
    let subnet = spec["subnet"].as_str().expect("subnet");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cluster");
    let _cluster = Cluster::up(out.clone());
    let dir = out.join(name);
    for (from, to) in [("h0", "h1"), ("h0", "h2")] {
        let want = rate_mbit(&spec, from).min(rate_mbit(&spec, to));
        let mb = want / 8.0 * SECONDS;
        let got = mpi_stream(&dir, subnet, from, to, mb);
        let off = (got - want).abs() / want;
        eprintln!(
            "{name} {from}->{to}: {got:.1} Mbit/s over mpi, spec {want} Mbit/s ({:+.1}%)",
            100.0 * (got - want) / want
        );
        assert!(
            off <= TOLERANCE,
            "{from}->{to}: {got:.1} Mbit/s is not within 15% of {want} Mbit/s"
        );
    }
}
