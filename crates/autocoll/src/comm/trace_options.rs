//! How a recording is made and where it goes: the options, the directory
//! and each rank's file in it, and the state of a recording in progress
//! (started and written in `tracing.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::select::parse_bytes;
use crate::trace::format::Header;
use crate::trace::recorder::{Recorder, DEFAULT_CAPACITY_EVENTS, MIN_CAPACITY_EVENTS};

/// The variable that turns tracing on for every program built on
/// [`crate::init`] and for [`crate::local::run`]: the directory.
pub const ENV_TRACE: &str = "AUTOCOLL_TRACE";
/// The variable that sizes the buffer: events per rank (K, M suffixes).
pub const ENV_TRACE_EVENTS: &str = "AUTOCOLL_TRACE_EVENTS";
/// How long the end-of-recording exchange waits for a peer when the
/// communicator is dropped: a rank that died costs this, not the timeout.
pub(crate) const FINAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Ranks a trace can name: peers are stored in 16 bits, one value of
/// which means "no peer".
const MAX_RANKS: usize = u16::MAX as usize;

/// How a recording is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    /// Slots in each rank's buffer, 16 bytes each: an event takes one,
    /// a call's header two. When full, the oldest calls are dropped.
    pub capacity_events: usize,
    /// Estimate every rank's clock offset to rank 0 even when the ranks
    /// share a clock (where the estimate should come out near zero).
    pub estimate_offsets: bool,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            capacity_events: DEFAULT_CAPACITY_EVENTS,
            estimate_offsets: false,
        }
    }
}

impl TraceOptions {
    /// The defaults, with the buffer sized by `AUTOCOLL_TRACE_EVENTS`
    /// when it is set (a count, with an optional K or M: ×1024, ×1024²).
    pub fn from_env() -> Result<TraceOptions> {
        let mut options = TraceOptions::default();
        if let Some(text) = std::env::var_os(ENV_TRACE_EVENTS) {
            let text = text.to_string_lossy();
            let n = parse_bytes(text.trim())
                .map_err(|e| Error::Config(format!("{ENV_TRACE_EVENTS}={text}: {e}")))?;
            if n < MIN_CAPACITY_EVENTS {
                return Err(Error::Config(format!(
                    "{ENV_TRACE_EVENTS}={text}: a buffer holds at least {MIN_CAPACITY_EVENTS} events"
                )));
            }
            options.capacity_events = n;
        }
        Ok(options)
    }
}

/// The file of `rank` in `dir`.
pub fn file_of(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank:05}.trace"))
}

/// A recording in progress on one rank.
pub(crate) struct Tracing {
    pub recorder: Arc<Recorder>,
    pub(super) path: PathBuf,
    pub(super) header: Header,
    pub(super) estimate: bool,
}

impl Tracing {
    /// True when clock offsets are estimated (and writing is collective).
    pub(crate) fn estimates_offsets(&self) -> bool {
        self.estimate
    }

    /// True once the recording has seen a call (kept or dropped).
    pub(crate) fn has_calls(&self) -> bool {
        let usage = self.recorder.usage();
        usage.calls + usage.dropped_calls > 0
    }
}

/// This rank's check of the directory: created if missing, and written in.
pub(super) fn check_dir(dir: &Path, size: usize) -> Result<()> {
    if size > MAX_RANKS {
        return Err(Error::Config(format!(
            "a trace names ranks in 16 bits: at most {MAX_RANKS} ranks, not {size}"
        )));
    }
    prepare_dir(dir)
}

/// Creates `dir` if it is missing and checks that a file can be written
/// in it; the error names the directory.
pub fn prepare_dir(dir: &Path) -> Result<()> {
    // Ranks may be threads of one process: each probes a file of its own.
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let what = |doing: &str| format!("trace directory {}: {doing}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| Error::io(what("cannot create it"), e))?;
    let n = PROBES.fetch_add(1, Ordering::Relaxed);
    let probe = dir.join(format!(".probe-{}-{n}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| Error::io(what("cannot write in it"), e))?;
    std::fs::remove_file(&probe).map_err(|e| Error::io(what("cannot remove a file in it"), e))
}
