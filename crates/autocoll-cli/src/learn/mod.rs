//! `--learn DIR` of `autocoll mpirun` and `autocoll launch`, and
//! `autocoll learn show DIR`: every run of a program learns into one
//! directory what makes the next run faster, and starts from what the
//! runs before it learned.
//!
//! The directory holds, each file written atomically:
//! - `learn.json` ([`manifest`]): the program, ranks and hosts the rest
//!   was learned for, the placement in force, the runs;
//! - `state.json`: the lottery's picks per communicator shape and the
//!   balancer's tables (`AUTOCOLL_STATE`);
//! - `pattern.json`: the last run's pattern, with each rank's host
//!   (`AUTOCOLL_PATTERN`);
//! - `topology.toml`: the machine the placement is made for;
//! - `rankfile`, `machinefile` or `hostfile`: the placement, as the
//!   launcher reads it.
//!
//! [`Session::begin`] compares the job with what the directory was learned
//! for ([`decide::carry`]) and says what it keeps and starts over; the
//! launcher runs with the state, the pattern, the balancer and the
//! placement; [`Session::end`] maps the run's pattern onto the topology
//! and puts a new placement in force only when its estimate beats the
//! current one by more than the estimator's error ([`decide::MARGIN`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{anyhow, Context};
use autocoll::pattern::Pattern;
use autocoll::select::state::Fingerprint;
use autocoll_map::traffic::Which;
use autocoll_map::{Estimator, Mapping, Topology, Traffic};
use sha2::{Digest, Sha256};

use crate::failure::Failure;
use crate::map::topology::load_topology;

pub mod decide;
pub mod launcher;
pub mod manifest;
pub mod place;
mod show;
mod text;

use decide::{Carry, Job};
use manifest::{Host, Manifest, Origin, Placement, Program, Run};
use text::{hosts_text, secs};

pub use show::{run as run_show, ShowArgs};

/// `--learn DIR` and `--topology FILE`, of `mpirun` and `launch`.
#[derive(clap::Args, Clone, Default)]
pub struct LearnArgs {
    /// Learn across runs in DIR: the collectives' picks, the broadcast
    /// order, the pattern and the placement. Each run starts from what the
    /// runs before it learned (`autocoll learn show DIR` says what).
    #[arg(long, value_name = "DIR")]
    pub learn: Option<PathBuf>,
    /// The machine --learn places ranks on: an autocoll.topology/1 file or
    /// a cluster spec, kept in DIR for later runs [default: the hosts the
    /// launcher is given, at assumed rates].
    #[arg(long, value_name = "FILE", requires = "learn")]
    pub topology: Option<PathBuf>,
}

/// One run under `--learn`.
pub struct Session {
    dir: PathBuf,
    manifest: Manifest,
    topology: Option<(Topology, Origin)>,
    job: Job,
    /// The placement file this run is placed by.
    pub placement: Option<PathBuf>,
    started: SystemTime,
}

/// A file of the directory.
fn file(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// `program`'s identity: its path and the SHA-256 of its bytes.
pub fn program(path: &Path) -> Result<Program, Failure> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("--learn: reading the program {}", path.display()))?;
    let digest = Sha256::digest(&bytes);
    Ok(Program {
        path: path.display().to_string(),
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// A line on standard error; a closed standard error loses the line, not
/// the run's end (the manifest is still saved).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "autocoll learn: {line}");
}

impl Session {
    /// Opens `a.learn` for `job`: what it keeps and starts over is said on
    /// standard error, and the placement in force is written for the
    /// launcher.
    pub fn begin(a: &LearnArgs, mut job: Job, cwd: &Path) -> Result<Session, Failure> {
        let dir = cwd.join(a.learn.as_ref().expect("called with --learn"));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("--learn: creating {}", dir.display()))?;
        let old = load_manifest(&dir);
        let given = match &a.topology {
            Some(path) => {
                let t = load_topology(&cwd.join(path)).map_err(Failure::Usage)?;
                Some((t, Origin::Given(path.display().to_string())))
            }
            None => None,
        };
        let given = given.filter(|(t, _)| fits(t, job.hosts.as_deref()));
        let kept = old.as_ref().and_then(|m| kept_topology(&dir, m));
        if job.hosts.is_none() {
            let declared = given
                .as_ref()
                .or(kept.as_ref().filter(|(_, o)| is_given(o)));
            job.hosts = declared.map(|(t, _)| place::hosts_of(t));
        }
        let carry = decide::carry(old.as_ref(), &job);
        carry.notes.iter().for_each(|n| say(n));
        let mut manifest = old.unwrap_or_else(|| Manifest::new(&job.engine, job.program.clone()));
        manifest.program = job.program.clone();
        manifest.engine = job.engine.clone();
        forget(&dir, &carry, &mut manifest)?;
        let topology = given
            .or(kept.filter(|_| carry.topology))
            .or_else(|| from_hosts(job.hosts.as_deref()));
        let mut session = Session {
            dir,
            manifest,
            topology,
            job,
            placement: None,
            started: SystemTime::now(),
        };
        session.keep_topology()?;
        if carry.new_hosts {
            session.remap()?;
        }
        session.placement = session.apply()?;
        // Ctrl-C at the terminal reaches the launcher too (one process
        // group): this process outlives it to record the run as ended.
        let _ = ctrlc::set_handler(|| {});
        Ok(session)
    }

    /// The `AUTOCOLL_*` variables a learning run sets.
    pub fn vars(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("AUTOCOLL_STATE", file(&self.dir, "state.json").into()),
            ("AUTOCOLL_PATTERN", file(&self.dir, "pattern.json").into()),
        ]
    }

    /// Writes the topology in use into the directory, and its hosts into
    /// the manifest.
    fn keep_topology(&mut self) -> anyhow::Result<()> {
        let Some((t, origin)) = &self.topology else {
            return Ok(());
        };
        t.write(&file(&self.dir, "topology.toml"))
            .map_err(|e| anyhow!(e))?;
        self.manifest.hosts = place::hosts_of(t);
        self.manifest.topology = Some(origin.clone());
        Ok(())
    }

    /// On hosts the directory has no placement for, a placement made now
    /// from the kept pattern, against the launcher's own.
    fn remap(&mut self) -> anyhow::Result<()> {
        let pattern = file(&self.dir, "pattern.json");
        if self.topology.is_none() || !pattern.exists() {
            return Ok(());
        }
        let Ok(p) = Pattern::read(&pattern) else {
            return Ok(());
        };
        if self.job.ranks != Some(p.ranks) {
            return Ok(());
        }
        let (t, _) = self.topology.as_ref().expect("checked");
        match linear(t, p.ranks) {
            Ok(current) => self.decide(&p, t.clone(), &current, "the launcher's own"),
            Err(_) => Ok(()),
        }
    }

    /// The placement file for this run, when the placement in force is for
    /// this job's ranks and hosts.
    fn apply(&self) -> Result<Option<PathBuf>, Failure> {
        let Some(p) = &self.manifest.placement else {
            return Ok(None);
        };
        let why_not = match (&self.job.ranks, &self.job.hosts, &self.topology) {
            (None, _, _) => Some("the launcher's arguments give no rank count (-n)".to_string()),
            (Some(n), _, _) if *n != p.pes.len() => {
                Some(format!("it is for {} ranks, not {n}", p.pes.len()))
            }
            (_, None, _) => Some(
                "this run's hosts are not known before it starts (name them with a \
                 hostfile or --topology)"
                    .to_string(),
            ),
            (_, Some(hosts), _) if !decide::same_hosts(hosts, &self.manifest.hosts) => {
                Some("it was made for other hosts".to_string())
            }
            (_, _, None) => Some("the directory keeps no topology".to_string()),
            _ => None,
        };
        if let Some(why) = why_not {
            say(&format!("the learned placement is not used: {why}"));
            return Ok(None);
        }
        let Some(path) = self.write_placement()? else {
            return Ok(None);
        };
        say(&format!(
            "placing the ranks by the {} mapping of run {} ({})",
            p.method,
            p.since_run,
            path.display()
        ));
        Ok(Some(path))
    }

    /// Records the run that ended with `status` and learns a placement
    /// from its pattern; what it decided is said on standard error.
    pub fn end(mut self, status: i32) -> Result<(), Failure> {
        let seconds = self.started.elapsed().map_or(0.0, |d| d.as_secs_f64());
        let started = self
            .started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.manifest.record(Run {
            started,
            seconds,
            status,
            placed: self.placement.is_some(),
        });
        let learned = match status {
            0 => self.learn_placement(),
            _ => Err(format!(
                "the run ended with status {status}: the placement is left as it was"
            )),
        };
        if let Err(why) = learned {
            say(&why);
        }
        self.write_placement()?;
        self.manifest
            .save(&file(&self.dir, "learn.json"))
            .map_err(Failure::Run)
    }

    /// The placement in force as the launcher's file in the directory, for
    /// the next run and for a reader; none when there is none.
    fn write_placement(&self) -> anyhow::Result<Option<PathBuf>> {
        for name in place::FILES {
            let _ = std::fs::remove_file(file(&self.dir, name));
        }
        let (Some(p), Some((t, _))) = (&self.manifest.placement, &self.topology) else {
            return Ok(None);
        };
        let mapping = Mapping::new(p.pes.clone(), t.pe_count()).map_err(|e| anyhow!(e))?;
        Ok(Some(place::write_file(
            &self.dir,
            &self.job.engine,
            t,
            &mapping,
        )?))
    }

    /// Maps the run's pattern and decides the placement of the next runs.
    fn learn_placement(&mut self) -> Result<(), String> {
        let path = file(&self.dir, "pattern.json");
        let p = Pattern::read(&path).map_err(|e| {
            format!("no pattern to place by ({e}); did the program reach MPI_Finalize?")
        })?;
        if self.manifest.ranks.is_some_and(|n| n != p.ranks) {
            self.manifest.placement = None;
        }
        self.manifest.ranks = Some(p.ranks);
        let t = self.topology_for(&p)?;
        let current = match p.hosts.is_empty() {
            true => linear(&t, p.ranks)?,
            false => place::observed(&t, &p.hosts)?,
        };
        let whose = match self.placement {
            Some(_) => "the learned one in force",
            None => "the launcher's own",
        };
        self.decide(&p, t, &current, whose)
            .map_err(|e| format!("{e:#}"))
    }

    /// The topology the run's hosts fit: the one in use, else their own
    /// (kept for the runs after).
    fn topology_for(&mut self, p: &Pattern) -> Result<Topology, String> {
        if let Some((t, origin)) = &self.topology {
            match p.hosts.is_empty() || place::observed(t, &p.hosts).is_ok() {
                true => return Ok(t.clone()),
                false if is_given(origin) => {
                    return Err(format!(
                        "the run's hosts ({}) do not fit the topology given: no placement",
                        hosts_text(&observed_hosts(&p.hosts))
                    ))
                }
                false => {}
            }
        }
        if p.hosts.is_empty() {
            return Err("the pattern does not say where the ranks ran: no placement".into());
        }
        let t = place::of_hosts(&observed_hosts(&p.hosts))?;
        self.topology = Some((t.clone(), Origin::Observed));
        if self.manifest.hosts != place::hosts_of(&t) {
            self.manifest.placement = None;
        }
        self.keep_topology().map_err(|e| format!("{e:#}"))?;
        Ok(t)
    }

    /// Puts the best mapping of `p` in force when it beats `current` by
    /// more than the estimator's error; says which.
    fn decide(
        &mut self,
        p: &Pattern,
        t: Topology,
        current: &Mapping,
        whose: &str,
    ) -> anyhow::Result<()> {
        if place::hosts_of(&t).len() < 2 {
            say("one host: there is no placement to learn");
            self.manifest.placement = None;
            return Ok(());
        }
        let traffic = Traffic::from_pattern(p, Which::P2p);
        if traffic.total_bytes() == 0.0 {
            say("no point-to-point traffic: there is no placement to learn");
            return Ok(());
        }
        let e = Estimator::new(&t);
        let now_s = e.cost(&traffic, current);
        let linear_s = e.cost(&traffic, &linear(&t, p.ranks).map_err(|e| anyhow!(e))?);
        let found = place::best(&t, &traffic).map_err(|e| anyhow!(e))?;
        let change = 100.0 * (found.estimate_s / now_s - 1.0);
        let figures = format!(
            "{} estimated at {} against {} for {whose} ({change:+.0}%)",
            found.method,
            secs(found.estimate_s),
            secs(now_s)
        );
        if !decide::worth_moving(now_s, found.estimate_s) {
            say(&format!(
                "placement unchanged: {figures}, within the estimator's error ({:.0}%)",
                decide::MARGIN * 100.0
            ));
            return Ok(());
        }
        let since_run = self.manifest.run_count + 1;
        say(&format!(
            "placement learned: {figures}; in force from run {since_run}"
        ));
        self.manifest.placement = Some(Placement {
            method: found.method.into(),
            hosts: found
                .mapping
                .pes()
                .iter()
                .map(|&pe| t.host_of(pe).to_string())
                .collect(),
            pes: found.mapping.pes().to_vec(),
            estimate_s: found.estimate_s,
            linear_s,
            since_run,
        });
        Ok(())
    }
}

/// Whether the topology given is the hosts the launcher's arguments name
/// (when they name some); said when not, and the named hosts are used.
fn fits(t: &Topology, named: Option<&[Host]>) -> bool {
    let Some(named) = named else { return true };
    let fit = decide::same_hosts(named, &place::hosts_of(t));
    if !fit {
        say(&format!(
            "--topology has other hosts ({}) than the launcher is given ({}): placing on \
             the launcher's, at assumed rates",
            hosts_text(&place::hosts_of(t)),
            hosts_text(named)
        ));
    }
    fit
}

fn is_given(origin: &Origin) -> bool {
    matches!(origin, Origin::Given(_))
}

fn linear(t: &Topology, ranks: usize) -> Result<Mapping, String> {
    autocoll_map::linear(ranks, t).map_err(|e| e.to_string())
}

/// The manifest in `dir`, or none: one that cannot be read is set aside
/// (as `learn.json.corrupt`) and the directory starts over.
fn load_manifest(dir: &Path) -> Option<Manifest> {
    let path = file(dir, "learn.json");
    match Manifest::load(&path) {
        Ok(m) => m,
        Err(e) => {
            say(&format!(
                "{e:#}: set aside as learn.json.corrupt; starting over"
            ));
            let _ = std::fs::rename(&path, file(dir, "learn.json.corrupt"));
            None
        }
    }
}

/// The topology the directory keeps, if it reads.
fn kept_topology(dir: &Path, m: &Manifest) -> Option<(Topology, Origin)> {
    let origin = m.topology.clone()?;
    let path = file(dir, "topology.toml");
    match load_topology(&path) {
        Ok(t) => Some((t, origin)),
        Err(e) => {
            say(&format!("{e}: the topology starts over"));
            None
        }
    }
}

fn from_hosts(hosts: Option<&[Host]>) -> Option<(Topology, Origin)> {
    let t = place::of_hosts(hosts?).ok()?;
    Some((t, Origin::Hosts))
}

/// Removes what the run does not keep.
fn forget(dir: &Path, carry: &Carry, manifest: &mut Manifest) -> Result<(), Failure> {
    if !carry.pattern {
        let _ = std::fs::remove_file(file(dir, "pattern.json"));
    }
    if !carry.tables {
        autocoll::select::state::forget_tables(&file(dir, "state.json"))
            .map_err(|e| Failure::Run(anyhow!(e)))?;
    }
    if !carry.placement {
        manifest.placement = None;
    }
    if !carry.topology {
        manifest.topology = None;
    }
    Ok(())
}

/// The hosts of a run in order of first appearance, with the ranks each
/// ran as its slots.
fn observed_hosts(hosts: &[String]) -> Vec<Host> {
    let f = Fingerprint::new(hosts, "");
    f.hosts
        .into_iter()
        .zip(f.ranks_per_host)
        .map(|(name, slots)| Host {
            name,
            slots,
            ..Host::default()
        })
        .collect()
}
