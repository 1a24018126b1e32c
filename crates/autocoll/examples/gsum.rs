//! Gsum, the benchmark of Bongo et al.: T ranks, an allreduce (sum) of T
//! f64 values, many times. It runs in two modes.
//!
//! `--time N` is the paper's Gsum: N calls of `--impl` after the warm-up,
//! timed; with `--trace DIR` the N calls are recorded (the recording starts
//! after the warm-up) for `autocoll analyze`. Rank 0 prints the time per
//! call (the slowest rank's N calls over N) and the median call, then a
//! line `RESULT mode=time ...` that `scripts/trace-experiments` collects.
//!
//! Without it, Gsum measures what recording a trace costs. Blocks of calls with the recorder on and off alternate in one run, in
//! pairs ordered off-on, on-off, off-on, … (so that a drift of the machine
//! hits both alike); every call is timed, each block gives the median of
//! its calls (the slowest rank's), and each pair the ratio on/off of its
//! two medians. Rank 0 prints the median of those ratios and their spread,
//! then a line `RESULT ...` that `scripts/trace-overhead` collects.
//!
//! Processes: `autocoll launch -n 8 -- target/release/examples/gsum`
//! Threads:   `target/release/examples/gsum --local 8`
//! Options:   `--time N`, `--trace DIR` (above), `--pairs N` (20),
//!            `--calls N` per block (500), `--warmup N`
//!            (200), `--impl ID` (allreduce:binomial), `--capacity EVENTS`
//!            (the recorder's buffer, 1M), `--observer nothing` (an
//!            observer that does nothing in place of the recorder: what
//!            the hook and its clock reads cost alone) or `--observer none`
//!            (no observer in either block: the method's own noise).

use std::path::PathBuf;
use std::sync::Arc;

use autocoll::clock::now_ns;
use autocoll::observe::{Event, Observer};
use autocoll::trace::{Recorder, TraceOptions, DEFAULT_CAPACITY_EVENTS};
use autocoll::{local, Communicator, Implementation, Op};

struct Options {
    local: Option<usize>,
    pairs: usize,
    calls: usize,
    warmup: usize,
    imp: Implementation,
    capacity: usize,
    observer: Kind,
    /// `--time N`: the plain benchmark, N calls.
    time: Option<usize>,
    /// `--trace DIR`: record the timed calls.
    trace: Option<PathBuf>,
}

/// What the "on" blocks observe with.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Recorder,
    Nothing,
    None,
}

/// An observer that does nothing.
struct Nothing;

impl Observer for Nothing {
    fn event(&self, _: &Event<'_>) {}
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        local: None,
        pairs: 20,
        calls: 500,
        warmup: 200,
        imp: "allreduce:binomial".parse().expect("a valid id"),
        capacity: DEFAULT_CAPACITY_EVENTS,
        observer: Kind::Recorder,
        time: None,
        trace: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let count = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{flag} {value}: not a count"))
        };
        match flag.as_str() {
            "--local" => o.local = Some(count()?.max(1)),
            "--pairs" => o.pairs = count()?.max(1),
            "--calls" => o.calls = count()?.max(1),
            "--warmup" => o.warmup = count()?,
            "--capacity" => o.capacity = count()?,
            "--time" => o.time = Some(count()?.max(1)),
            "--trace" => o.trace = Some(PathBuf::from(&value)),
            "--impl" => o.imp = value.parse().map_err(|e| format!("--impl: {e}"))?,
            "--observer" => {
                o.observer = match value.as_str() {
                    "recorder" => Kind::Recorder,
                    "nothing" => Kind::Nothing,
                    "none" => Kind::None,
                    _ => return Err(format!("--observer {value}: recorder, nothing or none")),
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.trace.is_some() && o.time.is_none() {
        return Err("--trace records the calls of --time N".into());
    }
    Ok(o)
}

/// What one rank measured: per block, the median call time (ns), and the
/// recorder's events and calls.
struct Measured {
    medians: Vec<f64>,
    events_per_call: f64,
}

/// The blocks of pair `i`: true when the recorder is on.
fn pair_order(i: usize) -> [bool; 2] {
    if i % 2 == 1 {
        [true, false]
    } else {
        [false, true]
    }
}

fn gsum(comm: &mut Communicator, o: &Options) -> autocoll::Result<Measured> {
    let t = comm.size();
    let values = vec![comm.rank() as f64; t];
    let mut sum = vec![0.0f64; t];
    let recorder = Arc::new(Recorder::new(o.capacity));
    let observer: Option<Arc<dyn Observer>> = match o.observer {
        Kind::Recorder => Some(recorder.clone()),
        Kind::Nothing => Some(Arc::new(Nothing)),
        Kind::None => None,
    };
    let barrier: Implementation = "barrier:dissemination".parse()?;
    let mut times = vec![0u64; o.calls];
    let mut medians = Vec::with_capacity(2 * o.pairs);
    for on in [true, false] {
        set(comm, &observer, on);
        for _ in 0..o.warmup {
            comm.allreduce_with(&o.imp, &values, &mut sum, &Op::SUM)?;
        }
    }
    let warm = recorder.usage();
    for pair in 0..o.pairs {
        for on in pair_order(pair) {
            set(comm, &observer, on);
            comm.barrier_with(&barrier)?;
            for time in times.iter_mut() {
                let start = now_ns();
                comm.allreduce_with(&o.imp, &values, &mut sum, &Op::SUM)?;
                *time = now_ns() - start;
            }
            medians.push(median(&mut times));
        }
    }
    set(comm, &observer, false);
    let expect = (t * (t - 1) / 2) as f64;
    if sum.iter().any(|&s| s != expect) {
        return Err(autocoll::Error::Config(format!(
            "gsum: a sum came out {sum:?}, not {expect}"
        )));
    }
    let usage = recorder.usage();
    let events = (usage.events + usage.dropped_events) - (warm.events + warm.dropped_events);
    let calls = (usage.calls + usage.dropped_calls) - (warm.calls + warm.dropped_calls);
    Ok(Measured {
        medians,
        events_per_call: events as f64 / calls.max(1) as f64,
    })
}

fn set(comm: &mut Communicator, observer: &Option<Arc<dyn Observer>>, on: bool) {
    if let Some(observer) = observer {
        comm.remove_observer(observer);
        if on {
            comm.add_observer(observer.clone());
        }
    }
}

fn median(times: &mut [u64]) -> f64 {
    times.sort_unstable();
    times[times.len() / 2] as f64
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Rank 0 gathers every rank's block medians and events per call.
fn collect(comm: &mut Communicator, m: &Measured) -> autocoll::Result<Option<Vec<Vec<f64>>>> {
    let mut mine = m.medians.clone();
    mine.push(m.events_per_call);
    let mut all = if comm.rank() == 0 {
        vec![0.0; mine.len() * comm.size()]
    } else {
        Vec::new()
    };
    let gather: Implementation = "gather:flat".parse()?;
    comm.gather_with(&gather, &mine, &mut all, 0)?;
    Ok((comm.rank() == 0).then(|| all.chunks(mine.len()).map(<[f64]>::to_vec).collect()))
}

fn report(comm: &Communicator, o: &Options, ranks: &[Vec<f64>]) {
    let Pairs { on, off, ratios } = Pairs::of(o.pairs, ranks);
    let events: Vec<f64> = ranks.iter().map(|r| r[2 * o.pairs]).collect();
    let mean_events = events.iter().sum::<f64>() / events.len() as f64;
    headline(comm, o);
    println!(
        "per-call time, median over blocks of the slowest rank's block median: off {:.2} µs, on {:.2} µs",
        quantile(&off, 0.5) / 1e3,
        quantile(&on, 0.5) / 1e3
    );
    println!(
        "on/off per pair: median {:.4}, quartiles {:.4} .. {:.4}, range {:.4} .. {:.4}",
        quantile(&ratios, 0.5),
        quantile(&ratios, 0.25),
        quantile(&ratios, 0.75),
        ratios[0],
        ratios[ratios.len() - 1]
    );
    let bytes_per_call = 16.0 * (mean_events + 2.0);
    println!(
        "recorded: {mean_events:.2} events per call per rank (ranks {:.0} .. {:.0}); 16 bytes an event and 32 a call's header: {bytes_per_call:.0} bytes, {:.0} calls per MiB and rank",
        events.iter().copied().fold(f64::INFINITY, f64::min),
        events.iter().copied().fold(0.0, f64::max),
        1048576.0 / bytes_per_call
    );
    println!(
        "RESULT ranks={} transport={} ratio={:.5} q1={:.5} q3={:.5} off_us={:.3} on_us={:.3} events_per_call={mean_events:.3}",
        comm.size(),
        comm.transport_kind(),
        quantile(&ratios, 0.5),
        quantile(&ratios, 0.25),
        quantile(&ratios, 0.75),
        quantile(&off, 0.5) / 1e3,
        quantile(&on, 0.5) / 1e3,
    );
}

/// The blocks' times (the slowest rank's median of each), split into on
/// and off, and each pair's ratio on/off; every list sorted.
struct Pairs {
    on: Vec<f64>,
    off: Vec<f64>,
    ratios: Vec<f64>,
}

impl Pairs {
    fn of(pairs: usize, ranks: &[Vec<f64>]) -> Pairs {
        let block: Vec<f64> = (0..2 * pairs)
            .map(|b| ranks.iter().map(|r| r[b]).fold(0.0, f64::max))
            .collect();
        let (mut on, mut off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for pair in 0..pairs {
            let order = pair_order(pair);
            let (a, b) = (block[2 * pair], block[2 * pair + 1]);
            let (t_on, t_off) = if order[0] { (a, b) } else { (b, a) };
            on.push(t_on);
            off.push(t_off);
            ratios.push(t_on / t_off);
        }
        for v in [&mut on, &mut off, &mut ratios] {
            v.sort_by(f64::total_cmp);
        }
        Pairs { on, off, ratios }
    }
}

/// The first line of the report: what ran where.
fn headline(comm: &Communicator, o: &Options) {
    let mut hosts = comm.hosts();
    hosts.sort();
    hosts.dedup();
    println!(
        "gsum: {} ranks ({}, {} host{}), {} of {} f64, {} pairs of blocks × {} calls, {} on/off interleaved",
        comm.size(),
        comm.transport_kind(),
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" },
        o.imp,
        comm.size(),
        o.pairs,
        o.calls,
        match o.observer {
            Kind::Recorder => "recorder",
            Kind::Nothing => "an observer doing nothing",
            Kind::None => "no observer (A/A)",
        }
    );
}

/// The plain benchmark: `n` calls after the warm-up, recorded when asked.
/// Returns this rank's time for the `n` calls and its median call (ns).
fn timed(comm: &mut Communicator, o: &Options, n: usize) -> autocoll::Result<[f64; 2]> {
    let t = comm.size();
    let values = vec![comm.rank() as f64; t];
    let mut sum = vec![0.0f64; t];
    for _ in 0..o.warmup {
        comm.allreduce_with(&o.imp, &values, &mut sum, &Op::SUM)?;
    }
    comm.barrier_with(&"barrier:dissemination".parse()?)?;
    if let Some(dir) = &o.trace {
        let options = TraceOptions {
            capacity_events: o.capacity,
            ..TraceOptions::default()
        };
        comm.trace_with(dir, options)?;
    }
    let mut times = vec![0u64; n];
    let start = now_ns();
    for time in times.iter_mut() {
        let begin = now_ns();
        comm.allreduce_with(&o.imp, &values, &mut sum, &Op::SUM)?;
        *time = now_ns() - begin;
    }
    let total = (now_ns() - start) as f64;
    // The report's gather is not Gsum's.
    comm.stop_trace()?;
    let expect = (t * (t - 1) / 2) as f64;
    if sum.iter().any(|&s| s != expect) {
        return Err(autocoll::Error::Config(format!(
            "gsum: a sum came out {sum:?}, not {expect}"
        )));
    }
    Ok([total, median(&mut times)])
}

/// Rank 0's report of `--time`: the slowest rank's total and median.
fn report_timed(
    comm: &mut Communicator,
    o: &Options,
    n: usize,
    mine: [f64; 2],
) -> autocoll::Result<()> {
    let mut all = vec![0.0; if comm.rank() == 0 { 2 * comm.size() } else { 0 }];
    comm.gather_with(&"gather:flat".parse()?, &mine, &mut all, 0)?;
    if comm.rank() != 0 {
        return Ok(());
    }
    let total = all.chunks(2).map(|c| c[0]).fold(0.0, f64::max);
    let median = all.chunks(2).map(|c| c[1]).fold(0.0, f64::max);
    println!(
        "gsum: {} ranks ({}), {} of {} f64, {n} calls{}: {:.2} µs per call, median call {:.2} µs (slowest rank)",
        comm.size(),
        comm.transport_kind(),
        o.imp,
        comm.size(),
        if o.trace.is_some() { ", recorded" } else { "" },
        total / n as f64 / 1e3,
        median / 1e3
    );
    println!(
        "RESULT mode=time ranks={} transport={} impl={} calls={n} per_call_us={:.3} median_us={:.3}",
        comm.size(),
        comm.transport_kind(),
        o.imp,
        total / n as f64 / 1e3,
        median / 1e3
    );
    Ok(())
}

fn rank_main(mut comm: Communicator, o: &Options) -> autocoll::Result<()> {
    if let Some(n) = o.time {
        let mine = timed(&mut comm, o, n)?;
        return report_timed(&mut comm, o, n, mine);
    }
    let measured = gsum(&mut comm, o)?;
    if let Some(ranks) = collect(&mut comm, &measured)? {
        report(&comm, o, &ranks);
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gsum: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let outcomes = match o.local {
        Some(n) => local::run(n, |comm| rank_main(comm, &o)),
        None => vec![autocoll::init().and_then(|comm| rank_main(comm, &o))],
    };
    for outcome in outcomes {
        if let Err(e) = outcome {
            eprintln!("gsum: {e}");
            return std::process::ExitCode::from(1);
        }
    }
    std::process::ExitCode::SUCCESS
}
