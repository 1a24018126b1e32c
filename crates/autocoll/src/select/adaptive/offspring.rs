//! The lottery of a communicator made from another's ranks (split, dup):
//! the same parameters, candidates, incumbents and model, learning by
//! shape with its parent's family, and saving into the same state file.

use super::Lottery;
use crate::select::selector::Offspring;
use crate::select::state::{Fingerprint, Learned, Shared, Store};

impl Lottery {
    /// The new communicator's lottery. It shares what it learns with this
    /// one and with every other lottery made from it, by shape: a
    /// communicator whose ranks lie over hosts as another's do starts
    /// where that one got to (this one, for a dup). Its state is keyed in
    /// the file by its own shape, as the MPI interposition library keys a
    /// program's communicators.
    pub(super) fn offspring_lottery(&mut self, ranks: &Offspring<'_>) -> Lottery {
        let fingerprint =
            Fingerprint::new(ranks.hosts, ranks.transport).measuring(self.params.objective);
        let seed = self.rng.uniform().to_bits();
        let mut child = Lottery::new(self.params.clone(), seed);
        child.candidates = self.candidates.clone();
        child.incumbent = self.incumbent.clone();
        child.link = self.link;
        child.probed = self.probed;
        child.shared = Some(self.family());
        child.shape = Some(fingerprint.shape());
        match &self.store {
            Some(store) => {
                let store = Store::new(store.path(), fingerprint, ranks.rank == 0);
                child.with_store(store)
            }
            None => child,
        }
    }

    /// What this lottery's family learns, by shape; made on the first
    /// offspring of a lottery that had none, holding what it learned so far.
    fn family(&mut self) -> Shared {
        if let Some(shared) = &self.shared {
            return shared.clone();
        }
        let shared = Shared::default();
        if let Some(shape) = &self.shape {
            for (key, pool) in &self.pools {
                shared.put(shape, *key, Learned::of(pool));
            }
        }
        self.shared = Some(shared.clone());
        shared
    }
}
