//! The [`Balancer`] a communicator holds: one [`OpState`] per balanced
//! collective, their tables kept in the state file.

pub(crate) mod protocol;

use std::sync::Arc;

use super::op::{check_table, OpState, Status};
use super::params::Params;
use super::probe::Probe;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::observe::Observer;
use crate::select::state::{Store, TableEntry};
use crate::tree::table::RankTable;

/// A communicator's balancer: one table per balanced collective, the same
/// on every rank. Made by [`Communicator::use_balancer`](crate::Communicator::use_balancer); tools that
/// compare several take them out and put them back
/// ([`Communicator::take_balancer`](crate::Communicator::take_balancer), [`Communicator::put_balancer`](crate::Communicator::put_balancer)).
pub struct Balancer {
    params: Params,
    rank: usize,
    size: usize,
    ops: Vec<OpState>,
    probe: Arc<Probe>,
    /// The same probe, as the communicator's observers hold it.
    observer: Arc<dyn Observer>,
    store: Option<Store>,
}

impl Balancer {
    /// A balancer of `params` for rank `rank` of `size`, each collective's
    /// table starting from `table_of(op)`.
    pub(crate) fn new(
        params: Params,
        rank: usize,
        size: usize,
        table_of: impl Fn(Collective) -> Vec<usize>,
    ) -> Result<Balancer> {
        params
            .check()
            .map_err(|why| Error::Config(format!("balancer: {why}")))?;
        let ops = params
            .ops
            .iter()
            .map(|&op| OpState::new(op, table_of(op), rank, size, &params))
            .collect();
        let probe = Arc::new(Probe::default());
        Ok(Balancer {
            params,
            rank,
            size,
            ops,
            observer: probe.clone(),
            probe,
            store: None,
        })
    }

    /// Its parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The communicator size it was made for.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The table in force for `op`, if balanced.
    pub fn table(&self, op: Collective) -> Option<&[usize]> {
        self.state(op).map(|s| &s.table.ranks[..])
    }

    /// What it did to `op`'s table, if balanced.
    pub fn status(&self, op: Collective) -> Option<Status> {
        self.state(op).map(OpState::status)
    }

    pub(crate) fn balances(&self, op: Collective) -> bool {
        self.state(op).is_some()
    }

    pub(crate) fn rank_table(&self, op: Collective) -> Option<&RankTable> {
        self.state(op).map(|s| &s.table)
    }

    pub(crate) fn observer(&self) -> &Arc<dyn Observer> {
        &self.observer
    }

    fn state(&self, op: Collective) -> Option<&OpState> {
        self.ops.iter().find(|s| s.op == op)
    }

    fn state_mut(&mut self, op: Collective) -> Option<&mut OpState> {
        self.ops.iter_mut().find(|s| s.op == op)
    }

    /// Keeps the tables in `store` (the lottery's state file): rank 0
    /// reads the ones an earlier run learned for this communicator size,
    /// and every collective not yet balanced starts from its table.
    pub(crate) fn attach_store(&mut self, store: Store) {
        for entry in store.load_tables() {
            if entry.ranks != self.size {
                continue;
            }
            let Some(state) = self.state_mut(entry.op) else {
                continue;
            };
            if let Err(why) = check_table(&entry.table, entry.ranks) {
                eprintln!(
                    "autocoll: warning: {}: the {} table {why}; not restored",
                    store.path().display(),
                    entry.op
                );
                continue;
            }
            state.restore(entry.table);
        }
        self.store = Some(store);
    }

    /// Writes every balanced collective's table into the state file (rank
    /// 0, when one is attached and the collective ran).
    pub(crate) fn save(&self) -> Result<()> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let tables: Vec<TableEntry> = self
            .ops
            .iter()
            .filter(|s| s.calls > 0)
            .map(|s| TableEntry {
                op: s.op,
                ranks: self.size,
                table: s.table.ranks.to_vec(),
            })
            .collect();
        store.save_tables(&tables)
    }
}
