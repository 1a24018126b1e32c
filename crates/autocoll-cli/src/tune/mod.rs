//! `autocoll tune`: sweep collectives × rank counts × sizes × implementations
//! with `bench`'s machinery, keep the fastest per point, and write a tuning
//! file (and Open MPI / MPICH exports, and the paper's Figures 3–6).
//!
//! Each point's candidates are measured together in rounds, in a fresh
//! random order each round ([`race`]): by default a race, the clearly
//! slower dropped early; `--exhaustive` runs every candidate every round.
//! Every finished point, and the unfinished race of the point under way,
//! is saved (atomically) to `<out>.partial.json`, so `--resume` continues
//! an interrupted sweep where it stopped.

pub(crate) mod across;
pub(crate) mod judge;
pub(crate) mod race;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use autocoll::measure::race::Rule as RaceRule;
use autocoll::measure::{Method, Options, Point};
use autocoll::select::{export, Rule, Table};
use autocoll::{Collective, Implementation};
use serde::{Deserialize, Serialize};

use crate::bench::{self, Planned, Row, Sink, Subject, Transport};
use crate::launch::{self, Placement};
use crate::out::say;
use crate::{args, plot, Failure};

/// Schema of the partial-results file.
const PARTIAL_SCHEMA: &str = "autocoll.tune-partial/1";

/// Upper end of the last size range: sizes above the largest measured one
/// get its winner (a range must end somewhere; 1G keeps exports readable).
const TOP_BYTES: usize = 1 << 30;

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
    /// Method that ranks the implementations: `auto` (truth when the ranks
    /// share a clock, else ol-i; where it keeps too few calls, the
    /// machines' fallback), `truth`, `ol-i` or `barrier` (the fallback
    /// where ranks outnumber cores: an upper bound that ranks them).
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
    /// Judge this sweep's winners by another sweep's progress file (e.g.
    /// an --exhaustive one's `<out>.partial.json`): per point the same
    /// winner, one within --tolerance, one that sweep could not tell
    /// apart, or a slower one; and the two sweeps' measuring times. With
    /// --resume and every point done, it judges without measuring. Given
    /// several times, the files are one sweep's jobs (a duel run again
    /// and again): each implementation's figure is the median of its
    /// medians over them, and its interval their range.
    #[arg(long)]
    against: Vec<PathBuf>,
    /// With --against: write the points whose winners differ (neither the
    /// same nor another name for the same messages) to this file, one a
    /// line, tab-separated: collective, ranks, bytes, this sweep's
    /// winner, the other's, and the method to duel them with (the more
    /// trusted of the two sweeps' there: truth, then ol-i, then the
    /// rest); for a duel of the two (`scripts/race-evidence --duel`).
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
    /// With --transport tcp and a job per point: when a point's race goes
    /// to a final, or is decided without one only in its fifth job or
    /// later (its winner and runner-up were close), measure those two
    /// again in up to this many jobs of their own (30 rounds each, the two
    /// paired round by round; no more once most put one ahead; a job whose
    /// method fell back is run again, up to twice this many) and let the
    /// median job's paired ratio pick the winner. 0: the race's own
    /// final, in the race's job, decides (one job's figures move with the
    /// job; docs/tuning.md).
    #[arg(long, default_value_t = 9)]
    final_jobs: usize,
    /// With --transport tcp and a job per point: a point's race runs in
    /// jobs of this many rounds, each going on with the race where the
    /// last left it (the first job stops before --min-reps, so that no
    /// candidate is dropped on one job's figures; a final runs on in the
    /// job it begins in). Which of two close candidates is ahead moves
    /// from job to job; a race in several jobs moves less. 0: the whole
    /// race in one job.
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

/// The partial results, saved after every point and every round of a
/// race.
#[derive(Default, Serialize, Deserialize)]
struct Partial {
    schema: String,
    rows: Vec<Row>,
    /// Unfinished races (at most the one under way).
    #[serde(default)]
    races: Vec<race::Saved>,
    /// Seconds spent measuring, by this sweep and those it resumed.
    #[serde(default)]
    elapsed_s: f64,
}

impl Partial {
    /// Drops the saved race of `op` on `ranks` ranks at `bytes`, if any.
    fn forget_race(&mut self, op: &str, ranks: usize, bytes: usize) {
        self.races
            .retain(|r| (r.op.as_str(), r.ranks, r.bytes) != (op, ranks, bytes));
    }
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

    /// The race of the point named `key` ([`point_key`]) alone.
    fn heat_of(&self, p: usize, method: Method, key: &str) -> Result<Vec<Vec<Point>>, Failure> {
        let heat = self
            .heats(p, method)
            .into_iter()
            .find(|heat| point_key(heat) == key);
        match heat {
            Some(heat) => Ok(vec![heat]),
            None => Err(Failure::Usage(format!(
                "--point {key}: not a point of this sweep still to measure"
            ))),
        }
    }
}

/// `OP:BYTES` of a race's point, which names it to a job of its own.
fn point_key(heat: &[Point]) -> String {
    heat.first()
        .map_or_else(String::new, |p| format!("{}:{}", p.imp.op, p.bytes))
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
    let partial = partial_path(&a.out);
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
                race_local(ranks, &setup, timeout, &*sink, &*rounds)
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
    write_outputs(&a, &rows)?;
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
        let partial = load_partial(&partial_path(&a.out))?;
        sweep.done = partial
            .rows
            .iter()
            .map(|r| (r.imp.clone(), r.ranks, r.bytes))
            .collect();
        sweep.saved = partial.races;
    }
    Ok(sweep)
}

/// `FILE.toml` → `FILE.toml.partial.json`.
pub fn partial_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".partial.json");
    PathBuf::from(name)
}

fn load_partial(path: &Path) -> Result<Partial, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Partial::default()),
        Err(e) => {
            return Err(Failure::Run(anyhow::anyhow!(
                "reading {}: {e}",
                path.display()
            )))
        }
    };
    let doc: Partial = serde_json::from_str(&text).map_err(|e| {
        Failure::Usage(format!(
            "{}:{}: {e} (delete it to start the sweep afresh)",
            path.display(),
            e.line()
        ))
    })?;
    if doc.schema != PARTIAL_SCHEMA {
        return Err(Failure::Usage(format!(
            "{}: unsupported schema `{}` (this autocoll reads {PARTIAL_SCHEMA})",
            path.display(),
            doc.schema
        )));
    }
    Ok(doc)
}

/// Where each round's race goes.
pub(crate) type RaceSink = Arc<dyn Fn(race::Saved) + Send + Sync>;

/// How often at most an unfinished race is written while its job
/// measures. Writing and syncing the file between two rounds slowed the
/// next round's first call, 10–20% at 4 ranks on 2 cores: in a final of
/// two, whichever ran first in a round came out slower
/// (docs/racing-history.md). A race is written whenever its job ends,
/// so a job killed outright loses at most this much measuring.
const RACE_WRITE_EVERY: Duration = Duration::from_secs(30);

/// Keeps the results and the unfinished race, saves them after every
/// point and, while a race's job measures, every [`RACE_WRITE_EVERY`]
/// (and at [`Saver::flush`]), and shows progress.
#[derive(Clone)]
struct Saver {
    partial: Arc<Mutex<Partial>>,
    path: PathBuf,
    bar: indicatif::ProgressBar,
    /// When this invocation began, and the seconds of those it resumes.
    start: std::time::Instant,
    before: f64,
    /// When the file was last written, and whether a race round came
    /// since.
    written: Arc<Mutex<(std::time::Instant, bool)>>,
    every: Duration,
}

impl Saver {
    fn new(mut old: Partial, path: PathBuf, bar: indicatif::ProgressBar) -> Saver {
        old.schema = PARTIAL_SCHEMA.into();
        let before = old.elapsed_s;
        let start = std::time::Instant::now();
        Saver {
            partial: Arc::new(Mutex::new(old)),
            path,
            bar,
            start,
            before,
            written: Arc::new(Mutex::new((start, false))),
            every: RACE_WRITE_EVERY,
        }
    }

    /// A point's results: its race, if it had one, is over.
    fn rows(&self, batch: Vec<Row>) {
        let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        self.bar.inc(batch.len() as u64);
        if let Some(first) = batch.first() {
            doc.forget_race(&first.op, first.ranks, first.bytes);
        }
        doc.rows.extend(batch);
        self.save(&mut doc);
    }

    /// A round of a race: it replaces the point's earlier rounds.
    fn race(&self, saved: race::Saved) {
        let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        let left = saved.race.contenders().len();
        self.bar.set_message(format!(
            "{} on {} ranks, {}: {left} of {} candidates left after {} rounds",
            saved.op,
            saved.ranks,
            autocoll::select::format_bytes(saved.bytes),
            saved.impls.len(),
            saved.race.rounds
        ));
        doc.forget_race(&saved.op, saved.ranks, saved.bytes);
        doc.races.push(saved);
        let due = {
            let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
            written.1 = true;
            written.0.elapsed() >= self.every
        };
        if due {
            self.save(&mut doc);
        }
    }

    /// Writes the rounds not written yet: call it between jobs and at the
    /// end, when nothing measures.
    fn flush(&self) {
        let dirty = self.written.lock().unwrap_or_else(|p| p.into_inner()).1;
        if dirty {
            let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
            self.save(&mut doc);
        }
    }

    fn save(&self, doc: &mut Partial) {
        doc.elapsed_s = self.before + self.start.elapsed().as_secs_f64();
        *self.written.lock().unwrap_or_else(|p| p.into_inner()) =
            (std::time::Instant::now(), false);
        let text = serde_json::to_vec(doc).expect("JSON of plain data");
        if let Err(e) = autocoll::files::write_atomic(&self.path, &text) {
            self.bar
                .suspend(|| eprintln!("autocoll: warning: could not save partial results: {e}"));
        }
    }

    /// How far the unfinished race of `op` on `ranks` ranks at `bytes`
    /// got, if one is saved: its method and rounds.
    fn progress(&self, op: &str, ranks: usize, bytes: usize) -> Option<(Option<Method>, usize)> {
        let doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        doc.races
            .iter()
            .find(|r| (r.op.as_str(), r.ranks, r.bytes) == (op, ranks, bytes))
            .map(|r| (r.method, r.race.rounds))
    }

    /// The rows, and the seconds spent measuring them (as last saved).
    fn take_rows(&self) -> (Vec<Row>, f64) {
        let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        (std::mem::take(&mut doc.rows), doc.elapsed_s)
    }
}

/// The rule the flags give: a race, or under `--exhaustive` every
/// candidate every round.
fn rule_of(a: &Args) -> Result<RaceRule, Failure> {
    race_rule(&a.racing, &a.stats, a.exhaustive)
}

/// A race's rule from the racing flags, the repetition flags and
/// `--exhaustive` (`tune`'s and `bench --best`'s): `--min-reps` when
/// given, else the race's own 3 (bench's 5 would cost every one of ~70
/// candidates two more repetitions before any could be dropped).
pub(crate) fn race_rule(
    racing: &crate::args::Racing,
    repeat: &crate::args::Repeat,
    exhaustive: bool,
) -> Result<RaceRule, Failure> {
    let tolerance = racing.tolerance;
    if !(0.0..1.0).contains(&tolerance) {
        return Err(Failure::Usage(format!(
            "--tolerance {tolerance} must lie in [0, 1): a share of the best's time"
        )));
    }
    let min_reps = repeat
        .min_reps
        .unwrap_or(RaceRule::default().min_reps)
        .max(1);
    Ok(RaceRule {
        tolerance,
        min_reps,
        max_reps: repeat.max_reps.max(min_reps),
        eliminate: !exhaustive,
        final_rounds: racing.final_rounds,
    })
}

/// Races on `p` threads.
fn race_local(
    ranks: bench::Ranks,
    setup: &race::Setup,
    timeout: Duration,
    rows: &(dyn Fn(Vec<Row>) + Sync),
    rounds: &(dyn Fn(race::Saved) + Sync),
) -> anyhow::Result<()> {
    bench::every_rank_ok(ranks.run(|mut comm| {
        comm.set_timeout(timeout);
        race::run(&mut comm, setup, rows, rounds)
    }))
}

/// Races `heats` on `p` ranks over tcp, one after another, until one
/// fails or Ctrl-C: all in one job (`--one-job`), else each point in jobs
/// of its own ([`race_in_jobs`]), its rows saved once its final is settled
/// ([`settle_across_jobs`]).
fn race_tcp(
    p: usize,
    a: &Args,
    heats: &[Vec<Point>],
    (sink, rounds, saver): (&Sink, &RaceSink, &Saver),
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    if a.one_job {
        // Rows are saved as each point finishes, whatever the job does
        // after.
        let hosts = Arc::new(Mutex::new(Vec::new()));
        let races = Some(rounds.clone());
        return bench::run_tcp(p, &a.placement, a.timeout, &[], sink.clone(), races, hosts);
    }
    for heat in heats {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let point = vec!["--point".into(), point_key(heat).into()];
        let mut rows = race_in_jobs(p, a, heat, &point, rounds, saver, stop)?;
        // A settling job that fails leaves the race's own final standing,
        // its rows saved.
        let settled = match a.final_jobs > 0 && !a.exhaustive {
            true => settle_across_jobs(p, a, &point, &mut rows, stop),
            false => Ok(()),
        };
        sink(rows);
        settled?;
    }
    Ok(())
}

/// The race of one point (`point`, its job's arguments), in as many jobs
/// as it hands over to ([`autocoll::measure::race::Race::hand_over`]):
/// each job after the first resumes the race its predecessor saved.
/// Rank 0's rows; none if Ctrl-C stopped it.
fn race_in_jobs(
    p: usize,
    a: &Args,
    heat: &[Point],
    point: &[std::ffi::OsString],
    rounds: &RaceSink,
    saver: &Saver,
    stop: &AtomicBool,
) -> anyhow::Result<Vec<Row>> {
    let (op, bytes) = (heat[0].imp.op.to_string(), heat[0].bytes);
    let mut extra = point.to_vec();
    let mut before = saver.progress(&op, p, bytes);
    loop {
        let job = tcp_job(p, a, &extra, Some(rounds.clone()));
        // The next job resumes from the file.
        saver.flush();
        let rows = job?;
        if !rows.is_empty() || stop.load(Ordering::Relaxed) {
            return Ok(rows);
        }
        let now = saver.progress(&op, p, bytes);
        if now.is_none() || now == before {
            anyhow::bail!(
                "the race of {op} on {p} ranks at {}: a job ended without a result and \
                 without going on with the race",
                autocoll::select::format_bytes(bytes)
            );
        }
        before = now;
        if !a.resume && !extra.iter().any(|x| x == "--resume") {
            // The next job's ranks read the saved race from the partial file.
            extra.push("--resume".into());
        }
    }
}

/// One tcp job of `p` ranks with `extra` arguments: rank 0's rows.
fn tcp_job(
    p: usize,
    a: &Args,
    extra: &[std::ffi::OsString],
    races: Option<RaceSink>,
) -> anyhow::Result<Vec<Row>> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let collect: Sink = {
        let got = got.clone();
        Arc::new(move |rows| got.lock().unwrap_or_else(|e| e.into_inner()).extend(rows))
    };
    let hosts = Arc::new(Mutex::new(Vec::new()));
    bench::run_tcp(p, &a.placement, a.timeout, extra, collect, races, hosts)?;
    let rows = std::mem::take(&mut *got.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(rows)
}

/// When the race of the point `point` (its job's arguments) went to a
/// final, or was decided late ([`across::LATE_JOBS`]), its two finalists
/// (or its winner and runner-up) measured again in up to `--final-jobs`
/// jobs of their own that kept the race's method (a job that fell back
/// runs again, [`across::another`]), and the median job's faster one made
/// the winner ([`across`]).
fn settle_across_jobs(
    p: usize,
    a: &Args,
    point: &[std::ffi::OsString],
    rows: &mut [Row],
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let Some((x, y, method)) = across::finalists(rows) else {
        return Ok(());
    };
    let mut extra = point.to_vec();
    extra.extend([
        "--final-of".into(),
        format!("{x},{y}").into(),
        "--final-method".into(),
        method.to_string().into(),
    ]);
    let mut ratios = Vec::new();
    let mut tried = 0;
    while across::another(&ratios, tried, a.final_jobs) && !stop.load(Ordering::Relaxed) {
        let job = tcp_job(p, a, &extra, None)?;
        tried += 1;
        ratios.extend(across::ratio(&job, &x, &y, method));
    }
    across::settle(rows, &x, &y, &ratios);
    Ok(())
}

/// One rank of a tcp run: this job size's share of the sweep.
fn as_rank(
    a: &Args,
    sweep: &Sweep,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(Duration::from_secs(a.timeout))?;
    let method = sweep.method.unwrap_or(if comm.shared_clock() {
        Method::Truth
    } else {
        Method::OlI
    });
    let sink = |rows: Vec<Row>| bench::say(&bench::Report::Rows(rows));
    let heats = match &a.point {
        Some(key) => sweep.heat_of(comm.size(), method, key)?,
        None => sweep.heats(comm.size(), method),
    };
    // A settling job measures the two finalists of its point, every round.
    let (heats, method, rule, saved) = match (&a.final_of, a.final_method) {
        (Some(pair), Some(method)) => {
            let rule = RaceRule {
                min_reps: 1,
                max_reps: across::ROUNDS,
                eliminate: false,
                final_rounds: 0,
                ..rule_of(a)?
            };
            (finalists_of(heats, pair)?, method, rule, &[][..])
        }
        _ => (heats, method, rule_of(a)?, &sweep.saved[..]),
    };
    let setup = race::Setup {
        heats: &heats,
        method,
        opts: *opts,
        rule,
        saved,
        stop,
        quiet: a.final_of.is_some(),
        // Race::hand_over never hands over without elimination.
        per_job: match a.point.is_some() && a.final_of.is_none() {
            true => a.rounds_per_job,
            false => 0,
        },
    };
    let round = |saved| bench::say(&bench::Report::Race(Box::new(saved)));
    race::run(&mut comm, &setup, &sink, &round)
        .context("running the sweep")
        .map_err(Failure::Run)?;
    Ok(ExitCode::SUCCESS)
}

/// The two candidates `pair` names (`A,B`) of the one heat a job per
/// point has.
fn finalists_of(heats: Vec<Vec<Point>>, pair: &str) -> Result<Vec<Vec<Point>>, Failure> {
    let names: Vec<&str> = pair.split(',').collect();
    let heat: Vec<Point> = heats
        .into_iter()
        .flatten()
        .filter(|p| names.contains(&p.imp.to_string().as_str()))
        .collect();
    match heat.len() {
        2 => Ok(vec![heat]),
        _ => Err(Failure::Usage(format!(
            "--final-of {pair}: not two candidates of this point"
        ))),
    }
}

/// The fastest implementation (by median) of every (op, ranks, bytes);
/// of a race, among the candidates still in at its end (a dropped one's
/// median rests on a few repetitions that ruled it out).
pub fn winners(rows: &[Row]) -> BTreeMap<(String, usize, usize), Row> {
    let mut best: BTreeMap<(String, usize, usize), Row> = BTreeMap::new();
    let contends = |r: &&Row| {
        r.race
            .as_ref()
            .is_none_or(|m| m.live && m.same_as.is_none())
    };
    for r in rows
        .iter()
        .filter(|r| r.median_s.is_finite())
        .filter(contends)
    {
        let key = (r.op.clone(), r.ranks, r.bytes);
        match best.get(&key) {
            Some(b) if b.median_s <= r.median_s => {}
            _ => {
                best.insert(key, r.clone());
            }
        }
    }
    best
}

/// The winners as non-overlapping rules: neighbouring sizes with the same
/// winner merge into one size range (from 0, each up to the next range's
/// start − 1, the last to 1G), and neighbouring rank counts with the same
/// size ranges merge into one rank range (each up to the next measured
/// count − 1, the last ending at the largest count measured).
pub fn table_of(rows: &[Row]) -> Result<Table, String> {
    let best = winners(rows);
    let mut per_op: BTreeMap<String, BTreeMap<usize, Vec<(usize, String)>>> = BTreeMap::new();
    for ((op, p, bytes), r) in &best {
        per_op
            .entry(op.clone())
            .or_default()
            .entry(*p)
            .or_default()
            .push((*bytes, r.imp.clone()));
    }
    let mut rules = Vec::new();
    for (op, by_ranks) in per_op {
        let op: Collective = op.parse().map_err(|e: String| e)?;
        let spans: Vec<(usize, Vec<SizeRange>)> = by_ranks
            .into_iter()
            .map(|(p, winners)| (p, size_ranges(&winners)))
            .collect();
        let mut i = 0;
        while i < spans.len() {
            let mut j = i;
            while j + 1 < spans.len() && spans[j + 1].1 == spans[i].1 {
                j += 1;
            }
            let lo = spans[i].0;
            let hi = match spans.get(j + 1) {
                Some(next) => next.0 - 1,
                None => spans[j].0,
            };
            for (b_lo, b_hi, imp) in &spans[i].1 {
                let imp: Implementation = imp.parse().map_err(|e| format!("{e}"))?;
                rules.push(Rule {
                    op,
                    ranks: lo..=hi,
                    bytes: *b_lo..=*b_hi,
                    imp,
                });
            }
            i = j + 1;
        }
    }
    Ok(Table { rules })
}

/// Bytes from, bytes to (inclusive), winner.
type SizeRange = (usize, usize, String);

/// Sorted (bytes, winner) → contiguous (lo, hi, winner) ranges from 0.
fn size_ranges(winners: &[(usize, String)]) -> Vec<SizeRange> {
    let mut out: Vec<SizeRange> = Vec::new();
    for (bytes, imp) in winners {
        match out.last_mut() {
            Some(last) if last.2 == *imp => {}
            Some(last) => {
                last.1 = bytes - 1;
                out.push((*bytes, *bytes, imp.clone()));
            }
            None => out.push((0, *bytes, imp.clone())),
        }
    }
    if let Some(last) = out.last_mut() {
        last.1 = winners.last().map_or(0, |w| w.0).max(TOP_BYTES);
    }
    out
}

fn write_outputs(a: &Args, rows: &[Row]) -> Result<(), Failure> {
    let table = table_of(rows).map_err(|e| Failure::Run(anyhow::anyhow!("{e}")))?;
    let write = |path: &PathBuf, data: &[u8], what: &str| {
        autocoll::files::write_atomic(path, data)
            .with_context(|| format!("writing {what} {}", path.display()))
            .map_err(Failure::Run)
    };
    let comment = format!(
        "Written by `autocoll tune` from {} measurements ({} points).\n\
         Fastest implementation per (op, ranks, bytes) by median time; neighbouring\n\
         sizes and rank counts with the same winner are merged into ranges.",
        rows.len(),
        winners(rows).len()
    );
    write(&a.out, table.to_toml(&comment).as_bytes(), "--out")?;
    say!("{}", summary(&table));
    for ((op, ranks, bytes), r) in winners(rows).iter().filter(|(_, r)| !r.flags.is_empty()) {
        say!(
            "flagged: {op} on {ranks} ranks at {}: {} ({}, {})",
            autocoll::select::format_bytes(*bytes),
            r.imp,
            r.method,
            r.flag_text()
        );
    }
    let carried = rows
        .iter()
        .filter(|r| r.race.as_ref().is_some_and(|m| m.same_as.is_some()))
        .count();
    if carried > 0 {
        say!(
            "raced {} of {} candidates: the other {carried} send the same messages as one raced \
             at their point (\"same_as\" in {})",
            rows.len() - carried,
            rows.len(),
            partial_path(&a.out).display()
        );
    }
    if let Some(path) = &a.export_ompi {
        write(
            path,
            export::to_ompi(&table, a.ompi_format).as_bytes(),
            "--export-ompi",
        )?;
    }
    if let Some(path) = &a.export_mpich {
        write(path, export::to_mpich(&table).as_bytes(), "--export-mpich")?;
    }
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("making --plot directory {}", dir.display()))
            .map_err(Failure::Run)?;
        for (name, svg) in
            plot::tune_figures(rows).map_err(|e| Failure::Run(anyhow::anyhow!("plot: {e}")))?
        {
            write(&dir.join(name), svg.as_bytes(), "--plot")?;
        }
    }
    Ok(())
}

/// The rules, one per line.
fn summary(table: &Table) -> String {
    let mut out = format!("{:<10} {:>9} {:>16}  impl", "op", "ranks", "bytes");
    for r in &table.rules {
        let show = |x: &std::ops::RangeInclusive<usize>| {
            format!(
                "{}..{}",
                autocoll::select::format_bytes(*x.start()),
                autocoll::select::format_bytes(*x.end())
            )
        };
        out.push_str(&format!(
            "\n{:<10} {:>9} {:>16}  {}",
            r.op.to_string(),
            format!("{}..{}", r.ranks.start(), r.ranks.end()),
            show(&r.bytes),
            r.imp
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A race's rounds are kept in memory while its job measures, and
    /// written when the interval has passed or at a flush (between jobs):
    /// a file written between two rounds slowed the next round's first
    /// call.
    #[test]
    fn issue20_a_race_is_written_between_jobs_not_after_every_round() {
        use autocoll::measure::race::Race;
        let dir = std::env::temp_dir().join(format!("autocoll-saver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let path = dir.join("sweep.toml.partial.json");
        let bar = indicatif::ProgressBar::hidden();
        let mut saver = Saver::new(Partial::default(), path.clone(), bar);
        saver.every = Duration::from_secs(3600);
        let saved = |rounds: usize| {
            let mut race = Race::new(2);
            race.rounds = rounds;
            race::Saved {
                op: "bcast".into(),
                ranks: 2,
                bytes: 1024,
                impls: vec!["bcast:flat".into(), "bcast:binomial".into()],
                method: Some(Method::Truth),
                race,
            }
        };
        let rounds = |path: &Path| -> Vec<usize> {
            let doc = load_partial(path).unwrap_or_else(|_| panic!("{} reads", path.display()));
            doc.races.iter().map(|r| r.race.rounds).collect()
        };
        saver.race(saved(1));
        saver.race(saved(2));
        assert!(!path.exists(), "no round written before the interval");
        saver.flush();
        assert_eq!(rounds(&path), [2], "the flush writes the last round");
        saver.every = Duration::ZERO;
        saver.race(saved(3));
        assert_eq!(rounds(&path), [3], "written once the interval has passed");
        std::fs::remove_dir_all(&dir).expect("removed");
    }

    /// `tune --min-reps` and `bench --best --min-reps` set when a race may
    /// first drop a candidate; left out, the race's own 3.
    #[test]
    fn issue20_min_reps_sets_the_repetitions_before_a_race_drops_any() {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            racing: crate::args::Racing,
            #[command(flatten)]
            repeat: crate::args::Repeat,
        }
        let rule = |argv: &[&str]| {
            let flags = <Flags as clap::Parser>::try_parse_from(argv).expect("valid flags");
            match race_rule(&flags.racing, &flags.repeat, false) {
                Ok(rule) => rule,
                Err(_) => panic!("{argv:?}: no rule"),
            }
        };
        assert_eq!(rule(&["tune"]).min_reps, 3);
        assert_eq!(rule(&["tune", "--min-reps", "6"]).min_reps, 6);
        let repeat = |argv: &[&str]| {
            <Flags as clap::Parser>::try_parse_from(argv)
                .expect("valid flags")
                .repeat
                .options()
        };
        assert_eq!(repeat(&["bench"]).min_reps, 5);
        assert_eq!(repeat(&["bench", "--max-reps", "4"]).min_reps, 4);
    }

    fn row(ranks: usize, bytes: usize, imp: &str, median: f64) -> Row {
        let json = serde_json::json!({
            "op": "bcast", "impl": imp, "ranks": ranks, "bytes": bytes, "root": 0,
            "method": "truth", "reps": 5, "discarded": 0, "mean_s": median,
            "median_s": median, "min_s": median, "max_s": median, "stddev_s": 0.0,
            "ci95_lo_s": median, "ci95_hi_s": median, "raw_s": [median],
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn winners_merge_into_contiguous_ranges() {
        let mut rows = Vec::new();
        for p in [2, 4, 8] {
            for (bytes, fast) in [
                (1024, "bcast:binomial"),
                (4096, "bcast:binomial"),
                (65536, "bcast:chain:seg=8K"),
            ] {
                let fast = if p == 8 && bytes == 4096 {
                    "bcast:flat"
                } else {
                    fast
                };
                rows.push(row(p, bytes, fast, 1.0));
                rows.push(row(p, bytes, "bcast:binary", 2.0));
            }
        }
        let table = table_of(&rows).unwrap();
        let text = table.to_toml("test");
        let back = Table::parse(&text, "test").unwrap();
        assert_eq!(back, table);
        // 2 and 4 ranks share their winners: one rank range 2..7.
        let r = &table.rules[0];
        assert_eq!((r.ranks.clone(), r.bytes.clone()), (2..=7, 0..=65535));
        assert_eq!(table.rules[1].bytes, 65536..=TOP_BYTES);
        assert_eq!(table.rules.len(), 2 + 3);
        for p in 2..=8 {
            for (bytes, want) in [
                (0, "bcast:binomial"),
                (1024, "bcast:binomial"),
                (1 << 20, "bcast:chain:seg=8K"),
            ] {
                assert_eq!(
                    table
                        .lookup(Collective::Bcast, p, bytes)
                        .unwrap()
                        .to_string(),
                    want
                );
            }
        }
        assert_eq!(
            table
                .lookup(Collective::Bcast, 8, 4096)
                .unwrap()
                .to_string(),
            "bcast:flat"
        );
        assert_eq!(
            table
                .lookup(Collective::Bcast, 7, 4096)
                .unwrap()
                .to_string(),
            "bcast:binomial"
        );
    }

    #[test]
    fn partial_file_sits_beside_the_table() {
        assert_eq!(
            partial_path(Path::new("out/t.toml")),
            PathBuf::from("out/t.toml.partial.json")
        );
    }
}
