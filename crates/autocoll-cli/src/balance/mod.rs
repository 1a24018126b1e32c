//! `autocoll balance`: the experiment of Soga et al. (2007) as a command
//! (`autocoll_experiments::balance` says what it runs and measures). This
//! file holds the arguments and their checks, and runs the ranks on
//! threads or as the processes of a tcp job.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
use autocoll::balance::{Mode, Params};
use autocoll::select::{format_bytes, parse_bytes};
use autocoll::{Algorithm, Collective, Implementation};
use autocoll_experiments::balance::{self, moves_of, report, Load, Setup, Trace};

use crate::bench::Transport;
use crate::failure::Failure;
use crate::launch::{self, Placement};
use crate::out::say;

/// Rank 0 of a tcp run hands its trace to the launching process on a line
/// that starts with this.
const REPORT_LINE: &[u8] = b"@autocoll-balance ";

/// Arguments of `autocoll balance`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the paper's case: the root's first receiver busy 200us before every 16-byte broadcast, 8 processes
  autocoll balance --op bcast -n 8 --transport tcp --load work=200us --calls 400
  # the load moves to rank 3 at call 300; a binary tree; only the sorting balancer; kept as JSON and SVG
  autocoll balance --op bcast -n 8 --load rank=1,work=200us --load-moves-at 300:rank=3 \\
      --impl bcast:binary --mode sort --calls 600 --json b.json --plot b.svg
  # no load: what the balancers cost when nobody is late
  autocoll balance --op bcast -n 8 --transport tcp --calls 400")]
pub struct Args {
    /// The collective (the balancer balances bcast).
    #[arg(long, default_value = "bcast")]
    op: String,
    /// Ranks.
    #[arg(short = 'n', default_value_t = 8)]
    ranks: usize,
    /// Bytes per broadcast (K, M suffixes).
    #[arg(long, default_value = "16")]
    bytes: String,
    /// Calls per series (K).
    #[arg(long, default_value_t = 400)]
    calls: usize,
    /// The pseudo-load: `rank=R,work=T` (a busy loop of T, e.g. 200us,
    /// before every call on rank R; R defaults to the root's first
    /// receiver in the binomial tree). Without it no rank is loaded.
    #[arg(long)]
    load: Option<String>,
    /// The load moves to another rank from a call on: `CALL:rank=R2`
    /// (CALL counts from 0).
    #[arg(long, value_name = "CALL:rank=R2")]
    load_moves_at: Option<String>,
    /// The broadcast, a tree implementation (bcast:binomial,
    /// bcast:binary, bcast:knomial:k=4, bcast:chain:seg=8K, …).
    #[arg(long = "impl", default_value = "bcast:binomial")]
    imp: String,
    /// Which balancers run beside the identity table: swap, sort or both.
    #[arg(long, default_value = "both")]
    mode: String,
    /// The root of every broadcast.
    #[arg(long, default_value_t = 0)]
    root: usize,
    /// The balancers' period N (calls between decisions while they have
    /// something to do).
    #[arg(long, default_value_t = Params::default().period)]
    period: u32,
    /// The balancers' threshold: a wait must move by more than this to be
    /// reported (ns, us, ms, s).
    #[arg(long, default_value = "20us")]
    threshold: String,
    /// Seed of the order of the series in each round.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    transport: Transport,
    #[command(flatten)]
    placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Write the results as JSON (schema autocoll.balance/1).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw per-call time of every series and the table changes as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let setup = setup_of(&a)?;
    crate::bench::refuse_mpi("balance", a.transport)?;
    crate::bench::refuse_sim("balance", a.transport)?;
    crate::bench::check_placement(a.transport, &a.placement)?;
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&setup);
    }
    eprintln!(
        "autocoll balance: {} calls × {} series of {} on {} ranks, {} per call, load {}",
        setup.calls,
        setup.modes.len() + 1,
        setup.imp,
        setup.ranks,
        format_bytes(setup.bytes),
        match setup.load {
            Some(l) => format!("{:?} on rank {}", l.work, l.rank),
            None => "none".into(),
        }
    );
    let trace = match a.transport {
        Transport::Local => balance::run_local(&setup)?,
        Transport::Tcp => run_tcp(&a)?,
        Transport::Mpi | Transport::Sim => unreachable!("refused above"),
    };
    let doc = report::analyse(&setup, a.transport.name(), &trace);
    crate::out::write(format_args!("{}", report::text(&doc)));
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&doc).expect("JSON of plain data");
        autocoll::files::write_atomic(path, text.as_bytes())
            .context("writing --json")
            .map_err(Failure::Run)?;
    }
    if let Some(path) = &a.plot {
        let svg = crate::plot::balance_svg(&doc)
            .map_err(|e| Failure::Run(anyhow::anyhow!("plot: {e}")))?;
        autocoll::files::write_atomic(path, svg.as_bytes())
            .context("writing --plot")
            .map_err(Failure::Run)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn setup_of(a: &Args) -> Result<Setup, Failure> {
    check_job(a)?;
    let bytes = parse_bytes(&a.bytes).map_err(|e| Failure::Usage(format!("--bytes: {e}")))?;
    let imp = tree_of(a)?;
    let load = a
        .load
        .as_deref()
        .map(|t| load_arg(t, a.ranks, a.root))
        .transpose()?;
    let moves = a
        .load_moves_at
        .as_deref()
        .map(|t| moves_arg(t, a.ranks, a.calls))
        .transpose()?;
    if moves.is_some() && load.is_none() {
        return Err(Failure::Usage(
            "--load-moves-at moves the --load: give --load too".into(),
        ));
    }
    Ok(Setup {
        ranks: a.ranks,
        bytes,
        calls: a.calls,
        imp,
        root: a.root,
        load,
        moves,
        modes: modes_of(a)?,
        params: params_of(a)?,
        seed: a.seed,
        timeout: Duration::from_secs(a.timeout),
    })
}

/// Refuses an `--op` other than bcast, and ranks, root or calls the
/// balancer cannot run with.
fn check_job(a: &Args) -> Result<(), Failure> {
    let usage = |m: String| Failure::Usage(m);
    let op: Collective = a.op.parse().map_err(|e| usage(format!("--op: {e}")))?;
    if op != Collective::Bcast {
        return Err(usage(format!(
            "--op {op}: the balancer balances bcast only (docs/balance.md says why)"
        )));
    }
    if a.ranks < 2 {
        return Err(usage(format!(
            "-n {}: balancing needs at least 2 ranks",
            a.ranks
        )));
    }
    if a.root >= a.ranks {
        return Err(usage(format!(
            "--root {} is not a rank of a {}-rank job",
            a.root, a.ranks
        )));
    }
    if a.calls < 2 {
        return Err(usage("--calls must be at least 2".into()));
    }
    Ok(())
}

/// `--impl`, which must be a bcast tree.
fn tree_of(a: &Args) -> Result<Implementation, Failure> {
    let imp: Implementation = a
        .imp
        .parse()
        .map_err(|e| Failure::Usage(format!("--impl {}: {e}", a.imp)))?;
    if imp.op != Collective::Bcast || !matches!(imp.algorithm, Algorithm::Tree(_)) {
        return Err(Failure::Usage(format!(
            "--impl {imp}: the balancer reorders trees: give a bcast tree (bcast:binomial, bcast:binary, …)"
        )));
    }
    Ok(imp)
}

/// The balanced series' modes: `--mode`, or swap and sort for `both`.
fn modes_of(a: &Args) -> Result<Vec<Mode>, Failure> {
    Ok(match a.mode.as_str() {
        "both" => vec![Mode::Swap, Mode::Sort],
        other => vec![other
            .parse::<Mode>()
            .map_err(|e| Failure::Usage(format!("--mode: {e} or both")))?],
    })
}

/// The balancers' parameters from `--period` and `--threshold`.
fn params_of(a: &Args) -> Result<Params, Failure> {
    let threshold = autocoll::clock::parse_duration(&a.threshold)
        .map_err(|e| Failure::Usage(format!("--threshold {}: {e}", a.threshold)))?;
    let params = Params {
        period: a.period,
        threshold,
        ..Params::default()
    };
    params
        .check()
        .map_err(|e| Failure::Usage(format!("--period/--threshold: {e}")))?;
    Ok(params)
}

/// `--load rank=R,work=T` (rank optional).
fn load_arg(text: &str, ranks: usize, root: usize) -> Result<Load, Failure> {
    Load::parse(text, ranks, root).map_err(|e| Failure::Usage(format!("--load {text}: {e}")))
}

/// `--load-moves-at CALL:rank=R2`: (CALL, R2).
fn moves_arg(text: &str, ranks: usize, calls: usize) -> Result<(usize, usize), Failure> {
    moves_of(text, ranks, calls).map_err(|e| Failure::Usage(format!("--load-moves-at {text}: {e}")))
}

/// Runs this command again as the ranks of a tcp job; rank 0's trace.
fn run_tcp(a: &Args) -> Result<Trace, Failure> {
    let (lines, report) = launch::collector();
    launch::relaunch_self(a.ranks, &a.placement, a.timeout, REPORT_LINE, report)?;
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
    let [line] = &lines[..] else {
        return Err(Failure::Run(anyhow!(
            "rank 0 reported {} traces, not 1",
            lines.len()
        )));
    };
    serde_json::from_slice(line)
        .context("reading rank 0's trace")
        .map_err(Failure::Run)
}

/// A rank of a tcp job: runs the series; rank 0 prints its trace.
fn as_rank(setup: &Setup) -> Result<ExitCode, Failure> {
    let mut comm = launch::join(setup.timeout)?;
    if let Some(trace) = balance::run(&mut comm, setup)? {
        let json = serde_json::to_string(&trace).expect("JSON of plain data");
        say!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_loads_and_moves_name_the_flag() {
        assert!(load_arg("rank=3,work=200us", 8, 0).is_ok());
        for bad in ["rank=9,work=1ms", "rank=1", "speed=2"] {
            match load_arg(bad, 8, 0) {
                Err(Failure::Usage(m)) => assert!(m.starts_with(&format!("--load {bad}: ")), "{m}"),
                _ => panic!("--load {bad} accepted"),
            }
        }
        for bad in ["400:rank=1", "x:rank=1", "10:rank=8", "10"] {
            match moves_arg(bad, 8, 400) {
                Err(Failure::Usage(m)) => assert!(m.contains("--load-moves-at"), "{m}"),
                _ => panic!("--load-moves-at {bad} accepted"),
            }
        }
    }
}
