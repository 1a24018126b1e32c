//! The file itself: its schema, what it holds, the one reader and the one
//! writer every change goes through.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fingerprint::Fingerprint;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::select::implementation::Implementation;
use crate::select::key::Key;
use crate::select::lottery::{Pool, Stats};

pub(super) const SCHEMA: &str = "autocoll.lottery/1";

#[derive(Default, Serialize, Deserialize)]
pub(super) struct File {
    pub(super) schema: String,
    pub(super) runs: Vec<Run>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct Run {
    pub(super) fingerprint: Fingerprint,
    pub(super) pools: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) tables: Vec<TableEntry>,
}

/// A virtual-rank table the balancer learned, for one collective and
/// communicator size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableEntry {
    /// The collective.
    pub op: Collective,
    /// The communicator size.
    pub ranks: usize,
    /// The table: rank i of the list takes the i-th place.
    pub table: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct Entry {
    pub(super) key: Key,
    #[serde(flatten)]
    pub(super) learned: Learned,
}

/// What the lottery learned of one pool: its candidates, and its budget's
/// accounts ([`Budget`](crate::select::lottery::Budget)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    /// The candidates, as [`Pool::saved`] gives them.
    pub candidates: Vec<Stats>,
    /// Seconds the pool's calls took.
    #[serde(default)]
    pub spent_s: f64,
    /// Seconds lost to candidates slower than the best.
    #[serde(default)]
    pub lost_s: f64,
}

impl Learned {
    /// What `pool` has learned, as the state keeps it.
    pub fn of(pool: &Pool) -> Learned {
        Learned {
            candidates: pool.saved(),
            spent_s: pool.spent_s,
            lost_s: pool.lost_s,
        }
    }

    /// The measured candidate (`count > 0`) with the lowest average; the
    /// first of equals.
    pub fn best(&self) -> Option<&Stats> {
        self.candidates
            .iter()
            .filter(|s| s.count > 0)
            .min_by(|a, b| a.mean_s.total_cmp(&b.mean_s))
    }

    /// What it learned of `imp`, if that is one of its candidates.
    pub fn of_impl(&self, imp: &Implementation) -> Option<&Stats> {
        self.candidates.iter().find(|s| &s.imp == imp)
    }
}

/// Locks `path`, reads it (or takes what `unreadable` makes of the reason
/// it could not), changes it and replaces it atomically: every writer of a
/// state file goes through here, so that none loses another's save.
pub(super) fn update<R>(
    path: &Path,
    unreadable: impl FnOnce(&str) -> Result<File>,
    change: impl FnOnce(&mut File) -> R,
) -> Result<R> {
    let lock_path = sibling(path, "lock");
    let lock = std::fs::File::create(&lock_path)
        .map_err(|e| Error::io(format!("creating lock {}", lock_path.display()), e))?;
    lock.lock()
        .map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
    let mut file = read(path).or_else(|why| unreadable(&why))?;
    file.schema = SCHEMA.to_string();
    let out = change(&mut file);
    let text = serde_json::to_vec_pretty(&file).expect("state serialises");
    crate::files::write_atomic(path, &text)?;
    // Only now may another writer read: `lock` is released as it drops.
    Ok(out)
}

/// `path` with `.ext` appended to its file name (`state.json.lock`).
pub(super) fn sibling(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

/// The file at `path`, empty when there is none; why not when it cannot
/// be read or parsed, or is of another schema.
pub(super) fn read(path: &Path) -> std::result::Result<File, String> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(File::default()),
        Err(e) => return Err(e.to_string()),
    };
    let file: File =
        serde_json::from_slice(&text).map_err(|e| format!("line {}: {e}", e.line()))?;
    if file.schema != SCHEMA {
        return Err(format!("schema `{}` is not {SCHEMA}", file.schema));
    }
    Ok(file)
}
