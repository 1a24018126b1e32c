//! Running the series: every rank warms up, then runs K rounds, each with
//! one call of every series in a fresh random order, every call after an
//! untimed barrier and, on the loaded rank, after its busy loop; rank 0
//! brings the times together into a [`Trace`]. On any communicator
//! ([`run`]) or on threads ([`run_local`]).

use autocoll::balance::{Balancer, Params};
use autocoll::clock::now_ns;
use autocoll::select::lottery::Rng;
use autocoll::{local, Collective, Communicator};
use serde::{Deserialize, Serialize};

use super::setup::Setup;
use crate::rounds::{gather_times, of_job, separating_barrier, Order, Stamps, Times};
use crate::Error;

/// Untimed calls under the identity table before the experiment
/// (connections, caches, page faults).
const WARMUP: usize = 5;

/// What rank 0 measured, series by series (identity first).
#[derive(Debug, Serialize, Deserialize)]
pub struct Trace {
    /// The ranks share a clock: spans are max(leave) − min(enter).
    pub shared_clock: bool,
    /// Distinct hosts of the job.
    pub hosts: usize,
    /// Identity's calls, then each balancer's.
    pub series: Vec<SeriesTrace>,
}

/// One series' calls.
#[derive(Debug, Serialize, Deserialize)]
pub struct SeriesTrace {
    /// Each call's span (s).
    pub span_s: Vec<f64>,
    /// Each call's time inside the broadcast summed over the ranks (s).
    pub inside_s: Vec<f64>,
    /// The calls at which the table changed (0-based).
    pub changes_at: Vec<usize>,
    /// The balancer's account at the end; `None` for identity.
    pub status: Option<StatusTrace>,
}

/// A balancer's account of its table at the end of the run.
#[derive(Debug, Serialize, Deserialize)]
pub struct StatusTrace {
    /// Times the table changed.
    pub changes: u64,
    /// Changes undone because they made things worse.
    pub reverts: u64,
    /// Decisions taken.
    pub decisions: u32,
    /// The call from which the table held still.
    pub still_since: u64,
    /// The period at the end.
    pub period: u32,
    /// The table at the end: virtual rank to rank.
    pub table: Vec<usize>,
}

/// One job of threads; rank 0's trace.
pub fn run_local(setup: &Setup) -> Result<Trace, Error> {
    let outcomes = local::run(setup.ranks, |mut comm| {
        comm.set_timeout(setup.timeout);
        run(&mut comm, setup)
    });
    of_job(outcomes)?.ok_or(Error::Traces {
        found: 0,
        wanted: 1,
    })
}

/// Every rank: warm up, run the interleaved rounds, bring the times to
/// rank 0; rank 0's trace, `None` on the others.
pub fn run(comm: &mut Communicator, s: &Setup) -> Result<Option<Trace>, Error> {
    // A balancer AUTOCOLL_BALANCE put in would balance the identity series.
    drop(comm.take_balancer());
    let mut balancers = balancers(comm, s)?;
    let series = balancers.len();
    let mut buf = warmed_up(comm, s)?;
    let mut stamps = Stamps::new(series, s.calls);
    let mut changes_at = vec![Vec::new(); series];
    let barrier = separating_barrier();
    // The same seed on every rank: all ranks run the same order.
    let mut order = Order(Rng::new(s.seed ^ 0x00ba_1a0c_0de5));
    for k in 0..s.calls {
        let work = s
            .load_at(k)
            .filter(|l| l.rank == comm.rank())
            .map_or(0, |l| l.work.as_nanos() as u64);
        for c in order.shuffled(series) {
            let before = put_in(comm, &mut balancers[c])?;
            comm.barrier_with(&barrier)?;
            busy(work);
            stamps.time(c, k, || comm.bcast_with(&s.imp, &mut buf, s.root))?;
            if take_back(comm, &mut balancers[c], before) {
                changes_at[c].push(k);
            }
        }
    }
    let Some(times) = gather_times(comm, &stamps.enter, &stamps.leave)? else {
        return Ok(None);
    };
    Ok(Some(trace_of(comm, s, &times, changes_at, &balancers)))
}

/// The broadcast's buffer (the root's filled), after the untimed calls
/// under the identity table.
fn warmed_up(comm: &mut Communicator, s: &Setup) -> Result<Vec<u8>, Error> {
    let mut buf = vec![0u8; s.bytes];
    if comm.rank() == s.root {
        buf.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    }
    for _ in 0..WARMUP {
        comm.bcast_with(&s.imp, &mut buf, s.root)?;
    }
    Ok(buf)
}

/// Puts a series' balancer, if it has one, into `comm` for its call;
/// returns its count of changes before the call.
fn put_in(comm: &mut Communicator, balancer: &mut Option<Balancer>) -> Result<Option<u64>, Error> {
    let Some(b) = balancer.take() else {
        return Ok(None);
    };
    let changes = changes_of(&b);
    comm.put_balancer(b)?;
    Ok(Some(changes))
}

/// Takes the balancer [`put_in`] put in back out of `comm`; whether the
/// call changed its table.
fn take_back(
    comm: &mut Communicator,
    balancer: &mut Option<Balancer>,
    before: Option<u64>,
) -> bool {
    let Some(before) = before else {
        return false;
    };
    let b = comm.take_balancer().expect("put in before the call");
    let changed = changes_of(&b) > before;
    *balancer = Some(b);
    changed
}

/// Rank 0's trace of the gathered `times`.
fn trace_of(
    comm: &Communicator,
    s: &Setup,
    times: &Times,
    changes_at: Vec<Vec<usize>>,
    balancers: &[Option<Balancer>],
) -> Trace {
    let shared_clock = comm.shared_clock();
    let mut hosts = comm.hosts();
    hosts.sort();
    hosts.dedup();
    let series = (0..balancers.len())
        .zip(changes_at)
        .map(|(c, changes_at)| {
            let calls = c * s.calls..(c + 1) * s.calls;
            SeriesTrace {
                span_s: calls.clone().map(|i| times.span(i, shared_clock)).collect(),
                inside_s: calls
                    .map(|i| {
                        let ns: u64 = times.of_call(i).map(|(e, l)| l.saturating_sub(e)).sum();
                        ns as f64 * 1e-9
                    })
                    .collect(),
                changes_at,
                status: balancers[c].as_ref().map(status_of),
            }
        })
        .collect();
    Trace {
        shared_clock,
        hosts: hosts.len(),
        series,
    }
}

/// `None` for the identity series, then one balancer per mode, each on
/// its own report tag so that no series hears another's reports.
fn balancers(comm: &mut Communicator, s: &Setup) -> Result<Vec<Option<Balancer>>, Error> {
    let mut all = vec![None];
    for (channel, &mode) in (1u16..).zip(&s.modes) {
        let params = Params {
            mode,
            channel,
            ..s.params.clone()
        };
        comm.use_balancer(params).map_err(Error::Balancer)?;
        all.push(comm.take_balancer());
    }
    Ok(all)
}

fn changes_of(b: &Balancer) -> u64 {
    b.status(Collective::Bcast).map_or(0, |s| s.changes)
}

fn status_of(b: &Balancer) -> StatusTrace {
    let s = b.status(Collective::Bcast).expect("a balancer of bcast");
    StatusTrace {
        changes: s.changes,
        reverts: s.reverts,
        decisions: s.decisions,
        still_since: s.still_since,
        period: s.period,
        table: s.table,
    }
}

/// The pseudo-load: a busy loop of `ns` nanoseconds, as the paper's.
fn busy(ns: u64) {
    if ns == 0 {
        return;
    }
    let end = now_ns() + ns;
    while now_ns() < end {
        std::hint::spin_loop();
    }
}
