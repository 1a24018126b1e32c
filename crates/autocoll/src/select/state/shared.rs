//! What a process's communicators learned, by shape, within one run.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::file::Learned;
use super::fingerprint::CommShape;
use crate::select::key::Key;

type Pools = BTreeMap<Key, Learned>;

/// What the lotteries of a process learned, by communicator shape: a new
/// communicator starts where the last one of its shape got to. Cloning
/// shares it.
#[derive(Clone, Debug, Default)]
pub struct Shared(Arc<Mutex<HashMap<CommShape, Pools>>>);

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CommShape, Pools>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a communicator of `shape` learned of `key`'s pool.
    pub fn get(&self, shape: &CommShape, key: &Key) -> Option<Learned> {
        self.lock().get(shape)?.get(key).cloned()
    }

    /// Keeps what a communicator of `shape` learned of `key`'s pool.
    pub fn put(&self, shape: &CommShape, key: Key, learned: Learned) {
        self.lock()
            .entry(shape.clone())
            .or_default()
            .insert(key, learned);
    }

    /// Every pool learned for `shape`.
    pub fn pools(&self, shape: &CommShape) -> Pools {
        self.lock().get(shape).cloned().unwrap_or_default()
    }
}
