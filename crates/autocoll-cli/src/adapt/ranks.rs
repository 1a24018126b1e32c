//! Where the ranks of `autocoll adapt` run: a job of threads, or the
//! processes of a tcp job this command starts again, whose rank 0 reports
//! one trace line per seed. Each rank records its calls if `--trace` asked
//! it to, and rank 0 says when the ranks outnumber a machine's cores.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use autocoll::{local, Communicator};
use autocoll_experiments::adapt::{self, Setup, Trace};

use super::links::Tc;
use crate::failure::Failure;
use crate::launch::{self, Placement};
use crate::out::say;

/// Rank 0 of a tcp run hands its trace to the launching process on a line
/// that starts with this.
const REPORT_LINE: &[u8] = b"@autocoll-adapt ";

/// One job of threads runs every seed in turn, as the processes of a tcp
/// run do (so that `--trace` records all seeds' calls in one run).
pub(super) fn run_local(setup: &Setup, trace: Option<&Path>) -> Result<Vec<Trace>, Failure> {
    let p = setup.ranks;
    let outcomes = local::run(p, |mut comm| {
        comm.set_timeout(setup.timeout);
        start(&mut comm, trace)?;
        let mut found = Vec::new();
        for seeded in setup.each_seed() {
            let trace = adapt::run(&mut comm, &seeded, None)
                .with_context(|| format!("seed {}", seeded.seed))?;
            found.extend(trace);
        }
        anyhow::Ok(found)
    });
    let mut traces = Vec::new();
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let found = outcome
            .with_context(|| format!("{p}-rank job, rank {rank}"))
            .map_err(Failure::Run)?;
        traces.extend(found);
    }
    if traces.len() as u64 != setup.seeds {
        return Err(Failure::Run(anyhow!(
            "rank 0 returned {} traces for {} seeds",
            traces.len(),
            setup.seeds
        )));
    }
    Ok(traces)
}

/// Every rank before the first seed: its recording if `--trace` asked for
/// one, and rank 0's word on crowded cores.
fn start(comm: &mut Communicator, trace: Option<&Path>) -> anyhow::Result<()> {
    crate::traced::start(comm, trace).context("--trace")?;
    warn_if_crowded(comm)
}

/// Rank 0 says once when the ranks outnumber a machine's cores: then every
/// series' call times include waits for a core.
fn warn_if_crowded(comm: &mut Communicator) -> anyhow::Result<()> {
    let found = autocoll::measure::Machines::of(comm).context("finding the machines")?;
    if comm.rank() != 0 {
        return Ok(());
    }
    if let Some(text) = launch::binding_note(&found) {
        eprintln!("autocoll: {text}");
    }
    if let Some(text) = found.warning(&[]) {
        eprintln!("autocoll: {text}: every call's time includes waits for a core");
    }
    Ok(())
}

/// The `p` ranks as a tcp job this command starts again; rank 0 reports
/// one trace line per seed.
pub(super) fn run_tcp(
    p: usize,
    placement: &Placement,
    timeout: u64,
    seeds: u64,
) -> Result<Vec<Trace>, Failure> {
    let (lines, report) = launch::collector();
    launch::relaunch_self(p, placement, timeout, REPORT_LINE, report)?;
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
    if lines.len() as u64 != seeds {
        return Err(Failure::Run(anyhow!(
            "rank 0 reported {} traces for {} seeds",
            lines.len(),
            seeds
        )));
    }
    lines
        .iter()
        .map(|line| {
            serde_json::from_slice(line)
                .context("reading rank 0's trace")
                .map_err(Failure::Run)
        })
        .collect()
}

/// A rank of a tcp job: runs every seed; rank 0 prints each one's trace.
pub(super) fn as_rank(setup: &Setup, trace: Option<&Path>) -> Result<ExitCode, Failure> {
    let mut comm = launch::join(setup.timeout)?;
    start(&mut comm, trace)?;
    for seeded in setup.each_seed() {
        if let Some(trace) = adapt::run(&mut comm, &seeded, Some(&Tc))? {
            let json = serde_json::to_string(&trace).expect("JSON of plain data");
            say!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
        }
    }
    Ok(ExitCode::SUCCESS)
}
