//! The four methods the paper shows to mislead, kept for comparison:
//! send latency, rounds, barrier and acknowledge (its Figure 2).

use bytes::Bytes;

use super::call::{separating_barrier, Caller};
use crate::clock::now_ns;
use crate::comm::communicator::Communicator;
use crate::error::Result;
use crate::measure::job::{tags, Job, Sample};

/// Runs `one` M times; the leader's elapsed time ÷ (M · `per_round`).
fn timed(
    comm: &mut Communicator,
    job: &Job,
    per_round: usize,
    mut one: impl FnMut(&mut Communicator) -> Result<()>,
) -> Result<Option<Sample>> {
    let start = now_ns();
    for _ in 0..job.calls {
        one(comm)?;
    }
    let secs = (now_ns() - start) as f64 * 1e-9 / (job.calls * per_round) as f64;
    Ok((comm.rank() == job.leader).then(|| Sample::of(secs)))
}

/// The leader's time for M back-to-back calls ÷ M.
pub(crate) fn send_latency(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    timed(comm, job, 1, |comm| caller.call(comm, job.root))
}

/// M rounds of one call per root 0, 1, …, P−1, ÷ M·P.
pub(crate) fn rounds(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    let size = comm.size();
    timed(comm, job, size, |comm| {
        (0..size).try_for_each(|root| caller.call(comm, root))
    })
}

/// M pairs of (call, barrier) ÷ M.
pub(crate) fn barrier(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    timed(comm, job, 1, |comm| {
        caller.call(comm, job.root)?;
        comm.barrier_with(&separating_barrier())
    })
}

/// M times (call, an empty acknowledgement from every other rank to the
/// leader) ÷ M.
pub(crate) fn ack(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    timed(comm, job, 1, |comm| {
        caller.call(comm, job.root)?;
        let me = comm.rank();
        if me != job.leader {
            return comm.send_bytes(job.leader, tags::ACK, Bytes::new());
        }
        // Acknowledgements queue up, so the order of receipt costs nothing.
        for src in (0..comm.size()).filter(|&r| r != me) {
            comm.recv_bytes(src, tags::ACK)?;
        }
        Ok(())
    })
}
