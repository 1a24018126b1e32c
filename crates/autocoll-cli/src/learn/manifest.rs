//! `DIR/learn.json` (`autocoll.learn/1`): what a learning directory was
//! learned for (the program, its ranks, the hosts), the placement decided,
//! and the runs so far.

use std::path::Path;

use anyhow::{anyhow, Context};
use serde::{Deserialize, Serialize};

/// The manifest's schema.
pub const SCHEMA: &str = "autocoll.learn/1";

/// Runs the manifest keeps, the latest last.
const RUNS_KEPT: usize = 50;

/// The program a directory learns for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    /// Its path, as the launcher ran it.
    pub path: String,
    /// SHA-256 of its bytes: a rebuild that changes nothing is the same
    /// program, wherever it lies.
    pub sha256: String,
}

/// A host of the allocation and the ranks it takes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Its name, as the launcher's hostfile and the ranks call it.
    pub name: String,
    /// Its slots.
    pub slots: usize,
    /// The address its ranks listen on (`autocoll launch`'s hostfile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Its switch path (`autocoll launch`'s hostfile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
}

/// Where the topology came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `--topology FILE`: a topology file or a cluster spec.
    Given(String),
    /// The hosts the launcher was given, under one switch, at assumed
    /// rates.
    Hosts,
    /// The hosts the ranks ran on, at assumed rates.
    Observed,
}

/// A placement decided from a run's pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The mapping method that made it (`greedy`, `search`).
    pub method: String,
    /// Each rank's processing element in the topology.
    pub pes: Vec<usize>,
    /// Each rank's host, for the reader.
    pub hosts: Vec<String>,
    /// The estimator's time for the pattern's point-to-point traffic
    /// under it, seconds.
    pub estimate_s: f64,
    /// … under the launcher's own placement (rank i on slot i).
    pub linear_s: f64,
    /// The first run it was applied to.
    pub since_run: usize,
}

/// One run under `--learn`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Seconds since the epoch when it started.
    pub started: u64,
    /// Its wall time, launcher start to exit, seconds.
    pub seconds: f64,
    /// The launcher's exit status.
    pub status: i32,
    /// Whether it ran under the learned placement.
    pub placed: bool,
}

/// `DIR/learn.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `openmpi`, `mpich` or `tcp`.
    pub engine: String,
    /// The program.
    pub program: Program,
    /// Ranks of the job, once a run said.
    pub ranks: Option<usize>,
    /// The hosts the topology and the placement are for.
    #[serde(default)]
    pub hosts: Vec<Host>,
    /// Where the topology came from, once there is one.
    pub topology: Option<Origin>,
    /// The placement in force, if any.
    pub placement: Option<Placement>,
    /// The runs, the latest last (at most [`RUNS_KEPT`]).
    #[serde(default)]
    pub runs: Vec<Run>,
    /// Runs in all, including those no longer kept.
    #[serde(default)]
    pub run_count: usize,
}

impl Manifest {
    /// A manifest for a first run.
    pub fn new(engine: &str, program: Program) -> Manifest {
        Manifest {
            schema: SCHEMA.into(),
            engine: engine.into(),
            program,
            ranks: None,
            hosts: Vec::new(),
            topology: None,
            placement: None,
            runs: Vec::new(),
            run_count: 0,
        }
    }

    /// Reads `path`; `None` when it does not exist; an error that names
    /// the file when it is not a manifest.
    pub fn load(path: &Path) -> anyhow::Result<Option<Manifest>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(anyhow!(e).context(format!("reading {}", path.display()))),
        };
        let m: Manifest = serde_json::from_str(&text).map_err(|e| {
            let full = e.to_string();
            let at = format!(" at line {} column {}", e.line(), e.column());
            let what = full.strip_suffix(&at).unwrap_or(&full);
            anyhow!(
                "{}:{}: column {}: {what}",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        if m.schema != SCHEMA {
            return Err(anyhow!(
                "{}: schema `{}` is not {SCHEMA}",
                path.display(),
                m.schema
            ));
        }
        Ok(Some(m))
    }

    /// Writes it to `path` atomically.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        autocoll::files::write_atomic(path, text.as_bytes())
            .with_context(|| format!("saving {}", path.display()))
    }

    /// Adds a run, forgetting the oldest beyond [`RUNS_KEPT`].
    pub fn record(&mut self, run: Run) {
        self.runs.push(run);
        self.run_count += 1;
        let extra = self.runs.len().saturating_sub(RUNS_KEPT);
        self.runs.drain(..extra);
    }
}
