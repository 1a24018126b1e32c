//! What an algorithm sends, for the model to replay: the plan of any
//! implementation, and those of the named algorithms (the trees' are in
//! `tree_plan`).

use crate::ids::Collective;
use crate::layout::Layout;
use crate::select::implementation::{Algorithm, Implementation};
use crate::tree::Tree;

use super::steps::{pieces, Plan};
use super::tree_plan::tree_rank;

/// The plan of `imp`, whose segment size is `seg` (unbounded when
/// unsegmented); `None` where the code has no such algorithm. A v-form is
/// planned as its regular form with blocks of its agreed bytes.
pub(super) fn plan(
    imp: &Implementation,
    layout: &Layout,
    bytes: usize,
    seg: usize,
) -> Option<Plan> {
    let ranks = layout.size();
    let mut plan = Plan {
        ops: vec![Vec::new(); ranks],
    };
    match (&imp.algorithm, imp.op.regular()) {
        (Algorithm::Tree(shape), op) => {
            let tree = Tree::build_in(shape, layout, 0, None).ok()?;
            for rank in 0..ranks {
                tree_rank(&mut plan, &tree, op, rank, bytes, seg)?;
            }
        }
        (Algorithm::Ring, Collective::Allgather) => ring_segments(&mut plan, bytes, seg),
        (Algorithm::Ring, Collective::ReduceScatter) => ring_steps(&mut plan, bytes),
        (Algorithm::Ring, Collective::Allreduce) => ring_allreduce(&mut plan, bytes),
        (Algorithm::RecursiveDoubling, Collective::Allgather) => {
            doubling_allgather(&mut plan, bytes)
        }
        (Algorithm::RecursiveDoubling, Collective::Allreduce) => {
            doubling_allreduce(&mut plan, bytes)
        }
        (Algorithm::Rabenseifner, Collective::Allreduce) => rabenseifner(&mut plan, bytes),
        (Algorithm::Dissemination, Collective::Barrier) => dissemination(&mut plan),
        (Algorithm::Pairwise, Collective::Alltoall) => linear_alltoall(&mut plan, bytes, 1),
        (Algorithm::Linear(_), Collective::Alltoall) => {
            linear_alltoall(&mut plan, bytes, imp.algorithm.window(ranks))
        }
        (Algorithm::Linear(_), op) if op.scans() => linear_scan(&mut plan, bytes, seg),
        (Algorithm::RecursiveDoubling, op) if op.scans() => doubling_scan(&mut plan, bytes),
        (Algorithm::Bruck, Collective::Alltoall) => bruck_alltoall(&mut plan, bytes),
        (Algorithm::TwoLevel, Collective::Alltoall) => two_level_alltoall(&mut plan, layout, bytes),
        (Algorithm::Pairwise, Collective::ReduceScatter) => {
            pairwise_reduce_scatter(&mut plan, bytes)
        }
        (Algorithm::RecursiveHalving, Collective::ReduceScatter) => {
            halving_reduce_scatter(&mut plan, bytes)
        }
        _ => return None,
    }
    Some(plan)
}

/// P − 1 steps of one block to the right neighbour: allgather's blocks,
/// reduce-scatter's partial results (`coll::reduce_scatter::ring`).
fn ring_steps(plan: &mut Plan, b: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        for _ in 1..p {
            plan.send(rank, (rank + 1) % p, b);
            plan.recv(rank, (rank + p - 1) % p);
        }
    }
}

/// As `coll::allgather::ring` sends them: its own block's segments first,
/// then each segment passed on as it arrives (whole blocks when `seg` is
/// unbounded: one block a step).
fn ring_segments(plan: &mut Plan, b: usize, seg: usize) {
    let p = plan.ops.len();
    if p < 2 {
        return;
    }
    let pieces: Vec<usize> = pieces(b, seg).collect();
    for rank in 0..p {
        let (right, left) = ((rank + 1) % p, (rank + p - 1) % p);
        for &len in &pieces {
            plan.send(rank, right, len);
        }
        for s in 0..p - 1 {
            for &len in &pieces {
                plan.recv(rank, left);
                if s + 2 < p {
                    plan.send(rank, right, len);
                }
            }
        }
    }
}

/// As `coll::alltoall::linear` orders them: sends run at most `window`
/// ahead of the receives (pairwise: one).
fn linear_alltoall(plan: &mut Plan, b: usize, window: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        let mut sent = 1;
        for s in 1..p {
            while sent < p && sent < s + window {
                plan.send(rank, (rank + sent) % p, b);
                sent += 1;
            }
            plan.recv(rank, (rank + p - s) % p);
        }
    }
}

fn pairwise_reduce_scatter(plan: &mut Plan, b: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        for s in 1..p {
            plan.send(rank, (rank + s) % p, b);
            plan.recv(rank, (rank + p - s) % p);
        }
    }
}

/// As `coll::reduce_scatter::recursive_halving`: the whole vector folds
/// in, each round sends the blocks of the half given away, and the extra
/// ranks get their one block back.
fn halving_reduce_scatter(plan: &mut Plan, b: usize) {
    let p = plan.ops.len();
    let fold = Fold::new(p);
    for rank in 0..p {
        if !fold.fold_in(plan, rank, p * b) {
            continue;
        }
        let nr = fold.new_rank(rank);
        let (mut lo, mut hi) = (0, fold.p2);
        let mut mask = fold.p2 / 2;
        while mask > 0 {
            let mid = lo + mask;
            let (keep, give) = match nr & mask {
                0 => ((lo, mid), (mid, hi)),
                _ => ((mid, hi), (lo, mid)),
            };
            plan.send(
                rank,
                fold.real(nr ^ mask),
                (fold.first(give.1) - fold.first(give.0)) * b,
            );
            plan.recv(rank, fold.real(nr ^ mask));
            (lo, hi) = keep;
            mask /= 2;
        }
        fold.fold_out(plan, rank, b);
    }
}

/// As `coll::scan::linear`: segment by segment, from the rank before and
/// on to the rank after.
fn linear_scan(plan: &mut Plan, n: usize, seg: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        for len in pieces(n, seg) {
            if rank > 0 {
                plan.recv(rank, rank - 1);
            }
            if rank + 1 < p {
                plan.send(rank, rank + 1, len);
            }
        }
    }
}

fn doubling_scan(plan: &mut Plan, n: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        let mut d = 1;
        while d < p {
            if rank + d < p {
                plan.send(rank, rank + d, n);
            }
            if rank >= d {
                plan.recv(rank, rank - d);
            }
            d *= 2;
        }
    }
}

fn bruck_alltoall(plan: &mut Plan, b: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        let mut bit = 1;
        while bit < p {
            let moving = (0..p).filter(|i| i & bit != 0).count();
            plan.send(rank, (rank + bit) % p, moving * b);
            plan.recv(rank, (rank + p - bit) % p);
            bit <<= 1;
        }
    }
}

/// As `coll::alltoall::two_level` orders them: a rank's blocks for other
/// hosts to its leader, those for its host's ranks straight to them; the
/// leader's part in between; the blocks of its host's ranks, then its
/// leader's hand-out.
fn two_level_alltoall(plan: &mut Plan, layout: &Layout, b: usize) {
    let hosts = layout.ranks_by_host();
    let crosses = hosts.len() > 1;
    for (host, local) in hosts.iter().enumerate() {
        let n = local.len();
        let outside = (layout.size() - n) * b;
        for (place, &rank) in local.iter().enumerate() {
            if crosses && place > 0 {
                plan.send(rank, local[0], outside);
            }
            for s in 1..n {
                plan.send(rank, local[(place + s) % n], b);
            }
            if crosses && place == 0 {
                two_level_leader(plan, &hosts, host, b, outside);
            }
            for s in 1..n {
                plan.recv(rank, local[(place + n - s) % n]);
            }
            if crosses && place > 0 {
                plan.recv(rank, local[0]);
            }
        }
    }
}

/// The leader of `host`: its ranks' blocks for other hosts in, a bundle
/// to host + 1, + 2, …, one from host − 1, − 2, …, the hand-outs to its
/// ranks (`outside` bytes each).
fn two_level_leader(plan: &mut Plan, hosts: &[Vec<usize>], host: usize, b: usize, outside: usize) {
    let (local, count) = (&hosts[host], hosts.len());
    let leader = local[0];
    for &r in &local[1..] {
        plan.recv(leader, r);
    }
    for step in 1..count {
        let to = &hosts[(host + step) % count];
        plan.send(leader, to[0], local.len() * to.len() * b);
    }
    for step in 1..count {
        plan.recv(leader, hosts[(host + count - step) % count][0]);
    }
    for &r in &local[1..] {
        plan.send(leader, r, outside);
    }
}

/// The length of block `i` of `n` bytes cut into `parts` near-equal ones.
fn block_len(n: usize, parts: usize, i: usize) -> usize {
    let edge = |i: usize| (i as u128 * n as u128 / parts as u128) as usize;
    edge(i % parts + 1) - edge(i % parts)
}

fn ring_allreduce(plan: &mut Plan, n: usize) {
    let p = plan.ops.len();
    if p < 2 {
        return;
    }
    for rank in 0..p {
        let (right, left) = ((rank + 1) % p, (rank + p - 1) % p);
        for s in 0..p - 1 {
            plan.send(rank, right, block_len(n, p, rank + p - s));
            plan.recv(rank, left);
        }
        for s in 0..p - 1 {
            plan.send(rank, right, block_len(n, p, rank + 1 + p - s));
            plan.recv(rank, left);
        }
    }
}

/// The fold of a communicator onto a power of two that recursive doubling
/// and Rabenseifner use (the first 2·rem ranks pair up, the even one of a
/// pair sits out).
struct Fold {
    p2: usize,
    rem: usize,
}

impl Fold {
    fn new(size: usize) -> Fold {
        let p2 = match size {
            0 => 0,
            _ => 1 << (usize::BITS - 1 - size.leading_zeros()),
        };
        Fold { p2, rem: size - p2 }
    }

    fn partner(&self, rank: usize) -> Option<usize> {
        (rank < 2 * self.rem).then_some(rank ^ 1)
    }

    fn sits_out(&self, rank: usize) -> bool {
        rank < 2 * self.rem && rank.is_multiple_of(2)
    }

    fn new_rank(&self, rank: usize) -> usize {
        match rank < 2 * self.rem {
            true => rank / 2,
            false => rank - self.rem,
        }
    }

    fn real(&self, nr: usize) -> usize {
        match nr < self.rem {
            true => 2 * nr + 1,
            false => nr + self.rem,
        }
    }

    /// The lowest real rank new rank `nr` stands for.
    fn first(&self, nr: usize) -> usize {
        match nr <= self.rem {
            true => 2 * nr,
            false => nr + self.rem,
        }
    }

    /// The pairing step before the exchanges: `bytes` to the odd partner.
    /// Returns whether `rank` goes on to the exchanges; one that sits out
    /// waits here for the result its partner hands back in `fold_out`.
    fn fold_in(&self, plan: &mut Plan, rank: usize, bytes: usize) -> bool {
        match self.partner(rank) {
            Some(partner) if self.sits_out(rank) => {
                plan.send(rank, partner, bytes);
                plan.recv(rank, partner);
                false
            }
            Some(partner) => {
                plan.recv(rank, partner);
                true
            }
            None => true,
        }
    }

    fn fold_out(&self, plan: &mut Plan, rank: usize, bytes: usize) {
        if let Some(partner) = self.partner(rank) {
            plan.send(rank, partner, bytes);
        }
    }
}

fn doubling_allgather(plan: &mut Plan, b: usize) {
    let p = plan.ops.len();
    doubling(plan, b, p * b, |fold, nr, mask| {
        let base = nr & !(mask - 1);
        (fold.first(base + mask) - fold.first(base)) * b
    });
}

fn doubling_allreduce(plan: &mut Plan, n: usize) {
    doubling(plan, n, n, |_, _, _| n);
}

/// Recursive doubling over the ranks folded onto a power of two: `fold_in`
/// bytes from each extra rank to its partner, `step(fold, new rank, mask)`
/// bytes each way per round, `fold_out` bytes back to the extra ranks.
fn doubling(
    plan: &mut Plan,
    fold_in: usize,
    fold_out: usize,
    step: impl Fn(&Fold, usize, usize) -> usize,
) {
    let p = plan.ops.len();
    let fold = Fold::new(p);
    for rank in 0..p {
        if !fold.fold_in(plan, rank, fold_in) {
            continue;
        }
        let nr = fold.new_rank(rank);
        let mut mask = 1;
        while mask < fold.p2 {
            let peer = fold.real(nr ^ mask);
            plan.send(rank, peer, step(&fold, nr, mask));
            plan.recv(rank, peer);
            mask <<= 1;
        }
        fold.fold_out(plan, rank, fold_out);
    }
}

fn rabenseifner(plan: &mut Plan, n: usize) {
    let p = plan.ops.len();
    let fold = Fold::new(p);
    for rank in 0..p {
        if !fold.fold_in(plan, rank, n) {
            continue;
        }
        let nr = fold.new_rank(rank);
        let mut held = (0, n);
        let mut history = Vec::new();
        let mut mask = fold.p2 / 2;
        while mask > 0 {
            let mid = held.0 + (held.1 - held.0) / 2;
            let (keep, give) = match nr & mask == 0 {
                true => ((held.0, mid), held.1 - mid),
                false => ((mid, held.1), mid - held.0),
            };
            let peer = fold.real(nr ^ mask);
            plan.send(rank, peer, give);
            plan.recv(rank, peer);
            history.push(held);
            held = keep;
            mask /= 2;
        }
        let mut mask = 1;
        while let Some(outer) = history.pop() {
            let peer = fold.real(nr ^ mask);
            plan.send(rank, peer, held.1 - held.0);
            plan.recv(rank, peer);
            held = outer;
            mask <<= 1;
        }
        fold.fold_out(plan, rank, n);
    }
}

fn dissemination(plan: &mut Plan) {
    let p = plan.ops.len();
    for rank in 0..p {
        let mut dist = 1;
        while dist < p {
            plan.send(rank, (rank + dist) % p, 0);
            plan.recv(rank, (rank + p - dist) % p);
            dist <<= 1;
        }
    }
}
