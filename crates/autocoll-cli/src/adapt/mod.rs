//! `autocoll adapt`: the lottery against every fixed candidate, the
//! paper's Figure 7/8 experiment (`autocoll_experiments::adapt` says what
//! it runs and reports). This file holds the arguments and their checks;
//! `ranks` runs the ranks on threads or as a tcp job, `links` slows an
//! emulated host's link with `tc`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
use autocoll::measure::effective_bytes;
use autocoll::select::lottery::Params;
use autocoll::select::parse_bytes;
use autocoll::Collective;
use autocoll_experiments::adapt::report::{analyse, report};
use autocoll_experiments::adapt::{paper_trees, replay, Disturb, Setup};
use serde_json::json;

use crate::bench::Transport;
use crate::failure::Failure;
use crate::launch::{self, Placement};
use crate::traced::TraceArg;

use links::disturb_of;
use ranks::{as_rank, run_local, run_tcp};

mod links;
mod ranks;

/// Arguments of `autocoll adapt`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the lottery against the paper's four trees: 64K broadcasts on 4 threads, 1000 calls each
  autocoll adapt --op bcast --plot adapt.svg
  # 5 seeds, rank 0's outgoing link slowed from the middle call on, kept as JSON
  autocoll adapt --op bcast --calls 400 --seeds 5 --disturb rank=0,send-delay=100us --json adapt.json")]
pub struct Args {
    /// The collective.
    #[arg(long, required_unless_present = "replay")]
    op: Option<String>,
    /// Ranks (default 4, or the tree file's ranks).
    #[arg(short = 'n')]
    ranks: Option<usize>,
    /// Bytes per rank (K, M suffixes).
    #[arg(long, default_value = "64K")]
    bytes: String,
    /// Calls per candidate and under the lottery (K).
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Candidates (comma list); default: the paper's four trees (flat,
    /// chain, binary, binomial), segmented at 16K when the message is longer.
    #[arg(long = "impl")]
    imp: Option<String>,
    /// A tree file's tree joins the candidates (see --help of `check`).
    #[command(flatten)]
    tree: crate::args::TreeFileArg,
    /// Root of rooted collectives (default 0, or the tree file's root).
    #[arg(long)]
    root: Option<usize>,
    /// Share of the tickets the best candidate holds (α).
    #[arg(long, default_value_t = Params::default().alpha)]
    alpha: f64,
    /// Seed of the lottery's draws (and of the order of the series).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Repeat with seeds --seed, --seed+1, … and report the ratios' spread
    /// over the runs (one run moves by a few percent from seed to seed);
    /// with --state, each run starts from what the runs before it saved.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    transport: Transport,
    #[command(flatten)]
    placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// The lottery's state file: read at the start, written at the end.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Slow one rank's link from the middle call on: `rank=R,delay=200us`
    /// (a sleep per segment R receives), `rank=R,send-delay=100us` (per
    /// segment it sends), or on a cluster `host=NETNS,rate=10mbit` (tbf).
    #[arg(long)]
    disturb: Option<String>,
    /// Write the results as JSON (schema autocoll.adapt/1).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw per-call times (Figure 8a) and their distribution (8b) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Run no calls: replay FILE (a --json of this command) through the
    /// lottery, each call taking its candidate's recorded time in the same
    /// round (and a recorded draw message's); --seeds N replays each run N times.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["op", "ranks", "bytes", "calls", "imp", "tree_file", "root", "state", "disturb", "transport", "seed", "timeout", "trace"])]
    replay: Option<PathBuf>,
    #[command(flatten)]
    trace: TraceArg,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    if let Some(path) = &a.replay {
        return run_replay(path, &a);
    }
    let setup = setup_of(&a)?;
    crate::bench::refuse_mpi("adapt", a.transport)?;
    crate::bench::refuse_sim("adapt", a.transport)?;
    crate::bench::check_placement(a.transport, &a.placement)?;
    a.trace.check()?;
    let trace = a.trace.dir(setup.ranks, 1);
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&setup, trace.as_deref());
    }
    eprintln!(
        "autocoll adapt: {} calls × {} candidates + lottery, {} on {} ranks, {} per rank",
        setup.calls,
        setup.candidates.len(),
        setup.op,
        setup.ranks,
        autocoll::select::format_bytes(setup.bytes)
    );
    let traces = match a.transport {
        Transport::Local => run_local(&setup, trace.as_deref())?,
        Transport::Tcp => run_tcp(setup.ranks, &a.placement, a.timeout, a.seeds)?,
        Transport::Mpi | Transport::Sim => unreachable!("refused above"),
    };
    let reports: Vec<serde_json::Value> = traces
        .iter()
        .zip(setup.seed..)
        .map(|(trace, seed)| analyse(&setup, setup.ranks, trace, seed))
        .collect();
    tell(&a, &reports)?;
    if let (Some(path), [trace]) = (&a.plot, &traces[..]) {
        let svg = crate::plot::adapt_svg(&setup.names(), &trace.fixed, &trace.lottery)
            .map_err(|e| Failure::Run(anyhow!("plot: {e}")))?;
        autocoll::files::write_atomic(path, svg.as_bytes())
            .context("writing --plot")
            .map_err(Failure::Run)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn setup_of(a: &Args) -> Result<Setup, Failure> {
    let usage = |m: String| Failure::Usage(m);
    let op: Collective =
        a.op.as_deref()
            .unwrap_or_default()
            .parse()
            .map_err(|e| usage(format!("--op: {e}")))?;
    let bytes = effective_bytes(
        op,
        parse_bytes(&a.bytes).map_err(|e| usage(format!("--bytes: {e}")))?,
    );
    let tree = crate::args::TreeFile::load(&a.tree)?;
    let ranks = a.ranks.or(tree.as_ref().map(|t| t.size())).unwrap_or(4);
    let root = a.root.or(tree.as_ref().map(|t| t.root())).unwrap_or(0);
    check_job(a, op, ranks, root)?;
    let params = params_of(a)?;
    let mut candidates = match &a.imp {
        Some(text) => crate::args::impls(text)?.unwrap_or_else(|| paper_trees(op, bytes)),
        None => paper_trees(op, bytes),
    };
    if let Some(t) = &tree {
        t.check(&[ranks], &[op], root)?;
        candidates.push(
            t.imp(op)
                .ok_or_else(|| usage(format!("--tree-file: {op} runs over no tree")))?,
        );
    }
    if let Some(bad) = candidates.iter().find(|i| i.op != op) {
        return Err(usage(format!(
            "--impl {bad} is not an implementation of --op {op}"
        )));
    }
    if candidates.is_empty() {
        return Err(usage(format!("no candidates for {op}")));
    }
    let disturb = disturb_arg(a, ranks)?;
    if a.seeds > 1 && a.plot.is_some() {
        return Err(usage("--plot draws one run: leave out --seeds".into()));
    }
    Ok(Setup {
        op,
        ranks,
        bytes,
        root,
        calls: a.calls,
        candidates,
        params,
        seed: a.seed,
        seeds: a.seeds,
        state: a.state.clone(),
        disturb,
        timeout: Duration::from_secs(a.timeout),
    })
}

/// Refuses a job of no ranks, a root outside it, and fewer than 2 calls.
fn check_job(a: &Args, op: Collective, ranks: usize, root: usize) -> Result<(), Failure> {
    if ranks == 0 {
        return Err(Failure::Usage("-n: a job needs at least 1 rank".into()));
    }
    if op.rooted() && root >= ranks {
        return Err(Failure::Usage(format!(
            "--root {root} is not a rank of a {ranks}-rank job"
        )));
    }
    if a.calls < 2 {
        return Err(Failure::Usage("--calls must be at least 2".into()));
    }
    Ok(())
}

/// `--disturb` on a job of `ranks`; throttling a host's rate needs the
/// emulated cluster of a tcp job.
fn disturb_arg(a: &Args, ranks: usize) -> Result<Option<Disturb>, Failure> {
    let disturb = a
        .disturb
        .as_deref()
        .map(|t| disturb_of(t, ranks))
        .transpose()?;
    if matches!(disturb, Some(Disturb::Rate { .. })) && a.transport != Transport::Tcp {
        return Err(Failure::Usage(
            "--disturb host=…,rate=… throttles an emulated host: use it with --transport tcp"
                .into(),
        ));
    }
    Ok(disturb)
}

/// The lottery's parameters (`--alpha`), after checking them and
/// `--seeds`, which live runs and replays share.
fn params_of(a: &Args) -> Result<Params, Failure> {
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(Failure::Usage(format!(
            "--alpha {} must lie strictly between 0 and 1",
            a.alpha
        )));
    }
    if a.seeds == 0 {
        return Err(Failure::Usage("--seeds: at least 1".into()));
    }
    Ok(Params {
        alpha: a.alpha,
        ..Params::default()
    })
}

/// Replays every run of `path` (`--seeds` times each) and reports them as
/// `adapt` reports live runs.
fn run_replay(path: &Path, a: &Args) -> Result<ExitCode, Failure> {
    let params = params_of(a)?;
    if a.plot.is_some() {
        return Err(Failure::Usage(
            "--plot draws a live run: leave it out of --replay".into(),
        ));
    }
    let at = || path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", at()))?;
    let runs = replay::runs(&text).map_err(|e| anyhow::Error::new(e).context(at()))?;
    let mut reports = replay::replay_all(&runs, &params, a.seeds)
        .map_err(|e| anyhow::Error::new(e).context(at()))?;
    for doc in &mut reports {
        doc["replay"]["from"] = json!(at());
    }
    tell(a, &reports)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the runs (one, or their spread) and writes `--json`.
fn tell(a: &Args, reports: &[serde_json::Value]) -> Result<(), Failure> {
    let (doc, text) = report(reports);
    crate::out::write(format_args!("{text}"));
    if let Some(path) = &a.json {
        let text = serde_json::to_vec_pretty(&doc).expect("JSON of plain data");
        autocoll::files::write_atomic(path, &text)
            .context("writing --json")
            .map_err(Failure::Run)?;
    }
    Ok(())
}
