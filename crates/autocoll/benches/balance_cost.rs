//! What the balancer costs a broadcast when no rank is late: time per
//! call of `bcast:binomial` on 8 ranks with the balancer off and on,
//! interleaved block by block (the order flips every round), on local
//! threads and on tcp between threads, at 8 bytes and 64 KiB. The
//! balancer stays in for its blocks across the run, so it is measured as
//! a settled balancer runs: its probe on every call, its reports, its
//! decision messages every period (doubling up to 256 calls while it has
//! nothing to do).
//!
//! Run: `cargo bench -p autocoll --bench balance_cost` (target: on / off
//! ≤ 1.01, the median over rounds of each round's ratio). `cost` is the
//! median over rounds of each round's on − off, per call; the range is
//! that of the rounds' ratios: on a shared 2-core machine running 8 ranks
//! it is wide, and docs/balance.md reads the figures with it.

use std::time::{Duration, Instant};

use autocoll::balance::Params;
use autocoll::measure::stats::median;
use autocoll::{local, Collective, Communicator, Implementation};

#[path = "../tests/support/tcp_threads.rs"]
mod tcp_threads;
use tcp_threads::over_tcp;

const RANKS: usize = 8;
const ROUNDS: usize = 21;
const WARM_BLOCKS: usize = 2;

/// Seconds per call of the blocks with the balancer off and on, round by
/// round (rank 0's; other ranks return nothing), and the balancer's
/// status at the end.
type Blocks = Option<(Vec<f64>, Vec<f64>, String)>;

/// Every rank: the interleaved blocks of `calls` broadcasts of `bytes`.
fn blocks(mut comm: Communicator, bytes: usize, calls: usize) -> Blocks {
    let imp: Implementation = "bcast:binomial".parse().unwrap();
    let barrier: Implementation = "barrier:dissemination".parse().unwrap();
    comm.use_balancer(Params::default()).unwrap();
    let mut parked = comm.take_balancer();
    let mut buf = vec![0u8; bytes];
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for round in 0..WARM_BLOCKS + ROUNDS {
        for balanced in [round % 2 == 0, round % 2 == 1] {
            if balanced {
                comm.put_balancer(parked.take().unwrap()).unwrap();
            }
            comm.barrier_with(&barrier).unwrap();
            let start = Instant::now();
            for _ in 0..calls {
                comm.bcast_with(&imp, &mut buf, 0).unwrap();
            }
            comm.barrier_with(&barrier).unwrap();
            let per_call = start.elapsed().as_secs_f64() / calls as f64;
            if balanced {
                parked = comm.take_balancer();
            }
            if round >= WARM_BLOCKS {
                match balanced {
                    true => on.push(per_call),
                    false => off.push(per_call),
                }
            }
        }
    }
    let status = parked.unwrap().status(Collective::Bcast).unwrap();
    let said = format!(
        "{} calls, {} decisions, period now {}, {} table changes",
        status.calls, status.decisions, status.period, status.changes
    );
    (comm.rank() == 0).then_some((off, on, said))
}

fn report(name: &str, bytes: usize, found: Vec<Blocks>) {
    let (off, on, said) = found.into_iter().flatten().next().expect("rank 0's blocks");
    let ratios: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a / b).collect();
    let costs: Vec<f64> = on.iter().zip(&off).map(|(a, b)| (a - b) * 1e6).collect();
    let (lo, hi) = range(&ratios);
    println!(
        "{name:<14} {bytes:>6} B  off {:8.2} µs  on {:8.2} µs  cost {:+7.2} µs/call  on/off {:.3} (rounds {lo:.3}..{hi:.3})  {said}",
        median(&off) * 1e6,
        median(&on) * 1e6,
        median(&costs),
        median(&ratios),
    );
}

/// The smallest and the largest of `values`.
fn range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

fn main() {
    println!("bcast:binomial on {RANKS} ranks, balancer off and on interleaved, {ROUNDS} rounds; medians");
    for (bytes, calls) in [(8, 2000), (64 * 1024, 200)] {
        let found = local::run(RANKS, |comm| blocks(comm, bytes, calls));
        report("local threads", bytes, found);
        let found = over_tcp(RANKS, Duration::from_secs(60), |comm| {
            blocks(comm, bytes, calls)
        });
        report("tcp (threads)", bytes, found);
    }
}
