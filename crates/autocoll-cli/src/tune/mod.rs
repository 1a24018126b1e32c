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

mod jobs;
mod outputs;
mod saver;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use autocoll::measure::race::Rule as RaceRule;
use autocoll::measure::{Method, Point};
use autocoll::Collective;
use autocoll_tune::partial::{self, Partial};
use autocoll_tune::{judge, race, Row};

use crate::bench::{self, Planned, RaceSink, Sink, Subject, Transport};
use crate::launch::{self, Placement};
use crate::out::say;
use crate::{args, Failure};
use jobs::{as_rank, race_local, race_tcp};
use saver::Saver;

/// Arguments of `autocoll tune`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the faster of two broadcasts per rank count and size, as a tuning file
  autocoll tune --op bcast --impl bcast:binomial,bcast:chain:seg=8K -n 2..4 --bytes 1K..64K --step 8 \\
      --out tuning.toml
  # the same after a Ctrl-C, measuring only what is missing; Open MPI's rules file too
  autocoll tune --op bcast --impl bcast:binomial,bcast:chain:seg=8K -n 2..4 --bytes 1K..64K --step 8 \\
      --out tuning.toml --resume --export-ompi ompi.rules")]
pub struct Args {
    /// Collectives to tune (comma list, or `all`).
    #[arg(long)]
    op: String,
    /// Implementation ids (comma list) to choose among, or `all` for every
    /// family with segment sizes from 1K up to twice the message size (the
    /// default, without --tree-file).
    #[arg(long = "impl")]
    imp: Option<String>,
    #[command(flatten)]
    tree: args::TreeFileArg,
    /// Ranks: `4`, a list `2,4,8` or a range `2..16` (default 4, or the
    /// tree file's ranks).
    #[arg(short = 'n')]
    ranks: Option<String>,
    /// Bytes per rank: a list (K, M suffixes) or a range `1K..1M` stepping
    /// by ×--step.
    #[arg(long, default_value = "1K..64K")]
    bytes: String,
    /// Factor between the sizes of a --bytes range.
    #[arg(long, default_value_t = 4)]
    step: usize,
    /// Root of rooted collectives (default 0, or the tree file's root).
    #[arg(long)]
    root: Option<usize>,
    /// Method that ranks the implementations: `auto` (truth with a shared
    /// clock, else ol-i; the machines' fallback where it keeps too few
    /// calls), `truth`, `ol-i` or `barrier`.
    #[arg(long, default_value = "auto")]
    method: String,
    #[command(flatten)]
    stats: crate::args::Repeat,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    transport: Transport,
    #[command(flatten)]
    model: bench::ModelArg,
    #[command(flatten)]
    placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// The tuning file to write (loadable by `Table`).
    #[arg(long)]
    out: PathBuf,
    /// Also write an Open MPI dynamic rules file.
    #[arg(long)]
    export_ompi: Option<PathBuf>,
    /// Open MPI rules file format: 1 (classic, Open MPI 4.1) or 2 (≥ 5.0.7).
    #[arg(long, default_value_t = 1)]
    ompi_format: u32,
    /// Also write an MPICH collective-selection JSON file.
    #[arg(long)]
    export_mpich: Option<PathBuf>,
    /// Draw the paper's Figures 3–6 (per op and size) as SVGs into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Continue from the partial results of an interrupted sweep.
    #[arg(long)]
    resume: bool,
    /// Measure every candidate in every round, --max-reps rounds, instead
    /// of racing them (still interleaved, in a fresh random order each
    /// round).
    #[arg(long)]
    exhaustive: bool,
    #[command(flatten)]
    racing: crate::args::Racing,
    /// Judge this sweep's winners by another sweep's progress file (an
    /// --exhaustive one's `<out>.partial.json`; given several times, one
    /// duel's jobs, pooled). See "Racing against measuring everything".
    #[arg(long)]
    against: Vec<PathBuf>,
    /// With --against: write the points whose winners differ to this file,
    /// a tab-separated line each (collective, ranks, bytes, both winners,
    /// the method to duel them with), for `scripts/race-evidence --duel`.
    #[arg(long, requires = "against")]
    differing: Option<PathBuf>,
    /// With --transport tcp: measure all points of a rank count in one
    /// job. By default each point gets a job of its own, so that what the
    /// points before it did (heap, sockets) does not rank its candidates.
    #[arg(long)]
    one_job: bool,
    /// The one point a rank of a job per point measures (`OP:BYTES`),
    /// added by the launching process.
    #[arg(long, hide = true)]
    point: Option<String>,
    /// With --transport tcp and a job per point: settle a final (or a race
    /// decided late) in up to this many jobs of its own, the median job
    /// deciding; 0: the race's own final decides (glossary: "settle").
    #[arg(long, default_value_t = 9)]
    final_jobs: usize,
    /// With --transport tcp and a job per point: a point's race runs in
    /// jobs of this many rounds, each going on where the last stopped
    /// (0: the whole race in one job).
    #[arg(long, default_value_t = 5)]
    rounds_per_job: usize,
    /// The two finalists a rank of a settling job measures (`A,B`), added
    /// by the launching process with --point and --final-method.
    #[arg(long, hide = true)]
    final_of: Option<String>,
    /// The method that timed the finalists in their race.
    #[arg(long, hide = true)]
    final_method: Option<Method>,
}

/// What a rank must know to build its share of the sweep.
struct Sweep {
    ops: Vec<(Collective, Vec<usize>, args::Chosen)>,
    root: usize,
    method: Option<Method>,
    done: BTreeSet<(String, usize, usize)>,
    /// Races an interrupted sweep left unfinished.
    saved: Vec<race::Saved>,
}

impl Sweep {
    /// The points still to measure on `p` ranks with `method`.
    fn plan(&self, p: usize, method: Method) -> Vec<Planned> {
        let mut out = Vec::new();
        for (op, sizes, impls) in &self.ops {
            let root = if op.rooted() { self.root } else { 0 };
            for planned in bench::plan_ours(*op, impls, sizes, root, &[method]) {
                let key = (planned.subject.id(), p, planned.subject.bytes());
                if !self.done.contains(&key) {
                    out.push(planned);
                }
            }
        }
        out
    }

    /// The races still to run on `p` ranks with `method`.
    fn heats(&self, p: usize, method: Method) -> Vec<Vec<Point>> {
        let points = self
            .plan(p, method)
            .into_iter()
            .filter_map(|planned| match planned.subject {
                Subject::Ours(point) => Some(point),
                Subject::Library(..) => None,
            });
        race::heats(points.collect())
    }

    /// The race of the point named `key` ([`race::point_key`]) alone.
    fn heat_of(&self, p: usize, method: Method, key: &str) -> Result<Vec<Vec<Point>>, Failure> {
        let heat = self
            .heats(p, method)
            .into_iter()
            .find(|heat| race::point_key(heat) == key);
        match heat {
            Some(heat) => Ok(vec![heat]),
            None => Err(Failure::Usage(format!(
                "--point {key}: not a point of this sweep still to measure"
            ))),
        }
    }
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let tree = args::TreeFile::load(&a.tree)?;
    let sweep = sweep_of(&a, tree.as_ref())?;
    let ranks_text = match (&a.ranks, &tree) {
        (Some(text), _) => text.clone(),
        (None, Some(t)) => t.size().to_string(),
        (None, None) => "4".into(),
    };
    let ranks = args::ranks(&ranks_text)?;
    if sweep.ops.iter().any(|(op, _, _)| op.rooted()) {
        if let Some(&p) = ranks.iter().find(|&&p| sweep.root >= p) {
            return Err(Failure::Usage(format!(
                "--root {} is not a rank of a {p}-rank job",
                sweep.root
            )));
        }
    }
    if let Some(t) = &tree {
        let ops: Vec<Collective> = sweep.ops.iter().map(|(op, _, _)| *op).collect();
        t.check(&ranks, &ops, sweep.root)?;
    }
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
    let sink: Sink = {
        let saver = saver.clone();
        Arc::new(move |rows| saver.rows(rows))
    };
    let rounds: RaceSink = {
        let saver = saver.clone();
        Arc::new(move |race| saver.race(race))
    };
    let rule = rule_of(&a)?;
    let mut outcome = Ok(());
    for &p in &ranks {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let timeout = Duration::from_secs(a.timeout);
        let method = sweep.method.unwrap_or(Method::Truth);
        outcome = match a.transport {
            Transport::Local | Transport::Sim => {
                let heats = sweep.heats(p, method);
                let setup = race::Setup {
                    heats: &heats,
                    method,
                    opts,
                    rule,
                    saved: &sweep.saved,
                    stop: &stop,
                    quiet: false,
                    per_job: 0,
                };
                let ranks = bench::Ranks {
                    p,
                    sim: model.as_ref(),
                };
                let told = bench::Told {
                    rows: &*sink,
                    rounds: &*rounds,
                };
                race_local(ranks, &setup, timeout, &told)
            }
            Transport::Tcp => {
                let heats = sweep.heats(p, method);
                let sinks = (&sink, &rounds, &saver);
                race_tcp(p, &a, &heats, sinks, &stop)
            }
            Transport::Mpi => unreachable!("refused by refuse_mpi"),
        };
        if outcome.is_err() {
            break;
        }
    }
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
        let (theirs, seconds) = load_against(&a.against)?;
        let verdict = judge::Verdict {
            points: judge::judge(&rows, &theirs, a.racing.tolerance),
            tolerance: a.racing.tolerance,
            seconds: (elapsed, seconds),
        };
        say!("{verdict}");
        if let Some(path) = &a.differing {
            autocoll::files::write_atomic(path, verdict.differing().as_bytes())
                .map_err(|e| Failure::Run(e.into()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
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

/// The collectives, their sizes and candidate lists, and what is done.
fn sweep_of(a: &Args, tree: Option<&args::TreeFile>) -> Result<Sweep, Failure> {
    let ops = args::ops(&a.op)?;
    let impls = args::Chosen::new(a.imp.as_deref(), tree, &ops)?;
    let bytes = args::bytes(&a.bytes, a.step)?;
    let method = match a.method.as_str() {
        "auto" => None,
        "truth" => Some(Method::Truth),
        "ol-i" => Some(Method::OlI),
        "barrier" => Some(Method::Barrier),
        other => {
            return Err(Failure::Usage(format!(
                "--method `{other}`: tune ranks by auto, truth, ol-i or barrier"
            )))
        }
    };
    let mut out = Vec::new();
    for op in ops {
        let mine = args::Chosen {
            all: impls.all,
            named: impls.of(op, Vec::new),
        };
        if !mine.all && mine.named.is_empty() {
            return Err(Failure::Usage(format!(
                "tune: no candidates for {op}: --impl names none of its implementations"
            )));
        }
        out.push((op, bench::sizes(op, &bytes), mine));
    }
    let mut sweep = Sweep {
        ops: out,
        root: a.root.or(tree.map(args::TreeFile::root)).unwrap_or(0),
        method,
        done: BTreeSet::new(),
        saved: Vec::new(),
    };
    if a.resume {
        // Ranks of a tcp job read the file too: they start before any new
        // point is saved, so all of them see the same done points.
        let partial = load_partial(&partial::path_beside(&a.out))?;
        sweep.done = partial
            .rows
            .iter()
            .map(|r| (r.imp.clone(), r.ranks, r.bytes))
            .collect();
        sweep.saved = partial.races;
    }
    Ok(sweep)
}

/// The progress file at `path` ([`partial::load`]); one that cannot be
/// read fails the run, one that does not parse is the user's to fix.
fn load_partial(path: &Path) -> Result<Partial, Failure> {
    partial::load(path).map_err(|e| match e {
        autocoll_tune::Error::Read { .. } => Failure::Run(e.into()),
        _ => Failure::Usage(e.to_string()),
    })
}

/// The rule the flags give: a race, or under `--exhaustive` every
/// candidate every round.
fn rule_of(a: &Args) -> Result<RaceRule, Failure> {
    args::race_rule(&a.racing, &a.stats, a.exhaustive)
}
