//! `autocoll check`: run implementations on pseudo-random data and compare
//! every rank's result with a serial reference.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use autocoll::check::{self, Case, Config, Dtype, Failure as CaseFailure};
use autocoll::sim::Model;
use autocoll::{Builtin, Collective, Layout};
use serde_json::json;

use crate::args;
use crate::bench::Ranks;
use crate::failure::Failure;
use crate::launch::{self, Placement};
use crate::out::say;
use crate::traced::{self, TraceArg};

/// The line on which rank 0 of a `tcp` check hands its report to the
/// launching process (which takes it out of the forwarded output).
const REPORT_LINE: &[u8] = b"@autocoll-check ";

/// Arguments of `autocoll check`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # every implementation of every collective on 5 threads
  autocoll check -n 5
  # broadcast's implementations on 3 processes over tcp
  autocoll check --transport tcp -n 3 --op bcast
  # the hier trees on 8 threads laid out as a hostfile places 8 ranks
  autocoll check -n 8 --impl allreduce:hier,bcast:hier:inner=flat --hostfile hosts.txt
  # the tree of a file (one parent rank per rank) for every collective
  autocoll check --tree-file tree.txt")]
pub struct Args {
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    transport: Transport,
    /// Where the ranks of a tcp check start. A local check takes
    /// --hostfile (without --agent) as the layout its threads stand for:
    /// the hosts and switches of the ranks the hostfile places.
    #[command(flatten)]
    placement: Placement,
    /// Ranks: `5`, a list `2,3,5` or a range `2..8` (default 5). Under
    /// `--transport mpi` mpirun decides; a given `-n` must agree with it.
    #[arg(short = 'n')]
    ranks: Option<String>,
    /// Collectives: `all` or a comma list.
    #[arg(long, default_value = "all")]
    op: String,
    /// Implementation ids (comma list), or `all` for every family (the
    /// default, without --tree-file).
    #[arg(long = "impl")]
    imp: Option<String>,
    #[command(flatten)]
    tree: args::TreeFileArg,
    /// Bytes per rank: a comma list (K and M suffixes), rounded down to
    /// whole elements of the collective's element type.
    #[arg(long, default_value = "0,1,4096,65539")]
    bytes: String,
    /// Roots of rooted collectives: a comma list of ranks, `mid`, `last`,
    /// or `all` (default 0, or the tree file's root).
    #[arg(long)]
    root: Option<String>,
    /// Seed of the pseudo-random data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Element type of reduce and allreduce.
    #[arg(long, default_value = "f64")]
    dtype: String,
    /// Reduction of reduce and allreduce.
    #[arg(long, default_value = "sum")]
    reduce_op: String,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Write the outcome as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    trace: TraceArg,
}

/// Transports `check` can run on.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Transport {
    /// Every rank a thread of this process.
    Local,
    /// Every rank a process, started through `autocoll launch`'s launcher.
    Tcp,
    /// Every process `mpirun` started is a rank (build with `--features
    /// mpi`); results are also compared with the MPI library's own
    /// collectives.
    Mpi,
    /// Every rank a thread of this process on virtual time (the default
    /// model of docs/sim.md): the sim transport's delivery checked.
    Sim,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let config = Config {
        seed: a.seed,
        dtype: a
            .dtype
            .parse::<Dtype>()
            .map_err(|e| Failure::Usage(format!("--dtype: {e}")))?,
        reduce: a
            .reduce_op
            .parse::<Builtin>()
            .map_err(|e| Failure::Usage(format!("--reduce-op: {e}")))?,
    };
    a.trace.check()?;
    let ops = args::ops(&a.op)?;
    if ops.iter().any(|op| op.reduces()) {
        probe_op(&config)?;
    }
    let tree = args::TreeFile::load(&a.tree)?;
    let impls = args::Chosen::new(a.imp.as_deref(), tree.as_ref(), &ops)?;
    let roots = match (&a.root, &tree) {
        (Some(text), _) => text.clone(),
        (None, Some(t)) => t.root().to_string(),
        (None, None) => "0".into(),
    };
    let ranks = match (&a.ranks, &tree) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(t)) => Some(t.size().to_string()),
        (None, None) => None,
    };
    if let (Some(t), Some(text)) = (&tree, &ranks) {
        let p = t.size();
        let root = args::roots(&roots, p)?.first().copied().unwrap_or(0);
        t.check(&args::ranks(text)?, &ops, root)?;
    }
    let layout = local_layout(&a)?;
    let plan = Plan {
        ops,
        impls,
        sizes: args::bytes(&a.bytes, 2)?,
        config,
        roots,
        ranks,
        layout,
    };
    if matches!(a.transport, Transport::Tcp) && launch::is_rank() {
        return as_rank(&a, &plan);
    }
    let outcome = match a.transport {
        Transport::Local | Transport::Tcp | Transport::Sim => run_each_size(&a, &plan)?,
        Transport::Mpi => run_mpi(&a, &plan)?,
    };
    match outcome {
        Some((total, failures)) => finish(&a, total, &failures),
        // Under MPI, rank 0 reports for every rank.
        None => Ok(ExitCode::SUCCESS),
    }
}

/// What runs, on any number of ranks.
struct Plan {
    ops: Vec<Collective>,
    impls: args::Chosen,
    sizes: Vec<usize>,
    config: Config,
    /// `--root`, or its default.
    roots: String,
    /// `-n`, or its default (the tree file's size) when there is one.
    ranks: Option<String>,
    /// The hosts and switches local ranks stand for (`--hostfile`).
    layout: Option<Layout>,
}

impl Plan {
    fn cases(&self, a: &Args, p: usize) -> Result<Vec<Case>, Failure> {
        let roots = args::roots(&self.roots, p)?;
        let cases = cases(&self.ops, &self.impls, &self.sizes, &roots, p, a.seed);
        if cases.is_empty() {
            return Err(Failure::Usage(format!(
                "no implementation of {} matches --impl {}",
                a.op,
                a.imp.as_deref().unwrap_or("all")
            )));
        }
        Ok(cases)
    }
}

/// The layout of a local check's threads: the one of the ranks
/// `--hostfile` places (no address is resolved; an agent has no place).
fn local_layout(a: &Args) -> Result<Option<Layout>, Failure> {
    if !matches!(a.transport, Transport::Local | Transport::Sim) {
        return Ok(None);
    }
    if a.placement.agent.is_some() {
        return Err(Failure::Usage(
            "--agent starts the ranks of a tcp check: use it with --transport tcp".into(),
        ));
    }
    let Some(path) = &a.placement.hostfile else {
        return Ok(None);
    };
    let lines = autocoll::launch::read_hostfile(path).map_err(|e| Failure::Usage(e.to_string()))?;
    let slots: usize = lines.iter().map(|l| l.slots).sum();
    let layout = autocoll::launch::layout_of(slots, &lines)
        .map_err(|e| Failure::Usage(format!("--hostfile: {e}")))?;
    Ok(Some(layout))
}

/// Cases run and failures seen, once all ranks are in.
type Outcome = Option<(usize, Vec<CaseFailure>)>;

/// The `-n` sizes of a local or tcp check.
fn job_sizes(plan: &Plan) -> Result<Vec<usize>, Failure> {
    args::ranks(plan.ranks.as_deref().unwrap_or("5"))
}

/// Runs the cases once per `-n` size, on threads or launched processes.
fn run_each_size(a: &Args, plan: &Plan) -> Result<Outcome, Failure> {
    let mut total = 0;
    let mut failures = Vec::new();
    let sizes = job_sizes(plan)?;
    for &p in &sizes {
        let cases = plan.cases(a, p)?;
        let start = Instant::now();
        let timeout = Duration::from_secs(a.timeout);
        let trace = a.trace.dir(p, sizes.len());
        let found = match a.transport {
            Transport::Tcp => run_tcp(p, a)?,
            _ => {
                let layout = match &plan.layout {
                    Some(whole) => Some(first_ranks(whole, p)?),
                    None => None,
                };
                let model = matches!(a.transport, Transport::Sim).then(Model::default);
                let ranks = Ranks {
                    p,
                    sim: model.as_ref(),
                };
                run_local(
                    ranks,
                    &cases,
                    &plan.config,
                    timeout,
                    layout,
                    trace.as_deref(),
                )
                .map_err(Failure::Run)?
            }
        };
        report(p, &cases, &found, start.elapsed());
        total += cases.len();
        failures.extend(found);
    }
    Ok(Some((total, failures)))
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_: &Args, _: &Plan) -> Result<Outcome, Failure> {
    Err(Failure::Usage(
        "--transport mpi: this autocoll was built without MPI; rebuild with `cargo build --release --features mpi`".into(),
    ))
}

/// Every process is a rank; each checks its own results, also against the
/// MPI library's, and rank 0 reports for all.
#[cfg(feature = "mpi")]
fn run_mpi(a: &Args, plan: &Plan) -> Result<Outcome, Failure> {
    let (mut comm, library) =
        autocoll::comm::mpi::world_with_library().context("starting the mpi transport")?;
    let p = comm.size();
    args::agree_with_mpirun(plan.ranks.as_deref(), p)?;
    let cases = plan.cases(a, p)?;
    comm.set_timeout(Duration::from_secs(a.timeout));
    traced::start(&mut comm, a.trace.dir(p, 1).as_deref()).context("--trace")?;
    if comm.rank() == 0 {
        say!(
            "transport mpi: {p} ranks on {}; every result is also compared with the MPI library's own collective",
            hosts_of(&comm)
        );
    }
    let start = Instant::now();
    let mine = check::run_compared(&mut comm, &cases, &plan.config, Some(&library));
    let all = check::collect(&mut comm, mine).context("collecting the ranks' reports")?;
    if comm.rank() != 0 {
        return Ok(None);
    }
    report(p, &cases, &all, start.elapsed());
    Ok(Some((cases.len(), all)))
}

/// The job's hosts, each with its switch when known: `h0 (sw0), h5 (sw0/sw1)`.
#[cfg(feature = "mpi")]
fn hosts_of(comm: &autocoll::Communicator) -> String {
    let layout = match comm.layout() {
        Ok(layout) => layout,
        Err(e) => return format!("hosts that make no layout ({e})"),
    };
    let mut named: Vec<String> = (0..layout.host_count())
        .map(|h| layout.host_name(h).to_string())
        .collect();
    for rank in 0..layout.size() {
        if let Some(s) = layout.switch(rank) {
            let name = &mut named[layout.host(rank)];
            if !name.ends_with(')') {
                name.push_str(&format!(" ({})", layout.switch_path(s)));
            }
        }
    }
    named.join(", ")
}

/// Prints the summary line, writes `--json`, and picks the exit code.
fn finish(a: &Args, total: usize, failures: &[CaseFailure]) -> Result<ExitCode, Failure> {
    let failed = count_failed_cases(failures);
    say!("check: {} passed, {} failed", total - failed, failed);
    if let Some(path) = &a.json {
        let doc = json!({"schema": "autocoll.check/1", "cases": total, "failed": failed, "failures": failures});
        let text = serde_json::to_vec_pretty(&doc).expect("JSON of plain data");
        autocoll::files::write_atomic(path, &text)
            .context("writing --json")
            .map_err(Failure::Run)?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Refuses a reduction the element type does not have (bitwise on floats)
/// before any rank starts.
fn probe_op(config: &Config) -> Result<(), Failure> {
    let float = matches!(config.dtype, Dtype::F32 | Dtype::F64);
    let bitwise = matches!(config.reduce, Builtin::Band | Builtin::Bor | Builtin::Bxor);
    if float && bitwise {
        return Err(Failure::Usage(format!(
            "--reduce-op {} is not defined for --dtype {}",
            config.reduce.name(),
            config.dtype.name()
        )));
    }
    Ok(())
}

/// The layout of the first `p` ranks of `whole`.
fn first_ranks(whole: &Layout, p: usize) -> Result<Layout, Failure> {
    if p > whole.size() {
        return Err(Failure::Usage(format!(
            "the hostfile has {} slots, -n asks for {p} ranks",
            whole.size()
        )));
    }
    let mut hosts = whole.hosts();
    let mut switches = whole.switches();
    hosts.truncate(p);
    switches.truncate(p);
    Layout::new(hosts, switches).map_err(|e| Failure::Usage(e.to_string()))
}

/// Every (implementation, bytes, root) to run on `p` ranks, in a fixed order.
fn cases(
    ops: &[Collective],
    impls: &args::Chosen,
    sizes: &[usize],
    roots: &[usize],
    p: usize,
    seed: u64,
) -> Vec<Case> {
    let mut out = Vec::new();
    for &op in ops {
        let sizes: &[usize] = if op == Collective::Barrier {
            &[0]
        } else {
            sizes
        };
        let roots: &[usize] = if op.rooted() { roots } else { &[0] };
        for &bytes in sizes {
            let chosen = impls.of(op, || check::all_implementations(op, p, bytes, seed));
            for imp in chosen {
                for &root in roots {
                    out.push(Case {
                        imp: imp.clone(),
                        bytes,
                        root,
                    });
                }
            }
        }
    }
    out
}

fn run_local(
    ranks: Ranks,
    cases: &[Case],
    config: &Config,
    timeout: Duration,
    layout: Option<Layout>,
    trace: Option<&std::path::Path>,
) -> anyhow::Result<Vec<CaseFailure>> {
    let per_rank = ranks.run(|mut comm| {
        comm.set_timeout(timeout);
        if let Some(layout) = &layout {
            comm.set_layout(layout.clone())?;
        }
        traced::start(&mut comm, trace)?;
        let mine = check::run(&mut comm, cases, config);
        check::collect(&mut comm, mine)
    });
    let mut all = Vec::new();
    for (rank, outcome) in per_rank.into_iter().enumerate() {
        all.extend(outcome.with_context(|| format!("rank {rank} could not report"))?);
    }
    Ok(all)
}

/// Launches `p` copies of this program, which run [`as_rank`], and returns
/// the failures rank 0 reports.
fn run_tcp(p: usize, a: &Args) -> Result<Vec<CaseFailure>, Failure> {
    let (lines, report) = launch::collector();
    launch::relaunch_self(p, &a.placement, a.timeout, REPORT_LINE, report)?;
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
    let json = lines
        .last()
        .ok_or_else(|| Failure::Run(anyhow!("rank 0 of the {p}-rank tcp job sent no report")))?;
    serde_json::from_slice(json)
        .context("reading rank 0's report")
        .map_err(Failure::Run)
}

/// One rank of a `tcp` check: runs every case, and rank 0 prints the
/// failures of all ranks on one line for the launching process.
fn as_rank(a: &Args, plan: &Plan) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(Duration::from_secs(a.timeout))?;
    let p = comm.size();
    let cases = plan.cases(a, p)?;
    let trace = a.trace.dir(p, job_sizes(plan)?.len());
    traced::start(&mut comm, trace.as_deref())
        .context("--trace")
        .map_err(Failure::Run)?;
    let mine = check::run(&mut comm, &cases, &plan.config);
    let all = check::collect(&mut comm, mine)
        .context("collecting the failures at rank 0")
        .map_err(Failure::Run)?;
    if comm.rank() == 0 {
        let json = serde_json::to_string(&all).expect("JSON of plain data");
        say!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
    }
    Ok(ExitCode::SUCCESS)
}

fn same_case(f: &CaseFailure, p: usize, c: &Case) -> bool {
    f.ranks == p && f.bytes == c.bytes && f.root == c.root && f.imp == c.imp.to_string()
}

fn report(p: usize, cases: &[Case], failures: &[CaseFailure], took: Duration) {
    for case in cases {
        let bad: Vec<&CaseFailure> = failures.iter().filter(|f| same_case(f, p, case)).collect();
        let status = if bad.is_empty() { "ok  " } else { "FAIL" };
        let root = if case.imp.op.rooted() {
            format!(" root={}", case.root)
        } else {
            String::new()
        };
        say!("{status} n={p} bytes={}{root} {}", case.bytes, case.imp);
        for f in bad {
            say!("       rank {}: {}", f.rank, f.reason);
        }
    }
    eprintln!(
        "n={p}: {} cases in {:.2} s",
        cases.len(),
        took.as_secs_f64()
    );
}

fn count_failed_cases(failures: &[CaseFailure]) -> usize {
    let mut keys: Vec<_> = failures
        .iter()
        .map(|f| (f.ranks, &f.imp, f.bytes, f.root))
        .collect();
    keys.sort();
    keys.dedup();
    keys.len()
}
