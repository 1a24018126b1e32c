//! Clusters that belong to a process: `cluster up --owner PID` records the
//! cluster (its spec and files' directory) under [`DIR`], and every later
//! `cluster up` first takes down the recorded clusters whose owner has
//! ended. A test that is killed cannot run its own `cluster down`, and its
//! namespaces, bridges and qdiscs would stay until the next reboot; the
//! next test that makes a cluster clears them instead.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::spec::Spec;

/// Where the records live: `/run` is emptied at boot, as namespaces are.
pub const DIR: &str = "/run/autocoll/clusters";

/// A cluster that is up and the process it belongs to.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The spec's text, for `down` when the spec's file is gone with the
    /// process that made it.
    spec: String,
    /// Where `up` wrote the hostfiles and agent.
    dir: PathBuf,
    /// The owner's process id.
    owner: u32,
}

fn path_of(name: &str) -> PathBuf {
    Path::new(DIR).join(format!("{name}.json"))
}

/// Records that `spec` (whose text is `text`) belongs to process `owner`.
pub fn record(spec: &Spec, text: &str, dir: &Path, owner: u32) -> anyhow::Result<()> {
    std::fs::create_dir_all(DIR).with_context(|| format!("creating {DIR}"))?;
    let rec = Record {
        spec: text.to_string(),
        dir: dir.to_path_buf(),
        owner,
    };
    let json = serde_json::to_vec_pretty(&rec).expect("JSON of plain data");
    autocoll::files::write_atomic(&path_of(&spec.name), &json)
        .with_context(|| format!("recording cluster {}", spec.name))
}

/// Forgets the record of cluster `name`, if there is one.
pub fn forget(name: &str) -> anyhow::Result<()> {
    let path = path_of(name);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Takes down every recorded cluster whose owner has ended. A record that
/// cannot be read or acted on is reported and left as it is: it must not
/// stop the `up` that found it.
pub fn clear_orphans() {
    let Ok(entries) = std::fs::read_dir(DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        if let Err(e) = clear_if_orphan(&path) {
            eprintln!("autocoll cluster: warning: {}: {e:#}", path.display());
        }
    }
}

fn clear_if_orphan(path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read(path).context("reading the record")?;
    let rec: Record = serde_json::from_slice(&text).context("not a cluster record")?;
    if alive(rec.owner) {
        return Ok(());
    }
    let spec = Spec::parse(&rec.spec, &path.display().to_string())?;
    super::down::down(&spec, &rec.dir)?;
    forget(&spec.name)?;
    eprintln!(
        "autocoll cluster: took down cluster {}, left up by process {}, which has ended",
        spec.name, rec.owner
    );
    Ok(())
}

/// Whether process `pid` exists (a reused id keeps a cluster up: the safe
/// side).
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}
