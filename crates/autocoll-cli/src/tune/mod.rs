//! `autocoll tune`: sweep collectives × rank counts × sizes × implementations
//! with `bench`'s machinery, keep the fastest per point, and write a tuning
//! file (and Open MPI / MPICH exports, and the paper's Figures 3–6).
//!
//! Each point's candidates are measured together in rounds, in a fresh
//! random order each round ([`autocoll_tune::race`]): by default a race, the clearly
//! slower dropped early; `--exhaustive` runs every candidate every round.
//! Every finished point, and the unfinished race of the point under way,
//! is saved (atomically) to `<out>.partial.json`, so `--resume` continues
//! an interrupted sweep where it stopped.

mod args;
mod jobs;
mod outputs;
mod saver;
mod sweep;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use autocoll::measure::race::Rule as RaceRule;
use autocoll::measure::{Method, Options};
use autocoll::sim::Model;
use autocoll::Collective;
use autocoll_tune::partial::{self, Partial};
use autocoll_tune::row::Row;
use autocoll_tune::{judge, race};
use indicatif::ProgressBar;

use crate::bench::{self, RaceSink, Sink, Transport};
use crate::failure::Failure;
use crate::launch;
use crate::out::say;
use args::rule_of;
pub use args::Args;
use jobs::{as_rank, race_local, race_tcp};
use saver::Saver;
use sweep::{load_partial, sweep_of, Sweep};

/// Runs `autocoll tune` with the arguments `a`.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let tree = crate::args::TreeFile::load(&a.tree)?;
    let sweep = sweep_of(&a, tree.as_ref())?;
    let ranks = ranks_of(&a, &sweep, tree.as_ref())?;
    if !(1..=2).contains(&a.ompi_format) {
        return Err(Failure::Usage(format!(
            "--ompi-format {} is not 1 or 2",
            a.ompi_format
        )));
    }
    let opts = a.stats.options();
    bench::refuse_mpi("tune", a.transport)?;
    bench::check_sweep(a.transport, &a.placement, &opts)?;
    let model = a.model.load(a.transport)?;
    let stop = Arc::new(AtomicBool::new(false));
    bench::install_ctrl_c(stop.clone());
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&a, &sweep, &opts, &stop);
    }
    if a.point.is_some() || a.final_of.is_some() || a.final_method.is_some() {
        return Err(Failure::Usage(
            "--point, --final-of and --final-method are for the ranks of a tcp job \
             that tune starts itself"
                .into(),
        ));
    }
    let (saver, bar, partial) = start_saver(&a, &sweep, &ranks)?;
    let racing = Racing::new(opts, rule_of(&a)?, model.as_ref(), &saver);
    let outcome = race_all(&a, &sweep, &ranks, &racing, &stop);
    saver.flush();
    let (rows, elapsed) = saver.take_rows();
    bar.finish_and_clear();
    outcome.map_err(Failure::Run)?;
    if stop.load(Ordering::Relaxed) {
        eprintln!(
            "autocoll: interrupted; {} points saved in {}: continue with --resume",
            rows.len(),
            partial.display()
        );
        return Ok(ExitCode::from(130));
    }
    outputs::write_outputs(&a, &rows)?;
    if !a.against.is_empty() {
        judge_against(&a, &rows, elapsed)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The rank counts of `-n` (default 4, or the tree file's ranks), refused
/// where the root or the tree file does not fit them.
fn ranks_of(
    a: &Args,
    sweep: &Sweep,
    tree: Option<&crate::args::TreeFile>,
) -> Result<Vec<usize>, Failure> {
    let ranks_text = match (&a.ranks, tree) {
        (Some(text), _) => text.clone(),
        (None, Some(t)) => t.size().to_string(),
        (None, None) => "4".into(),
    };
    let ranks = crate::args::ranks(&ranks_text)?;
    if sweep.ops.iter().any(|(op, _, _)| op.rooted()) {
        if let Some(&p) = ranks.iter().find(|&&p| sweep.root >= p) {
            return Err(Failure::Usage(format!(
                "--root {} is not a rank of a {p}-rank job",
                sweep.root
            )));
        }
    }
    if let Some(t) = tree {
        let ops: Vec<Collective> = sweep.ops.iter().map(|(op, _, _)| *op).collect();
        t.check(&ranks, &ops, sweep.root)?;
    }
    Ok(ranks)
}

/// The progress file's saver (holding what `--resume` found), the
/// progress bar it advances, and the file's path.
fn start_saver(
    a: &Args,
    sweep: &Sweep,
    ranks: &[usize],
) -> Result<(Saver, ProgressBar, PathBuf), Failure> {
    let partial = partial::path_beside(&a.out);
    let old = if a.resume {
        load_partial(&partial)?
    } else {
        Partial::default()
    };
    let total: usize = ranks
        .iter()
        .map(|&p| sweep.plan(p, Method::OlI).len())
        .sum();
    let bar = bench::progress(total as u64);
    if !old.rows.is_empty() {
        eprintln!(
            "autocoll: resuming: {} points done, {total} to go",
            old.rows.len()
        );
    }
    let saver = Saver::new(old, partial.clone(), bar.clone());
    Ok((saver, bar, partial))
}

/// What every rank count's races share: the options and rule, the
/// simulated machine, and where rows and rounds go.
struct Racing<'a> {
    opts: Options,
    rule: RaceRule,
    model: Option<&'a Model>,
    sink: Sink,
    rounds: RaceSink,
    saver: &'a Saver,
}

impl<'a> Racing<'a> {
    /// Races with `opts` and `rule` on the machine `model` simulates, if
    /// any, whose rows and rounds go to `saver`.
    fn new(opts: Options, rule: RaceRule, model: Option<&'a Model>, saver: &'a Saver) -> Self {
        let rows = saver.clone();
        let rounds = saver.clone();
        Racing {
            opts,
            rule,
            model,
            sink: Arc::new(move |r| rows.rows(r)),
            rounds: Arc::new(move |race| rounds.race(race)),
            saver,
        }
    }
}

/// The races still to run on each of `ranks` in turn, until one fails
/// or `stop` is set.
fn race_all(
    a: &Args,
    sweep: &Sweep,
    ranks: &[usize],
    racing: &Racing,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    for &p in ranks {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        race_ranks(a, sweep, p, racing, stop)?;
    }
    Ok(())
}

/// The races still to run on `p` ranks, on threads or in tcp jobs.
fn race_ranks(
    a: &Args,
    sweep: &Sweep,
    p: usize,
    r: &Racing,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(a.timeout);
    let method = sweep.method.unwrap_or(Method::Truth);
    match a.transport {
        Transport::Local | Transport::Sim => {
            let heats = sweep.heats(p, method);
            let setup = race::Setup {
                heats: &heats,
                method,
                opts: r.opts,
                rule: r.rule,
                saved: &sweep.saved,
                stop,
                quiet: false,
                per_job: 0,
            };
            let ranks = bench::Ranks { p, sim: r.model };
            let told = bench::Told {
                rows: &*r.sink,
                rounds: &*r.rounds,
            };
            race_local(ranks, &setup, timeout, &told)
        }
        Transport::Tcp => {
            let heats = sweep.heats(p, method);
            let sinks = (&r.sink, &r.rounds, r.saver);
            race_tcp(p, a, &heats, sinks, stop)
        }
        Transport::Mpi => unreachable!("refused by refuse_mpi"),
    }
}

/// `--against`: this sweep's winners judged by the other sweeps' figures,
/// printed, and with `--differing` the points apart written.
fn judge_against(a: &Args, rows: &[Row], elapsed: f64) -> Result<(), Failure> {
    let (theirs, seconds) = load_against(&a.against)?;
    let verdict = judge::Verdict {
        points: judge::judge(rows, &theirs, a.racing.tolerance),
        tolerance: a.racing.tolerance,
        seconds: (elapsed, seconds),
    };
    say!("{verdict}");
    if let Some(path) = &a.differing {
        autocoll::files::write_atomic(path, verdict.differing().as_bytes())
            .map_err(|e| Failure::Run(e.into()))?;
    }
    Ok(())
}

/// The rows to judge by, from one file or pooled from several jobs'
/// ([`judge::pooled`]), and the seconds they took in all.
fn load_against(paths: &[PathBuf]) -> Result<(Vec<Row>, f64), Failure> {
    let mut sweeps = Vec::new();
    let mut seconds = 0.0;
    for path in paths {
        let other = load_partial(path)?;
        if other.rows.is_empty() {
            return Err(Failure::Usage(format!(
                "--against {}: no results to judge by",
                path.display()
            )));
        }
        seconds += other.elapsed_s;
        sweeps.push(other.rows);
    }
    let rows = match sweeps.len() {
        1 => sweeps.pop().unwrap_or_default(),
        _ => judge::pooled(&sweeps),
    };
    Ok((rows, seconds))
}
