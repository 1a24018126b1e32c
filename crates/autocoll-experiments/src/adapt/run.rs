//! Running the series: every rank warms up, then runs K rounds, each with
//! one call of every fixed candidate and one under the lottery in a fresh
//! random order, every call after an untimed barrier; rank 0 brings the
//! times together into a [`Trace`].

use std::sync::{Arc, Mutex};

use autocoll::measure::Caller;
use autocoll::select::lottery::Rng;
use autocoll::select::state::{Fingerprint, Store};
use autocoll::Communicator;

use super::disturb::{install_delay, start_disturbance, Delay, Outside};
use super::log::{Log, Logged, Trace};
use super::setup::Setup;
use crate::rounds::{gather_times, separating_barrier, Order, Stamps};
use crate::Error;

/// Untimed calls of every candidate before the experiment (connections,
/// caches, page faults).
const WARMUP: usize = 5;

/// Every rank: warm up, run the interleaved rounds of one seed, bring the
/// times to rank 0; rank 0's trace, `None` on the others. `outside` makes
/// a [`super::Disturb::Rate`] (on rank 0).
pub fn run(
    comm: &mut Communicator,
    s: &Setup,
    outside: Option<&dyn Outside>,
) -> Result<Option<Trace>, Error> {
    let size = comm.size();
    let log = install_lottery(comm, s);
    let delay = install_delay(comm, s.disturb.as_ref(), &s.candidates);
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
    let stamps = timed_rounds(comm, s, &mut callers, delay.as_deref(), outside)?;
    comm.save_selector().map_err(Error::Save)?;
    let spans = agreed_spans(comm, &stamps.enter, &stamps.leave)?;
    let Some(spans) = spans else { return Ok(None) };
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    let names = s.names();
    let mut fixed: Vec<Vec<f64>> = spans.chunks(s.calls).map(<[f64]>::to_vec).collect();
    let lottery = fixed.pop().expect("the lottery's series");
    Ok(Some(log.trace(&names, comm.hosts(), fixed, lottery)))
}

/// The timed rounds, the disturbance on from the middle one; a change
/// `outside` made is undone at the end, also when a call failed.
fn timed_rounds(
    comm: &mut Communicator,
    s: &Setup,
    callers: &mut [Caller],
    delay: Option<&Delay>,
    outside: Option<&dyn Outside>,
) -> Result<Stamps, Error> {
    let series = s.candidates.len() + 1;
    let mut stamps = Stamps::new(series, s.calls);
    let mut restore = None;
    let half = s.calls / 2;
    // Each timed call starts from an untimed barrier: back to back, a
    // call's span would include the stragglers of the call before it (a
    // root leaves a broadcast long before its leaves do), which smears
    // every series' times into the same average.
    let barrier = separating_barrier();
    // The same seed on every rank: all ranks run the same order.
    let mut order = Order(Rng::new(s.seed ^ 0x0005_eed0_0de5));
    let outcome = (|| -> Result<(), Error> {
        for k in 0..s.calls {
            if k == half {
                restore = start_disturbance(comm, s.disturb.as_ref(), delay, outside)?;
            }
            // Each round runs the series, the lottery's included, in a
            // fresh random order: a call leaves state behind (the emulated
            // links' token buckets, TCP's windows, caches) that the next
            // call inherits, and in a fixed cyclic order every series would
            // always follow the same one and inherit its state.
            for c in order.shuffled(series) {
                comm.barrier_with(&barrier)?;
                stamps.time(c, k, || match callers.get_mut(c) {
                    Some(caller) => caller.call(comm, s.root),
                    None => callers[0].call_selected(comm, s.root),
                })?;
            }
        }
        Ok(())
    })();
    if let Some(undo) = restore {
        undo();
    }
    outcome?;
    Ok(stamps)
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

/// Every call's time as all ranks agree on it, at rank 0: the span
/// max(leave) − min(enter) with a shared clock, else the longest rank's
/// duration.
fn agreed_spans(
    comm: &mut Communicator,
    enter: &[u64],
    leave: &[u64],
) -> autocoll::Result<Option<Vec<f64>>> {
    let Some(all) = gather_times(comm, enter, leave)? else {
        return Ok(None);
    };
    let shared = comm.shared_clock();
    Ok(Some(
        (0..enter.len()).map(|i| all.span(i, shared)).collect(),
    ))
}
