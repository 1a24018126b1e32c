//! `--trace DIR` on `bench`, `adapt` and `check`: every rank of the run
//! records the stages of every call and writes `DIR/rank-NNNNN.trace` when
//! its communicator is dropped (see `autocoll::trace`). A command that
//! runs several jobs (`-n 2,4`) gives each job size a directory of its
//! own, `DIR/n4`, so that one job's files do not replace another's.

use std::path::{Path, PathBuf};

use autocoll::Communicator;

use crate::failure::Failure;

/// The `--trace` option.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TraceArg {
    /// Record every rank's stages of every call into DIR, `rank-NNNNN.trace`
    /// (under `DIR/nP` with several -n); AUTOCOLL_TRACE_EVENTS sizes a rank's
    /// buffer (default 1M events, 16 MiB), the oldest calls dropped when full.
    #[arg(long, value_name = "DIR")]
    pub trace: Option<PathBuf>,
}

impl TraceArg {
    /// Creates the directory, and checks it can be written in, before any
    /// rank starts.
    pub fn check(&self) -> Result<(), Failure> {
        match &self.trace {
            Some(dir) => autocoll::trace::prepare_dir(dir)
                .map_err(|e| Failure::Usage(format!("--trace: {e}"))),
            None => Ok(()),
        }
    }

    /// Where a job of `p` ranks records, when one of `sizes` jobs.
    pub fn dir(&self, p: usize, sizes: usize) -> Option<PathBuf> {
        let dir = self.trace.as_ref()?;
        Some(if sizes > 1 {
            dir.join(format!("n{p}"))
        } else {
            dir.clone()
        })
    }
}

/// Starts this rank's recording into `dir`, if given (collective).
pub fn start(comm: &mut Communicator, dir: Option<&Path>) -> autocoll::Result<()> {
    match dir {
        Some(dir) => comm.trace(dir),
        None => Ok(()),
    }
}
