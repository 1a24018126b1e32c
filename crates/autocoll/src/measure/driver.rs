//! The repetition loop every method shares: warm up, repeat until the
//! relative standard error is small enough, bring the result to rank 0.

use bytes::Bytes;

use super::call::{control_bcast, separating_barrier, Caller, Target};
use super::{classic, ol_i, stats, truth, Baseline, Measurement, Method, Options, Point, Summary};
use crate::check::Native;
use crate::clock::now_ns;
use crate::comm::Communicator;
use crate::error::{Error, Result};

/// User tags of the harness's point-to-point messages.
pub(crate) mod tags {
    /// Round-trip probes of `ol-i`.
    pub const PING: u64 = 0xA17C_0001;
    /// Acknowledgements to the leader (`ack`, `ol-i`).
    pub const ACK: u64 = 0xA17C_0002;
    /// The leader's release of one rank (`ol-i` for fan-in collectives).
    pub const GO: u64 = 0xA17C_0003;
    /// A finished measurement on its way to rank 0.
    pub const RESULT: u64 = 0xA17C_0004;
}

/// Warm-up pairs at least, for a steady estimate of one call.
const MIN_WARMUP: usize = 5;

/// `truth` may attempt this many repetitions per one it must keep.
const TRUTH_ATTEMPTS: usize = 10;

/// One repetition's outcome at the leader.
pub(crate) struct Sample {
    /// Seconds per call; `None` when every call was discarded.
    pub value: Option<f64>,
    /// Calls discarded in this repetition.
    pub discarded: usize,
    /// `ol-i`: this repetition's OL_i of every rank.
    pub ol_i: Option<Vec<f64>>,
}

impl Sample {
    pub fn of(value: f64) -> Sample {
        Sample {
            value: Some(value),
            discarded: 0,
            ol_i: None,
        }
    }
}

/// What every method needs to know about the job besides the communicator.
pub(crate) struct Job {
    /// The rank that times and decides.
    pub leader: usize,
    /// The root of the calls.
    pub root: usize,
    /// Calls per repetition.
    pub calls: usize,
}

/// Measures `point` with `method`; every rank calls it with the same
/// arguments. Returns the measurement at rank 0 and `None` elsewhere.
pub fn run_point(
    comm: &mut Communicator,
    point: &Point,
    method: Method,
    opts: &Options,
) -> Result<Option<Measurement>> {
    let target = Target::Ours(point.imp.clone());
    run(comm, target, point.bytes, point.root, method, opts)
}

/// Measures the library's own collective (e.g. `MPI_Bcast` through the mpi
/// transport's `Library`) exactly as [`run_point`]
/// measures autocoll's: same buffers, same method, same harness messages
/// over `comm`. Every rank calls it with the same arguments.
pub fn run_baseline(
    comm: &mut Communicator,
    library: &dyn Native,
    point: &Baseline,
    method: Method,
    opts: &Options,
) -> Result<Option<Measurement>> {
    let target = Target::Library(point.op, library);
    run(comm, target, point.bytes, point.root, method, opts)
}

fn run(
    comm: &mut Communicator,
    target: Target,
    bytes: usize,
    root: usize,
    method: Method,
    opts: &Options,
) -> Result<Option<Measurement>> {
    let size = comm.size();
    let op = target.op();
    if op.rooted() && root >= size {
        return Err(Error::RankOutOfRange { rank: root, size });
    }
    if method == Method::Truth && !comm.shared_clock() {
        return Err(Error::Config(format!(
            "the truth method needs every rank on one host, reading one monotonic clock; \
             this job's ranks run on {}",
            distinct(&comm.hosts()).join(", ")
        )));
    }
    let job = Job {
        leader: if op.rooted() { root } else { 0 },
        root,
        calls: opts.calls.max(1),
    };
    let mut caller = Caller::new(target, bytes, size);
    let estimate = warm_up(comm, &mut caller, &job, opts.warmup.max(MIN_WARMUP))?;
    let mut windows = truth::Windows::new(estimate);
    let mut acc = Accumulator::default();
    let max_attempts = match method {
        // Calls with skewed entries are discarded; on an oversubscribed or
        // loaded host most are, and a repetition (M windows) is cheap.
        Method::Truth => TRUTH_ATTEMPTS * opts.max_reps.max(1),
        _ => opts.max_reps.max(1),
    };
    loop {
        comm.barrier_with(&separating_barrier())?;
        let sample = match method {
            Method::SendLatency => classic::send_latency(comm, &mut caller, &job)?,
            Method::Rounds => classic::rounds(comm, &mut caller, &job)?,
            Method::Barrier => classic::barrier(comm, &mut caller, &job)?,
            Method::Ack => classic::ack(comm, &mut caller, &job)?,
            Method::OlI => ol_i::rep(comm, &mut caller, &job, op)?,
            Method::Truth => truth::rep(comm, &mut caller, &job, &mut windows)?,
        };
        let mut stop = false;
        if let Some(sample) = sample {
            acc.add(sample);
            let enough = acc.raw.len() >= opts.min_reps.max(1) && stats::rse(&acc.raw) < opts.rse;
            stop = enough || acc.attempts >= max_attempts || acc.raw.len() >= opts.max_reps;
        }
        if share_flag(comm, job.leader, stop)? {
            break;
        }
    }
    let mine = (comm.rank() == job.leader).then(|| acc.finish(method, &windows));
    deliver(comm, job.leader, mine)
}

/// Untimed calls, each followed by a barrier; the leader's median time
/// per pair (seconds) is an upper bound of one call that resists the odd
/// preempted pair, which `truth` sizes its window and tolerance from.
fn warm_up(comm: &mut Communicator, caller: &mut Caller, job: &Job, n: usize) -> Result<f64> {
    let mut pairs = Vec::with_capacity(n);
    for _ in 0..n {
        let start = now_ns();
        caller.call(comm, job.root)?;
        comm.barrier_with(&separating_barrier())?;
        pairs.push((now_ns() - start) as f64 * 1e-9);
    }
    Ok(Summary::of(&pairs).median)
}

/// The leader's running record of repetitions.
#[derive(Default)]
struct Accumulator {
    attempts: usize,
    raw: Vec<f64>,
    discarded: usize,
    ol_sum: Option<Vec<f64>>,
    ol_count: usize,
}

impl Accumulator {
    fn add(&mut self, sample: Sample) {
        self.attempts += 1;
        self.discarded += sample.discarded;
        if let Some(v) = sample.value {
            self.raw.push(v);
        }
        if let Some(ol) = sample.ol_i {
            let sum = self.ol_sum.get_or_insert_with(|| vec![0.0; ol.len()]);
            for (s, x) in sum.iter_mut().zip(ol) {
                *s += x;
            }
            self.ol_count += 1;
        }
    }

    fn finish(self, method: Method, windows: &truth::Windows) -> Measurement {
        let count = self.ol_count.max(1) as f64;
        Measurement {
            method,
            reps: self.raw.len(),
            discarded: self.discarded,
            summary: Summary::of(&self.raw),
            ol_i: self
                .ol_sum
                .map(|sum| sum.into_iter().map(|s| s / count).collect()),
            window: (method == Method::Truth).then(|| windows.window_ns() as f64 * 1e-9),
            raw: self.raw,
        }
    }
}

/// Brings the leader's measurement to rank 0.
fn deliver(
    comm: &mut Communicator,
    leader: usize,
    mine: Option<Measurement>,
) -> Result<Option<Measurement>> {
    if leader == 0 {
        return Ok(mine);
    }
    match (comm.rank(), mine) {
        (_, Some(m)) => {
            let text = serde_json::to_vec(&m).expect("a measurement serialises");
            comm.send_bytes(0, tags::RESULT, Bytes::from(text))?;
            Ok(None)
        }
        (0, None) => {
            let text = comm.recv_bytes(leader, tags::RESULT)?;
            let m = serde_json::from_slice(&text).map_err(|e| Error::Protocol {
                peer: format!("rank {leader}"),
                reason: format!("unreadable measurement: {e}"),
            })?;
            Ok(Some(m))
        }
        _ => Ok(None),
    }
}

/// Sends `words` from `from` to every rank (a binomial broadcast).
pub(crate) fn share(comm: &mut Communicator, from: usize, words: &mut [u64]) -> Result<()> {
    comm.unbalanced(|c| c.bcast_with(&control_bcast(), words, from))
}

fn share_flag(comm: &mut Communicator, from: usize, flag: bool) -> Result<bool> {
    let mut w = [u64::from(flag)];
    share(comm, from, &mut w)?;
    Ok(w[0] != 0)
}

/// Every rank learns rank 0's `go`: how a sweep stops on all ranks at once
/// when rank 0 is told to stop (Ctrl-C) between points.
pub fn agree(comm: &mut Communicator, go: bool) -> Result<bool> {
    share_flag(comm, 0, go)
}

fn distinct(hosts: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for h in hosts {
        if !out.contains(h) {
            out.push(h.clone());
        }
    }
    out
}
