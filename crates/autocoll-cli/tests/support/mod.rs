//! What the CLI's tests share: the built `autocoll`, the repository, and
//! emulated clusters brought up for one test and down again after it.

#![allow(dead_code)] // Each test binary uses its own part of this.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `autocoll` binary this test was built with.
pub fn autocoll() -> Command {
    Command::new(env!("CARGO_BIN_EXE_autocoll"))
}

/// Why this machine cannot make emulated clusters, if it cannot. Under CI
/// (which runs as root) a missing capability is a failure, not a skip.
pub fn cannot_make_clusters() -> Option<&'static str> {
    if rustix::process::geteuid().is_root() {
        return None;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI runs as root and must run the cluster tests"
    );
    Some("needs root to make network namespaces")
}

/// An emulated cluster, brought down when dropped (passed test or not).
pub struct Cluster {
    spec: PathBuf,
    out: PathBuf,
    name: String,
}

impl Cluster {
    /// Brings up the cluster of `spec` (relative to the repository), with
    /// its files under `out/<name>/`.
    pub fn up(spec: &str, out: PathBuf) -> Cluster {
        let spec = repo().join(spec);
        let text = std::fs::read_to_string(&spec).expect("spec readable");
        let table: toml::Table = text.parse().expect("spec is TOML");
        let name = table["name"].as_str().expect("spec has a name").to_string();
        let cluster = Cluster { spec, out, name };
        let up = cluster.run("up");
        assert!(
            up.status.success(),
            "cluster up failed: {}",
            String::from_utf8_lossy(&up.stderr)
        );
        cluster
    }

    /// The directory holding the cluster's hostfiles and agent.
    pub fn dir(&self) -> PathBuf {
        self.out.join(&self.name)
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, action: &str) -> Output {
        autocoll()
            .args(["cluster", action])
            .arg(&self.spec)
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
