//! Running the series: every rank warms up, then runs K rounds, each with
//! one call of every fixed candidate and one under the lottery in a fresh
//! random order, every call after an untimed barrier; rank 0 brings the
//! times together into a [`Trace`]. On threads ([`run_local`]) or as
//! processes the launcher started ([`run_tcp`], [`as_rank`]).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use autocoll::clock::now_ns;
use autocoll::measure::Caller;
use autocoll::select::lottery::Rng;
use autocoll::select::state::{Fingerprint, Store};
use autocoll::{local, Algorithm, Collective, Communicator, Implementation, Shape};

use super::disturb::{install_delay, start_disturbance, undo_throttle};
use super::log::{Log, Logged, Trace};
use super::{Args, Setup};
use crate::launch;
use crate::out::say;
use crate::Failure;

/// Rank 0 of a tcp run hands its trace to the launching process on a line
/// that starts with this.
const REPORT_LINE: &[u8] = b"@autocoll-adapt ";

/// Untimed calls of every candidate before the experiment (connections,
/// caches, page faults).
const WARMUP: usize = 5;

/// One job of `p` threads runs every seed in turn, as the processes of a
/// tcp run do (so that `--trace` records all seeds' calls in one run).
pub(super) fn run_local(p: usize, setup: &Setup) -> Result<Vec<Trace>, Failure> {
    let outcomes = local::run(p, |mut comm| {
        comm.set_timeout(setup.timeout);
        start_trace(&mut comm, setup)?;
        warn_if_crowded(&mut comm)?;
        let mut found = Vec::new();
        for seeded in setup.each_seed() {
            let trace =
                rank_main(&mut comm, &seeded).with_context(|| format!("seed {}", seeded.seed))?;
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

/// Starts this rank's recording if `--trace` asked for one.
fn start_trace(comm: &mut Communicator, setup: &Setup) -> anyhow::Result<()> {
    crate::traced::start(comm, setup.trace.as_deref()).context("--trace")
}

/// Rank 0 says once when the ranks outnumber a machine's cores: then every
/// series' call times include waits for a core.
fn warn_if_crowded(comm: &mut Communicator) -> anyhow::Result<()> {
    let found = autocoll::measure::Machines::of(comm).context("finding the machines")?;
    if comm.rank() != 0 {
        return Ok(());
    }
    if let Some(text) = crate::launch::binding_note(&found) {
        eprintln!("autocoll: {text}");
    }
    if let Some(text) = found.warning(&[]) {
        eprintln!("autocoll: {text}: every call's time includes waits for a core");
    }
    Ok(())
}

/// Rank 0 reports one trace line per seed.
pub(super) fn run_tcp(p: usize, a: &Args) -> Result<Vec<Trace>, Failure> {
    let (lines, report) = launch::collector();
    launch::relaunch_self(p, &a.placement, a.timeout, REPORT_LINE, report)?;
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
    if lines.len() as u64 != a.seeds {
        return Err(Failure::Run(anyhow!(
            "rank 0 reported {} traces for {} seeds",
            lines.len(),
            a.seeds
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

pub(super) fn as_rank(setup: &Setup) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(setup.timeout)?;
    start_trace(&mut comm, setup).map_err(Failure::Run)?;
    warn_if_crowded(&mut comm).map_err(Failure::Run)?;
    for seeded in setup.each_seed() {
        if let Some(trace) = rank_main(&mut comm, &seeded).map_err(Failure::Run)? {
            let json = serde_json::to_string(&trace).expect("JSON of plain data");
            say!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Every rank: warm up, run the interleaved rounds, bring the times to rank 0.
fn rank_main(comm: &mut Communicator, s: &Setup) -> anyhow::Result<Option<Trace>> {
    let size = comm.size();
    let log = install_lottery(comm, s);
    let delay = install_delay(comm, s);
    let mut callers: Vec<Caller> = s
        .candidates
        .iter()
        .map(|c| Caller::of(c, s.bytes, size))
        .collect();
    for _ in 0..WARMUP {
        for c in &mut callers {
            c.call(comm, s.root)?;
        }
    }
    let series = s.candidates.len() + 1;
    let mut enter = vec![0u64; series * s.calls];
    let mut leave = vec![0u64; series * s.calls];
    let mut restore = None;
    let half = s.calls / 2;
    // Each timed call starts from an untimed barrier: back to back, a
    // call's span would include the stragglers of the call before it (a
    // root leaves a broadcast long before its leaves do), which smears
    // every series' times into the same average.
    let barrier = separating_barrier();
    // The same seed on every rank: all ranks run the same order.
    let mut order = Order(Rng::new(s.seed ^ 0x0005_eed0_0de5));
    let outcome = (|| -> anyhow::Result<()> {
        for k in 0..s.calls {
            if k == half {
                restore = start_disturbance(comm, s, delay.as_deref())?;
            }
            // Each round runs the series, the lottery's included, in a
            // fresh random order: a call leaves state behind (the emulated
            // links' token buckets, TCP's windows, caches) that the next
            // call inherits, and in a fixed cyclic order every series would
            // always follow the same one (the lottery's binomial calls,
            // always after the fixed binomial's, measured 25% slower).
            for c in order.shuffled(series) {
                comm.barrier_with(&barrier)?;
                enter[c * s.calls + k] = now_ns();
                match callers.get_mut(c) {
                    Some(caller) => caller.call(comm, s.root)?,
                    None => callers[0].call_selected(comm, s.root)?,
                }
                leave[c * s.calls + k] = now_ns();
            }
        }
        Ok(())
    })();
    if let Some(undo) = restore {
        undo_throttle(&undo);
    }
    outcome?;
    comm.save_selector().context("saving the lottery's state")?;
    let spans = agreed_spans(comm, &enter, &leave)?;
    let Some(spans) = spans else { return Ok(None) };
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    let names: Vec<String> = s.candidates.iter().map(|c| c.to_string()).collect();
    let mut fixed: Vec<Vec<f64>> = spans.chunks(s.calls).map(<[f64]>::to_vec).collect();
    let lottery = fixed.pop().expect("the lottery's series");
    Ok(Some(log.trace(&names, comm.hosts(), fixed, lottery)))
}

/// Random orders of the series of a round.
pub(crate) struct Order(pub(crate) Rng);

impl Order {
    /// 0..n in a random order.
    pub(crate) fn shuffled(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        self.0.shuffle(&mut v);
        v
    }
}

fn install_lottery(comm: &mut Communicator, s: &Setup) -> Arc<Mutex<Log>> {
    let mut lottery = s.lottery();
    if let Some(path) = &s.state {
        let fingerprint = Fingerprint::new(&comm.hosts(), comm.transport_kind())
            .measuring(lottery.params().objective);
        lottery = lottery.with_store(Store::new(path, fingerprint, comm.rank() == 0));
    }
    let (logged, log) = Logged::new(lottery, s.calls);
    comm.set_selector(Box::new(logged));
    log
}

/// The barrier between timed calls; not the plain barrier, which would go
/// through the lottery.
pub(crate) fn separating_barrier() -> Implementation {
    Implementation::new(Collective::Barrier, Algorithm::Dissemination, None)
        .expect("the dissemination barrier exists")
}

/// Every call's time as all ranks agree on it, at rank 0: the span
/// max(leave) − min(enter) with a shared clock, else the longest rank's
/// duration.
fn agreed_spans(
    comm: &mut Communicator,
    enter: &[u64],
    leave: &[u64],
) -> anyhow::Result<Option<Vec<f64>>> {
    let Some(all) = gather_times(comm, enter, leave)? else {
        return Ok(None);
    };
    let shared = comm.shared_clock();
    Ok(Some(
        (0..enter.len()).map(|i| all.span(i, shared)).collect(),
    ))
}

/// Every rank's enter and leave times of every call, at rank 0.
pub(crate) struct Times {
    /// Per rank: the enter times of every call, then the leave times.
    all: Vec<u64>,
    calls: usize,
}

impl Times {
    /// Each rank's (enter, leave) of call `i`.
    pub(crate) fn of_call(&self, i: usize) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.all
            .chunks(2 * self.calls)
            .map(move |r| (r[i], r[self.calls + i]))
    }

    /// Call `i`'s time (s): max(leave) − min(enter) when the ranks share a
    /// clock, else the longest rank's duration.
    pub(crate) fn span(&self, i: usize, shared: bool) -> f64 {
        let (mut lo, mut hi, mut longest) = (u64::MAX, 0u64, 0u64);
        for (e, l) in self.of_call(i) {
            lo = lo.min(e);
            hi = hi.max(l);
            longest = longest.max(l.saturating_sub(e));
        }
        let ns = if shared {
            hi.saturating_sub(lo)
        } else {
            longest
        };
        ns as f64 * 1e-9
    }
}

/// Brings every rank's `enter` and `leave` times to rank 0 (a flat
/// gather, untimed); `None` on the other ranks.
pub(crate) fn gather_times(
    comm: &mut Communicator,
    enter: &[u64],
    leave: &[u64],
) -> anyhow::Result<Option<Times>> {
    let n = enter.len();
    let size = comm.size();
    let mut mine = enter.to_vec();
    mine.extend_from_slice(leave);
    let mut all = if comm.rank() == 0 {
        vec![0u64; 2 * n * size]
    } else {
        Vec::new()
    };
    let gather = Implementation::tree(Collective::Gather, Shape::Flat, None)?;
    comm.gather_with(&gather, &mine, &mut all, 0)?;
    Ok((comm.rank() == 0).then_some(Times { all, calls: n }))
}
