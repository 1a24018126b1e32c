//! How a rank's wait in a balanced call is measured: a [`Probe`] on the
//! observer hook.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::observe::{Event, Observer, Stage};

/// A wait not measured yet in the call under way.
const PENDING: u64 = u64::MAX;

/// Measures one rank's wait in the balanced call under way: from `Enter`
/// to the first `Received` from its parent in the call's tree (0 for the
/// root, and for a call that receives nothing). Interior state, one call
/// at a time, nothing allocated.
#[derive(Default)]
pub(crate) struct Probe {
    /// The sequence number of the call measured, plus one (0: none).
    armed: AtomicU64,
    enter: AtomicU64,
    wait: AtomicU64,
}

impl Probe {
    /// Measures the call numbered `seq`.
    pub(super) fn arm(&self, seq: u64) {
        self.wait.store(0, Ordering::Relaxed);
        self.armed.store(seq + 1, Ordering::Relaxed);
    }

    /// The wait of the call measured (ns).
    pub(super) fn wait(&self) -> u64 {
        match self.wait.load(Ordering::Relaxed) {
            PENDING => 0,
            w => w,
        }
    }
}

impl Observer for Probe {
    fn event(&self, e: &Event<'_>) {
        if e.sig.seq.wrapping_add(1) != self.armed.load(Ordering::Relaxed) {
            return;
        }
        let parent = e.tree.and_then(|t| t.parent(e.rank));
        match e.stage {
            Stage::Enter => {
                self.enter.store(e.time_ns, Ordering::Relaxed);
                let wait = if parent.is_some() { PENDING } else { 0 };
                self.wait.store(wait, Ordering::Relaxed);
            }
            Stage::Received if e.peer == parent && self.wait.load(Ordering::Relaxed) == PENDING => {
                let enter = self.enter.load(Ordering::Relaxed);
                self.wait
                    .store(e.time_ns.saturating_sub(enter), Ordering::Relaxed);
            }
            _ => {}
        }
    }
}
