//! What the lottery costs a call: time per call of a 1-byte broadcast on
//! one rank (no messages, so the selection path is all there is) with the
//! implementation named, through the `Fixed` selector, and through the
//! `Lottery` (counting its draws, which on one rank are local), measured
//! side by side in alternating rounds, best of each; and the cost of a draw
//! message on 4 local ranks (a reduction and a broadcast) against a call
//! of the 64 KiB broadcast it governs.
//!
//! Run: `cargo bench -p autocoll --bench lottery_overhead`

use std::time::Instant;

use autocoll::local;
use autocoll::select::lottery::Params;
use autocoll::select::{Fixed, Lottery};
use autocoll::{Collective, Implementation, Shape};

#[derive(Clone, Copy)]
enum Path {
    Named,
    Fixed,
    Lottery,
}

fn imp() -> Implementation {
    Implementation::tree(Collective::Bcast, Shape::Binomial, None).unwrap()
}

/// Seconds per call on one rank over `calls` calls.
fn per_call(path: Path, calls: usize) -> f64 {
    let out = local::run(1, |mut comm| {
        let one = imp();
        match path {
            Path::Named => {}
            Path::Fixed => comm.set_selector(Box::new(Fixed::new(one.clone()))),
            Path::Lottery => {
                let cands = vec![one.clone(), "bcast:chain".parse().unwrap()];
                let lottery = Lottery::new(Params::default(), 1)
                    .with_candidates(move |_, _, _| cands.clone());
                comm.set_selector(Box::new(lottery));
            }
        }
        let mut buf = [0u8; 1];
        let start = Instant::now();
        for _ in 0..calls {
            match path {
                Path::Named => comm.bcast_with(&one, &mut buf, 0).unwrap(),
                _ => comm.bcast(&mut buf, 0).unwrap(),
            }
        }
        start.elapsed().as_secs_f64() / calls as f64
    });
    out[0]
}

/// Seconds per call on 4 local ranks of `f`, slowest rank, best of 5.
fn four_ranks(calls: usize, f: impl Fn(&mut autocoll::Communicator) + Sync) -> f64 {
    (0..5)
        .map(|_| {
            local::run(4, |mut comm| {
                let start = Instant::now();
                for _ in 0..calls {
                    f(&mut comm);
                }
                start.elapsed().as_secs_f64() / calls as f64
            })
            .into_iter()
            .fold(0.0, f64::max)
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let calls = 200_000;
    let (mut named, mut fixed, mut lottery) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for _ in 0..5 {
        named = named.min(per_call(Path::Named, calls));
        fixed = fixed.min(per_call(Path::Fixed, calls));
        lottery = lottery.min(per_call(Path::Lottery, calls));
    }
    println!("1-byte bcast on 1 rank, per call (the selection path alone):");
    println!("  named implementation: {:8.0} ns", named * 1e9);
    println!("  Fixed selector:       {:8.0} ns", fixed * 1e9);
    println!(
        "  Lottery selector:     {:8.0} ns  (draws included)",
        lottery * 1e9
    );
    let reduce = Implementation::tree(Collective::Reduce, Shape::Binomial, None).unwrap();
    let draw = four_ranks(2000, |comm| {
        let mut times = [0.0f64; 50];
        let mine = times;
        comm.reduce_with(&reduce, &mine, &mut times, &autocoll::Op::MAX, 0)
            .unwrap();
        let mut msg = [0u64; 4];
        comm.bcast_with(&imp(), &mut msg, 0).unwrap();
    });
    let seg: Implementation = "bcast:binomial:seg=16K".parse().unwrap();
    let call = four_ranks(500, |comm| {
        let mut buf = vec![0u8; 64 * 1024];
        comm.bcast_with(&seg, &mut buf, 0).unwrap();
    });
    println!("4 local ranks (threads):");
    println!(
        "  a draw message (reduce of 25 calls' times + 32-byte bcast): {:7.1} µs",
        draw * 1e6
    );
    println!(
        "  a 64 KiB bcast:binomial:seg=16K call:                        {:7.1} µs",
        call * 1e6
    );
}
