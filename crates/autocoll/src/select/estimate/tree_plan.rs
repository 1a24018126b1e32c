//! The plans of the generic pipelines over a tree: what each rank of a
//! tree sends and receives, as `coll`'s tree code issues them.

use super::steps::{pieces, Plan};
use crate::ids::Collective;
use crate::tree::Tree;

/// One rank's part of a collective over a tree, composed as `coll` does:
/// allreduce is reduce whose root starts the broadcast, allgather is
/// gather then a broadcast of the whole vector.
pub(super) fn tree_rank(
    plan: &mut Plan,
    tree: &Tree,
    op: Collective,
    rank: usize,
    bytes: usize,
    seg: usize,
) -> Option<()> {
    match op {
        Collective::Bcast => bcast(plan, tree, rank, bytes, seg),
        Collective::Reduce => reduce(plan, tree, rank, bytes, seg, false),
        Collective::Allreduce => {
            reduce(plan, tree, rank, bytes, seg, true);
            if tree.parent(rank).is_some() {
                bcast(plan, tree, rank, bytes, seg);
            }
        }
        Collective::Scatter => scatter(plan, tree, rank, bytes, seg),
        Collective::Gather => gather(plan, tree, rank, bytes, seg),
        Collective::Allgather => {
            gather(plan, tree, rank, bytes, seg);
            bcast(plan, tree, rank, tree.size().checked_mul(bytes)?, seg);
        }
        Collective::ReduceScatter => {
            reduce(
                plan,
                tree,
                rank,
                tree.size().checked_mul(bytes)?,
                seg,
                false,
            );
            scatter(plan, tree, rank, bytes, seg);
        }
        Collective::Barrier => tree_barrier(plan, tree, rank),
        _ => return None,
    }
    Some(())
}

fn bcast(plan: &mut Plan, tree: &Tree, rank: usize, n: usize, seg: usize) {
    for len in pieces(n, seg) {
        if let Some(up) = tree.parent(rank) {
            plan.recv(rank, up);
        }
        for &child in tree.children(rank) {
            plan.send(rank, child, len);
        }
    }
}

/// Reduce; with `down` the root hands each finished segment to its
/// children at once, as allreduce's does.
fn reduce(plan: &mut Plan, tree: &Tree, rank: usize, n: usize, seg: usize, down: bool) {
    for len in pieces(n, seg) {
        for &child in tree.children(rank) {
            plan.recv(rank, child);
        }
        match tree.parent(rank) {
            Some(up) => plan.send(rank, up, len),
            None if down => {
                for &child in tree.children(rank) {
                    plan.send(rank, child, len);
                }
            }
            None => {}
        }
    }
}

/// A rank's bundle on its way up: it leaves in whole segments as soon as
/// their bytes are there.
struct Upward {
    to: Option<usize>,
    total: usize,
    sent: usize,
    seg: usize,
}

impl Upward {
    fn flush(&mut self, plan: &mut Plan, from: usize, have: usize) {
        let Some(to) = self.to else { return };
        while self.sent < self.total {
            let end = self.sent.saturating_add(self.seg).min(self.total);
            if end > have {
                return;
            }
            plan.send(from, to, end - self.sent);
            self.sent = end;
        }
    }
}

fn gather(plan: &mut Plan, tree: &Tree, rank: usize, b: usize, seg: usize) {
    let mut up = Upward {
        to: tree.parent(rank),
        total: tree.subtree(rank).len() * b,
        sent: 0,
        seg,
    };
    let mut have = b;
    up.flush(plan, rank, have);
    for &child in tree.children(rank) {
        for len in pieces(tree.subtree(child).len() * b, seg) {
            plan.recv(rank, child);
            have += len;
            up.flush(plan, rank, have);
        }
    }
}

fn scatter(plan: &mut Plan, tree: &Tree, rank: usize, b: usize, seg: usize) {
    let base = tree.preorder_index(rank);
    // (child, next byte of its bundle to send, end of its bundle).
    let mut kids: Vec<(usize, usize, usize)> = tree
        .children(rank)
        .iter()
        .map(|&c| {
            let start = (tree.preorder_index(c) - base) * b;
            (c, start, start + tree.subtree(c).len() * b)
        })
        .collect();
    let total = tree.subtree(rank).len() * b;
    let Some(up) = tree.parent(rank) else {
        return hand_out(plan, rank, &mut kids, total, seg);
    };
    let mut have = 0;
    for len in pieces(total, seg) {
        plan.recv(rank, up);
        have += len;
        hand_out(plan, rank, &mut kids, have, seg);
    }
}

/// Sends every whole segment of the children's bundles within the first
/// `have` bytes, one segment per child in turn, as scatter's code does.
fn hand_out(
    plan: &mut Plan,
    rank: usize,
    kids: &mut [(usize, usize, usize)],
    have: usize,
    seg: usize,
) {
    loop {
        let mut progress = false;
        for (child, next, end) in kids.iter_mut() {
            let stop = next.saturating_add(seg).min(*end);
            if *next < stop && stop <= have {
                plan.send(rank, *child, stop - *next);
                *next = stop;
                progress = true;
            }
        }
        if !progress {
            return;
        }
    }
}

fn tree_barrier(plan: &mut Plan, tree: &Tree, rank: usize) {
    for &child in tree.children(rank) {
        plan.recv(rank, child);
    }
    if let Some(up) = tree.parent(rank) {
        plan.send(rank, up, 0);
        plan.recv(rank, up);
    }
    for &child in tree.children(rank) {
        plan.send(rank, child, 0);
    }
}
