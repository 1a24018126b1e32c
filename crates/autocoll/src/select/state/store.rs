//! Where a lottery keeps its state: rank 0 reads its shape's pools and
//! the balancer's tables from the file, and merges what its run learned
//! back into it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::file::{read, sibling, update, Entry, File, Learned, Run, TableEntry};
use super::fingerprint::{CommShape, Fingerprint};
use crate::error::{Error, Result};
use crate::select::key::Key;
use crate::select::lottery::Stats;

/// Where a lottery keeps its state, for one run fingerprint. Only the rank
/// that is `active` (rank 0) reads and writes the file.
#[derive(Clone, Debug)]
pub struct Store {
    path: PathBuf,
    fingerprint: Fingerprint,
    active: bool,
    loaded: HashMap<Key, Learned>,
}

impl Store {
    /// A store at `path` for runs with `fingerprint`; inactive stores
    /// neither read nor write.
    pub fn new(path: impl Into<PathBuf>, fingerprint: Fingerprint, active: bool) -> Self {
        Store {
            path: path.into(),
            fingerprint,
            active,
            loaded: HashMap::new(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The runs it reads and writes.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The shape of the communicators whose pools it keeps.
    pub fn shape(&self) -> CommShape {
        self.fingerprint.shape()
    }

    /// What the file knows of this shape's pools; empty (with a warning
    /// on standard error) when the file is unreadable. The store
    /// remembers it, to tell at `save` what this run changed.
    pub fn load(&mut self) -> HashMap<Key, Learned> {
        self.loaded = self.read_pools();
        self.loaded.clone()
    }

    fn read_pools(&self) -> HashMap<Key, Learned> {
        self.read_runs()
            .into_iter()
            .flat_map(|r| r.pools)
            .map(|e| (e.key, e.learned))
            .collect()
    }

    /// This shape's runs in the file (none when inactive, or, with a
    /// warning, when the file is unreadable).
    fn read_runs(&self) -> Vec<Run> {
        if !self.active {
            return Vec::new();
        }
        let shape = self.fingerprint.shape();
        match read(&self.path) {
            Ok(file) => file
                .runs
                .into_iter()
                .filter(|r| r.fingerprint.shape() == shape)
                .collect(),
            Err(why) => {
                warn(&self.path, &why);
                Vec::new()
            }
        }
    }

    /// The balancer's tables the file keeps for this fingerprint (rank 0;
    /// none elsewhere).
    pub fn load_tables(&self) -> Vec<TableEntry> {
        self.read_runs()
            .into_iter()
            .flat_map(|r| r.tables)
            .collect()
    }

    /// Merges `pools` into the file under a lock and replaces it atomically.
    pub fn save(&self, pools: &BTreeMap<Key, Learned>) -> Result<()> {
        if !self.active || pools.is_empty() {
            return Ok(());
        }
        self.update(|file| merge(file, &self.fingerprint, pools, &self.loaded))
    }

    /// Puts `tables` in the file (each in place of the one of its
    /// collective and size), keeping everything else, under the lock.
    pub fn save_tables(&self, tables: &[TableEntry]) -> Result<()> {
        if !self.active || tables.is_empty() {
            return Ok(());
        }
        self.update(|file| {
            let run = run_of(file, &self.fingerprint);
            for entry in tables {
                run.tables
                    .retain(|t| (t.op, t.ranks) != (entry.op, entry.ranks));
                run.tables.push(entry.clone());
            }
        })
    }

    /// Changes the file as [`update`] does, setting an unreadable one aside.
    fn update(&self, change: impl FnOnce(&mut File)) -> Result<()> {
        update(&self.path, |why| self.set_aside(why), change)
    }
}

impl Store {
    /// Moves an unreadable state file out of the way, so that saving does
    /// not destroy what it held, and starts from an empty one.
    fn set_aside(&self, why: &str) -> Result<File> {
        let aside = sibling(&self.path, "corrupt");
        std::fs::rename(&self.path, &aside).map_err(|e| {
            Error::io(
                format!(
                    "keeping the unreadable state {} as {}",
                    self.path.display(),
                    aside.display()
                ),
                e,
            )
        })?;
        eprintln!(
            "autocoll: warning: lottery state {} was unreadable ({why}); kept as {}, saving afresh",
            self.path.display(),
            aside.display()
        );
        Ok(File::default())
    }
}

fn warn(path: &Path, why: &str) {
    eprintln!(
        "autocoll: warning: ignoring lottery state {}: {why}; starting afresh",
        path.display()
    );
}

/// True when this run did not measure `ours`, resumed from `loaded`: a
/// resumed candidate keeps the file's average and variance (its count is
/// cut to `min_tries`), and any time recorded since moves them.
fn untouched(loaded: &Stats, ours: &Stats) -> bool {
    loaded.imp == ours.imp
        && loaded.mean_s.to_bits() == ours.mean_s.to_bits()
        && loaded.var_s2.to_bits() == ours.var_s2.to_bits()
        && loaded.readmit_in == ours.readmit_in
        && loaded.strikes == ours.strikes
}

/// The file's run of `fingerprint`'s shape, added if missing.
fn run_of<'f>(file: &'f mut File, fingerprint: &Fingerprint) -> &'f mut Run {
    let shape = fingerprint.shape();
    match file
        .runs
        .iter()
        .position(|r| r.fingerprint.shape() == shape)
    {
        Some(i) => &mut file.runs[i],
        None => {
            file.runs.push(Run {
                fingerprint: fingerprint.clone(),
                pools: Vec::new(),
                tables: Vec::new(),
            });
            file.runs.last_mut().expect("just pushed")
        }
    }
}

/// Merges this run's `pools` into the file's: per candidate as
/// [`untouched`] says; the budget's accounts by what this run added to
/// what it loaded, so that two programs saving in turn both count.
fn merge(
    file: &mut File,
    fingerprint: &Fingerprint,
    pools: &BTreeMap<Key, Learned>,
    loaded: &HashMap<Key, Learned>,
) {
    let run = run_of(file, fingerprint);
    for (key, ours) in pools {
        let Some(entry) = run.pools.iter_mut().find(|e| &e.key == key) else {
            run.pools.push(Entry {
                key: *key,
                learned: ours.clone(),
            });
            continue;
        };
        let before = loaded.get(key);
        for stats in &ours.candidates {
            let unchanged =
                before.is_some_and(|b| b.candidates.iter().any(|s| untouched(s, stats)));
            let theirs = &mut entry.learned.candidates;
            match theirs.iter_mut().find(|s| s.imp == stats.imp) {
                Some(_) if unchanged => {}
                Some(theirs) => *theirs = stats.clone(),
                None => theirs.push(stats.clone()),
            }
        }
        let (spent, lost) = before.map_or((0.0, 0.0), |b| (b.spent_s, b.lost_s));
        entry.learned.spent_s += (ours.spent_s - spent).max(0.0);
        entry.learned.lost_s += (ours.lost_s - lost).max(0.0);
    }
}
