//! Communication kernels for the mapping experiments (docs/mapping.md):
//! every rank exchanges messages with its neighbours, iteration after
//! iteration, and rank 0 prints the slowest rank's time.
//!
//! `kernel NAME ITERS BYTES` under `autocoll launch` (or alone, one rank):
//!
//! - `ring`: ranks r − 1 and r + 1 (modulo the size);
//! - `halo2d`: a 2-D grid as square as the size allows, up to 4
//!   neighbours;
//! - `halo3d`: a 3-D grid (4 × 2 × 2 for 16), up to 6;
//! - `ladder`: two rails of size/2, rank r's step partner r ± size/2 with
//!   1.75 × BYTES (75% more than the rails, the paper's RF-CTH at 8
//!   tasks), rail neighbours r ± 1 with BYTES;
//! - `multigrid`: the 2-D grid at strides 1, 2 and 4 (ranks on the coarser
//!   grid exchange with the neighbours at that stride, BYTES / 4 and
//!   BYTES / 16), as a multigrid's levels do.
//!
//! Rank 0 prints `kernel=NAME ranks=N iters=I bytes=B secs=T`.

use std::process::ExitCode;
use std::time::Instant;

use autocoll::{Communicator, Op, Result};
use bytes::Bytes;

const TAG: u64 = 19;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kernel: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage() -> autocoll::Error {
    autocoll::Error::Config("usage: kernel ring|halo2d|halo3d|ladder|multigrid ITERS BYTES".into())
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, iters, bytes] = &args[..] else {
        return Err(usage());
    };
    let iters: usize = iters.parse().map_err(|_| usage())?;
    let bytes: usize = bytes.parse().map_err(|_| usage())?;
    let mut comm = autocoll::init()?;
    let peers = neighbours(name, comm.rank(), comm.size(), bytes).ok_or_else(usage)?;
    // One untimed iteration: connections are made on first use.
    exchange(&mut comm, &peers)?;
    comm.barrier()?;
    let start = Instant::now();
    for _ in 0..iters {
        exchange(&mut comm, &peers)?;
    }
    let mine = [start.elapsed().as_secs_f64()];
    let mut slowest = [0.0];
    comm.allreduce(&mine, &mut slowest, &Op::MAX)?;
    if comm.rank() == 0 {
        println!(
            "kernel={name} ranks={} iters={iters} bytes={bytes} secs={:.6}",
            comm.size(),
            slowest[0]
        );
    }
    Ok(())
}

/// Sends to every neighbour, then receives from every one (sends are
/// queued, so nobody waits on a send).
fn exchange(comm: &mut Communicator, peers: &[(usize, usize)]) -> Result<()> {
    for &(peer, len) in peers {
        comm.send_bytes(peer, TAG, Bytes::from(vec![1u8; len]))?;
    }
    for &(peer, _) in peers {
        comm.recv_bytes(peer, TAG)?;
    }
    Ok(())
}

/// The sides of a grid of `n` in `d` dimensions, as equal as `n` allows,
/// largest first.
fn grid(n: usize, d: usize) -> Vec<usize> {
    let mut sides = vec![1; d];
    let mut rest = n;
    let mut f = 2;
    let mut factors = Vec::new();
    while rest > 1 {
        while rest.is_multiple_of(f) {
            factors.push(f);
            rest /= f;
        }
        f += 1;
    }
    for p in factors.into_iter().rev() {
        let smallest = (0..d).min_by_key(|&i| sides[i]).expect("d > 0");
        sides[smallest] *= p;
    }
    sides.sort_unstable_by(|a, b| b.cmp(a));
    sides
}

/// Neighbours at `stride` on a grid of `sides`: those of `rank` when it is
/// on the grid of that stride.
fn grid_neighbours(rank: usize, sides: &[usize], stride: usize, len: usize) -> Vec<(usize, usize)> {
    let mut coord = Vec::with_capacity(sides.len());
    let mut r = rank;
    for &s in sides {
        coord.push(r % s);
        r /= s;
    }
    if coord.iter().any(|c| c % stride != 0) {
        return Vec::new();
    }
    let index = |c: &[usize]| {
        c.iter()
            .rev()
            .zip(sides.iter().rev())
            .fold(0, |acc, (x, s)| acc * s + x)
    };
    let mut out = Vec::new();
    for axis in 0..sides.len() {
        for forward in [false, true] {
            let mut c = coord.clone();
            match forward {
                true if c[axis] + stride < sides[axis] => c[axis] += stride,
                false if c[axis] >= stride => c[axis] -= stride,
                _ => continue,
            }
            out.push((index(&c), len));
        }
    }
    out
}

/// Each neighbour of `rank` among `n` and the bytes it gets.
fn neighbours(name: &str, rank: usize, n: usize, bytes: usize) -> Option<Vec<(usize, usize)>> {
    let mut peers = match name {
        "ring" => vec![((rank + n - 1) % n, bytes), ((rank + 1) % n, bytes)],
        "halo2d" => grid_neighbours(rank, &grid(n, 2), 1, bytes),
        "halo3d" => grid_neighbours(rank, &grid(n, 3), 1, bytes),
        "ladder" => {
            let half = n / 2;
            let (rail, at) = (rank / half.max(1), rank % half.max(1));
            let mut p = vec![((rank + half) % n, bytes * 7 / 4)];
            if at > 0 {
                p.push((rail * half + at - 1, bytes));
            }
            if at + 1 < half {
                p.push((rail * half + at + 1, bytes));
            }
            p
        }
        "multigrid" => {
            let sides = grid(n, 2);
            [(1, bytes), (2, bytes / 4), (4, bytes / 16)]
                .iter()
                .flat_map(|&(stride, len)| grid_neighbours(rank, &sides, stride, len))
                .collect()
        }
        _ => return None,
    };
    peers.retain(|&(p, _)| p != rank);
    Some(peers)
}
