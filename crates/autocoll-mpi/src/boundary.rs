//! The C boundary: settings read once, counts kept, and no panic let out.
//!
//! A panic inside the library is caught, reported once on stderr, and the
//! library turns itself off: every later call goes to the MPI library
//! unchanged. (A rank that panicked inside an algorithm may leave its
//! peers waiting for that call; nothing can mend that from one rank.)

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use autocoll::Collective;

use crate::config::Config;
use crate::stats::{Reason, Stats};
use crate::sys;

static DISABLED: AtomicBool = AtomicBool::new(false);
static STATS: Mutex<Option<Stats>> = Mutex::new(None);
static CONFIG: OnceLock<Config> = OnceLock::new();

/// The settings, read from the environment at the first call. Refused
/// values are printed by rank 0 of `MPI_COMM_WORLD` whatever
/// `AUTOCOLL_VERBOSE` says: a setting the user believes in and that is not
/// applied must not go unnoticed.
pub fn config() -> &'static Config {
    CONFIG.get_or_init(|| {
        let (config, errors) = Config::read(|name| std::env::var(name).ok());
        if world_rank() == Some(0) {
            for error in errors {
                eprintln!("autocoll-mpi: {error}");
            }
        }
        config
    })
}

fn world_rank() -> Option<usize> {
    if sys::unavailable() {
        return None;
    }
    sys::rank_size(sys::world()).ok().map(|(rank, _)| rank)
}

/// Runs `run` for a call of `op`, or `native` when the library is off,
/// the settings say `native`, `run` passes, or `run` panics.
pub fn guarded(op: Collective, native: impl Fn() -> c_int, run: impl FnOnce() -> Outcome) -> c_int {
    if DISABLED.load(Ordering::Relaxed) {
        return pass(op, Reason::Disabled, native);
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if matches!(config().select, crate::config::Select::Native) {
            return Outcome::Pass(Reason::Native);
        }
        if sys::unavailable() {
            return Outcome::Pass(Reason::Unavailable);
        }
        run()
    }));
    match outcome {
        Ok(Outcome::Done(code)) => code,
        Ok(Outcome::Pass(reason)) => pass(op, reason, native),
        Err(panic) => {
            disable(&panic_text(&panic));
            pass(op, Reason::Disabled, native)
        }
    }
}

fn pass(op: Collective, reason: Reason, native: impl Fn() -> c_int) -> c_int {
    with_stats(|s| s.passed(op, reason));
    native()
}

/// Turns the library off for the rest of the run, saying why once.
pub fn disable(why: &str) {
    if !DISABLED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "autocoll-mpi: internal error ({why}); every further call goes to the MPI library"
        );
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        return s.to_string();
    }
    panic
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| "a panic".into())
}

/// Updates the counts (a poisoned lock still counts).
pub fn with_stats<R>(f: impl FnOnce(&mut Stats) -> R) -> R {
    let mut guard = STATS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Stats::default))
}

/// An autocoll error during a call: said on stderr (a failing collective
/// is never silent), handed to the communicator's error handler, and
/// returned as the MPI code (MPI's own where an MPI call failed).
pub fn failed(comm: mpi::ffi::MPI_Comm, error: &autocoll::Error) -> c_int {
    let code = match error {
        autocoll::Error::Mpi { code, .. } => *code,
        _ => sys::err_other(),
    };
    eprintln!("autocoll-mpi: {error}");
    sys::raise(comm, code)
}

/// What [`guarded`] does with a call.
pub enum Outcome {
    /// Done here, with this MPI code.
    Done(c_int),
    /// To the MPI library unchanged, counted under the reason.
    Pass(Reason),
}
