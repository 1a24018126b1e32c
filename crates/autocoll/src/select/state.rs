//! The lottery's memory across runs: a JSON file holding, per
//! communicator shape (the placement of its ranks over hosts, the
//! transport, autocoll's version, the objective), the statistics and
//! budget of every pool, and the virtual-rank tables the balancer learned
//! (files older than the balancer have none, and load as before).
//!
//! A shape, not a set of hosts: communicators of one size whose ranks lie
//! over hosts alike (rank i on the same host as rank j in both) share what
//! they learn, whichever hosts those are, so the row communicators of a
//! grid and the next night's run on other nodes start from it. Host names
//! are kept in the file for the reader, and not compared. Within a run,
//! [`Shared`] carries it from one communicator of a shape to the next.
//!
//! Saving takes an exclusive lock on `<file>.lock`, reads what is there now,
//! merges this run's pools into it and replaces the file atomically. The
//! merge keeps, per candidate, this run's statistics where this run
//! measured it (its average moved), and the file's (perhaps newer, from
//! another program) everywhere else; pools and fingerprints this run did
//! not touch are kept. A corrupt, truncated or foreign file is reported as
//! a warning and treated as empty, so it never stops a program; before the
//! first save replaces it, it is kept beside as `<file>.corrupt`, so what
//! it held is not lost.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::key::Key;
use super::lottery::{Objective, Pool, Stats};
use crate::error::{Error, Result};
use crate::ids::Collective;

const SCHEMA: &str = "autocoll.lottery/1";

/// What makes two runs comparable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The distinct hosts, in rank order of first appearance.
    pub hosts: Vec<String>,
    /// Ranks on each of those hosts.
    pub ranks_per_host: Vec<usize>,
    /// The transport's kind.
    pub transport: String,
    /// autocoll's version.
    pub version: String,
    /// What the lottery minimised: averages of one measure say nothing of
    /// another's (files from before there was a choice measured the
    /// slowest rank).
    #[serde(default)]
    pub objective: Objective,
    /// Per rank, its host's index among `hosts` (files that lack it had
    /// each host's ranks one after another).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<usize>,
}

/// What makes two communicators share what they learn: their ranks'
/// placement over hosts (host indices in order of first appearance),
/// their transport, autocoll's version and the objective.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommShape {
    placement: Vec<usize>,
    transport: String,
    version: String,
    objective: Objective,
}

impl Fingerprint {
    /// The fingerprint of a job whose rank i runs on `hosts[i]`.
    pub fn new(hosts: &[String], transport: &str) -> Self {
        let mut distinct: Vec<String> = Vec::new();
        let mut counts: Vec<usize> = Vec::new();
        let mut placement = Vec::with_capacity(hosts.len());
        for h in hosts {
            match distinct.iter().position(|d| d == h) {
                Some(i) => {
                    counts[i] += 1;
                    placement.push(i);
                }
                None => {
                    placement.push(distinct.len());
                    distinct.push(h.clone());
                    counts.push(1);
                }
            }
        }
        Fingerprint {
            hosts: distinct,
            ranks_per_host: counts,
            transport: transport.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            objective: Objective::default(),
            placement,
        }
    }

    /// The shape of the communicator it describes.
    pub fn shape(&self) -> CommShape {
        let placement = match self.placement.is_empty() {
            false => self.placement.clone(),
            true => (0..self.ranks_per_host.len())
                .flat_map(|h| std::iter::repeat_n(h, self.ranks_per_host[h]))
                .collect(),
        };
        CommShape {
            placement,
            transport: self.transport.clone(),
            version: self.version.clone(),
            objective: self.objective,
        }
    }

    /// The same fingerprint, for a lottery that minimises `objective`.
    pub fn measuring(self, objective: Objective) -> Self {
        Fingerprint { objective, ..self }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct File {
    schema: String,
    runs: Vec<Run>,
}

#[derive(Serialize, Deserialize)]
struct Run {
    fingerprint: Fingerprint,
    pools: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tables: Vec<TableEntry>,
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
struct Entry {
    key: Key,
    #[serde(flatten)]
    learned: Learned,
}

/// What the lottery learned of one pool: its candidates, and its budget's
/// accounts ([`super::lottery::Budget`]).
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
}

type Pools = BTreeMap<Key, Learned>;

/// What the lotteries of a process learned, by communicator shape: a new
/// communicator starts where the last one of its shape got to. Cloning
/// shares it.
#[derive(Clone, Debug, Default)]
pub struct Shared(Arc<Mutex<HashMap<CommShape, Pools>>>);

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CommShape, Pools>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a communicator of `shape` learned of `key`'s pool.
    pub fn get(&self, shape: &CommShape, key: &Key) -> Option<Learned> {
        self.lock().get(shape)?.get(key).cloned()
    }

    /// Keeps what a communicator of `shape` learned of `key`'s pool.
    pub fn put(&self, shape: &CommShape, key: Key, learned: Learned) {
        self.lock()
            .entry(shape.clone())
            .or_default()
            .insert(key, learned);
    }

    /// Every pool learned for `shape`.
    pub fn pools(&self, shape: &CommShape) -> Pools {
        self.lock().get(shape).cloned().unwrap_or_default()
    }
}

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

    /// Locks, reads, changes and atomically replaces the file.
    fn update(&self, change: impl FnOnce(&mut File)) -> Result<()> {
        let lock_path = sibling(&self.path, "lock");
        let lock = std::fs::File::create(&lock_path)
            .map_err(|e| Error::io(format!("creating lock {}", lock_path.display()), e))?;
        lock.lock()
            .map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
        let mut file = read(&self.path).or_else(|why| self.set_aside(&why))?;
        file.schema = SCHEMA.to_string();
        change(&mut file);
        let text = serde_json::to_vec_pretty(&file).expect("state serialises");
        crate::files::write_atomic(&self.path, &text)
        // The lock is released when `lock` is dropped.
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

/// `path` with `.ext` appended to its file name (`state.json.lock`).
fn sibling(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

fn warn(path: &Path, why: &str) {
    eprintln!(
        "autocoll: warning: ignoring lottery state {}: {why}; starting afresh",
        path.display()
    );
}

fn read(path: &Path) -> std::result::Result<File, String> {
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
