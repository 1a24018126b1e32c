//! Running a plan: every rank runs [`rank_main`], on threads of this
//! process ([`run_local`]), as processes the launcher started (`run_tcp`
//! and [`as_rank`], rank 0 reporting its rows on lines of its output) or
//! under mpirun ([`run_mpi`]). A Ctrl-C stops all ranks at the same point.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
#[cfg(feature = "mpi")]
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use autocoll::check::Native;
use autocoll::measure::race::Rule;
use autocoll::measure::{self, Flag, Measurement, Method, Options, Summary};
use autocoll::sim::Model;
use autocoll::{local, Communicator};
use autocoll_tune::row::Row;

use super::args::Args;
use super::best;
use super::plan::{plan, Planned, Subject, Sweep};
use super::report::{machines, say, Report};
#[cfg(feature = "mpi")]
use super::rows::{finish, table_header, table_line};
#[cfg(feature = "mpi")]
use crate::args;
use crate::failure::Failure;
#[cfg(feature = "mpi")]
use crate::out::say;
use crate::traced;

/// One rank of a tcp run: the plan for this job's size, with rank 0
/// printing its reports for the launching process.
pub(super) fn as_rank(
    a: &Args,
    sweep: &Sweep,
    opts: &Options,
    race: Option<(Method, Rule)>,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(Duration::from_secs(a.timeout))?;
    let sizes = crate::args::ranks(a.ranks.as_deref().unwrap_or("4"))?.len();
    let trace = a.trace.dir(comm.size(), sizes);
    traced::start(&mut comm, trace.as_deref())
        .context("--trace")
        .map_err(Failure::Run)?;
    if comm.rank() == 0 {
        say(&Report::Hosts(comm.hosts()));
    }
    let plan = plan(sweep);
    let sink = |rows: Vec<Row>| say(&Report::Rows(rows));
    plan_main(&mut comm, &plan, opts, race, stop, &sink)
        .context("running the plan")
        .map_err(Failure::Run)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "mpi"))]
pub(super) fn run_mpi(
    _: &Args,
    _: &Sweep,
    _: &Options,
    _: &AtomicBool,
) -> Result<ExitCode, Failure> {
    Err(Failure::Usage(
        "--transport mpi: this autocoll was built without MPI; rebuild with `cargo build --release --features mpi`".into(),
    ))
}

/// One process of an mpi run: every process is a rank and runs the plan;
/// rank 0 prints the table and writes the outputs.
#[cfg(feature = "mpi")]
pub(super) fn run_mpi(
    a: &Args,
    sweep: &Sweep,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let (mut comm, library) =
        autocoll::comm::mpi::world_with_library().context("starting the mpi transport")?;
    let p = comm.size();
    args::agree_with_mpirun(a.ranks.as_deref(), p)?;
    if sweep.op.rooted() && sweep.root >= p {
        return Err(Failure::Usage(format!(
            "--root {} is not a rank of a {p}-rank job",
            sweep.root
        )));
    }
    comm.set_timeout(Duration::from_secs(a.timeout));
    traced::start(&mut comm, a.trace.dir(p, 1).as_deref()).context("--trace")?;
    let plan = plan(sweep);
    let rows = Mutex::new(Vec::<Row>::new());
    let sink = |batch: Vec<Row>| {
        for row in &batch {
            say!("{}", table_line(row));
        }
        rows.lock().unwrap_or_else(|e| e.into_inner()).extend(batch);
    };
    if comm.rank() == 0 {
        say!("{}", table_header());
    }
    let outcome =
        rank_main(&mut comm, &plan, opts, stop, Some(&library), &sink).context("running the plan");
    if comm.rank() != 0 {
        outcome.map_err(Failure::Run)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows = rows.into_inner().unwrap_or_else(|e| e.into_inner());
    finish(a, sweep.op, &rows, comm.hosts(), outcome, stop)
}

/// Runs the plan on `p` threads, each recording into `trace` if given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_local(
    ranks: Ranks,
    plan: &[Planned],
    opts: &Options,
    race: Option<(Method, Rule)>,
    timeout: Duration,
    trace: Option<&Path>,
    stop: &AtomicBool,
    sink: &(dyn Fn(Vec<Row>) + Sync),
) -> anyhow::Result<()> {
    let outcomes = ranks.run(|mut comm| {
        comm.set_timeout(timeout);
        traced::start(&mut comm, trace)?;
        plan_main(&mut comm, plan, opts, race, stop, sink)
    });
    every_rank_ok(outcomes)
}

/// A rank's part in a plan without the MPI library's baseline: every
/// point measured ([`rank_main`]), or with `race` (`--best`) each point's
/// candidates raced.
fn plan_main(
    comm: &mut Communicator,
    plan: &[Planned],
    opts: &Options,
    race: Option<(Method, Rule)>,
    stop: &AtomicBool,
    sink: &(dyn Fn(Vec<Row>) + Sync),
) -> autocoll::Result<()> {
    match race {
        Some((method, rule)) => best::run(comm, plan, method, opts, rule, stop, sink),
        None => rank_main(comm, plan, opts, stop, None, sink),
    }
}

/// The ranks of a job in this process: `p` threads, on virtual time when
/// `sim` gives the machine.
#[derive(Clone, Copy)]
pub(crate) struct Ranks<'a> {
    /// How many.
    pub(crate) p: usize,
    /// The simulated machine, for `--transport sim`.
    pub(crate) sim: Option<&'a Model>,
}

impl Ranks<'_> {
    /// Runs `body` on every rank; what each returned, in rank order.
    pub(crate) fn run<R: Send>(self, body: impl Fn(Communicator) -> R + Sync) -> Vec<R> {
        match self.sim {
            Some(model) => autocoll::sim::run(self.p, model, body),
            None => local::run(self.p, body),
        }
    }
}

/// The first failure of a local job's ranks, saying which rank.
pub(crate) fn every_rank_ok(outcomes: Vec<autocoll::Result<()>>) -> anyhow::Result<()> {
    let p = outcomes.len();
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        outcome.with_context(|| format!("{p}-rank job, rank {rank}"))?;
    }
    Ok(())
}

/// What every rank runs: each planned point with each of its methods.
/// Before each point rank 0 tells every rank whether to go on, so that an
/// interrupt stops all ranks at the same point. `library` runs the
/// baseline's points (a plan has them only under mpi). Rank 0 first says
/// when the machines break a method's premise, and such rows are flagged
/// `crowded`.
pub(crate) fn rank_main(
    comm: &mut Communicator,
    plan: &[Planned],
    opts: &Options,
    stop: &AtomicBool,
    library: Option<&dyn Native>,
    sink: &(dyn Fn(Vec<Row>) + Sync),
) -> autocoll::Result<()> {
    let mut methods: Vec<Method> = plan.iter().flat_map(|p| p.methods.clone()).collect();
    methods.sort();
    methods.dedup();
    let machines = machines(comm, &methods, false)?;
    let opts = &machines.options(opts);
    for (k, planned) in plan.iter().enumerate() {
        let go = !stop.load(Ordering::Relaxed);
        if !measure::agree(comm, go)? {
            break;
        }
        let subject = &planned.subject;
        let mut found = match &planned.methods[..] {
            [method] => measure_one(comm, subject, *method, opts, library)?
                .map(Found::alone)
                .into_iter()
                .collect(),
            methods => {
                let seed = k as u64 + 1;
                measure_many(comm, subject, methods, opts, library, seed)?
                    .map(Found::paired)
                    .unwrap_or_default()
            }
        };
        for f in &mut found {
            if !machines.holds(f.m.method) {
                f.m.flags.push(Flag::Crowded);
            }
        }
        if comm.rank() == 0 {
            sink(rows_of(subject, comm.size(), found));
        }
    }
    Ok(())
}

/// A method's measurement at a point, with its error against `truth`
/// measured alongside, repetition by repetition.
struct Found {
    m: Measurement,
    /// Relative errors against `truth`, one per round both kept.
    errors: Vec<f64>,
}

impl Found {
    fn alone(m: Measurement) -> Found {
        Found {
            m,
            errors: Vec::new(),
        }
    }

    /// Every method of an interleaved run, each with its paired errors.
    fn paired(run: measure::Interleaved) -> Vec<Found> {
        let truth = run
            .measurements
            .iter()
            .position(|m| m.method == Method::Truth);
        let errors: Vec<Vec<f64>> = (0..run.measurements.len())
            .map(|i| match truth {
                Some(t) if t != i => run.paired_errors(i, t),
                _ => Vec::new(),
            })
            .collect();
        run.measurements
            .into_iter()
            .zip(errors)
            .map(|(m, errors)| Found { m, errors })
            .collect()
    }
}

/// Several methods at one point, interleaved.
fn measure_many(
    comm: &mut Communicator,
    subject: &Subject,
    methods: &[Method],
    opts: &Options,
    library: Option<&dyn Native>,
    seed: u64,
) -> autocoll::Result<Option<measure::Interleaved>> {
    match (subject, library) {
        (Subject::Ours(point), _) => measure::run_methods(comm, point, methods, opts, seed),
        (Subject::Library(point, _), Some(lib)) => {
            measure::run_baseline_methods(comm, lib, point, methods, opts, seed)
        }
        (Subject::Library(_, id), None) => Err(library_only(id)),
    }
}

/// One method at one point.
fn measure_one(
    comm: &mut Communicator,
    subject: &Subject,
    method: Method,
    opts: &Options,
    library: Option<&dyn Native>,
) -> autocoll::Result<Option<Measurement>> {
    match (subject, library) {
        (Subject::Ours(point), _) => measure::run_point(comm, point, method, opts),
        (Subject::Library(point, _), Some(lib)) => {
            measure::run_baseline(comm, lib, point, method, opts)
        }
        (Subject::Library(_, id), None) => Err(library_only(id)),
    }
}

fn library_only(id: &str) -> autocoll::Error {
    autocoll::Error::Config(format!(
        "{id}: the MPI library's collective runs only under --transport mpi"
    ))
}

/// Rows of one point, with each method's error against the truth if run:
/// the median of the errors paired round by round, with its 95% interval,
/// or else the error of the two medians.
fn rows_of(point: &Subject, ranks: usize, found: Vec<Found>) -> Vec<Row> {
    let truth = found
        .iter()
        .find(|f| f.m.method == Method::Truth)
        .map(|f| f.m.clone());
    found
        .into_iter()
        .map(|f| {
            let pairs = Summary::of(&f.errors);
            let err = match &truth {
                Some(_) if !f.errors.is_empty() => Some(pairs.median),
                Some(t) if f.m.method != Method::Truth => Some(f.m.error_vs(t)),
                _ => None,
            };
            let mut row = point.row(ranks, f.m);
            row.error_vs_truth = err.filter(|e| e.is_finite());
            if !f.errors.is_empty() {
                row.error_ci95 = Some([pairs.ci95_lo, pairs.ci95_hi]);
            }
            row
        })
        .collect()
}

/// Makes Ctrl-C set `stop` (every rank stops at the same point), and a
/// second Ctrl-C exit at once.
pub(crate) fn install_ctrl_c(stop: Arc<AtomicBool>) {
    let result = ctrlc::set_handler(move || {
        if stop.swap(true, Ordering::Relaxed) {
            // A second Ctrl-C: the user does not want to wait for the point.
            std::process::exit(130);
        }
    });
    if let Err(e) = result {
        eprintln!("autocoll: Ctrl-C will not stop the sweep cleanly: {e}");
    }
}
