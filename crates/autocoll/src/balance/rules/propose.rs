//! The changes the rules try on late ranks: the paper's swap, made safe,
//! or a sort of every position.

use std::cmp::Reverse;

use super::{swapped, Change, Rules, Situation, Trial};
use crate::error::Result;
use crate::tree::{Shape, Tree};

impl Rules {
    /// The paper's swap, made safe: the late rank (the latest first; the
    /// paper takes the one with the smallest wait, whose data was there
    /// when it came) trades places with the descendant that waited most
    /// for it, if that moves it to a position with fewer descendants (the
    /// next descendant, or the next late rank, if not).
    pub(super) fn propose_swap(
        &self,
        at: &Situation<'_>,
        tree: &Tree,
        lateness: &[u64],
    ) -> Result<Option<(Change, Trial)>> {
        let waits = self.waits();
        let mut lates: Vec<usize> = (0..waits.len())
            .filter(|&r| lateness[r] > 0 && !self.frozen[r])
            .collect();
        lates.sort_by_key(|&r| (Reverse(lateness[r]), waits[r], r));
        for late in lates {
            let below = tree.subtree(late).len();
            let mut partners: Vec<usize> = tree.subtree(late)[1..]
                .iter()
                .copied()
                .filter(|&x| self.limits.above(waits[x], waits[late]))
                .collect();
            partners.sort_by_key(|&x| (Reverse(waits[x]), tree.subtree(x).len(), x));
            for partner in partners {
                let moved = at.tree(&swapped(at.table, late, partner))?;
                if moved.subtree(late).len() < below {
                    let swap = Change::Swap(late, partner);
                    let trial = Trial {
                        before: 0,
                        undo: swap.clone(),
                        late: Some(late),
                    };
                    return Ok(Some((swap, trial)));
                }
            }
        }
        Ok(None)
    }

    /// The sort, if it changes the table: the ranks that waited longest
    /// take the positions that receive earliest.
    pub(super) fn propose_sort(
        &self,
        at: &Situation<'_>,
        tree: &Tree,
        lateness: &[u64],
    ) -> Result<Option<(Change, Trial)>> {
        if self.sorted || lateness.iter().all(|&l| l == 0) {
            return Ok(None);
        }
        let table = self.sorted_table(at, tree);
        if table == at.table {
            return Ok(None);
        }
        let trial = Trial {
            before: 0,
            undo: Change::Table(at.table.to_vec()),
            late: None,
        };
        Ok(Some((Change::Table(table), trial)))
    }

    /// The table the sort gives. Positions are ordered by the round in
    /// which they receive (more descendants first among equals), ranks by
    /// their wait, longest first. Only the slots of a group trade ranks:
    /// all non-root ranks for shapes laid over positions; for `hier`, the
    /// ranks of each host, so that every host keeps its place among the
    /// hosts and a position stays what it was.
    fn sorted_table(&self, at: &Situation<'_>, tree: &Tree) -> Vec<usize> {
        let waits = self.waits();
        let rounds = tree.receive_rounds();
        let mut slot_of = vec![0; at.table.len()];
        for (slot, &rank) in at.table.iter().enumerate() {
            slot_of[rank] = slot;
        }
        let mut table = at.table.to_vec();
        for group in groups(at) {
            let mut slots: Vec<usize> = group.iter().map(|&r| slot_of[r]).collect();
            slots.sort_by_key(|&s| {
                let r = at.table[s];
                (rounds[r], Reverse(tree.subtree(r).len()), s)
            });
            let mut ranks = group;
            ranks.sort_by_key(|&r| (Reverse(waits[r]), r));
            for (slot, rank) in slots.into_iter().zip(ranks) {
                table[slot] = rank;
            }
        }
        table
    }
}

/// The ranks whose slots a sort may reorder, without the root.
fn groups(at: &Situation<'_>) -> Vec<Vec<usize>> {
    let others = (0..at.table.len()).filter(|&r| r != at.root);
    if !matches!(at.shape, Shape::Hier(_)) {
        return vec![others.collect()];
    }
    let mut by_host: Vec<Vec<usize>> = vec![Vec::new(); at.layout.host_count()];
    for r in others {
        by_host[at.layout.host(r)].push(r);
    }
    by_host
}
