//! Counting a job's messages as they are sent, and writing the pattern
//! when the job ends.
//!
//! [`Recording`] sits between a communicator and its transport, so that
//! every message (a collective's, the program's point-to-point ones, the
//! library's own agreements) is counted once, with no change to the
//! algorithms. A communicator that records keeps a [`Sink`]: when it is
//! dropped every rank sends its counts to rank 0, which writes the file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use super::{Kind, Pattern, Recorder, GATHER_TAG};
use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::select::Implementation;
use crate::transport::{Tag, Transport};
use crate::tree::Shape;

/// The variable that turns recording on for programs built on
/// [`crate::init`] and for [`crate::local::run`]: the file rank 0 writes.
pub const ENV_PATTERN: &str = "AUTOCOLL_PATTERN";

/// A [`Transport`] that counts every message it sends into a shared
/// [`Recorder`]: `Tag::User` messages (but [`GATHER_TAG`]'s) as
/// point-to-point, every collective's as collective, each under its
/// destination in the world's ranks. Everything else is the inner
/// transport's, unchanged.
pub struct Recording {
    inner: Box<dyn Transport>,
    recorder: Arc<Mutex<Recorder>>,
    to_world: Option<Vec<usize>>,
}

impl Recording {
    /// Counts `inner`'s sends into `recorder`; `to_world[r]` is the world
    /// rank of the transport's rank `r` (a sub-communicator's), `None` for
    /// the identity.
    ///
    /// # Panics
    /// When `to_world` does not give a rank for every rank of `inner`: a
    /// mistake of the caller, not of its input.
    pub fn new(
        inner: Box<dyn Transport>,
        recorder: Arc<Mutex<Recorder>>,
        to_world: Option<Vec<usize>>,
    ) -> Recording {
        if let Some(map) = &to_world {
            assert_eq!(map.len(), inner.size(), "to_world maps every rank");
        }
        Recording {
            inner,
            recorder,
            to_world,
        }
    }

    fn count(&self, dest: usize, tag: &Tag, bytes: u64) {
        let kind = match tag {
            Tag::User(GATHER_TAG) => return,
            Tag::User(_) => Kind::P2p,
            Tag::Coll { .. } => Kind::Collective,
        };
        let world = self.to_world.as_ref().map_or(dest, |map| map[dest]);
        lock(&self.recorder).record(kind, world, bytes);
    }
}

/// The recorder, even if a thread panicked holding it: counts are plain
/// numbers, never left half-updated in a way that matters.
fn lock(recorder: &Mutex<Recorder>) -> MutexGuard<'_, Recorder> {
    recorder
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Transport for Recording {
    crate::transport::forward_transport!(inner);

    /// Counts the message once the inner transport has taken it: one it
    /// refuses was never sent.
    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        let bytes = data.len() as u64;
        self.inner.send(dest, tag, data)?;
        self.count(dest, &tag, bytes);
        Ok(())
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        self.inner.recv(src, tag)
    }
}

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

/// Where a communicator's counts go when it is dropped.
pub(crate) struct Sink {
    recorder: Arc<Mutex<Recorder>>,
    path: PathBuf,
}

impl Sink {
    pub(crate) fn new(recorder: Arc<Mutex<Recorder>>, path: PathBuf) -> Sink {
        Sink { recorder, path }
    }

    /// The counts the communicator's transport adds to.
    pub(crate) fn recorder(&self) -> &Arc<Mutex<Recorder>> {
        &self.recorder
    }

    /// Writes to `path` from now on (the counts go on).
    pub(crate) fn redirect(&mut self, path: PathBuf) {
        self.path = path;
    }

    /// Gathers every rank's counts to rank 0, which writes the file
    /// (collective). Rank 0 writes what it has when a rank's counts do not
    /// come, and says whose are missing.
    pub(crate) fn finish(self, transport: &mut dyn Transport) -> Result<()> {
        let mine = lock(&self.recorder).clone();
        if transport.rank() != 0 {
            transport.send(0, Tag::User(GATHER_TAG), Bytes::from(mine.encode()))?;
            return transport.finish_sends();
        }
        let ranks = transport.size();
        let mut parts = vec![mine];
        for rank in 1..ranks {
            let part = transport
                .recv(rank, Tag::User(GATHER_TAG))
                .and_then(|data| Recorder::decode(&data));
            match part {
                Ok(part) => parts.push(part),
                Err(e) => eprintln!(
                    "autocoll: warning: {}: the sends of rank {rank} are missing: {e}",
                    self.path.display()
                ),
            }
        }
        Pattern::merge(transport.kind(), ranks, parts)?.write(&self.path)
    }
}

/// Every rank learns whether rank 0 can write `path` (collective): rank 0
/// returns its own error, the others one that points at it.
pub(crate) fn check_path(comm: &mut Communicator, path: &Path) -> Result<()> {
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
