//! The per-destination operation latency OL_i (de Supinski and Karonis,
//! Figure 9) and its mirrors for fan-in and symmetric collectives.
//!
//! Fan-out (bcast, scatter) and symmetric (allreduce, allgather, alltoall,
//! barrier): for each rank i the leader measures the round trip RTT_i with
//! M empty ping-pongs, then times M pairs of (call, empty acknowledgement
//! from i alone): E_i. OL_i = E_i − RTT_i/2 is the time from the leader entering
//! the call to i leaving it. Only i's path is kept free of pipelining; the
//! other ranks may still be busy with earlier calls, which is harmless as
//! long as no rank on i's path is slower than E_i (the paper's condition).
//! For symmetric collectives the other ranks re-enter at once, so the
//! leader is the last to arrive and OL_i is "last arrival to i's exit".
//!
//! Fan-in (reduce, gather), mirrored: the data flow ends at the root, so
//! the root releases rank i with an empty *go* message and times M pairs of
//! (go to i, call): every other rank has entered already and its data has
//! moved up as far as it can, so E_i − RTT_i/2 is the time from i entering
//! to the root finishing — i's contribution to the latency.
//!
//! The leader's own entry: its mean call time when it is the last to act
//! (fan-in: after every other rank has acknowledged finishing its part).
//! A barrier separates destinations, so a rank slowed by one destination's
//! calls cannot delay the next destination's round trip.

use bytes::Bytes;

use super::call::{separating_barrier, Caller};
use crate::clock::now_ns;
use crate::comm::communicator::Communicator;
use crate::error::Result;
use crate::ids::Collective;
use crate::measure::job::{tags, Job, Sample};

fn secs(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// One repetition: OL_i for every rank, the maximum as the sample.
pub(crate) fn rep(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
    op: Collective,
) -> Result<Option<Sample>> {
    let (size, me) = (comm.size(), comm.rank());
    let fan_in = matches!(op, Collective::Reduce | Collective::Gather);
    let mut ol = vec![0.0; size];
    let mut own = OwnTime::default();
    for i in (0..size).filter(|&i| i != job.leader) {
        comm.barrier_with(&separating_barrier())?;
        let rtt = round_trip(comm, job, i)?;
        let e = if fan_in {
            released(comm, caller, job, i)?
        } else {
            acknowledged(comm, caller, job, i, &mut own)?
        };
        ol[i] = e - rtt / 2.0;
    }
    comm.barrier_with(&separating_barrier())?;
    // Symmetric collectives cannot run this way (the others would wait in
    // the call for the leader, the leader for their acknowledgements).
    if fan_in || size == 1 {
        own = leader_last(comm, caller, job)?;
    }
    if me != job.leader {
        return Ok(None);
    }
    ol[job.leader] = own.mean();
    let max = ol.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(Some(Sample {
        value: Some(max),
        discarded: 0,
        ol_i: Some(ol),
    }))
}

/// The leader's own call times.
#[derive(Default)]
struct OwnTime {
    ns: u64,
    calls: usize,
}

impl OwnTime {
    fn mean(&self) -> f64 {
        secs(self.ns) / self.calls.max(1) as f64
    }
}

/// Mean round trip of an empty message between the leader and `i`, in
/// seconds, at the leader (one untimed exchange first); 0 elsewhere.
fn round_trip(comm: &mut Communicator, job: &Job, i: usize) -> Result<f64> {
    let me = comm.rank();
    if me == job.leader {
        let mut start = 0;
        for k in 0..=job.calls {
            if k == 1 {
                start = now_ns();
            }
            comm.send_bytes(i, tags::PING, Bytes::new())?;
            comm.recv_bytes(i, tags::PING)?;
        }
        return Ok(secs(now_ns() - start) / job.calls as f64);
    }
    if me == i {
        for _ in 0..=job.calls {
            comm.recv_bytes(job.leader, tags::PING)?;
            comm.send_bytes(job.leader, tags::PING, Bytes::new())?;
        }
    }
    Ok(0.0)
}

/// E_i of fan-out and symmetric collectives: M pairs of (call, ack from i)
/// at the leader, after one untimed pair. Also times the leader's calls.
fn acknowledged(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
    i: usize,
    own: &mut OwnTime,
) -> Result<f64> {
    let me = comm.rank();
    let mut start = 0;
    for k in 0..=job.calls {
        if me == job.leader {
            if k == 1 {
                start = now_ns();
            }
            let t = now_ns();
            caller.call(comm, job.root)?;
            if k > 0 {
                own.ns += now_ns() - t;
                own.calls += 1;
            }
            comm.recv_bytes(i, tags::ACK)?;
        } else {
            caller.call(comm, job.root)?;
            if me == i {
                comm.send_bytes(job.leader, tags::ACK, Bytes::new())?;
            }
        }
    }
    Ok(secs(now_ns().saturating_sub(start)) / job.calls as f64)
}

/// E_i of fan-in collectives: M pairs of (go to i, call) at the root,
/// after one untimed pair; i enters each call only when its go arrives.
fn released(comm: &mut Communicator, caller: &mut Caller, job: &Job, i: usize) -> Result<f64> {
    let me = comm.rank();
    let mut start = 0;
    for k in 0..=job.calls {
        if me == job.leader {
            if k == 1 {
                start = now_ns();
            }
            comm.send_bytes(i, tags::GO, Bytes::new())?;
        } else if me == i {
            comm.recv_bytes(job.leader, tags::GO)?;
        }
        caller.call(comm, job.root)?;
    }
    Ok(secs(now_ns().saturating_sub(start)) / job.calls as f64)
}

/// The leader's call time when it acts last: every other rank calls and
/// then acknowledges; the leader waits for all acknowledgements first.
fn leader_last(comm: &mut Communicator, caller: &mut Caller, job: &Job) -> Result<OwnTime> {
    let me = comm.rank();
    let mut own = OwnTime::default();
    for _ in 0..job.calls {
        if me == job.leader {
            for src in (0..comm.size()).filter(|&r| r != me) {
                comm.recv_bytes(src, tags::ACK)?;
            }
            let t = now_ns();
            caller.call(comm, job.root)?;
            own.ns += now_ns() - t;
            own.calls += 1;
        } else {
            caller.call(comm, job.root)?;
            comm.send_bytes(job.leader, tags::ACK, Bytes::new())?;
        }
    }
    Ok(own)
}
