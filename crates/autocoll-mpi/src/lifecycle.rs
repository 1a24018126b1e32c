//! `MPI_Finalize`: autocoll's work is finished while MPI still runs.

use std::ffi::c_int;

use mpi::ffi;

use crate::{boundary, state, sys};

/// Drops every communicator's state (traces written, the lottery saved),
/// prints the summary on rank 0 under `AUTOCOLL_VERBOSE`, then finalises.
pub fn finalize() -> c_int {
    let done = std::panic::catch_unwind(|| {
        state::drop_all();
        crate::pattern::finish();
        if boundary::config().verbose && is_world_rank0() {
            for line in boundary::with_stats(|s| s.summary()) {
                eprintln!("{line}");
            }
            if let Some(link) = state::probed() {
                eprintln!(
                    "autocoll-mpi: the machine probed at start-up: {:.1} us a message, {:.2} ns a byte",
                    link.latency_s * 1e6,
                    link.s_per_byte * 1e9
                );
            }
        }
    });
    if done.is_err() {
        boundary::disable("a panic while finishing");
    }
    // SAFETY: the program's own call, handed on.
    unsafe { ffi::PMPI_Finalize() }
}

fn is_world_rank0() -> bool {
    !sys::unavailable() && sys::rank_size(sys::world()).is_ok_and(|(rank, _)| rank == 0)
}
