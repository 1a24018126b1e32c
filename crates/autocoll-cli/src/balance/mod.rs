//! `autocoll balance`: the experiment of Soga et al. (2007) as a command.
//! One rank works (a busy loop) before every broadcast; the same
//! broadcast runs K times under the identity table, under the paper's
//! swapping balancer and under the sorting balancer, interleaved round by
//! round in a fresh random order so that the machine's drift hits all
//! alike, every call after an untimed barrier. Each balancer is its own
//! instance on its own report tag, put into the communicator for its
//! calls only: what one series learns never reaches another.
//!
//! Measures, per series: the total time inside the broadcast (the sum over
//! ranks and calls of leave − enter, the paper's measure), the per-call
//! span, the reduction against the identity table, the call from which the
//! table holds still and how many times it changed.
//!
//! This file holds the arguments and their checks; `run` runs the series
//! on every rank, `report` turns rank 0's times into the report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use autocoll::balance::{Mode, Params};
use autocoll::select::{format_bytes, parse_bytes};
use autocoll::{Algorithm, Collective, Implementation, Shape, Tree};

use crate::bench::Transport;
use crate::launch::{self, Placement};
use crate::Failure;

mod report;
mod run;

pub(crate) use report::Report;

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

/// A busy rank: `rank` works `work` before every call.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Load {
    rank: usize,
    work: Duration,
}

/// What every rank needs to run the experiment.
#[derive(Clone)]
struct Setup {
    ranks: usize,
    bytes: usize,
    calls: usize,
    imp: Implementation,
    root: usize,
    load: Option<Load>,
    /// From this call on the load is on this rank.
    moves: Option<(usize, usize)>,
    /// The balanced series' parameters (identity is always run first).
    modes: Vec<Mode>,
    params: Params,
    seed: u64,
    timeout: Duration,
}

impl Setup {
    /// The rank that works before call `k`, and how long.
    fn load_at(&self, k: usize) -> Option<Load> {
        let load = self.load?;
        match self.moves {
            Some((at, rank)) if k >= at => Some(Load { rank, ..load }),
            _ => Some(load),
        }
    }

    /// The series' names: identity, then each mode's.
    fn names(&self) -> Vec<String> {
        let modes = self.modes.iter().map(|m| m.name().to_string());
        std::iter::once("identity".to_string())
            .chain(modes)
            .collect()
    }
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let setup = setup_of(&a)?;
    crate::bench::refuse_mpi("balance", a.transport)?;
    crate::bench::refuse_sim("balance", a.transport)?;
    crate::bench::check_placement(a.transport, &a.placement)?;
    if a.transport == Transport::Tcp && launch::is_rank() {
        return run::as_rank(&setup);
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
        Transport::Local => run::run_local(&setup)?,
        Transport::Tcp => run::run_tcp(&a)?,
        Transport::Mpi | Transport::Sim => unreachable!("refused above"),
    };
    let doc = report::analyse(&setup, a.transport.name(), &trace);
    report::print(&doc);
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
    let bytes = parse_bytes(&a.bytes).map_err(|e| usage(format!("--bytes: {e}")))?;
    let imp: Implementation = a
        .imp
        .parse()
        .map_err(|e| usage(format!("--impl {}: {e}", a.imp)))?;
    if imp.op != Collective::Bcast || !matches!(imp.algorithm, Algorithm::Tree(_)) {
        return Err(usage(format!(
            "--impl {imp}: the balancer reorders trees: give a bcast tree (bcast:binomial, bcast:binary, …)"
        )));
    }
    let load = a
        .load
        .as_deref()
        .map(|t| load_of(t, a.ranks, a.root))
        .transpose()?;
    let moves = a
        .load_moves_at
        .as_deref()
        .map(|t| moves_of(t, a.ranks, a.calls))
        .transpose()?;
    if moves.is_some() && load.is_none() {
        return Err(usage(
            "--load-moves-at moves the --load: give --load too".into(),
        ));
    }
    let modes = match a.mode.as_str() {
        "both" => vec![Mode::Swap, Mode::Sort],
        other => vec![other
            .parse::<Mode>()
            .map_err(|e| usage(format!("--mode: {e} or both")))?],
    };
    let threshold = autocoll::clock::parse_duration(&a.threshold)
        .map_err(|e| usage(format!("--threshold {}: {e}", a.threshold)))?;
    let params = Params {
        period: a.period,
        threshold,
        ..Params::default()
    };
    params
        .check()
        .map_err(|e| usage(format!("--period/--threshold: {e}")))?;
    Ok(Setup {
        ranks: a.ranks,
        bytes,
        calls: a.calls,
        imp,
        root: a.root,
        load,
        moves,
        modes,
        params,
        seed: a.seed,
        timeout: Duration::from_secs(a.timeout),
    })
}

/// `--load rank=R,work=T` (rank optional).
fn load_of(text: &str, ranks: usize, root: usize) -> Result<Load, Failure> {
    let bad = |why: String| {
        Failure::Usage(format!(
            "--load {text}: {why} (expected rank=R,work=T, e.g. rank=1,work=200us)"
        ))
    };
    let (mut rank, mut work) = (None, None);
    for item in text.split(',') {
        match item.trim().split_once('=') {
            Some(("rank", r)) => rank = Some(rank_of(r, ranks).map_err(bad)?),
            Some(("work", t)) => {
                work = Some(
                    autocoll::clock::parse_duration(t)
                        .map_err(|e| bad(format!("work={t}: {e}")))?,
                )
            }
            _ => return Err(bad(format!("`{item}` is not rank=R or work=T"))),
        }
    }
    let work = work.ok_or_else(|| bad("no work=T".into()))?;
    let rank = rank.unwrap_or_else(|| first_receiver(ranks, root));
    Ok(Load { rank, work })
}

/// `--load-moves-at CALL:rank=R2`: (CALL, R2).
fn moves_of(text: &str, ranks: usize, calls: usize) -> Result<(usize, usize), Failure> {
    let bad = |why: String| {
        Failure::Usage(format!(
            "--load-moves-at {text}: {why} (expected CALL:rank=R2, e.g. 200:rank=3)"
        ))
    };
    let (call, rank) = text.split_once(':').ok_or_else(|| bad("no `:`".into()))?;
    let call: usize = call
        .trim()
        .parse()
        .map_err(|_| bad(format!("`{call}` is not a call number")))?;
    if call == 0 || call >= calls {
        return Err(bad(format!(
            "call {call} is not between 1 and --calls {calls} - 1"
        )));
    }
    let rank = match rank.trim().split_once('=') {
        Some(("rank", r)) => rank_of(r, ranks).map_err(bad)?,
        _ => return Err(bad(format!("`{rank}` is not rank=R2"))),
    };
    Ok((call, rank))
}

fn rank_of(text: &str, ranks: usize) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(r) if r < ranks => Ok(r),
        Ok(r) => Err(format!("rank {r} is not a rank of a {ranks}-rank job")),
        Err(_) => Err(format!("rank `{text}` is not a number")),
    }
}

/// The paper's loaded rank: the root's first receiver in the binomial
/// tree under the identity table, the child with the largest subtree (the
/// first it sends to; on ties, the earliest in send order).
fn first_receiver(ranks: usize, root: usize) -> usize {
    let tree =
        Tree::build(&Shape::Binomial, ranks, root, None).expect("binomial trees of any size");
    let kids = tree.children(root);
    let most = kids
        .iter()
        .map(|&k| tree.subtree(k).len())
        .max()
        .unwrap_or(0);
    kids.iter()
        .copied()
        .find(|&k| tree.subtree(k).len() == most)
        .unwrap_or(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_moves_parse_and_bad_ones_name_the_flag() {
        let l = load_of("rank=3,work=200us", 8, 0).ok().unwrap();
        assert_eq!(
            l,
            Load {
                rank: 3,
                work: Duration::from_micros(200)
            }
        );
        let by_default = load_of("work=1ms", 8, 0).ok().unwrap();
        let tree = Tree::build(&Shape::Binomial, 8, 0, None).unwrap();
        assert_eq!(
            tree.subtree(by_default.rank).len(),
            4,
            "the root's largest subtree"
        );
        assert_eq!(moves_of("300:rank=5", 8, 400).ok(), Some((300, 5)));
        for (bad, says) in [
            ("rank=9,work=1ms", "not a rank"),
            ("rank=1", "no work"),
            ("speed=2", "is not rank=R"),
        ] {
            match load_of(bad, 8, 0) {
                Err(Failure::Usage(m)) => assert!(m.contains("--load") && m.contains(says), "{m}"),
                _ => panic!("--load {bad} accepted"),
            }
        }
        for bad in ["400:rank=1", "x:rank=1", "10:rank=8", "10"] {
            match moves_of(bad, 8, 400) {
                Err(Failure::Usage(m)) => assert!(m.contains("--load-moves-at"), "{m}"),
                _ => panic!("--load-moves-at {bad} accepted"),
            }
        }
    }
}
