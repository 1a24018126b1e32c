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

/// A fresh directory `autocoll-test-NAME-PID` under the system's
/// temporary directory, emptied if a run before left it.
pub fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What `cmd` printed, once it has exited successfully (else the test
/// fails with its stderr).
pub fn succeeded(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
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
///
/// It is a private copy of a shipped spec, with a name and a /24 of its
/// own (from the process id), so that tests running at once, or a cluster
/// of the same spec that a developer has up, do not tear each other down.
pub struct Cluster {
    spec: PathBuf,
    out: PathBuf,
    name: String,
}

impl Cluster {
    /// Brings up a private copy of `spec` (relative to the repository),
    /// with its files under `out/<name>/`.
    pub fn up(spec: &str, out: PathBuf) -> Cluster {
        let text = std::fs::read_to_string(repo().join(spec)).expect("spec readable");
        let mut table: toml::Table = text.parse().expect("spec is TOML");
        let (name, subnet) = private_name_and_subnet(spec, &out);
        table.insert("name".into(), name.clone().into());
        table.insert("subnet".into(), subnet.into());
        std::fs::create_dir_all(&out).expect("cluster directory");
        let copy = out.join(format!("{name}.toml"));
        std::fs::write(&copy, toml::to_string(&table).expect("spec serialises"))
            .expect("spec copy written");
        let cluster = Cluster {
            spec: copy,
            out,
            name,
        };
        let up = cluster.run("up");
        assert!(
            up.status.success(),
            "cluster up failed: {}",
            String::from_utf8_lossy(&up.stderr)
        );
        cluster
    }

    /// The directory holding the cluster's hostfiles, agent and `mpirun`
    /// wrapper.
    pub fn dir(&self) -> PathBuf {
        self.out.join(&self.name)
    }

    /// The private copy of the spec the cluster was made from.
    pub fn spec(&self) -> &Path {
        &self.spec
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, action: &str) -> Output {
        let mut cmd = autocoll();
        cmd.args(["cluster", action])
            .arg(&self.spec)
            .arg("--out")
            .arg(&self.out);
        if action == "up" {
            // Should this test be killed, the next cluster up takes it down.
            cmd.args(["--owner", &std::process::id().to_string()]);
        }
        cmd.output().expect("autocoll runs")
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

/// A name (at most 6 characters, so that interface names stay within 15)
/// and a /24 for this process's copy of `spec`.
fn private_name_and_subnet(spec: &str, out: &Path) -> (String, String) {
    // The directory too: two tests of one process may bring up one spec.
    let text = format!("{spec}{}", out.display());
    let salt: u32 = text
        .bytes()
        .enumerate()
        .map(|(i, b)| (i as u32 + 1) * u32::from(b))
        .sum();
    let id = (std::process::id() + salt) % 50_000;
    (
        format!("t{id}"),
        format!("10.{}.{}.0/24", 100 + id % 100, (id / 100) % 250),
    )
}
