//! Pattern recording on a communicator: turned on from the environment,
//! and the file's path checked on every rank before the job runs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::pattern::recording::ENV_PATTERN;
use crate::select::Implementation;
use crate::tree::Shape;

/// Starts the recording `AUTOCOLL_PATTERN` asks for, if it is set
/// (collective: every rank's environment must agree). Set and empty, or
/// naming a file rank 0 cannot write, is an error naming the variable.
pub fn from_env(comm: &mut Communicator) -> Result<()> {
    let Some(value) = std::env::var_os(ENV_PATTERN) else {
        return Ok(());
    };
    if value.is_empty() {
        return Err(Error::Config(format!(
            "{ENV_PATTERN} is set but empty: give the file rank 0 writes the pattern to, or unset it"
        )));
    }
    let shown = value.to_string_lossy().into_owned();
    comm.record_pattern(PathBuf::from(value))
        .map_err(|e| Error::Config(format!("{ENV_PATTERN}={shown}: {e}")))
}

impl Communicator {
    /// Checks that rank 0 can write the pattern file `path` (collective).
    pub(crate) fn check_pattern_path(&mut self, path: &Path) -> Result<()> {
        check_path(self, path)
    }
}

/// Every rank learns whether rank 0 can write `path` (collective): rank 0
/// returns its own error, the others one that points at it.
fn check_path(comm: &mut Communicator, path: &Path) -> Result<()> {
    let mine = match comm.rank() {
        0 => probe(path),
        _ => Ok(()),
    };
    let mut failed = [u64::from(mine.is_err())];
    let imp = Implementation::tree(Collective::Bcast, Shape::Binomial, None)?;
    comm.unbalanced(|c| c.bcast_with(&imp, &mut failed, 0))?;
    mine?;
    match failed[0] {
        0 => Ok(()),
        _ => Err(Error::Config(format!(
            "pattern file {}: rank 0 cannot write it (its error says why)",
            path.display()
        ))),
    }
}

/// Creates the file's directory if missing and writes a file in it, so
/// that a path that cannot be written fails now, not when the job ends.
fn probe(path: &Path) -> Result<()> {
    let what = |doing: &str| format!("pattern file {}: {doing}", path.display());
    let name = path
        .file_name()
        .ok_or_else(|| Error::Config(what("names no file")))?;
    if path.is_dir() {
        return Err(Error::Config(what("is a directory")));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(what("cannot create its directory"), e))?;
    // Jobs may run at once in one process (tests): each probes a file of its own.
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let n = PROBES.fetch_add(1, Ordering::Relaxed);
    let probe = dir.join(format!(
        ".{}.probe{}-{n}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&probe, b"").map_err(|e| Error::io(what("cannot write in its directory"), e))?;
    std::fs::remove_file(&probe).map_err(|e| Error::io(what("cannot remove a file beside it"), e))
}
