//! `autocoll adapt`: the paper's Figure 7/8 experiment. K calls of every
//! candidate and K calls under the `Lottery` selector, interleaved round by
//! round so that the machine's drift hits all alike; then each one's mean
//! and median, the oracle (the best fixed candidate by mean), and how the
//! lottery compares with it.
//!
//! Every timed call starts after an untimed barrier. Per-call time, agreed
//! by all ranks: with a shared clock the call's span,
//! max(leave) − min(enter) over the ranks; otherwise the longest rank's
//! duration. Lottery calls are timed around the plain call, so they include
//! the selector's agreement collectives at each draw.
//!
//! Definitions. `settled_at_call`: the first call (1-based) from which the
//! final choice holds the majority of every later 50-call window (`null`
//! when the last window has no majority). `near_best_from_call`: the same
//! for the candidates whose mean is within 3% of the oracle's taken
//! together (near-equal candidates can trade the lead at random for the
//! whole run). `explore_share`: the share of
//! lottery calls not on the pool's best candidate at that time.
//! `final_impl`: the pool's best candidate after the last call.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use autocoll::clock::now_ns;
use autocoll::measure::stats::Summary;
use autocoll::measure::{effective_bytes, Caller};
use autocoll::observe::{Event, Observer, Stage};
use autocoll::select::lottery::{Key, Params, Rng};
use autocoll::select::state::{Fingerprint, Store};
use autocoll::select::{parse_bytes, Group, Lottery};
use autocoll::{local, Algorithm, Collective, Communicator, Implementation, Selector, Shape};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::bench::Transport;
use crate::cluster::spec::Rate;
use crate::launch::{self, Placement};
use crate::Failure;

mod replay;

/// Rank 0 of a tcp run hands its trace to the launching process on a line
/// that starts with this.
const REPORT_LINE: &[u8] = b"@autocoll-adapt ";

/// Width of the windows that define when the lottery settled.
const WINDOW: usize = 50;

/// Candidates whose mean is within this ratio of the oracle's count as
/// near-best for `near_best_from_call`.
const NEAR: f64 = 1.03;

/// Untimed calls of every candidate before the experiment (connections,
/// caches, page faults).
const WARMUP: usize = 5;

/// Arguments of `autocoll adapt`.
#[derive(clap::Args)]
pub struct Args {
    /// The collective.
    #[arg(long, required_unless_present = "replay")]
    op: Option<String>,
    /// Ranks.
    #[arg(short = 'n', default_value_t = 4)]
    ranks: usize,
    /// Bytes per rank (K, M suffixes).
    #[arg(long, default_value = "64K")]
    bytes: String,
    /// Calls per candidate and under the lottery (K).
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Candidates (comma list); default: the paper's four trees (flat,
    /// chain, binary, binomial), segmented at 16K when the message is longer.
    #[arg(long = "impl")]
    imp: Option<String>,
    /// Root of rooted collectives.
    #[arg(long, default_value_t = 0)]
    root: usize,
    /// Share of the tickets the best candidate holds (α).
    #[arg(long, default_value_t = Params::default().alpha)]
    alpha: f64,
    /// Seed of the lottery's draws (and of the order of the series).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Repeat the experiment with seeds --seed, --seed+1, … and report the
    /// spread of the ratios over the runs: on a shared machine one run's
    /// ratio moves by a few percent from seed to seed. With --state, each
    /// run starts from what the runs before it saved.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    transport: Transport,
    #[command(flatten)]
    placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// The lottery's state file: read at the start, written at the end.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Slow one rank's link from the middle call on: `rank=R,delay=200us`
    /// (a sleep on every segment R receives), `rank=R,send-delay=100us`
    /// (a sleep after every segment R sends: its outgoing link busy that
    /// long per segment) or, on an emulated cluster,
    /// `host=NETNS,rate=10mbit` (that host's egress tbf on eth0).
    #[arg(long)]
    disturb: Option<String>,
    /// Write the results as JSON (schema autocoll.adapt/1).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw per-call times (Figure 8a) and their distribution (8b) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Run no calls: replay the fixed series recorded in FILE (a --json of
    /// this command) through the lottery. Each lottery call takes the time
    /// its candidate's recorded call took in the same round, plus the
    /// run's recorded cost of a draw message on a call that follows one;
    /// --seeds N replays every run N times (seeds: the run's, +1, …).
    /// Tunes the scheduler (--alpha) against a machine's own noise.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["op", "ranks", "bytes", "calls", "imp", "root", "state", "disturb", "transport", "seed", "timeout"])]
    replay: Option<PathBuf>,
}

/// How the run is disturbed halfway.
#[derive(Clone, Debug, PartialEq)]
enum Disturb {
    /// Rank `rank` sleeps `delay` on every segment it receives
    /// (`Stage::Received`) or after every segment it sends (`Stage::Sent`).
    Delay {
        rank: usize,
        delay: Duration,
        at: Stage,
    },
    /// The egress tbf of network namespace `host` (its `eth0`) drops to `rate`.
    Rate { host: String, rate: Rate },
}

/// What every rank needs to run the experiment.
#[derive(Clone)]
struct Setup {
    op: Collective,
    bytes: usize,
    root: usize,
    calls: usize,
    candidates: Vec<Implementation>,
    params: Params,
    seed: u64,
    seeds: u64,
    state: Option<PathBuf>,
    disturb: Option<Disturb>,
    timeout: Duration,
}

/// Rank 0's record of the run: every series' per-call times.
#[derive(Serialize, Deserialize)]
struct Trace {
    hosts: Vec<String>,
    /// Per candidate, per call, seconds.
    fixed: Vec<Vec<f64>>,
    /// Per lottery call, seconds.
    lottery: Vec<f64>,
    /// Per lottery call, the implementation that ran.
    chosen: Vec<String>,
    /// Per lottery call, whether it was off the pool's best.
    explored: Vec<bool>,
    /// Per lottery call, whether a draw (agreement and broadcast) preceded it.
    drew: Vec<bool>,
    /// The pool's best after the last call.
    final_impl: String,
    /// The lottery started from what an earlier run saved.
    restored: bool,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    if let Some(path) = &a.replay {
        return replay::run(path, &a);
    }
    let setup = setup_of(&a)?;
    crate::bench::refuse_mpi("adapt", a.transport)?;
    crate::bench::check_placement(a.transport, &a.placement)?;
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&setup);
    }
    eprintln!(
        "autocoll adapt: {} calls × {} candidates + lottery, {} on {} ranks, {} per rank",
        setup.calls,
        setup.candidates.len(),
        setup.op,
        a.ranks,
        autocoll::select::format_bytes(setup.bytes)
    );
    let traces = match a.transport {
        Transport::Local => run_local(a.ranks, &setup)?,
        Transport::Tcp => run_tcp(a.ranks, &a)?,
        Transport::Mpi => unreachable!("refused by refuse_mpi"),
    };
    let reports: Vec<serde_json::Value> = traces
        .iter()
        .zip(setup.seed..)
        .map(|(trace, seed)| analyse(&setup, a.ranks, trace, seed))
        .collect();
    report(&a, &reports)?;
    if let (Some(path), [trace]) = (&a.plot, &traces[..]) {
        let names: Vec<String> = setup.candidates.iter().map(|c| c.to_string()).collect();
        let svg = crate::plot::adapt_svg(&names, &trace.fixed, &trace.lottery)
            .map_err(|e| Failure::Run(anyhow!("plot: {e}")))?;
        autocoll::files::write_atomic(path, svg.as_bytes())
            .context("writing --plot")
            .map_err(Failure::Run)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the runs (one, or their spread) and writes `--json`.
fn report(a: &Args, reports: &[serde_json::Value]) -> Result<(), Failure> {
    let doc = if let [one] = reports {
        print_report(one);
        one.clone()
    } else {
        let summary = spread(reports);
        print_spread(reports, &summary);
        json!({"schema": "autocoll.adapt-seeds/1", "summary": summary, "runs": reports})
    };
    if let Some(path) = &a.json {
        let text = serde_json::to_vec_pretty(&doc).expect("JSON of plain data");
        autocoll::files::write_atomic(path, &text)
            .context("writing --json")
            .map_err(Failure::Run)?;
    }
    Ok(())
}

fn setup_of(a: &Args) -> Result<Setup, Failure> {
    let usage = |m: String| Failure::Usage(m);
    let op: Collective =
        a.op.as_deref()
            .unwrap_or_default()
            .parse()
            .map_err(|e| usage(format!("--op: {e}")))?;
    let bytes = effective_bytes(
        op,
        parse_bytes(&a.bytes).map_err(|e| usage(format!("--bytes: {e}")))?,
    );
    if a.ranks == 0 {
        return Err(usage("-n: a job needs at least 1 rank".into()));
    }
    if op.rooted() && a.root >= a.ranks {
        return Err(usage(format!(
            "--root {} is not a rank of a {}-rank job",
            a.root, a.ranks
        )));
    }
    if a.calls < 2 {
        return Err(usage("--calls must be at least 2".into()));
    }
    let params = params_of(a)?;
    let candidates = match &a.imp {
        Some(text) => crate::args::impls(text)?.unwrap_or_else(|| paper_trees(op, bytes)),
        None => paper_trees(op, bytes),
    };
    if let Some(bad) = candidates.iter().find(|i| i.op != op) {
        return Err(usage(format!(
            "--impl {bad} is not an implementation of --op {op}"
        )));
    }
    if candidates.is_empty() {
        return Err(usage(format!("no candidates for {op}")));
    }
    let disturb = a
        .disturb
        .as_deref()
        .map(|t| disturb_of(t, a.ranks))
        .transpose()?;
    if matches!(disturb, Some(Disturb::Rate { .. })) && a.transport != Transport::Tcp {
        return Err(usage(
            "--disturb host=…,rate=… throttles an emulated host: use it with --transport tcp"
                .into(),
        ));
    }
    if a.seeds > 1 && a.plot.is_some() {
        return Err(usage("--plot draws one run: leave out --seeds".into()));
    }
    Ok(Setup {
        op,
        bytes,
        root: a.root,
        calls: a.calls,
        candidates,
        params,
        seed: a.seed,
        seeds: a.seeds,
        state: a.state.clone(),
        disturb,
        timeout: Duration::from_secs(a.timeout),
    })
}

/// The lottery's parameters (`--alpha`), after checking them and
/// `--seeds`, which live runs and replays share.
fn params_of(a: &Args) -> Result<Params, Failure> {
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(Failure::Usage(format!(
            "--alpha {} must lie strictly between 0 and 1",
            a.alpha
        )));
    }
    if a.seeds == 0 {
        return Err(Failure::Usage("--seeds: at least 1".into()));
    }
    Ok(Params {
        alpha: a.alpha,
        ..Params::default()
    })
}

/// The paper's four trees, segmented at 16K when the message is longer.
fn paper_trees(op: Collective, bytes: usize) -> Vec<Implementation> {
    let seg = (bytes > 16 * 1024 && op != Collective::Barrier).then_some(16 * 1024);
    [Shape::Flat, Shape::Chain, Shape::Binary, Shape::Binomial]
        .into_iter()
        .map(|s| Implementation::tree(op, s, seg).expect("trees of every collective"))
        .collect()
}

/// `rank=R,delay=200us`, `rank=R,send-delay=100us` or
/// `host=NETNS,rate=10mbit`.
fn disturb_of(text: &str, ranks: usize) -> Result<Disturb, Failure> {
    let bad = |why: String| Failure::Usage(format!("--disturb `{text}`: {why}"));
    let mut fields = std::collections::BTreeMap::new();
    for item in text.split(',') {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| bad(format!("`{item}` is not key=value")))?;
        fields.insert(k.trim(), v.trim());
    }
    let keys: Vec<&str> = fields.keys().copied().collect();
    let delayed = |key: &str, at: Stage| {
        let rank: usize = fields["rank"]
            .parse()
            .map_err(|_| bad("rank is not a number".into()))?;
        if rank >= ranks {
            return Err(bad(format!(
                "rank {rank} is not a rank of a {ranks}-rank job"
            )));
        }
        let delay = duration_of(fields[key]).map_err(bad)?;
        Ok(Disturb::Delay { rank, delay, at })
    };
    match keys.as_slice() {
        ["delay", "rank"] => delayed("delay", Stage::Received),
        ["rank", "send-delay"] => delayed("send-delay", Stage::Sent),
        ["host", "rate"] => {
            let rate = Rate::try_from(fields["rate"].to_string()).map_err(bad)?;
            Ok(Disturb::Rate {
                host: fields["host"].to_string(),
                rate,
            })
        }
        _ => Err(bad(
            "expected rank=R,delay=TIME, rank=R,send-delay=TIME or host=NETNS,rate=RATE".into(),
        )),
    }
}

/// `200us`, `2ms`, `1s`.
fn duration_of(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("delay `{text}` is not a whole number with us, ms or s"))?;
    match unit {
        "us" => Ok(Duration::from_micros(n)),
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        _ => Err(format!("delay `{text}` needs a unit: us, ms or s")),
    }
}

fn run_local(p: usize, setup: &Setup) -> Result<Vec<Trace>, Failure> {
    let mut traces = Vec::new();
    for seeded in setup.each_seed() {
        let outcomes = local::run(p, |mut comm| {
            comm.set_timeout(seeded.timeout);
            rank_main(&mut comm, &seeded)
        });
        let mut trace = None;
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let found = outcome
                .with_context(|| format!("{p}-rank job, rank {rank}, seed {}", seeded.seed))
                .map_err(Failure::Run)?;
            trace = trace.or(found);
        }
        traces.push(trace.ok_or_else(|| Failure::Run(anyhow!("rank 0 returned no trace")))?);
    }
    Ok(traces)
}

impl Setup {
    /// The lottery this setup runs: its parameters, seed and candidates (a
    /// replay builds the very same one).
    fn lottery(&self) -> Lottery {
        let candidates = self.candidates.clone();
        Lottery::new(self.params.clone(), self.seed)
            .with_candidates(move |_, _, _| candidates.clone())
    }

    /// This setup once per seed of `--seeds`.
    fn each_seed(&self) -> impl Iterator<Item = Setup> + '_ {
        (0..self.seeds).map(|k| Setup {
            seed: self.seed + k,
            ..self.clone()
        })
    }
}

/// Rank 0 reports one trace line per seed.
fn run_tcp(p: usize, a: &Args) -> Result<Vec<Trace>, Failure> {
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

fn as_rank(setup: &Setup) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(setup.timeout)?;
    for seeded in setup.each_seed() {
        if let Some(trace) = rank_main(&mut comm, &seeded).map_err(Failure::Run)? {
            let json = serde_json::to_string(&trace).expect("JSON of plain data");
            println!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Sleeps on every segment this rank receives, or after every segment it
/// sends, of a candidate's call, once on.
struct Delay {
    on: AtomicBool,
    delay: Duration,
    at: Stage,
    candidates: Vec<Implementation>,
}

impl Observer for Delay {
    fn event(&self, event: &Event<'_>) {
        if event.stage == self.at
            && self.on.load(Ordering::Relaxed)
            && self.candidates.contains(event.imp)
        {
            std::thread::sleep(self.delay);
        }
    }
}

/// The lottery, noting which candidate each call ran and whether it was
/// exploring (off the pool's best at the time).
struct Logged {
    inner: Lottery,
    log: Arc<Mutex<Log>>,
}

/// Indices into the candidates (the pool keeps them in the same order);
/// names are made once at the end, not on every call.
#[derive(Default)]
struct Log {
    chosen: Vec<usize>,
    explored: Vec<bool>,
    drew: Vec<bool>,
    best: Option<usize>,
    restored: bool,
}

impl Log {
    /// The run's trace: the series' times, with the candidates' `names`
    /// in place of the log's indices.
    fn trace(
        &self,
        names: &[String],
        hosts: Vec<String>,
        fixed: Vec<Vec<f64>>,
        lottery: Vec<f64>,
    ) -> Trace {
        Trace {
            hosts,
            fixed,
            lottery,
            chosen: self.chosen.iter().map(|&i| names[i].clone()).collect(),
            explored: self.explored.clone(),
            drew: self.drew.clone(),
            final_impl: self.best.map(|i| names[i].clone()).unwrap_or_default(),
            restored: self.restored,
        }
    }

    fn with_capacity(calls: usize) -> Self {
        Log {
            chosen: Vec::with_capacity(calls),
            explored: Vec::with_capacity(calls),
            drew: Vec::with_capacity(calls),
            best: None,
            restored: false,
        }
    }
}

impl Logged {
    /// `inner`, noting each call in a log with room for `calls` up front
    /// (the log grows inside the timed calls).
    fn new(inner: Lottery, calls: usize) -> (Self, Arc<Mutex<Log>>) {
        let mut log = Log::with_capacity(calls);
        log.restored = inner.restored();
        let log = Arc::new(Mutex::new(log));
        let logged = Logged {
            inner,
            log: log.clone(),
        };
        (logged, log)
    }
}

impl Selector for Logged {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> autocoll::Result<Implementation> {
        let key = Key::of(op, group.size(), bytes);
        let imp = self.inner.select(group, op, bytes)?;
        let drew = self.inner.after_message();
        let pool = &self.inner.pools()[&key];
        let (chosen, _) = pool
            .current
            .expect("a call the lottery chose has a holding candidate");
        let best = pool.best();
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.explored.push(best != Some(chosen));
        log.drew.push(drew);
        log.chosen.push(chosen);
        log.best = best;
        Ok(imp)
    }

    fn wants_times(&self) -> bool {
        self.inner.wants_times()
    }

    fn record(&mut self, imp: &Implementation, bytes: usize, enter_ns: u64, leave_ns: u64) {
        self.inner.record(imp, bytes, enter_ns, leave_ns)
    }

    fn save(&mut self) -> autocoll::Result<()> {
        self.inner.save()
    }
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
struct Order(Rng);

impl Order {
    /// 0..n in a random order (Fisher–Yates).
    fn shuffled(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = ((self.0.uniform() * (i + 1) as f64) as usize).min(i);
            v.swap(i, j);
        }
        v
    }
}

fn install_lottery(comm: &mut Communicator, s: &Setup) -> Arc<Mutex<Log>> {
    let mut lottery = s.lottery();
    if let Some(path) = &s.state {
        let fingerprint = Fingerprint::new(&comm.hosts(), comm.transport_kind());
        lottery = lottery.with_store(Store::new(path, fingerprint, comm.rank() == 0));
    }
    let (logged, log) = Logged::new(lottery, s.calls);
    comm.set_selector(Box::new(logged));
    log
}

fn install_delay(comm: &mut Communicator, s: &Setup) -> Option<Arc<Delay>> {
    match &s.disturb {
        Some(Disturb::Delay { rank, delay, at }) if *rank == comm.rank() => {
            let d = Arc::new(Delay {
                on: AtomicBool::new(false),
                delay: *delay,
                at: *at,
                candidates: s.candidates.clone(),
            });
            comm.set_observer(Some(d.clone()));
            Some(d)
        }
        _ => None,
    }
}

/// The barrier between timed calls; not the plain barrier, which would go
/// through the lottery.
fn separating_barrier() -> Implementation {
    Implementation::new(Collective::Barrier, Algorithm::Dissemination, None)
        .expect("the dissemination barrier exists")
}

/// Starts the disturbance; for a throttle, returns how to undo it. Rank 0
/// throttles while the others wait in a barrier, so the change takes effect
/// at the same call for all.
fn start_disturbance(
    comm: &mut Communicator,
    s: &Setup,
    delay: Option<&Delay>,
) -> anyhow::Result<Option<Vec<Vec<String>>>> {
    if let Some(d) = delay {
        d.on.store(true, Ordering::Relaxed);
    }
    let mut undo = None;
    if let (Some(Disturb::Rate { host, rate }), 0) = (&s.disturb, comm.rank()) {
        undo = Some(throttle(host, *rate)?);
    }
    comm.barrier_with(&separating_barrier())?;
    Ok(undo)
}

/// The `tc` command prefix that reaches a host's link: `eth0` inside its
/// namespace, the host's egress. (The root-namespace end of the veth is
/// out of reach of a rank that itself runs in a host's namespace.)
fn link_ends(host: &str) -> [Vec<String>; 1] {
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    [v(&[
        "tc", "-n", host, "qdisc", "%", "dev", "eth0", "root", "tbf",
    ])]
}

/// Sets `host`'s egress to `rate`; returns the commands that
/// put back the tbf found there.
fn throttle(host: &str, rate: Rate) -> anyhow::Result<Vec<Vec<String>>> {
    let mut undo = Vec::new();
    for end in link_ends(host) {
        let show: Vec<String> = end[..end.len() - 2]
            .iter()
            .map(|x| if x == "%" { "show".into() } else { x.clone() })
            .collect();
        let text = command_output(&show)?;
        let old = tbf_params(&text)
            .ok_or_else(|| anyhow!("no tbf on `{}`: is the cluster up?", show.join(" ")))?;
        let (burst, latency) = crate::cluster::net::bucket(rate);
        let change = |params: &[String]| -> Vec<String> {
            end.iter()
                .map(|x| if x == "%" { "change".into() } else { x.clone() })
                .chain(params.iter().cloned())
                .collect()
        };
        let new = [
            "rate".into(),
            rate.to_string(),
            "burst".into(),
            burst.to_string(),
            "latency".into(),
            latency.into(),
        ];
        undo.push(change(&old));
        if let Err(e) = command_output(&change(&new)) {
            // Put back what was already changed before giving up.
            undo_throttle(&undo);
            return Err(e);
        }
    }
    Ok(undo)
}

fn undo_throttle(undo: &[Vec<String>]) {
    for cmd in undo {
        if let Err(e) = command_output(cmd) {
            eprintln!("autocoll: warning: could not restore the link: {e:#}");
        }
    }
}

/// `rate R burst B latency L` from `tc qdisc show` of a tbf.
fn tbf_params(show: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = show.split_whitespace().collect();
    let after = |key: &str| {
        let i = words.iter().position(|w| *w == key)?;
        words.get(i + 1).map(|w| w.to_string())
    };
    Some(vec![
        "rate".into(),
        after("rate")?,
        "burst".into(),
        after("burst")?,
        "latency".into(),
        after("lat")?,
    ])
}

fn command_output(cmd: &[String]) -> anyhow::Result<String> {
    let out = Command::new(&cmd[0])
        .args(&cmd[1..])
        .output()
        .with_context(|| format!("running `{}`", cmd.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            cmd.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every call's time as all ranks agree on it, at rank 0: the span
/// max(leave) − min(enter) with a shared clock, else the longest rank's
/// duration.
fn agreed_spans(
    comm: &mut Communicator,
    enter: &[u64],
    leave: &[u64],
) -> anyhow::Result<Option<Vec<f64>>> {
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
    if comm.rank() != 0 {
        return Ok(None);
    }
    let shared = comm.shared_clock();
    let spans = (0..n)
        .map(|i| {
            let ranks = all.chunks(2 * n);
            let (mut lo, mut hi, mut longest) = (u64::MAX, 0u64, 0u64);
            for r in ranks {
                let (e, l) = (r[i], r[n + i]);
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
        })
        .collect();
    Ok(Some(spans))
}

/// The first call (0-based, ≥ `from`) from which `choice` holds the
/// majority of every later window of [`WINDOW`] calls; a run shorter than
/// a window from `from` is one window.
pub fn settled_at(chosen: &[String], choice: &str, from: usize) -> Option<usize> {
    settled_among(chosen, |c| c == choice, from)
}

/// [`settled_at`] for any of the choices `among` accepts.
fn settled_among(chosen: &[String], among: impl Fn(&str) -> bool, from: usize) -> Option<usize> {
    let n = chosen.len();
    if from >= n {
        return None;
    }
    let majority = |lo: usize, hi: usize| {
        let hits = chosen[lo..hi].iter().filter(|c| among(c)).count();
        2 * hits > hi - lo
    };
    if n - from < WINDOW {
        return majority(from, n).then_some(from);
    }
    let mut settled = None;
    for start in (from..=n - WINDOW).rev() {
        if !majority(start, start + WINDOW) {
            break;
        }
        settled = Some(start);
    }
    settled
}

/// The results, in the schema of `--json`.
fn analyse(s: &Setup, ranks: usize, t: &Trace, seed: u64) -> serde_json::Value {
    let names: Vec<String> = s.candidates.iter().map(|c| c.to_string()).collect();
    let fixed: Vec<Summary> = t.fixed.iter().map(|xs| Summary::of(xs)).collect();
    let oracle = (0..fixed.len())
        .min_by(|&a, &b| fixed[a].mean.total_cmp(&fixed[b].mean))
        .expect("at least one candidate");
    let lot = Summary::of(&t.lottery);
    let o = &fixed[oracle];
    let explored = t.explored.iter().filter(|&&e| e).count();
    let z = names.len() as f64;
    let bound = z * z.log2().max(1.0) / (1.0 - s.params.alpha) * 10.0;
    // The lottery's first calls against the oracle's calls of the same
    // rounds: over 50 calls the machine's speed can sit 10–15% off its
    // average for the run, and against the whole run's mean that drift,
    // not the lottery, decided whether the first 50 calls were "within 10%".
    let first = &t.lottery[..t.lottery.len().min(WINDOW)];
    let oracle_first = &t.fixed[oracle][..t.fixed[oracle].len().min(WINDOW)];
    let first_mean = Summary::of(first).mean;
    // Candidates within NEAR of the oracle's mean: among them the lottery
    // may trade places at random without costing more than that.
    let near_best: Vec<&str> = names
        .iter()
        .zip(&fixed)
        .filter(|(_, f)| f.mean <= NEAR * o.mean)
        .map(|(n, _)| n.as_str())
        .collect();
    let mut doc = json!({
        "schema": "autocoll.adapt/1",
        "seed": seed,
        "op": s.op.to_string(),
        "ranks": ranks,
        "bytes": s.bytes,
        "calls": s.calls,
        "hosts": t.hosts,
        "candidates": names,
        "alpha": s.params.alpha,
        "fixed": names.iter().zip(&fixed).map(|(n, f)| json!({
            "impl": n, "mean_s": f.mean, "median_s": f.median,
        })).collect::<Vec<_>>(),
        "oracle": {"impl": names[oracle], "mean_s": o.mean, "median_s": o.median},
        "lottery": {
            "mean_s": lot.mean,
            "median_s": lot.median,
            "settled_at_call": settled_at(&t.chosen, &t.final_impl, 0).map(|c| c + 1),
            "near_best_from_call": settled_among(&t.chosen, |c| near_best.contains(&c), 0).map(|c| c + 1),
            "explore_share": explored as f64 / t.lottery.len().max(1) as f64,
            "final_impl": t.final_impl,
            "first50_mean_s": first_mean,
            "from_saved_state": t.restored,
        },
        "mean_ratio": lot.mean / o.mean,
        "median_ratio": lot.median / o.median,
        "first50_mean_ratio": first_mean / Summary::of(oracle_first).mean,
        "settle_bound_calls": bound,
        // Every call, in order: a fixed series' k-th call ran in the same
        // round as the lottery's k-th, so the two can be set side by side.
        "per_call": {
            "fixed": names.iter().zip(&t.fixed).map(|(n, xs)| json!({
                "impl": n, "s": xs,
            })).collect::<Vec<_>>(),
            "lottery": {"s": t.lottery, "impl": t.chosen, "drew": t.drew},
        },
    });
    if let Some(d) = &s.disturb {
        doc["disturb"] = disturbance(&names, t, format!("{d:?}"));
    }
    doc
}

/// How the lottery followed a disturbance that began halfway (`spec`).
fn disturbance(names: &[String], t: &Trace, spec: String) -> serde_json::Value {
    let at = t.lottery.len() / 2;
    let after: Vec<f64> = t
        .fixed
        .iter()
        .map(|xs| Summary::of(&xs[at..]).mean)
        .collect();
    let best = (0..after.len())
        .min_by(|&a, &b| after[a].total_cmp(&after[b]))
        .expect("at least one candidate");
    let on_best = settled_at(&t.chosen, &names[best], at).map(|c| c - at);
    json!({
        "spec": spec,
        "at_call": at + 1,
        "best_after": names[best],
        "best_after_mean_s": after[best],
        "lottery_on_best_after_calls": on_best,
    })
}

fn print_report(r: &serde_json::Value) {
    let us = |v: &serde_json::Value| v.as_f64().map_or("-".into(), |x| format!("{:.1}", x * 1e6));
    println!("{:<34} {:>11} {:>11}", "series", "mean µs", "median µs");
    for f in r["fixed"].as_array().into_iter().flatten() {
        println!(
            "{:<34} {:>11} {:>11}",
            f["impl"].as_str().unwrap_or(""),
            us(&f["mean_s"]),
            us(&f["median_s"])
        );
    }
    let l = &r["lottery"];
    println!(
        "{:<34} {:>11} {:>11}",
        "lottery",
        us(&l["mean_s"]),
        us(&l["median_s"])
    );
    println!(
        "oracle {}; lottery/oracle: mean {:.3}, median {:.3}; first 50 calls {:.3} (the oracle's same 50){}",
        r["oracle"]["impl"].as_str().unwrap_or(""),
        r["mean_ratio"].as_f64().unwrap_or(f64::NAN),
        r["median_ratio"].as_f64().unwrap_or(f64::NAN),
        r["first50_mean_ratio"].as_f64().unwrap_or(f64::NAN),
        if l["from_saved_state"].as_bool() == Some(true) {
            ", from a saved state"
        } else {
            ""
        },
    );
    println!(
        "settled on {} at call {} (bound {:.0}), on the near-best (within {:.0}% of the oracle) from call {}; exploring {:.1}% of calls",
        l["final_impl"].as_str().unwrap_or(""),
        l["settled_at_call"],
        r["settle_bound_calls"].as_f64().unwrap_or(f64::NAN),
        (NEAR - 1.0) * 100.0,
        l["near_best_from_call"],
        l["explore_share"].as_f64().unwrap_or(f64::NAN) * 100.0
    );
    if let Some(d) = r.get("disturb") {
        println!(
            "disturbed at call {}: best after is {}; lottery on it after {} calls",
            d["at_call"],
            d["best_after"].as_str().unwrap_or(""),
            d["lottery_on_best_after_calls"]
        );
    }
}

/// The targets of the lottery, as ratios to the oracle.
const MEAN_TARGET: f64 = 1.10;
const MEDIAN_TARGET: f64 = 1.03;

/// Over runs: the median and worst of each ratio, and how many runs met
/// each target.
fn spread(runs: &[serde_json::Value]) -> serde_json::Value {
    let ratios = |key: &str| -> Vec<f64> { runs.iter().filter_map(|r| r[key].as_f64()).collect() };
    let over_runs = |key: &str, target: f64| ratio_spread(&ratios(key), target);
    let settled = |key: &str| {
        runs.iter()
            .filter(|r| {
                let bound = r["settle_bound_calls"].as_f64().unwrap_or(0.0);
                r["lottery"][key].as_f64().is_some_and(|c| c <= bound)
            })
            .count()
    };
    let restored: Vec<f64> = runs
        .iter()
        .filter(|r| r["lottery"]["from_saved_state"].as_bool() == Some(true))
        .filter_map(|r| r["first50_mean_ratio"].as_f64())
        .collect();
    let first50 = (!restored.is_empty()).then(|| ratio_spread(&restored, MEAN_TARGET));
    json!({
        "runs": runs.len(),
        "first50_ratio_from_saved_state": first50,
        "mean_ratio": over_runs("mean_ratio", MEAN_TARGET),
        "median_ratio": over_runs("median_ratio", MEDIAN_TARGET),
        "settled_within_bound": settled("settled_at_call"),
        "near_best_within_bound": settled("near_best_from_call"),
    })
}

/// The median and worst of `ratios`, and how many are within `target`.
fn ratio_spread(ratios: &[f64], target: f64) -> serde_json::Value {
    let s = Summary::of(ratios);
    let within = ratios.iter().filter(|&&x| x <= target).count();
    json!({"runs": ratios.len(), "median": s.median, "max": s.max, "within_target": within, "target": target})
}

fn print_spread(runs: &[serde_json::Value], summary: &serde_json::Value) {
    let call = |v: &serde_json::Value| v.as_u64().map_or("never".to_string(), |c| c.to_string());
    println!(
        "{:>6} {:<28} {:>10} {:>12} {:>8} {:>10}",
        "seed", "oracle", "mean ratio", "median ratio", "settled", "near-best"
    );
    for r in runs {
        let l = &r["lottery"];
        println!(
            "{:>6} {:<28} {:>10.3} {:>12.3} {:>8} {:>10}",
            r["seed"].as_u64().unwrap_or(0),
            r["oracle"]["impl"].as_str().unwrap_or(""),
            r["mean_ratio"].as_f64().unwrap_or(f64::NAN),
            r["median_ratio"].as_f64().unwrap_or(f64::NAN),
            call(&l["settled_at_call"]),
            call(&l["near_best_from_call"]),
        );
    }
    let line = |name: &str, v: &serde_json::Value| {
        if v.is_null() {
            return;
        }
        println!(
            "{name}: median over runs {:.3}, worst {:.3}; within {:.2} in {} of {} runs",
            v["median"].as_f64().unwrap_or(f64::NAN),
            v["max"].as_f64().unwrap_or(f64::NAN),
            v["target"].as_f64().unwrap_or(f64::NAN),
            v["within_target"],
            v["runs"]
        );
    };
    line("lottery mean ÷ oracle", &summary["mean_ratio"]);
    line("lottery median ÷ oracle", &summary["median_ratio"]);
    line(
        "first 50 calls ÷ the oracle's same 50, runs from a saved state",
        &summary["first50_ratio_from_saved_state"],
    );
    println!(
        "settled within the bound in {} of {} runs (on the near-best in {})",
        summary["settled_within_bound"], summary["runs"], summary["near_best_within_bound"]
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settling_needs_a_majority_of_every_later_window() {
        let mut chosen: Vec<String> = (0..100)
            .map(|i| if i % 2 == 0 { "a" } else { "b" }.into())
            .collect();
        chosen.extend((0..200).map(|_| "b".to_string()));
        let at = settled_at(&chosen, "b", 0).unwrap();
        // The window starting at `at` holds 26 b's of 50: just a majority.
        assert!((50..=100).contains(&at), "{at}");
        assert_eq!(settled_at(&chosen, "a", 0), None);
        assert_eq!(settled_at(&chosen, "b", 150), Some(150));
    }

    #[test]
    fn disturb_specs_parse_and_bad_ones_say_why() {
        assert_eq!(
            disturb_of("rank=2,delay=200us", 4).ok(),
            Some(Disturb::Delay {
                rank: 2,
                delay: Duration::from_micros(200),
                at: Stage::Received
            })
        );
        assert_eq!(
            disturb_of("rank=0,send-delay=100us", 4).ok(),
            Some(Disturb::Delay {
                rank: 0,
                delay: Duration::from_micros(100),
                at: Stage::Sent
            })
        );
        assert_eq!(
            disturb_of("host=star8-h2,rate=10mbit", 8).ok(),
            Some(Disturb::Rate {
                host: "star8-h2".into(),
                rate: Rate(10_000_000)
            })
        );
        let msg = |r: Result<Disturb, Failure>| match r {
            Err(Failure::Usage(m)) => m,
            _ => String::new(),
        };
        assert!(msg(disturb_of("rank=9,delay=1ms", 4)).contains("not a rank"));
        assert!(msg(disturb_of("rank=1,delay=1h", 4)).contains("needs a unit"));
        assert!(msg(disturb_of("rank=x,send-delay=1ms", 4)).contains("not a number"));
        assert!(msg(disturb_of("rank=1", 4)).contains("expected"));
    }

    #[test]
    fn tbf_parameters_come_from_tc_show() {
        let show = "qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 12500b lat 100ms\n";
        assert_eq!(
            tbf_params(show).unwrap(),
            ["rate", "100Mbit", "burst", "12500b", "latency", "100ms"]
        );
    }
}
