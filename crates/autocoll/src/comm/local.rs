//! Jobs of threads in one process over the [`local`](crate::transport::local)
//! transport: [`run`] starts one on scoped threads and returns what each
//! rank returned, the transport of most tests and examples and of the
//! command's `--transport local`.

use crate::comm::communicator::Communicator;
use crate::transport::Transport;

/// Moved to [`crate::transport::local`]; the old path kept for the other crates.
pub use crate::transport::local::{transports, Local};

/// Runs `body` on `n` threads, each with its own rank's communicator, and
/// returns what each rank returned, in rank order. With `AUTOCOLL_TRACE=DIR`
/// set, every rank records a trace into DIR; with `AUTOCOLL_BALANCE` set,
/// the balancer is on; with `AUTOCOLL_PATTERN=FILE` set, rank 0 writes the
/// job's pattern to FILE at the end.
pub fn run<R, F>(n: usize, body: F) -> Vec<R>
where
    R: Send,
    F: Fn(Communicator) -> R + Sync,
{
    run_threads(transports(n), None, &|| {}, &body)
}

/// Runs `body` on a thread per transport (with `stack` bytes of stack, or
/// the default), each calling `start` first, and returns what each
/// returned, in rank order.
pub(super) fn run_threads<T, R, F>(
    transports: Vec<T>,
    stack: Option<usize>,
    start: &(dyn Fn() + Sync),
    body: &F,
) -> Vec<R>
where
    T: Transport + 'static,
    R: Send,
    F: Fn(Communicator) -> R + Sync,
{
    std::thread::scope(|scope| {
        let handles: Vec<_> = transports
            .into_iter()
            .map(|t| {
                let mut builder = std::thread::Builder::new().name(format!("rank-{}", t.rank()));
                if let Some(bytes) = stack {
                    builder = builder.stack_size(bytes);
                }
                builder
                    .spawn_scoped(scope, move || {
                        start();
                        body(traced(Communicator::new(Box::new(t))))
                    })
                    .expect("the operating system refused to start a rank thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// `comm`, counting its messages if `AUTOCOLL_PATTERN` asks for it,
/// recording if `AUTOCOLL_TRACE` does and balancing if `AUTOCOLL_BALANCE`
/// does. `run` cannot return an error of its own: a pattern file or a
/// directory the ranks cannot write in, or a value of `AUTOCOLL_BALANCE`
/// that does not parse, is reported (by rank 0, for all) and the job runs
/// without the pattern, the trace, or the balancer.
pub(super) fn traced(mut comm: Communicator) -> Communicator {
    if let Err(e) = crate::comm::patterns::from_env(&mut comm) {
        if comm.rank() == 0 {
            eprintln!("autocoll: warning: {e}; running without recording the pattern");
        }
    }
    if let Err(e) = crate::comm::tracing::from_env(&mut comm) {
        if comm.rank() == 0 {
            eprintln!(
                "autocoll: warning: {}: {e}; running without a trace",
                crate::comm::trace_options::ENV_TRACE
            );
        }
    }
    if let Err(e) = crate::comm::balancing::from_env(&mut comm) {
        if comm.rank() == 0 {
            eprintln!("autocoll: warning: {e}; running without the balancer");
        }
    }
    comm
}
