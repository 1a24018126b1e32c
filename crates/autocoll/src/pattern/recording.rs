//! Counting a job's messages as they are sent, and writing the pattern
//! when the job ends.
//!
//! [`Recording`] sits between a communicator and its transport, so that
//! every message (a collective's, the program's point-to-point ones, the
//! library's own agreements) is counted once, with no change to the
//! algorithms. A communicator that records keeps a [`Sink`]: when it is
//! dropped every rank sends its counts to rank 0, which writes the file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use super::counts::{Kind, Recorder, GATHER_TAG, PROBE_TAG};
use super::file::Pattern;
use crate::error::Result;
use crate::transport::{Tag, Transport};

/// The variable that turns recording on for programs built on
/// [`crate::init`] and for [`crate::local::run`]: the file rank 0 writes.
pub const ENV_PATTERN: &str = "AUTOCOLL_PATTERN";

/// A [`Transport`] that counts every message it sends into a shared
/// [`Recorder`]: user messages (but [`GATHER_TAG`]'s and [`PROBE_TAG`]'s) as
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
            Tag::User {
                tag: GATHER_TAG | PROBE_TAG,
                ..
            } => return,
            Tag::User { .. } => Kind::P2p,
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

    /// Gathers every rank's counts to rank 0, which writes the file with
    /// every rank's host (collective). Rank 0 writes what it has when a
    /// rank's counts do not come, and says whose are missing.
    pub(crate) fn finish(self, transport: &mut dyn Transport) -> Result<()> {
        let mine = lock(&self.recorder).clone();
        if transport.rank() != 0 {
            transport.send(0, Tag::user(GATHER_TAG), Bytes::from(mine.encode()))?;
            return transport.finish_sends();
        }
        let ranks = transport.size();
        let mut parts = vec![mine];
        for rank in 1..ranks {
            let part = transport
                .recv(rank, Tag::user(GATHER_TAG))
                .and_then(|data| Recorder::decode(&data));
            match part {
                Ok(part) => parts.push(part),
                Err(e) => eprintln!(
                    "autocoll: warning: {}: the sends of rank {rank} are missing: {e}",
                    self.path.display()
                ),
            }
        }
        let pattern = Pattern::merge(transport.kind(), ranks, parts)?;
        write_placed(pattern, transport.hosts(), &self.path)
    }
}

/// Writes `pattern` with the ranks' `hosts`; without them, said, when they
/// are refused: the counts are worth having still.
fn write_placed(mut pattern: Pattern, hosts: Vec<String>, path: &Path) -> Result<()> {
    if let Err(e) = pattern.set_hosts(hosts) {
        eprintln!(
            "autocoll: warning: {}: written without the ranks' hosts: {e}",
            path.display()
        );
    }
    pattern.write(path)
}
