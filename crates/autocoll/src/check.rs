//! Validation of implementations against a serial reference.
//!
//! Every rank makes up every rank's input from the seed, so it can compute
//! the result it must end with on its own, without trusting any collective.
//! The same code runs on every transport: each rank checks itself, and
//! [`collect`] brings the failures to rank 0. `autocoll check` and the
//! test suites run it; given a [`Native`] library (an MPI library's own
//! collectives) it also requires that library's result, bit for bit.

use std::time::Duration;

use bytes::Bytes;

use crate::clock::now_ns;
use crate::comm::communicator::Communicator;
use crate::ids::Collective;
use crate::select::{Algorithm, Implementation};

mod case;
mod cases;
mod moves;
mod native;
mod reduce;
mod reference;
pub use case::{Case, Config, Dtype, Failure, Native};
pub use cases::{all_implementations, user_tree};
use moves::check_moves;
use reduce::check_reduce;
use reference::{mix, Inputs};

/// Runs every case on this rank, in order, and returns what went wrong here.
pub fn run(comm: &mut Communicator, cases: &[Case], config: &Config) -> Vec<Failure> {
    run_compared(comm, cases, config, None)
}

/// [`run`], and with `native` also runs every data-moving and reducing case
/// through that library on the same inputs and requires its result to be
/// bit-equal to autocoll's. (Floats compare exactly too: the inputs are
/// small whole numbers.) The library's call comes first, so that every
/// rank makes it even when autocoll's call fails on some rank.
pub fn run_compared(
    comm: &mut Communicator,
    cases: &[Case],
    config: &Config,
    native: Option<&dyn Native>,
) -> Vec<Failure> {
    cases
        .iter()
        .enumerate()
        .filter_map(|(i, case)| {
            let outcome = run_case(comm, case, config, i as u64, native);
            outcome.err().map(|reason| Failure {
                imp: case.imp.to_string(),
                ranks: comm.size(),
                bytes: case.bytes,
                root: case.root,
                rank: comm.rank(),
                reason,
            })
        })
        .collect()
}

/// Runs one case and compares this rank's result with the reference (and,
/// given `native`, with that library's).
pub fn run_case(
    comm: &mut Communicator,
    case: &Case,
    config: &Config,
    index: u64,
    native: Option<&dyn Native>,
) -> Result<(), String> {
    let inputs = Inputs {
        seed: mix(config.seed ^ mix(index)),
        p: comm.size(),
        me: comm.rank(),
    };
    let op = case.imp.op;
    if op == Collective::Barrier {
        return check_barrier(comm, case, index);
    }
    if !op.reduces() {
        return check_moves(comm, case, &inputs, native);
    }
    macro_rules! typed {
        ($($d:ident => $t:ty),*) => {
            match config.dtype { $(Dtype::$d => check_reduce::<$t>(comm, case, &inputs, config, native),)* }
        };
    }
    typed!(I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64, F32 => f32, F64 => f64)
}

/// Sends every rank's failures to rank 0, which returns them all (in rank
/// order); other ranks return an empty list.
pub fn collect(comm: &mut Communicator, mine: Vec<Failure>) -> crate::error::Result<Vec<Failure>> {
    const TAG: u64 = 0xC4EC;
    if comm.rank() != 0 {
        let text = serde_json::to_vec(&mine).expect("failures serialise");
        comm.send_bytes(0, TAG, Bytes::from(text))?;
        return Ok(Vec::new());
    }
    let mut all = mine;
    for src in 1..comm.size() {
        let text = comm.recv_bytes(src, TAG)?;
        let theirs: Vec<Failure> =
            serde_json::from_slice(&text).map_err(|e| crate::error::Error::Protocol {
                peer: format!("rank {src}"),
                reason: format!("unreadable check report: {e}"),
            })?;
        all.extend(theirs);
    }
    Ok(all)
}

/// A barrier is right when no rank leaves before the last one entered. One
/// rank enters late on purpose; the ranks then swap their enter and leave
/// times (on the shared monotonic clock) with a ring allgather.
fn check_barrier(comm: &mut Communicator, case: &Case, index: u64) -> Result<(), String> {
    let p = comm.size();
    let late = index as usize % p;
    if comm.rank() == late && p > 1 {
        std::thread::sleep(Duration::from_millis(2));
    }
    let enter = now_ns();
    comm.barrier_with(&case.imp).map_err(|e| e.to_string())?;
    let leave = now_ns();
    if !comm.shared_clock() {
        return Ok(());
    }
    let mut times = vec![0u64; 2 * p];
    let ring = Implementation {
        op: Collective::Allgather,
        algorithm: Algorithm::Ring,
        seg: None,
    };
    comm.allgather_with(&ring, &[enter, leave], &mut times)
        .map_err(|e| format!("exchanging barrier times: {e}"))?;
    let (last, last_enter) = (0..p)
        .map(|r| (r, times[2 * r]))
        .max_by_key(|&(_, t)| t)
        .unwrap_or((0, 0));
    if leave < last_enter {
        return Err(format!(
            "left the barrier {:.3} ms before rank {last} entered it",
            (last_enter - leave) as f64 / 1e6
        ));
    }
    Ok(())
}
