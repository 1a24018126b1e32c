//! `autocoll bench`: time implementations across rank counts and sizes with
//! the methods of `autocoll::measure`.
//!
//! Every rank runs [`rank_main`] over the same plan; rank 0 reports each
//! finished point through a sink (table, progress bar, results). With the
//! local transport the ranks are threads of this process; a process-based
//! transport runs the same function in every launched process (tcp: this
//! command launches them; mpi: mpirun did, and every process is a rank).
//!
//! With `--baseline` (mpi only) each size also times the MPI library's own
//! collective, `<op>:mpi`, with the same method, before autocoll's
//! implementations of that size: interleaved, so that a drift of the
//! machine over the run affects both alike.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use autocoll::check::Native;
use autocoll::measure::{self, Baseline, Measurement, Method, Options, Point};
use autocoll::select::{format_bytes, parse_bytes};
use autocoll::{local, Collective, Communicator, Implementation};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

use crate::launch::{self, Placement};
use crate::{args, baseline, plot, Failure};

/// Rank 0 of a tcp run hands its reports to the launching process on lines
/// that start with this.
pub(crate) const REPORT_LINE: &[u8] = b"@autocoll-bench ";

/// What rank 0 of a tcp run reports.
#[derive(Serialize, Deserialize)]
pub(crate) enum Report {
    /// The host of every rank.
    Hosts(Vec<String>),
    /// The results of one point.
    Rows(Vec<Row>),
}

/// Where rows go: the table, the progress bar and the results.
pub(crate) type Sink = Arc<dyn Fn(Vec<Row>) + Send + Sync>;

/// JSON has no NaN (a statistic of no kept repetition): it travels as null.
fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Option::<f64>::deserialize(d).map(|v| v.unwrap_or(f64::NAN))
}

/// Arguments of `autocoll bench`.
#[derive(clap::Args)]
pub struct Args {
    /// The collective to time.
    #[arg(long)]
    op: String,
    /// Implementation ids (comma list), or `all` for every family with
    /// segment sizes from 1K up to twice the message size.
    #[arg(long = "impl", default_value = "all")]
    imp: String,
    /// Ranks: `4`, a list `2,4,8` or a range `2..16` (default 4). Under
    /// `--transport mpi` mpirun decides; a given `-n` must agree with it.
    #[arg(short = 'n')]
    ranks: Option<String>,
    /// Bytes per rank: a list (K, M suffixes) or a range `1K..8M` stepping
    /// by ×--step; rounded down to whole elements (f64 for reductions).
    #[arg(long, default_value = "64K")]
    bytes: String,
    /// Factor between the sizes of a --bytes range.
    #[arg(long, default_value_t = 2)]
    step: usize,
    /// Root of rooted collectives.
    #[arg(long, default_value_t = 0)]
    root: usize,
    /// Methods (comma list): send-latency, rounds, barrier, ack, ol-i, truth.
    #[arg(long, default_value = "ol-i")]
    method: String,
    /// Also run `truth` at every point and report each method's signed
    /// relative error against it (of the medians).
    #[arg(long)]
    compare_truth: bool,
    #[command(flatten)]
    stats: crate::args::Repeat,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    transport: Transport,
    /// Also time the MPI library's own collective (`<op>:mpi`) at every
    /// size, with the same method, between autocoll's (--transport mpi).
    #[arg(long)]
    baseline: bool,
    /// Make Open MPI's tuned component run its algorithm N for the
    /// baseline (sets coll_tuned_use_dynamic_rules and
    /// coll_tuned_<op>_algorithm before MPI starts); the rows are
    /// `<op>:mpi:alg=N`. With 0 or left out, Open MPI chooses.
    #[arg(long, value_name = "N")]
    baseline_alg: Option<u32>,
    /// With --baseline-alg: the forced algorithm's segment size (sets
    /// coll_tuned_<op>_algorithm_segmentsize; Open MPI's default for a
    /// forced algorithm is 0, unsegmented); the rows are
    /// `<op>:mpi:alg=N:seg=S`.
    #[arg(long, value_name = "BYTES")]
    baseline_seg: Option<String>,
    /// Where the ranks of a tcp run start (passed to the launcher).
    #[command(flatten)]
    placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Write every result, with its raw repetitions, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the results (without raw repetitions) as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw time against message size (or ranks, for one size) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Transports `bench` can run on.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Transport {
    /// Every rank a thread of this process.
    Local,
    /// Every rank a process, started by `autocoll launch`.
    Tcp,
    /// Every process `mpirun` started is a rank (build with `--features
    /// mpi`); rank 0 reports.
    Mpi,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Local => "local",
            Transport::Tcp => "tcp",
            Transport::Mpi => "mpi",
        }
    }
}

/// One point of the sweep on one rank count, with the methods to run.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub subject: Subject,
    pub methods: Vec<Method>,
}

/// What one planned point times.
#[derive(Clone, Debug)]
pub(crate) enum Subject {
    /// One of autocoll's implementations.
    Ours(Point),
    /// The MPI library's collective, with the id its rows carry.
    Library(Baseline, String),
}

impl Subject {
    pub(crate) fn id(&self) -> String {
        match self {
            Subject::Ours(p) => p.imp.to_string(),
            Subject::Library(_, id) => id.clone(),
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        match self {
            Subject::Ours(p) => p.bytes,
            Subject::Library(b, _) => b.bytes,
        }
    }

    fn root(&self) -> usize {
        match self {
            Subject::Ours(p) => p.root,
            Subject::Library(b, _) => b.root,
        }
    }

    fn op(&self) -> Collective {
        match self {
            Subject::Ours(p) => p.imp.op,
            Subject::Library(b, _) => b.op,
        }
    }
}

/// Everything every rank needs to build the same plan.
struct Sweep<'a> {
    op: Collective,
    impls: Option<&'a [Implementation]>,
    sizes: &'a [usize],
    root: usize,
    methods: &'a [Method],
    /// The id of the library's rows, when timing it as a baseline.
    baseline: Option<String>,
}

/// One row of the results: a method at a point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub op: String,
    #[serde(rename = "impl")]
    pub imp: String,
    pub ranks: usize,
    pub bytes: usize,
    pub root: usize,
    pub method: Method,
    pub reps: usize,
    pub discarded: usize,
    #[serde(deserialize_with = "nan_if_null")]
    pub mean_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub median_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub min_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub max_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub stddev_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub ci95_lo_s: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub ci95_hi_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_vs_truth: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ol_i_s: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    pub raw_s: Vec<f64>,
}

impl Row {
    fn new(subject: &Subject, ranks: usize, m: Measurement) -> Row {
        let s = m.summary;
        Row {
            op: subject.op().to_string(),
            imp: subject.id(),
            ranks,
            bytes: subject.bytes(),
            root: subject.root(),
            method: m.method,
            reps: m.reps,
            discarded: m.discarded,
            mean_s: s.mean,
            median_s: s.median,
            min_s: s.min,
            max_s: s.max,
            stddev_s: s.stddev,
            ci95_lo_s: s.ci95_lo,
            ci95_hi_s: s.ci95_hi,
            error_vs_truth: None,
            ol_i_s: m.ol_i,
            window_s: m.window,
            raw_s: m.raw,
        }
    }
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let op: Collective =
        a.op.parse()
            .map_err(|e| Failure::Usage(format!("--op: {e}")))?;
    let forced = check_baseline(&a, op)?;
    if let (Some(forced), true) = (forced, is_mpi_rank(&a)) {
        // Before any thread starts (the Ctrl-C handler's) and before MPI_Init.
        baseline::force(op, forced)?;
    }
    let methods = methods(&a.method, a.compare_truth)?;
    let ranks = args::ranks(a.ranks.as_deref().unwrap_or("4"))?;
    let sizes = sizes(op, &args::bytes(&a.bytes, a.step)?);
    let impls = args::impls(&a.imp)?;
    if let Some(list) = &impls {
        if let Some(bad) = list.iter().find(|i| i.op != op) {
            return Err(Failure::Usage(format!(
                "--impl {bad} is not an implementation of --op {op}"
            )));
        }
    }
    // Under mpi the job's size is known once MPI has started (run_mpi).
    if op.rooted() && a.transport != Transport::Mpi {
        if let Some(&p) = ranks.iter().find(|&&p| a.root >= p) {
            return Err(Failure::Usage(format!(
                "--root {} is not a rank of a {p}-rank job",
                a.root
            )));
        }
    }
    check_options(&a)?;
    let opts = a.stats.options();
    let sweep = Sweep {
        op,
        impls: impls.as_deref(),
        sizes: &sizes,
        root: a.root,
        methods: &methods,
        baseline: a.baseline.then(|| baseline::id(op, forced)),
    };
    let plans: Vec<(usize, Vec<Planned>)> = ranks.iter().map(|&p| (p, plan(&sweep))).collect();
    let total: usize = plans
        .iter()
        .map(|(_, pl)| pl.iter().map(|x| x.methods.len()).sum::<usize>())
        .sum();
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrl_c(stop.clone());
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&a, &sweep, &opts, &stop);
    }
    if a.transport == Transport::Mpi {
        return run_mpi(&a, &sweep, &opts, &stop);
    }
    let bar = progress(total as u64);
    let rows = Arc::new(Mutex::new(Vec::<Row>::new()));
    let sink: Sink = {
        let (bar, rows) = (bar.clone(), rows.clone());
        Arc::new(move |batch: Vec<Row>| {
            // The table goes to stdout, the bar to stderr (hidden when it
            // is not a terminal); suspending the bar keeps the two apart.
            bar.suspend(|| {
                for row in &batch {
                    println!("{}", table_line(row));
                }
            });
            bar.inc(batch.len() as u64);
            rows.lock().unwrap_or_else(|p| p.into_inner()).extend(batch);
        })
    };
    println!("{}", table_header());
    let timeout = Duration::from_secs(a.timeout);
    let hosts = Arc::new(Mutex::new(vec!["localhost".to_string()]));
    let mut outcome = Ok(());
    for (p, plan) in &plans {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        outcome = match a.transport {
            Transport::Local => run_local(*p, plan, &opts, timeout, &stop, &*sink),
            Transport::Tcp => run_tcp(*p, &a.placement, a.timeout, sink.clone(), hosts.clone()),
            Transport::Mpi => unreachable!("mpi runs returned above"),
        };
        if outcome.is_err() {
            break;
        }
    }
    bar.finish_and_clear();
    let rows = std::mem::take(&mut *rows.lock().unwrap_or_else(|p| p.into_inner()));
    let hosts = hosts.lock().unwrap_or_else(|p| p.into_inner()).clone();
    finish(&a, op, &rows, hosts, outcome, &stop)
}

/// Writes the outputs of the results that finished, then reports the run.
fn finish(
    a: &Args,
    op: Collective,
    rows: &[Row],
    hosts: Vec<String>,
    outcome: anyhow::Result<()>,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    if stop.load(Ordering::Relaxed) {
        eprintln!(
            "autocoll: interrupted; writing the {} results that finished",
            rows.len()
        );
    }
    write_outputs(a, op, rows, hosts)?;
    outcome.map_err(Failure::Run)?;
    Ok(if stop.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// True in a process of an mpi run (every one is a rank).
fn is_mpi_rank(a: &Args) -> bool {
    a.transport == Transport::Mpi
}

/// Refuses baseline options that cannot apply; returns the algorithm to
/// force, if any.
fn check_baseline(a: &Args, op: Collective) -> Result<Option<baseline::Forced>, Failure> {
    if a.baseline && a.transport != Transport::Mpi {
        return Err(Failure::Usage(format!(
            "--baseline times the MPI library's collective: it needs --transport mpi (not {})",
            a.transport.name()
        )));
    }
    if a.baseline_alg.is_some() && !a.baseline {
        return Err(Failure::Usage(
            "--baseline-alg chooses the baseline's algorithm: give --baseline too".into(),
        ));
    }
    let alg = a.baseline_alg.filter(|&n| n > 0);
    let seg = match (&a.baseline_seg, alg) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(Failure::Usage(
                "--baseline-seg is the segment size of a forced algorithm: give --baseline-alg N (N ≥ 1) too".into(),
            ))
        }
        (Some(text), Some(_)) => Some(
            parse_bytes(text).map_err(|e| Failure::Usage(format!("--baseline-seg: {e}")))?,
        ),
    };
    let forced = alg.map(|alg| baseline::Forced { alg, seg });
    if let Some(f) = forced {
        baseline::mca_env(op, f)?;
    }
    let names_library = |i: &String| i.ends_with(":mpi") || i.contains(":mpi:");
    if args::impls(&a.imp).is_err() && args::split("--impl", &a.imp)?.iter().any(names_library) {
        return Err(Failure::Usage(format!(
            "--impl {}: the MPI library's collective is not an autocoll implementation; time it with --baseline",
            a.imp
        )));
    }
    Ok(forced)
}

/// Refuses option combinations that cannot run.
fn check_options(a: &Args) -> Result<(), Failure> {
    check_sweep(a.transport, &a.placement, &a.stats.options())
}

/// `tune` and `adapt` run their ranks as threads or through the launcher;
/// under mpirun only `bench` and `check` run for now.
pub(crate) fn refuse_mpi(command: &str, transport: Transport) -> Result<(), Failure> {
    if transport == Transport::Mpi {
        return Err(Failure::Usage(format!(
            "{command} runs on --transport local or tcp; --transport mpi is for bench and check"
        )));
    }
    Ok(())
}

/// `--hostfile` and `--agent` only make sense for the launcher.
pub(crate) fn check_placement(transport: Transport, placement: &Placement) -> Result<(), Failure> {
    let placed = placement.hostfile.is_some() || placement.agent.is_some();
    if placed && transport != Transport::Tcp {
        return Err(Failure::Usage(
            "--hostfile and --agent go to the launcher: use them with --transport tcp".into(),
        ));
    }
    Ok(())
}

/// Refuses sweep settings that cannot run (shared with `tune`).
pub(crate) fn check_sweep(
    transport: Transport,
    placement: &Placement,
    a: &Options,
) -> Result<(), Failure> {
    check_placement(transport, placement)?;
    // Written so that NaN is refused too.
    if a.rse.is_nan() || a.rse <= 0.0 {
        return Err(Failure::Usage(format!(
            "--rse {} must be above 0 (e.g. 0.03)",
            a.rse
        )));
    }
    if a.calls == 0 || a.max_reps == 0 {
        return Err(Failure::Usage(
            "--calls and --max-reps must be at least 1".into(),
        ));
    }
    if a.min_reps > a.max_reps {
        return Err(Failure::Usage(format!(
            "--min-reps {} is above --max-reps {}",
            a.min_reps, a.max_reps
        )));
    }
    Ok(())
}

/// The methods asked for, with `truth` first when comparing against it.
fn methods(text: &str, compare_truth: bool) -> Result<Vec<Method>, Failure> {
    let mut out: Vec<Method> = Vec::new();
    for item in args::split("--method", text)? {
        let m: Method = item
            .parse()
            .map_err(|e| Failure::Usage(format!("--method: {e}")))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if compare_truth {
        out.retain(|&m| m != Method::Truth);
        out.insert(0, Method::Truth);
    }
    Ok(out)
}

/// The sizes in effect: rounded down to whole elements, without repeats.
pub(crate) fn sizes(op: Collective, asked: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &b in asked {
        let b = measure::effective_bytes(op, b);
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// autocoll's implementations only (no baseline), for `tune`.
pub(crate) fn plan_ours(
    op: Collective,
    impls: Option<&[Implementation]>,
    sizes: &[usize],
    root: usize,
    methods: &[Method],
) -> Vec<Planned> {
    plan(&Sweep {
        op,
        impls,
        sizes,
        root,
        methods,
        baseline: None,
    })
}

/// Every (implementation, size) of the sweep on one rank count; with a
/// baseline, the library's collective comes first at each size.
fn plan(sweep: &Sweep) -> Vec<Planned> {
    let mut out = Vec::new();
    let root = sweep.root;
    let planned = |subject| Planned {
        subject,
        methods: sweep.methods.to_vec(),
    };
    for &bytes in sweep.sizes {
        if let Some(id) = &sweep.baseline {
            let point = Baseline {
                op: sweep.op,
                bytes,
                root,
            };
            out.push(planned(Subject::Library(point, id.clone())));
        }
        let chosen = match sweep.impls {
            Some(list) => list.to_vec(),
            None => Implementation::all(sweep.op, &segment_sizes(bytes)),
        };
        for imp in chosen {
            out.push(planned(Subject::Ours(Point { imp, bytes, root })));
        }
    }
    out
}

/// Powers of two from 1K up to twice the message size.
pub(crate) fn segment_sizes(bytes: usize) -> Vec<usize> {
    std::iter::successors(Some(1024usize), |s| s.checked_mul(2))
        .take_while(|&s| s <= bytes.saturating_mul(2))
        .collect()
}

/// Launches `p` copies of this command over tcp; rank 0's reported rows go
/// to `sink` as they come.
pub(crate) fn run_tcp(
    p: usize,
    placement: &Placement,
    timeout: u64,
    sink: Sink,
    hosts: Arc<Mutex<Vec<String>>>,
) -> anyhow::Result<()> {
    let report = Arc::new(
        move |line: &[u8]| match serde_json::from_slice::<Report>(line) {
            Ok(Report::Rows(rows)) => sink(rows),
            Ok(Report::Hosts(list)) => *hosts.lock().unwrap_or_else(|e| e.into_inner()) = list,
            Err(e) => eprintln!("autocoll: unreadable report from rank 0: {e}"),
        },
    );
    launch::relaunch_self(p, placement, timeout, REPORT_LINE, report).map_err(|f| match f {
        Failure::Run(e) => e,
        Failure::Usage(m) => anyhow::anyhow!(m),
    })
}

/// One rank of a tcp run: the plan for this job's size, with rank 0
/// printing its reports for the launching process.
fn as_rank(
    a: &Args,
    sweep: &Sweep,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(Duration::from_secs(a.timeout))?;
    if comm.rank() == 0 {
        say(&Report::Hosts(comm.hosts()));
    }
    let plan = plan(sweep);
    let sink = |rows: Vec<Row>| say(&Report::Rows(rows));
    rank_main(&mut comm, &plan, opts, stop, None, &sink)
        .context("running the plan")
        .map_err(Failure::Run)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a report for the launching process (rank 0 of a tcp run).
pub(crate) fn say(report: &Report) {
    let json = serde_json::to_string(report).expect("JSON of plain data");
    println!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_: &Args, _: &Sweep, _: &Options, _: &AtomicBool) -> Result<ExitCode, Failure> {
    Err(Failure::Usage(
        "--transport mpi: this autocoll was built without MPI; rebuild with `cargo build --release --features mpi`".into(),
    ))
}

/// One process of an mpi run: every process is a rank and runs the plan;
/// rank 0 prints the table and writes the outputs.
#[cfg(feature = "mpi")]
fn run_mpi(
    a: &Args,
    sweep: &Sweep,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let (mut comm, library) =
        autocoll::comm::mpi::world_with_library().context("starting the mpi transport")?;
    let p = comm.size();
    args::agree_with_mpirun(a.ranks.as_deref(), p)?;
    if sweep.op.rooted() && a.root >= p {
        return Err(Failure::Usage(format!(
            "--root {} is not a rank of a {p}-rank job",
            a.root
        )));
    }
    comm.set_timeout(Duration::from_secs(a.timeout));
    let plan = plan(sweep);
    let rows = Mutex::new(Vec::<Row>::new());
    let sink = |batch: Vec<Row>| {
        for row in &batch {
            println!("{}", table_line(row));
        }
        rows.lock().unwrap_or_else(|e| e.into_inner()).extend(batch);
    };
    if comm.rank() == 0 {
        println!("{}", table_header());
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

pub(crate) fn run_local(
    p: usize,
    plan: &[Planned],
    opts: &Options,
    timeout: Duration,
    stop: &AtomicBool,
    sink: &(dyn Fn(Vec<Row>) + Sync),
) -> anyhow::Result<()> {
    let outcomes = local::run(p, |mut comm| {
        comm.set_timeout(timeout);
        rank_main(&mut comm, plan, opts, stop, None, sink)
    });
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        outcome.with_context(|| format!("{p}-rank job, rank {rank}"))?;
    }
    Ok(())
}

/// What every rank runs: each planned point with each of its methods.
/// Before each point rank 0 tells every rank whether to go on, so that an
/// interrupt stops all ranks at the same point. `library` runs the
/// baseline's points (a plan has them only under mpi).
pub(crate) fn rank_main(
    comm: &mut Communicator,
    plan: &[Planned],
    opts: &Options,
    stop: &AtomicBool,
    library: Option<&dyn Native>,
    sink: &(dyn Fn(Vec<Row>) + Sync),
) -> autocoll::Result<()> {
    for planned in plan {
        let go = !stop.load(Ordering::Relaxed);
        if !measure::agree(comm, go)? {
            break;
        }
        let mut found = Vec::new();
        for &m in &planned.methods {
            let result = match (&planned.subject, library) {
                (Subject::Ours(point), _) => measure::run_point(comm, point, m, opts)?,
                (Subject::Library(point, _), Some(lib)) => {
                    measure::run_baseline(comm, lib, point, m, opts)?
                }
                (Subject::Library(_, id), None) => {
                    return Err(autocoll::Error::Config(format!(
                        "{id}: the MPI library's collective runs only under --transport mpi"
                    )))
                }
            };
            found.extend(result);
        }
        if comm.rank() == 0 {
            sink(rows_of(&planned.subject, comm.size(), found));
        }
    }
    Ok(())
}

/// Rows of one point, with each method's error against the truth if run.
fn rows_of(point: &Subject, ranks: usize, found: Vec<Measurement>) -> Vec<Row> {
    let truth = found.iter().find(|m| m.method == Method::Truth).cloned();
    found
        .into_iter()
        .map(|m| {
            let err = match &truth {
                Some(t) if m.method != Method::Truth => Some(m.error_vs(t)),
                _ => None,
            };
            let mut row = Row::new(point, ranks, m);
            row.error_vs_truth = err.filter(|e| e.is_finite());
            row
        })
        .collect()
}

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

pub(crate) fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{bar:30} {pos}/{len} results, {elapsed_precise} elapsed, ETA {eta}",
    )
    .expect("a valid progress template");
    bar.set_style(style);
    bar
}

fn table_header() -> String {
    format!(
        "{:<34} {:>5} {:>8} {:<12} {:>11} {:>11} {:>23} {:>5} {:>6} {:>8}",
        "impl",
        "ranks",
        "bytes",
        "method",
        "median µs",
        "mean µs",
        "95% CI of median µs",
        "reps",
        "disc",
        "vs truth"
    )
}

fn table_line(r: &Row) -> String {
    let us = |s: f64| format!("{:.2}", s * 1e6);
    let err = r
        .error_vs_truth
        .map(|e| format!("{:+.1}%", e * 100.0))
        .unwrap_or_default();
    format!(
        "{:<34} {:>5} {:>8} {:<12} {:>11} {:>11} {:>23} {:>5} {:>6} {:>8}",
        r.imp,
        r.ranks,
        format_bytes(r.bytes),
        r.method.name(),
        us(r.median_s),
        us(r.mean_s),
        format!("{} .. {}", us(r.ci95_lo_s), us(r.ci95_hi_s)),
        r.reps,
        r.discarded,
        err
    )
}

fn write_outputs(
    a: &Args,
    op: Collective,
    rows: &[Row],
    hosts: Vec<String>,
) -> Result<(), Failure> {
    let write = |path: &PathBuf, data: &[u8], what: &str| {
        autocoll::files::write_atomic(path, data)
            .with_context(|| format!("writing {what}"))
            .map_err(Failure::Run)
    };
    if let Some(path) = &a.json {
        let doc = json!({
            "schema": "autocoll.bench/1",
            "transport": a.transport.name(),
            "hosts": hosts,
            "results": rows,
        });
        let text = serde_json::to_vec_pretty(&doc).expect("JSON of plain data");
        write(path, &text, "--json")?;
    }
    if let Some(path) = &a.csv {
        write(path, csv(rows).as_bytes(), "--csv")?;
    }
    if let Some(path) = &a.plot {
        let svg = plot::svg(op, rows).map_err(|e| Failure::Run(anyhow::anyhow!("plot: {e}")))?;
        write(path, svg.as_bytes(), "--plot")?;
    }
    Ok(())
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "op,impl,ranks,bytes,root,method,reps,discarded,mean_s,median_s,min_s,max_s,stddev_s,ci95_lo_s,ci95_hi_s,error_vs_truth\n",
    );
    let num = |x: f64| {
        if x.is_finite() {
            x.to_string()
        } else {
            String::new()
        }
    };
    for r in rows {
        let fields = [
            r.op.clone(),
            r.imp.clone(),
            r.ranks.to_string(),
            r.bytes.to_string(),
            r.root.to_string(),
            r.method.name().to_string(),
            r.reps.to_string(),
            r.discarded.to_string(),
            num(r.mean_s),
            num(r.median_s),
            num(r.min_s),
            num(r.max_s),
            num(r.stddev_s),
            num(r.ci95_lo_s),
            num(r.ci95_hi_s),
            r.error_vs_truth.map(num).unwrap_or_default(),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sizes_run_from_1k_to_twice_the_message() {
        assert_eq!(segment_sizes(4096), vec![1024, 2048, 4096, 8192]);
        assert_eq!(segment_sizes(100), Vec::<usize>::new());
        assert_eq!(segment_sizes(512), vec![1024]);
    }

    #[test]
    fn methods_parse_and_truth_comes_first_when_compared() {
        let m = methods("ol-i,rounds,ol-i", true).ok().unwrap();
        assert_eq!(m, vec![Method::Truth, Method::OlI, Method::Rounds]);
        assert!(
            matches!(methods("ol-j", false), Err(Failure::Usage(e)) if e.contains("unknown method `ol-j`"))
        );
    }

    #[test]
    fn reductions_round_to_whole_f64() {
        assert_eq!(
            sizes(Collective::Allreduce, &[1, 15, 16, 17]),
            vec![0, 8, 16]
        );
        assert_eq!(sizes(Collective::Bcast, &[15]), vec![15]);
    }
}
