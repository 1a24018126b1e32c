//! The four methods the paper shows to mislead, kept for comparison:
//! send latency, rounds, barrier and acknowledge (its Figure 2).

use bytes::Bytes;

use super::call::{separating_barrier, Caller};
use super::driver::{tags, Job, Sample};
use crate::clock::now_ns;
use crate::comm::Communicator;
use crate::error::Result;

/// Seconds since `start_ns`, divided by `per`.
fn per_call(start_ns: u64, per: usize) -> f64 {
    (now_ns() - start_ns) as f64 * 1e-9 / per as f64
}

/// The leader's time for M back-to-back calls ÷ M.
pub(crate) fn send_latency(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    let start = now_ns();
    for _ in 0..job.calls {
        caller.call(comm, job.root)?;
    }
    Ok((comm.rank() == job.leader).then(|| Sample::of(per_call(start, job.calls))))
}

/// M rounds of one call per root 0, 1, …, P−1, ÷ M·P.
pub(crate) fn rounds(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    let size = comm.size();
    let start = now_ns();
    for _ in 0..job.calls {
        for root in 0..size {
            caller.call(comm, root)?;
        }
    }
    Ok((comm.rank() == job.leader).then(|| Sample::of(per_call(start, job.calls * size))))
}

/// M pairs of (call, barrier) ÷ M.
pub(crate) fn barrier(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    let start = now_ns();
    for _ in 0..job.calls {
        caller.call(comm, job.root)?;
        comm.barrier_with(&separating_barrier())?;
    }
    Ok((comm.rank() == job.leader).then(|| Sample::of(per_call(start, job.calls))))
}

/// M times (call, an empty acknowledgement from every other rank to the
/// leader) ÷ M.
pub(crate) fn ack(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
) -> Result<Option<Sample>> {
    let me = comm.rank();
    let start = now_ns();
    for _ in 0..job.calls {
        caller.call(comm, job.root)?;
        if me == job.leader {
            // Acknowledgements queue up, so the order of receipt costs nothing.
            for src in (0..comm.size()).filter(|&r| r != me) {
                comm.recv_bytes(src, tags::ACK)?;
            }
        } else {
            comm.send_bytes(job.leader, tags::ACK, Bytes::new())?;
        }
    }
    Ok((me == job.leader).then(|| Sample::of(per_call(start, job.calls))))
}
