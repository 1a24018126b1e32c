//! Jobs of threads in virtual time over the [`sim`](crate::transport::sim)
//! transport: [`run`] is [`local::run`](crate::comm::local::run) on a
//! simulated network.

use crate::comm::communicator::Communicator;

/// Moved to [`crate::transport::sim`]; the old path kept for the other crates.
pub use crate::transport::sim::{transports, Model, Sim};

/// A rank thread's stack: collectives keep their buffers on the heap, and
/// a thousand ranks of the default 2 MiB would reserve 2 GiB.
const STACK: usize = 512 << 10;

/// Runs `body` on `n` threads of virtual time, each with its own rank's
/// communicator, and returns what each rank returned, in rank order (as
/// [`super::local::run`], whose environment variables it honours).
pub fn run<R, F>(n: usize, model: &Model, body: F) -> Vec<R>
where
    R: Send,
    F: Fn(Communicator) -> R + Sync,
{
    let scale = model.cpu_scale;
    let start = move || crate::clock::start_virtual(scale);
    crate::comm::local::run_threads(transports(n, model), Some(STACK), &start, &body)
}

#[cfg(test)]
mod tests;
