//! An SOR-style iteration that lets the lottery pick its collectives: a 1-D
//! Laplace problem split over the ranks, relaxed with successive
//! over-relaxation; every step exchanges boundary values by broadcast from
//! rank 0 (the "parameters" a solver re-reads) and tests convergence with
//! an allreduce of the residual. The one line that turns on the lottery,
//! with what it learns kept in a state file for the next run, is
//! `comm.use_lottery(...)`.
//!
//! Local threads: `cargo run -p autocoll --example sor -- 4`
//! Processes:     `autocoll launch -n 4 -- target/debug/examples/sor`
//!
//! For the experiments of `docs/tracing.md` (the paper's SOR with a load
//! imbalance), options fix what the lottery would choose and disturb one
//! rank:
//!
//! - `--impl ID`: the convergence test's allreduce runs ID (the lottery is
//!   off; bcast and allgather take the library's fixed defaults);
//! - `--steps N`: exactly N steps, converged or not;
//! - `--imbalance RANK:MICROS`: rank RANK computes MICROS µs longer in
//!   every step (more relaxation sweeps, on scratch values), so that it
//!   enters every allreduce late.
//!
//! Rank 0 prints the steps, the time per step, and a line `RESULT ...`.
//! `AUTOCOLL_TRACE=DIR` records the run.

use std::time::{Duration, Instant};

use autocoll::{Communicator, Implementation, Op};

/// Points per rank.
const LOCAL: usize = 32;
/// Over-relaxation factor.
const OMEGA: f64 = 1.5;
/// Stop when the largest change of a step falls below this.
const TOLERANCE: f64 = 1e-6;
/// Steps at most.
const MAX_STEPS: usize = 20_000;

#[derive(Default)]
struct Options {
    /// Ranks as threads (when not launched).
    local: Option<usize>,
    /// The allreduce's implementation; `None`: the lottery picks.
    imp: Option<Implementation>,
    /// Exactly this many steps.
    steps: Option<usize>,
    /// (rank, extra compute per step).
    imbalance: Option<(usize, Duration)>,
}

fn options() -> Result<Options, String> {
    let mut o = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if !arg.starts_with("--") {
            o.local = Some(
                arg.parse()
                    .map_err(|_| format!("{arg}: not a rank count"))?,
            );
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--impl" => o.imp = Some(value.parse().map_err(|e| format!("--impl: {e}"))?),
            "--steps" => {
                o.steps = Some(value.parse().map_err(|_| format!("--steps {value}"))?);
            }
            "--imbalance" => {
                let bad = || format!("--imbalance {value}: expected RANK:MICROS");
                let (rank, micros) = value.split_once(':').ok_or_else(bad)?;
                let rank = rank.parse().map_err(|_| bad())?;
                let micros: u64 = micros.parse().map_err(|_| bad())?;
                o.imbalance = Some((rank, Duration::from_micros(micros)));
            }
            _ => return Err(format!("unknown option {arg}")),
        }
    }
    Ok(o)
}

/// Relaxes scratch values for `time`: the imbalanced rank's extra work.
fn compute_for(time: Duration, u: &[f64]) -> f64 {
    let start = Instant::now();
    let mut scratch = u.to_vec();
    while start.elapsed() < time {
        for i in 1..scratch.len() - 1 {
            scratch[i] = 0.5 * (scratch[i - 1] + scratch[i + 1]);
        }
    }
    std::hint::black_box(scratch[1])
}

/// What rank 0 reports: steps taken, the last change, seconds per step.
type Outcome = (usize, f64, f64);

fn solve(mut comm: Communicator, o: &Options, state: &str) -> autocoll::Result<Outcome> {
    if o.imp.is_none() {
        comm.use_lottery(state); // the one line: Lottery, remembered across runs
    }
    let (rank, size) = (comm.rank(), comm.size());
    // Fixed ends: u = 0 at the left of the domain, u = 1 at the right.
    let mut u = vec![0.0f64; LOCAL + 2];
    if rank == size - 1 {
        u[LOCAL + 1] = 1.0;
    }
    let mut params = vec![OMEGA; 512]; // 4K of solver parameters per step
    let mut edges = vec![0.0f64; 2 * size];
    let extra = o.imbalance.filter(|&(r, _)| r == rank).map(|(_, d)| d);
    let start = Instant::now();
    let mut outcome = (MAX_STEPS, f64::NAN);
    for step in 1..=o.steps.unwrap_or(MAX_STEPS) {
        comm.bcast(&mut params, 0)?;
        let omega = params[0];
        // Halo exchange through an allgather of every rank's two edges.
        let mine = [u[1], u[LOCAL]];
        comm.allgather(&mine, &mut edges)?;
        if rank > 0 {
            u[0] = edges[2 * (rank - 1) + 1];
        }
        if rank + 1 < size {
            u[LOCAL + 1] = edges[2 * (rank + 1)];
        }
        let mut change = 0.0f64;
        for i in 1..=LOCAL {
            let new = (1.0 - omega) * u[i] + omega * 0.5 * (u[i - 1] + u[i + 1]);
            change = change.max((new - u[i]).abs());
            u[i] = new;
        }
        if let Some(extra) = extra {
            compute_for(extra, &u);
        }
        let mut worst = [0.0];
        match &o.imp {
            Some(imp) => comm.allreduce_with(imp, &[change], &mut worst, &Op::MAX)?,
            None => comm.allreduce(&[change], &mut worst, &Op::MAX)?,
        }
        outcome = (step, worst[0]);
        if o.steps.is_none() && worst[0] < TOLERANCE {
            break;
        }
    }
    let per_step = start.elapsed().as_secs_f64() / outcome.0 as f64;
    Ok((outcome.0, outcome.1, per_step))
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sor: {e}");
            std::process::exit(2);
        }
    };
    let state = std::env::temp_dir().join("autocoll-sor-state.json");
    let state = state.to_string_lossy().into_owned();
    let launched = std::env::var_os("AUTOCOLL_RANK").is_some();
    let outcome = if launched {
        let comm = autocoll::init().expect("joining the job");
        let rank = comm.rank();
        solve(comm, &o, &state).map(|r| (rank == 0).then_some(r))
    } else {
        let ranks = o.local.unwrap_or(4);
        let all = autocoll::local::run(ranks, |comm| solve(comm, &o, &state));
        all.into_iter().next().expect("at least one rank").map(Some)
    };
    match outcome {
        Ok(Some((steps, change, per_step))) => {
            let chosen = match &o.imp {
                Some(imp) => imp.to_string(),
                None => format!("lottery state in {state}"),
            };
            println!(
                "stopped after {steps} steps (last change {change:.2e}), {:.1} µs per step; {chosen}",
                per_step * 1e6
            );
            println!(
                "RESULT steps={steps} per_step_us={:.3} impl={}",
                per_step * 1e6,
                o.imp.as_ref().map_or("lottery".into(), |i| i.to_string())
            );
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("sor: {e}");
            std::process::exit(1);
        }
    }
}
