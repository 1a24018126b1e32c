//! The rate of one point-to-point stream: rank 0 sends `MB` megabytes to
//! rank 1 in 1 MiB messages, rank 1 answers with one byte when all are in,
//! and rank 0 prints `rate_mbit=<megabits per second>` (payload only).
//! The emulated-cluster test runs it on two hosts to check the links' rates.
//!
//! Run two ranks of it under `autocoll launch` (tcp) or mpirun (mpi, with
//! `--features mpi`): `p2p_rate MB`.

use std::process::ExitCode;
use std::time::Instant;

use autocoll::{Communicator, Result};
use bytes::Bytes;

const CHUNK: usize = 1 << 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("p2p_rate: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<()> {
    let mb: f64 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(mb)) if mb > 0.0 => mb,
        _ => return Err(autocoll::Error::Config("usage: p2p_rate MEGABYTES".into())),
    };
    let mut comm = communicator()?;
    if comm.size() != 2 {
        return Err(autocoll::Error::Config(format!(
            "run 2 ranks, not {}",
            comm.size()
        )));
    }
    let chunks = ((mb * 1e6) as usize).div_ceil(CHUNK);
    // One small round trip first, so connection set-up is not timed.
    exchange(&mut comm, 1, 1)?;
    let start = Instant::now();
    exchange(&mut comm, chunks, CHUNK)?;
    if comm.rank() == 0 {
        let secs = start.elapsed().as_secs_f64();
        let mbit = (chunks * CHUNK) as f64 * 8.0 / secs / 1e6;
        println!(
            "rate_mbit={mbit:.2} bytes={} secs={secs:.3}",
            chunks * CHUNK
        );
    }
    Ok(())
}

/// Rank 0 sends `chunks` messages of `len` bytes; rank 1 acknowledges all.
fn exchange(comm: &mut Communicator, chunks: usize, len: usize) -> Result<()> {
    const DATA: u64 = 1;
    const ACK: u64 = 2;
    if comm.rank() == 0 {
        let payload = Bytes::from(vec![7u8; len]);
        for _ in 0..chunks {
            comm.send_bytes(1, DATA, payload.clone())?;
        }
        comm.recv_bytes(1, ACK)?;
    } else {
        for _ in 0..chunks {
            comm.recv_bytes(0, DATA)?;
        }
        comm.send_bytes(0, ACK, Bytes::from_static(b"k"))?;
    }
    Ok(())
}

/// Under `autocoll launch` the tcp transport, under mpirun the mpi one.
fn communicator() -> Result<Communicator> {
    autocoll::init()
}
