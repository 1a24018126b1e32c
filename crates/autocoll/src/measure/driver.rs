//! The repetition loop every method shares: warm up, repeat until the
//! relative standard error is small enough, bring the result to rank 0.

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::check::Native;
use crate::clock::now_ns;
use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::measure::call::{separating_barrier, Caller, Target};
use crate::measure::job::{share, tags, Job, Sample};
use crate::measure::method::{Baseline, Flag, Measurement, Method, Options, Point};
use crate::measure::race::{Race, Rule};
use crate::measure::{classic, ol_i, truth};
use crate::select::lottery::Rng;
use crate::stats::{self, Summary};

/// Warm-up pairs at least, for a steady estimate of one call.
const MIN_WARMUP: usize = 5;

/// `truth` may attempt this many repetitions per one it must keep.
const TRUTH_ATTEMPTS: usize = 10;

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
    check(comm, op, root, method)?;
    let job = Job::of(op, root, opts);
    let mut caller = Caller::new(target, bytes, size);
    let mut one = Contender::new(comm, &mut caller, &job, opts)?;
    loop {
        let mut stop = false;
        if one.rep(comm, &mut caller, method, &job)?.is_some() {
            stop = one.acc.done(method, opts);
        }
        if share_flag(comm, job.leader, stop)? {
            break;
        }
    }
    let mine = (comm.rank() == job.leader).then(|| one.finish(method, opts.min_reps));
    deliver(comm, job.leader, mine)
}

/// Measures `point` with every one of `methods` at once: one warm-up,
/// then rounds in which every method runs one repetition, in a fresh
/// random order each round, so that a machine that turns noisy partway
/// hits all of them alike. The rounds go on until every method has met
/// the stopping rule of [`run_point`] (the first done keep running, so
/// that every round pairs them all). Every rank calls it with the same
/// arguments and `seed`; rank 0 gets each method's measurement and, per round, its repetition
/// (`None` where it ran none or kept none), for comparing methods pair by
/// pair.
pub fn run_methods(
    comm: &mut Communicator,
    point: &Point,
    methods: &[Method],
    opts: &Options,
    seed: u64,
) -> Result<Option<Interleaved>> {
    let target = Target::Ours(point.imp.clone());
    interleave(comm, target, point.bytes, point.root, methods, opts, seed)
}

/// [`run_methods`] for the library's own collective ([`run_baseline`]).
pub fn run_baseline_methods(
    comm: &mut Communicator,
    library: &dyn Native,
    point: &Baseline,
    methods: &[Method],
    opts: &Options,
    seed: u64,
) -> Result<Option<Interleaved>> {
    let target = Target::Library(point.op, library);
    interleave(comm, target, point.bytes, point.root, methods, opts, seed)
}

/// Several methods' measurements of one point, taken round by round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interleaved {
    /// One per method, in the order asked.
    pub measurements: Vec<Measurement>,
    /// Per round, every method's repetition (seconds per call), `None`
    /// where it ran none or kept none.
    pub rounds: Vec<Vec<Option<f64>>>,
}

impl Interleaved {
    /// Relative errors of method `i` against method `reference`, one per
    /// round in which both kept a repetition: +0.10 is 10% too slow.
    pub fn paired_errors(&self, i: usize, reference: usize) -> Vec<f64> {
        self.rounds
            .iter()
            .filter_map(|r| match (r.get(i)?, r.get(reference)?) {
                (Some(x), Some(t)) if *t > 0.0 => Some((x - t) / t),
                _ => None,
            })
            .collect()
    }
}

fn interleave(
    comm: &mut Communicator,
    target: Target,
    bytes: usize,
    root: usize,
    methods: &[Method],
    opts: &Options,
    seed: u64,
) -> Result<Option<Interleaved>> {
    let op = target.op();
    for &m in methods {
        check(comm, op, root, m)?;
    }
    let job = Job::of(op, root, opts);
    let n = methods.len();
    let leader = comm.rank() == job.leader;
    let mut caller = Caller::new(target, bytes, comm.size());
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(Contender::new(comm, &mut caller, &job, opts)?);
    }
    let mut rng = round_orders(seed);
    let mut rounds: Vec<Vec<Option<f64>>> = Vec::new();
    loop {
        // Every method runs in every round until the last is done, so that
        // every round pairs them all.
        let going = leader && (0..n).any(|i| !all[i].acc.done(methods[i], opts));
        let next = if going { (0..n).collect() } else { Vec::new() };
        let order = round_order(comm, job.leader, next, &mut rng, n)?;
        if order.is_empty() {
            break;
        }
        let mut round = vec![None; n];
        for i in order {
            if let Some(value) = all[i].rep(comm, &mut caller, methods[i], &job)? {
                round[i] = value;
            }
        }
        rounds.push(round);
    }
    let mine = leader.then(|| Interleaved {
        measurements: all
            .into_iter()
            .zip(methods)
            .map(|(c, &m)| c.finish(m, opts.min_reps))
            .collect(),
        rounds,
    });
    deliver(comm, job.leader, mine)
}

/// The generator of a job's round orders, drawn afresh in every job (from
/// the clock and the process): jobs that drew one sequence from `seed`
/// alone would all put the same candidate first in the same rounds, and
/// whatever coming first in a round costs would fall on it in each.
fn round_orders(seed: u64) -> Rng {
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    Rng::new(seed ^ clock ^ u64::from(std::process::id()).rotate_left(32))
}

/// The order of a round: the leader's `next` (of `n`), shuffled, on every
/// rank; empty when the leader has nothing left to run.
fn round_order(
    comm: &mut Communicator,
    leader: usize,
    mut next: Vec<usize>,
    rng: &mut Rng,
    n: usize,
) -> Result<Vec<usize>> {
    rng.shuffle(&mut next);
    let mut words = vec![0u64; n + 1];
    words[0] = next.len() as u64;
    for (w, &i) in words[1..].iter_mut().zip(&next) {
        *w = i as u64;
    }
    share(comm, leader, &mut words)?;
    let count = (words[0] as usize).min(n);
    Ok(words[1..=count]
        .iter()
        .map(|&w| (w as usize).min(n - 1))
        .collect())
}

/// Repetitions a method may attempt for `max_reps` kept ones.
fn max_attempts(method: Method, opts: &Options) -> usize {
    match method {
        // Calls with skewed entries are discarded; on an oversubscribed or
        // loaded host most are, and a repetition (M windows) is cheap.
        Method::Truth => TRUTH_ATTEMPTS * opts.max_reps.max(1),
        _ => opts.max_reps.max(1),
    }
}

/// One implementation under measurement: its truth windows and, at the
/// leader, its repetitions so far. The buffers are the caller's.
struct Contender {
    windows: truth::Windows,
    acc: Accumulator,
}

impl Contender {
    /// Warms `caller` up (every rank).
    fn new(
        comm: &mut Communicator,
        caller: &mut Caller,
        job: &Job,
        opts: &Options,
    ) -> Result<Self> {
        let estimate = warm_up(comm, caller, job, opts.warmup.max(MIN_WARMUP))?;
        Ok(Contender::after(estimate))
    }

    /// A contender whose call was warmed up already, one call taking
    /// about `estimate` seconds.
    fn after(estimate: f64) -> Self {
        Contender {
            windows: truth::Windows::new(estimate),
            acc: Accumulator::default(),
        }
    }

    /// One repetition after a barrier; at the leader, its time per call
    /// (`Some(None)` when every call was discarded), elsewhere `None`.
    fn rep(
        &mut self,
        comm: &mut Communicator,
        caller: &mut Caller,
        method: Method,
        job: &Job,
    ) -> Result<Option<Option<f64>>> {
        comm.barrier_with(&separating_barrier())?;
        let op = caller.op();
        let sample = match method {
            Method::SendLatency => classic::send_latency(comm, caller, job)?,
            Method::Rounds => classic::rounds(comm, caller, job)?,
            Method::Barrier => classic::barrier(comm, caller, job)?,
            Method::Ack => classic::ack(comm, caller, job)?,
            Method::OlI => ol_i::rep(comm, caller, job, op)?,
            Method::Truth => truth::rep(comm, caller, job, &mut self.windows)?,
        };
        Ok(sample.map(|sample| {
            let value = sample.value;
            self.acc.add(sample);
            value
        }))
    }

    /// The measurement, flagged `few` below `min_reps` kept repetitions.
    fn finish(self, method: Method, min_reps: usize) -> Measurement {
        self.acc.finish(method, &self.windows, min_reps)
    }
}

/// A race's outcome at rank 0: who was dropped and how it ended, and every
/// candidate's measurement, in the order of the points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Raced {
    /// The race.
    pub race: Race,
    /// Every candidate's repetitions so far, as a measurement.
    pub measurements: Vec<Measurement>,
}

/// Races `points`, implementations of one collective at one size and
/// root, with `method` ([`race`](super::race)): every candidate is warmed
/// up, then in each round every live one runs one repetition, in a fresh
/// random order (so that drift hits all alike), until `rule` decides. All
/// candidates share one set of buffers. `from` goes on with a saved race
/// of these points (read at the leader). The leader shows `on_round` the
/// race after each round; when it answers false, the race stops there
/// without an ending (interrupted; the race as shown can be resumed).
/// Every rank calls it with the same arguments and `seed`; rank 0 gets the
/// outcome.
#[allow(clippy::too_many_arguments)]
pub fn race_points(
    comm: &mut Communicator,
    points: &[Point],
    method: Method,
    opts: &Options,
    rule: &Rule,
    from: Option<Race>,
    seed: u64,
    on_round: &mut dyn FnMut(&Race) -> bool,
) -> Result<Option<Raced>> {
    let first = shared_point(points)?;
    check(comm, first.imp.op, first.root, method)?;
    let job = Job::of(first.imp.op, first.root, opts);
    let n = points.len();
    let leader = comm.rank() == job.leader;
    let mut race = from
        .filter(|r| r.reps.len() == n)
        .unwrap_or_else(|| Race::under(n, rule));
    race.begin_job();
    // The warm-ups' order must be alike on every rank; the rounds' is the
    // leader's, shared.
    let mut rng = round_orders(seed);
    let mut field = Field::warm_up(comm, points, &race, &job, opts, seed)?;
    let mut go = true;
    loop {
        let next = match leader && go && race.ending.is_none() {
            true => race.contenders(),
            false => Vec::new(),
        };
        let order = round_order(comm, job.leader, next, &mut rng, n)?;
        if order.is_empty() {
            break;
        }
        field.round(comm, order, method, &job, &mut race)?;
        if leader {
            race.close_round(rule);
            go = on_round(&race);
        }
    }
    let mine = leader.then(|| {
        if go {
            race.stop();
        }
        let measurements = field.finish(method, rule.min_reps);
        Raced { race, measurements }
    });
    deliver(comm, job.leader, mine)
}

/// The first of a race's `points`, refusing none and points that differ
/// from it in collective, size or root (one set of buffers serves all).
fn shared_point(points: &[Point]) -> Result<&Point> {
    let Some(first) = points.first() else {
        return Err(Error::Config("a race needs at least one candidate".into()));
    };
    let (op, bytes, root) = (first.imp.op, first.bytes, first.root);
    if points
        .iter()
        .any(|p| p.imp.op != op || p.bytes != bytes || p.root != root)
    {
        return Err(Error::Config(
            "a race's candidates must share the collective, size and root".into(),
        ));
    }
    Ok(first)
}

/// A race's candidates on one rank: the buffers they share and each
/// one's contender, in the order of the points.
struct Field<'a> {
    points: &'a [Point],
    caller: Caller<'static>,
    contenders: Vec<Contender>,
}

impl<'a> Field<'a> {
    /// Warms every candidate up, in an order drawn from `seed` so that it
    /// is alike on every rank; at the leader each takes up its
    /// repetitions in `race`.
    fn warm_up(
        comm: &mut Communicator,
        points: &'a [Point],
        race: &Race,
        job: &Job,
        opts: &Options,
        seed: u64,
    ) -> Result<Self> {
        let n = points.len();
        let mut order: Vec<usize> = (0..n).collect();
        Rng::new(seed).shuffle(&mut order);
        let mut caller = Caller::of(&points[0].imp, points[0].bytes, comm.size());
        let mut contenders: Vec<Option<Contender>> = (0..n).map(|_| None).collect();
        for &i in &order {
            caller.set_target(Target::Ours(points[i].imp.clone()));
            // A candidate dropped in an earlier job is not measured again:
            // no warm-up (every rank has the same saved race).
            let mut c = match race.live[i] || race.ending.is_some() {
                true => Contender::new(comm, &mut caller, job, opts)?,
                false => Contender::after(0.0),
            };
            if comm.rank() == job.leader {
                c.acc.raw = race.reps[i].clone();
            }
            contenders[i] = Some(c);
        }
        let contenders = contenders
            .into_iter()
            .map(|c| c.expect("every candidate warmed up"))
            .collect();
        Ok(Field {
            points,
            caller,
            contenders,
        })
    }

    /// One repetition of every candidate in `order`; the leader adds each
    /// kept one to `race`.
    fn round(
        &mut self,
        comm: &mut Communicator,
        order: Vec<usize>,
        method: Method,
        job: &Job,
        race: &mut Race,
    ) -> Result<()> {
        for i in order {
            let imp = self.points[i].imp.clone();
            self.caller.set_target(Target::Ours(imp));
            let c = &mut self.contenders[i];
            if let Some(Some(seconds)) = c.rep(comm, &mut self.caller, method, job)? {
                race.add(i, seconds);
            }
        }
        Ok(())
    }

    /// Every candidate's measurement, in the order of the points.
    fn finish(self, method: Method, min_reps: usize) -> Vec<Measurement> {
        self.contenders
            .into_iter()
            .map(|c| c.finish(method, min_reps))
            .collect()
    }
}

/// Refuses a root outside the job, and `truth` without a shared clock.
fn check(comm: &Communicator, op: Collective, root: usize, method: Method) -> Result<()> {
    let size = comm.size();
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
    Ok(())
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
    /// Whether `method` has measured enough: `min_reps` kept and a small
    /// enough relative standard error, or the limits reached.
    fn done(&self, method: Method, opts: &Options) -> bool {
        let enough = self.raw.len() >= opts.min_reps.max(1) && stats::rse(&self.raw) < opts.rse;
        enough || self.attempts >= max_attempts(method, opts) || self.raw.len() >= opts.max_reps
    }

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

    fn finish(self, method: Method, windows: &truth::Windows, min_reps: usize) -> Measurement {
        let count = self.ol_count.max(1) as f64;
        let summary = Summary::of(&self.raw);
        Measurement {
            method,
            reps: self.raw.len(),
            discarded: self.discarded,
            flags: Flag::of(&self.raw, &summary, min_reps),
            summary,
            ol_i: self
                .ol_sum
                .map(|sum| sum.into_iter().map(|s| s / count).collect()),
            window: (method == Method::Truth).then(|| windows.window_ns() as f64 * 1e-9),
            raw: self.raw,
        }
    }
}

/// Brings the leader's result to rank 0.
fn deliver<T: Serialize + DeserializeOwned>(
    comm: &mut Communicator,
    leader: usize,
    mine: Option<T>,
) -> Result<Option<T>> {
    if leader == 0 {
        return Ok(mine);
    }
    match (comm.rank(), mine) {
        (_, Some(m)) => {
            let text = serde_json::to_vec(&m).expect("a result serialises");
            comm.send_bytes(0, tags::RESULT, Bytes::from(text))?;
            Ok(None)
        }
        (0, None) => {
            let text = comm.recv_bytes(leader, tags::RESULT)?;
            let m = serde_json::from_slice(&text).map_err(|e| Error::Protocol {
                peer: format!("rank {leader}"),
                reason: format!("unreadable result: {e}"),
            })?;
            Ok(Some(m))
        }
        _ => Ok(None),
    }
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
