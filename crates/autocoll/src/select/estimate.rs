//! What a call of an implementation costs on a machine: the lottery's model
//! for telling, before it spends a real call, whether a candidate could
//! beat the incumbent.
//!
//! The model replays the messages an algorithm sends, in the order the code
//! under `coll` sends and receives them, on a machine of ports: each rank
//! has a port out and a port in, each host a link out and a link in. A
//! message holds its sender's and its receiver's ports for one latency
//! plus its bytes (so a flat tree's root pays P−1 latencies), and the host
//! links it crosses for its bytes only (ranks of one host share their
//! link's bandwidth, not its latency). A send does not wait for its
//! receiver, a receive waits for its message. The rank that finishes last
//! gives the critical path, counted as latencies and as bytes that pass
//! one after another (a chain without segments pays its message at every
//! hop), and the ports give the busiest link's load.
//!
//! The time is a bound of two terms, latencies plus bytes, as in Hockney's
//! model: the byte term is the larger of the critical path's bytes and the
//! busiest link's load, which no schedule beats. Both terms are linear in
//! the machine's numbers, so a few measured calls fit them by least
//! squares, and the counts are kept apart from the numbers, so one trace
//! serves every machine. The critical path is chosen at reference numbers
//! (a 100 Mbit/s cluster) and only priced, not chosen again, on another.
//!
//! Left out: the time to combine (reductions) and copy, a local message's
//! smaller latency (it counts a whole one), switch uplinks, TCP's sharing
//! of a link, the element size (blocks split by bytes) and the real root
//! (the lottery does not know it: rank 0).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::ops::{Add, Mul, Sub};

use super::{Algorithm, Implementation};
use crate::ids::Collective;
use crate::layout::Layout;
use crate::tree::Tree;

/// What one call of an implementation asks of the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Message latencies on the critical path, a rank's sends one after
    /// another included.
    pub rounds: f64,
    /// Bytes through the busiest host link in one direction.
    pub link_bytes: f64,
    /// Bytes the busiest rank sends, or receives, within its host.
    pub local_bytes: f64,
    /// Bytes that cross host links one after another on the critical path.
    pub path_link_bytes: f64,
    /// Bytes that stay within a host one after another on the critical path.
    pub path_local_bytes: f64,
}

/// The machine: per-message latency and per-byte time of a host's link
/// (each way), and per byte between ranks of one host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// Seconds per message.
    pub latency_s: f64,
    /// Seconds per byte through a host's link.
    pub s_per_byte: f64,
    /// Seconds per byte between two ranks of one host.
    pub local_s_per_byte: f64,
}

/// The numbers that choose the critical path: the emulated 100 Mbit/s
/// cluster, where both terms matter at the sizes the lottery sees.
const REFERENCE: Link = Link {
    latency_s: 43e-6,
    s_per_byte: 84e-9,
    local_s_per_byte: 0.44e-9,
};

/// A local byte's time as a share of a link byte's, when no measurement
/// tells them apart (memory against 100 Mbit/s is about 1/200).
const LOCAL_FRACTION: f64 = 1.0 / 128.0;

/// Above this many segments a pipeline is traced at two smaller sizes and
/// extrapolated: its steady state grows linearly with the segments.
const MAX_SEGMENTS: usize = 64;

/// The most messages one trace replays (a ring over 1024 ranks fits).
const MAX_MESSAGES: usize = 1 << 21;

/// The cost of one call of `imp` over `layout` with `bytes` per rank (a
/// block for scatter, gather and allgather), rooted at rank 0. `None` for
/// the MPI library's own algorithm, a tree that cannot be built, sizes that
/// overflow, and traces too long to replay.
pub fn cost(imp: &Implementation, layout: &Layout, bytes: usize) -> Option<Cost> {
    if layout.size() == 0 || imp.algorithm == Algorithm::Native {
        return None;
    }
    let seg = imp.seg.unwrap_or(usize::MAX).max(1);
    let units = volume(imp.op, layout.size(), bytes)?.div_ceil(seg);
    let large = scaled(bytes, MAX_SEGMENTS, units);
    let small = scaled(bytes, MAX_SEGMENTS / 2, units);
    if units <= MAX_SEGMENTS || small >= large {
        return trace(imp, layout, bytes, seg);
    }
    let at = (bytes - small) as f64 / (large - small) as f64;
    let near = trace(imp, layout, small, seg)?;
    Some(near + (trace(imp, layout, large, seg)? - near) * at)
}

/// The largest stream a pipeline cuts into segments.
fn volume(op: Collective, ranks: usize, bytes: usize) -> Option<usize> {
    match op {
        Collective::Scatter | Collective::Gather | Collective::Allgather => {
            ranks.checked_mul(bytes)
        }
        _ => Some(bytes),
    }
}

/// `bytes` scaled from `units` segments to `to`.
fn scaled(bytes: usize, to: usize, units: usize) -> usize {
    (bytes as u128 * to as u128 / units.max(1) as u128) as usize
}

fn trace(imp: &Implementation, layout: &Layout, bytes: usize, seg: usize) -> Option<Cost> {
    let units = volume(imp.op, layout.size(), bytes)?.div_ceil(seg);
    if messages(&imp.algorithm, layout.size(), units) > MAX_MESSAGES {
        return None;
    }
    Machine::new(layout, plan(imp, layout, bytes, seg)?).run()
}

/// An upper bound of the messages a plan holds, known before building it.
fn messages(algorithm: &Algorithm, ranks: usize, units: usize) -> usize {
    let per_rank = match algorithm {
        Algorithm::Tree(_) => units.saturating_add(1),
        Algorithm::Ring => ranks,
        _ => 2 * (usize::BITS - ranks.leading_zeros()) as usize + 2,
    };
    ranks.saturating_mul(per_rank).saturating_mul(2)
}

impl Link {
    /// A machine given in nanoseconds: per message (the wire's latency and
    /// both ends' overheads), per byte through a host's link, per byte
    /// within a host.
    pub fn from_ns(latency_ns: f64, ns_per_byte: f64, local_ns_per_byte: f64) -> Link {
        Link {
            latency_s: latency_ns * 1e-9,
            s_per_byte: ns_per_byte * 1e-9,
            local_s_per_byte: local_ns_per_byte * 1e-9,
        }
    }

    /// The seconds `c` takes: its latencies, then its bytes.
    pub fn time(&self, c: &Cost) -> f64 {
        c.rounds * self.latency_s + self.byte_time(c)
    }

    fn byte_time(&self, c: &Cost) -> f64 {
        let path = c.path_link_bytes * self.s_per_byte + c.path_local_bytes * self.local_s_per_byte;
        path.max(c.link_bytes * self.s_per_byte)
            .max(c.local_bytes * self.local_s_per_byte)
    }

    /// The machine that best explains measured `(cost, seconds)` pairs, by
    /// least squares with no negative term. A local byte's time is a share
    /// of a link byte's: fitted when the points have both, taken as a
    /// fixed share otherwise. `None` when the points cannot tell latency
    /// from bytes: fewer than two distinct ones, or bytes that do not vary
    /// (a per-byte time read off one byte count would be the latencies'
    /// leftovers, not a measurement).
    pub fn fit(points: &[(Cost, f64)]) -> Option<Link> {
        let points: Vec<&(Cost, f64)> = points.iter().filter(|(c, t)| usable(c, *t)).collect();
        let crosses = points
            .iter()
            .any(|(c, _)| c.link_bytes > 0.0 || c.path_link_bytes > 0.0);
        let local = points
            .iter()
            .any(|(c, _)| c.local_bytes > 0.0 || c.path_local_bytes > 0.0);
        if !crosses {
            // Only the local share is measured: the link is taken as slower
            // by the usual factor.
            let fit = fit_at(&points, 1.0)?;
            return Some(Link {
                latency_s: fit.latency_s,
                s_per_byte: fit.s_per_byte / LOCAL_FRACTION,
                local_s_per_byte: fit.s_per_byte,
            });
        }
        let shares: Vec<f64> = match local {
            true => (0..=12).map(|k| 0.5f64.powi(k)).collect(),
            false => vec![LOCAL_FRACTION],
        };
        let (best, share) = shares
            .into_iter()
            .filter_map(|share| fit_at(&points, share).map(|fit| (fit, share)))
            .min_by(|a, b| a.0.residual.total_cmp(&b.0.residual))?;
        Some(Link {
            latency_s: best.latency_s,
            s_per_byte: best.s_per_byte,
            local_s_per_byte: best.s_per_byte * share,
        })
    }
}

/// A least-squares solution and how far it misses.
#[derive(Clone, Copy)]
struct Fitted {
    latency_s: f64,
    s_per_byte: f64,
    residual: f64,
}

fn usable(c: &Cost, t: f64) -> bool {
    let terms = [
        c.rounds,
        c.link_bytes,
        c.local_bytes,
        c.path_link_bytes,
        c.path_local_bytes,
        t,
    ];
    terms.iter().all(|x| x.is_finite() && *x >= 0.0)
}

/// The byte count a link byte's time multiplies, a local byte counting as
/// `share` of one.
fn link_equivalent(c: &Cost, share: f64) -> f64 {
    (c.path_link_bytes + share * c.path_local_bytes)
        .max(c.link_bytes)
        .max(share * c.local_bytes)
}

/// The fit of `t ≈ latency·rounds + per_byte·bytes` with no negative
/// term, a local byte counting as `share` of a link byte.
fn fit_at(points: &[&(Cost, f64)], share: f64) -> Option<Fitted> {
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|(c, t)| (c.rounds, link_equivalent(c, share), *t))
        .collect();
    let first = rows.first()?.1;
    if rows.iter().all(|r| r.1 == first) {
        return None;
    }
    let sum = |f: &dyn Fn(&(f64, f64, f64)) -> f64| rows.iter().map(f).sum::<f64>();
    let (s11, s22, s12) = (
        sum(&|r| r.0 * r.0),
        sum(&|r| r.1 * r.1),
        sum(&|r| r.0 * r.1),
    );
    let (s1t, s2t) = (sum(&|r| r.0 * r.2), sum(&|r| r.1 * r.2));
    let det = s11 * s22 - s12 * s12;
    // Columns (nearly) in proportion cannot tell latency from bytes.
    if det <= 1e-9 * s11 * s22 {
        return None;
    }
    let fitted = |latency_s: f64, s_per_byte: f64| Fitted {
        latency_s,
        s_per_byte,
        residual: sum(&|r| (r.2 - latency_s * r.0 - s_per_byte * r.1).powi(2)),
    };
    let (a, b) = ((s22 * s1t - s12 * s2t) / det, (s11 * s2t - s12 * s1t) / det);
    if a >= 0.0 && b >= 0.0 {
        return Some(fitted(a, b));
    }
    // With two terms, a constrained optimum off the free one lies on an
    // axis: one term alone, the other zero.
    let on_axes = [
        fitted((s1t / s11).max(0.0), 0.0),
        fitted(0.0, (s2t / s22).max(0.0)),
    ];
    on_axes
        .into_iter()
        .min_by(|x, y| x.residual.total_cmp(&y.residual))
}

/// One step of a rank's program.
#[derive(Clone, Copy, Debug)]
enum Op {
    Send { to: usize, bytes: usize },
    Recv { from: usize },
}

/// Every rank's sends and receives, in the order its code issues them.
struct Plan {
    ops: Vec<Vec<Op>>,
}

impl Plan {
    fn send(&mut self, from: usize, to: usize, bytes: usize) {
        self.ops[from].push(Op::Send { to, bytes });
    }

    fn recv(&mut self, at: usize, from: usize) {
        self.ops[at].push(Op::Recv { from });
    }
}

/// The plan of `imp`, whose segment size is `seg` (unbounded when
/// unsegmented); `None` where the code has no such algorithm.
fn plan(imp: &Implementation, layout: &Layout, bytes: usize, seg: usize) -> Option<Plan> {
    let ranks = layout.size();
    let mut plan = Plan {
        ops: vec![Vec::new(); ranks],
    };
    match (&imp.algorithm, imp.op) {
        (Algorithm::Tree(shape), op) => {
            let tree = Tree::build_in(shape, layout, 0, None).ok()?;
            for rank in 0..ranks {
                tree_rank(&mut plan, &tree, op, rank, bytes, seg)?;
            }
        }
        (Algorithm::Ring, Collective::Allgather) => ring_allgather(&mut plan, bytes),
        (Algorithm::Ring, Collective::Allreduce) => ring_allreduce(&mut plan, bytes),
        (Algorithm::RecursiveDoubling, Collective::Allgather) => {
            doubling_allgather(&mut plan, bytes)
        }
        (Algorithm::RecursiveDoubling, Collective::Allreduce) => {
            doubling_allreduce(&mut plan, bytes)
        }
        (Algorithm::Rabenseifner, Collective::Allreduce) => rabenseifner(&mut plan, bytes),
        (Algorithm::Dissemination, Collective::Barrier) => dissemination(&mut plan),
        _ => return None,
    }
    Some(plan)
}

/// One rank's part of a collective over a tree, composed as `coll` does:
/// allreduce is reduce whose root starts the broadcast, allgather is
/// gather then a broadcast of the whole vector.
fn tree_rank(
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
        Collective::Barrier => tree_barrier(plan, tree, rank),
    }
    Some(())
}

/// The lengths of the segments of a `total`-byte message.
fn pieces(total: usize, seg: usize) -> impl Iterator<Item = usize> {
    let seg = seg.max(1);
    (0..total.div_ceil(seg)).map(move |k| seg.min(total - k * seg))
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

fn ring_allgather(plan: &mut Plan, b: usize) {
    let p = plan.ops.len();
    for rank in 0..p {
        for _ in 1..p {
            plan.send(rank, (rank + 1) % p, b);
            plan.recv(rank, (rank + p - 1) % p);
        }
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

/// A time kept as its counts (latencies, link bytes, local bytes), so the
/// path that sets it can be priced on any machine.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Span {
    rounds: f64,
    link: f64,
    local: f64,
}

impl Span {
    fn of(rounds: f64, link: f64, local: f64) -> Span {
        Span {
            rounds,
            link,
            local,
        }
    }

    fn seconds(self) -> f64 {
        self.rounds * REFERENCE.latency_s
            + self.link * REFERENCE.s_per_byte
            + self.local * REFERENCE.local_s_per_byte
    }

    /// The later of two times, at the reference machine.
    fn later(self, other: Span) -> Span {
        match other.seconds() > self.seconds() {
            true => other,
            false => self,
        }
    }

    /// A heap key that orders as the time does (the bits of a
    /// non-negative float order as the float).
    fn key(self) -> u64 {
        self.seconds().max(0.0).to_bits()
    }
}

impl Add for Span {
    type Output = Span;
    fn add(self, o: Span) -> Span {
        Span {
            rounds: self.rounds + o.rounds,
            link: self.link + o.link,
            local: self.local + o.local,
        }
    }
}

/// A link's or a rank's port: when it is next free, and the bytes it
/// carried.
#[derive(Clone, Copy, Default)]
struct Port {
    free: Span,
    bytes: f64,
}

/// Replays a plan: the rank whose next send is ready earliest goes first.
struct Machine<'a> {
    layout: &'a Layout,
    ops: Vec<Vec<Op>>,
    next: Vec<usize>,
    clock: Vec<Span>,
    mail: HashMap<(usize, usize), VecDeque<Span>>,
    host_out: Vec<Port>,
    host_in: Vec<Port>,
    rank_out: Vec<Port>,
    rank_in: Vec<Port>,
    ready: BinaryHeap<Reverse<(u64, usize)>>,
}

impl<'a> Machine<'a> {
    fn new(layout: &'a Layout, plan: Plan) -> Self {
        let (ranks, hosts) = (layout.size(), layout.host_count());
        Machine {
            layout,
            ops: plan.ops,
            next: vec![0; ranks],
            clock: vec![Span::default(); ranks],
            mail: HashMap::new(),
            host_out: vec![Port::default(); hosts],
            host_in: vec![Port::default(); hosts],
            rank_out: vec![Port::default(); ranks],
            rank_in: vec![Port::default(); ranks],
            ready: BinaryHeap::new(),
        }
    }

    /// The cost, or `None` if some rank never got a message it waits for.
    fn run(mut self) -> Option<Cost> {
        for rank in 0..self.ops.len() {
            self.advance(rank);
        }
        while let Some(Reverse((_, rank))) = self.ready.pop() {
            let Some(&Op::Send { to, bytes }) = self.ops[rank].get(self.next[rank]) else {
                continue;
            };
            self.next[rank] += 1;
            self.deliver(rank, to, bytes);
            self.advance(rank);
            if to != rank && self.waits_for(to, rank) {
                self.advance(to);
            }
        }
        let done = (0..self.ops.len()).all(|r| self.next[r] == self.ops[r].len());
        done.then(|| self.cost())
    }

    fn waits_for(&self, rank: usize, from: usize) -> bool {
        matches!(self.ops[rank].get(self.next[rank]), Some(Op::Recv { from: f }) if *f == from)
    }

    /// Runs `rank`'s receives while their messages are there, up to its
    /// next send, which it queues.
    fn advance(&mut self, rank: usize) {
        while let Some(&op) = self.ops[rank].get(self.next[rank]) {
            match op {
                Op::Send { .. } => {
                    self.ready.push(Reverse((self.clock[rank].key(), rank)));
                    return;
                }
                Op::Recv { from } => {
                    let queue = self.mail.get_mut(&(from, rank));
                    let Some(at) = queue.and_then(VecDeque::pop_front) else {
                        return;
                    };
                    self.clock[rank] = self.clock[rank].later(at);
                    self.next[rank] += 1;
                }
            }
        }
    }

    /// A message holds its sender's and receiver's ports for its latency
    /// and bytes (a rank's messages go one after another), and the host
    /// links it crosses for its bytes only: the wire's latency of one
    /// message overlaps the bytes of the next.
    fn deliver(&mut self, from: usize, to: usize, bytes: usize) {
        let b = bytes as f64;
        let (a, z) = (self.layout.host(from), self.layout.host(to));
        let remote = a != z;
        let (sender, receiver) = (&mut self.rank_out[from], &mut self.rank_in[to]);
        let mut start = self.clock[from].later(sender.free).later(receiver.free);
        if remote {
            start = start
                .later(self.host_out[a].free)
                .later(self.host_in[z].free);
        }
        let carried = match remote {
            true => Span::of(0.0, b, 0.0),
            false => Span::of(0.0, 0.0, b),
        };
        let end = start + carried + Span::of(1.0, 0.0, 0.0);
        let (held, ports) = match remote {
            true => (
                start + carried,
                [&mut self.host_out[a], &mut self.host_in[z]],
            ),
            false => (end, [sender, receiver]),
        };
        for port in ports {
            port.free = held;
            port.bytes += b;
        }
        self.rank_out[from].free = end;
        self.rank_in[to].free = end;
        self.mail.entry((from, to)).or_default().push_back(end);
    }

    fn cost(&self) -> Cost {
        let finish = self.clock.iter().fold(Span::default(), |a, &c| a.later(c));
        let busiest = |ports: &[Port]| ports.iter().map(|p| p.bytes).fold(0.0, f64::max);
        Cost {
            rounds: finish.rounds,
            link_bytes: busiest(&self.host_out).max(busiest(&self.host_in)),
            local_bytes: busiest(&self.rank_out).max(busiest(&self.rank_in)),
            path_link_bytes: finish.link,
            path_local_bytes: finish.local,
        }
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost {
            rounds: self.rounds + o.rounds,
            link_bytes: self.link_bytes + o.link_bytes,
            local_bytes: self.local_bytes + o.local_bytes,
            path_link_bytes: self.path_link_bytes + o.path_link_bytes,
            path_local_bytes: self.path_local_bytes + o.path_local_bytes,
        }
    }
}

impl Sub for Cost {
    type Output = Cost;
    fn sub(self, o: Cost) -> Cost {
        self + o * -1.0
    }
}

impl Mul<f64> for Cost {
    type Output = Cost;
    fn mul(self, k: f64) -> Cost {
        Cost {
            rounds: self.rounds * k,
            link_bytes: self.link_bytes * k,
            local_bytes: self.local_bytes * k,
            path_link_bytes: self.path_link_bytes * k,
            path_local_bytes: self.path_local_bytes * k,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::default_candidates;

    fn hosts(n: usize) -> Layout {
        Layout::of_hosts((0..n).map(|h| format!("h{h}")).collect()).unwrap()
    }

    fn of(id: &str, layout: &Layout, bytes: usize) -> Cost {
        let imp: Implementation = id.parse().unwrap();
        cost(&imp, layout, bytes).unwrap_or_else(|| panic!("{id} has no cost"))
    }

    /// The emulated cluster of 8 hosts on 100 Mbit/s links.
    fn star8() -> Link {
        Link::from_ns(21_427.0 + 2.0 * 10_714.0, 84.235, 0.438)
    }

    fn seconds(id: &str, bytes: usize) -> f64 {
        star8().time(&of(id, &hosts(8), bytes))
    }

    #[test]
    fn bcast_link_bytes_are_what_the_root_sends_out_of_its_host() {
        let eight = hosts(8);
        assert_eq!(of("bcast:flat", &eight, 1000).link_bytes, 7000.0);
        assert_eq!(of("bcast:binomial", &eight, 1000).link_bytes, 3000.0);
        assert_eq!(of("bcast:chain", &eight, 1000).link_bytes, 1000.0);
    }

    #[test]
    fn an_unsegmented_chain_pays_its_message_at_every_hop() {
        let chain = of("bcast:chain", &hosts(8), 1000);
        assert_eq!((chain.rounds, chain.path_link_bytes), (7.0, 7000.0));
        let flat = of("bcast:flat", &hosts(8), 1000);
        assert_eq!((flat.rounds, flat.path_link_bytes), (7.0, 7000.0));
        let binomial = of("bcast:binomial", &hosts(8), 1000);
        assert_eq!((binomial.rounds, binomial.path_link_bytes), (3.0, 3000.0));
    }

    #[test]
    fn a_segmented_chain_takes_depth_plus_segments_minus_one_steps() {
        let chain = of("bcast:chain:seg=1K", &hosts(8), 16 * 1024);
        assert_eq!(chain.rounds, 7.0 + 16.0 - 1.0);
        assert_eq!(chain.path_link_bytes, (7.0 + 16.0 - 1.0) * 1024.0);
        assert_eq!(chain.link_bytes, 16.0 * 1024.0);
    }

    #[test]
    fn ring_and_recursive_doubling_allgather_carry_seven_blocks_per_link() {
        let eight = hosts(8);
        let ring = of("allgather:ring", &eight, 100);
        assert_eq!((ring.link_bytes, ring.rounds), (700.0, 7.0));
        let doubling = of("allgather:recursive-doubling", &eight, 100);
        assert_eq!((doubling.link_bytes, doubling.rounds), (700.0, 3.0));
        // Gather then a broadcast of all 8 blocks to 7 hosts.
        let flat = of("allgather:flat", &eight, 100);
        assert_eq!(flat.link_bytes, 7.0 * 800.0);
    }

    #[test]
    fn ranks_on_one_host_use_no_link() {
        let one = Layout::one_host(8);
        for id in ["bcast:binomial", "allgather:ring", "allreduce:rabenseifner"] {
            let c = of(id, &one, 4096);
            assert_eq!((c.link_bytes, c.path_link_bytes), (0.0, 0.0), "{id}");
            assert!(c.local_bytes > 0.0 && c.path_local_bytes > 0.0, "{id}");
        }
    }

    #[test]
    fn hier_sends_one_copy_per_host_over_the_links() {
        let two = Layout::of_hosts(
            ["a", "a", "a", "a", "b", "b", "b", "b"]
                .map(String::from)
                .to_vec(),
        )
        .unwrap();
        let hier = of("bcast:hier", &two, 1000);
        assert_eq!(hier.link_bytes, 1000.0);
        let flat = of("bcast:flat", &two, 1000);
        assert_eq!(flat.link_bytes, 4000.0);
    }

    #[test]
    fn on_star8_ring_allgather_of_one_mebibyte_is_three_times_faster_than_flat() {
        let ring = seconds("allgather:ring", 1 << 20);
        let flat = seconds("allgather:flat", 1 << 20);
        assert!(flat > 3.0 * ring, "ring {ring} s, flat {flat} s");
        let chain = seconds("allgather:chain", 1 << 20);
        assert!(chain > 3.0 * ring, "ring {ring} s, chain {chain} s");
    }

    #[test]
    fn on_star8_unsegmented_flat_and_chain_bcast_of_one_mebibyte_lag_a_segmented_binomial() {
        let segmented = seconds("bcast:binomial:seg=64K", 1 << 20);
        for id in ["bcast:flat", "bcast:chain"] {
            let t = seconds(id, 1 << 20);
            assert!(
                t > 2.0 * segmented,
                "{id} {t} s, binomial:seg=64K {segmented} s"
            );
        }
    }

    #[test]
    fn on_star8_small_messages_favour_shallow_trees() {
        let binomial = seconds("bcast:binomial", 8);
        let chain = seconds("bcast:chain", 8);
        assert!(binomial < chain, "binomial {binomial} s, chain {chain} s");
        for bytes in [1, 1024] {
            let binomial = seconds("bcast:binomial", bytes);
            assert!(binomial < seconds("bcast:chain", bytes), "{bytes} B");
            assert!(binomial < seconds("bcast:flat", bytes), "{bytes} B");
        }
    }

    #[test]
    fn many_segments_extrapolate_to_what_tracing_them_all_gives() {
        let eight = hosts(8);
        for id in [
            "bcast:binomial:seg=1K",
            "allgather:chain:seg=1K",
            "scatter:binary:seg=1K",
        ] {
            let imp: Implementation = id.parse().unwrap();
            let bytes = 256 * 1024;
            let all = trace(&imp, &eight, bytes, 1024).unwrap();
            let guess = cost(&imp, &eight, bytes).unwrap();
            let (a, b) = (star8().time(&all), star8().time(&guess));
            assert!(
                (a - b).abs() < 0.02 * a,
                "{id}: traced {a} s, extrapolated {b} s"
            );
        }
    }

    #[test]
    fn barriers_cost_rounds_and_no_bytes() {
        let d = of("barrier:dissemination", &hosts(8), 0);
        assert_eq!(
            d,
            Cost {
                rounds: 3.0,
                ..Cost::default()
            }
        );
        let tree = of("barrier:binomial", &hosts(8), 0);
        assert_eq!((tree.rounds, tree.link_bytes), (6.0, 0.0));
    }

    #[test]
    fn the_mpi_librarys_own_algorithm_has_no_cost() {
        for op in Collective::ALL {
            assert_eq!(cost(&Implementation::native(op), &hosts(8), 1024), None);
        }
    }

    #[test]
    fn every_default_candidate_has_a_cost_on_one_host_and_on_eight() {
        for layout in [Layout::one_host(8), hosts(8)] {
            for op in Collective::ALL {
                for bytes in [0, 1, 1024, 1 << 20] {
                    for imp in default_candidates(op, 8, bytes, layout.host_count()) {
                        let c = cost(&imp, &layout, bytes);
                        assert!(c.is_some(), "{imp} at {bytes} B");
                    }
                }
            }
        }
    }

    #[test]
    fn odd_sizes_and_empty_layouts_do_not_panic() {
        for ranks in [1, 3, 5, 6, 7] {
            for op in Collective::ALL {
                for imp in Implementation::all(op, &[1, 1000]) {
                    let layout = hosts(ranks);
                    for bytes in [0, 1, 3, 1001] {
                        assert!(cost(&imp, &layout, bytes).is_some(), "{imp} over {ranks}");
                    }
                }
            }
        }
        let imp: Implementation = "bcast:binomial".parse().unwrap();
        assert_eq!(cost(&imp, &Layout::one_host(0), 8), None);
        assert_eq!(cost(&imp, &Layout::one_host(1), 8), Some(Cost::default()));
        let huge: Implementation = "allgather:binomial:seg=1K".parse().unwrap();
        assert_eq!(cost(&huge, &hosts(8), usize::MAX), None);
        assert!(cost(&imp, &hosts(8), usize::MAX).is_some());
    }

    fn synthetic(link: &Link, shapes: &[(f64, f64, f64)]) -> Vec<(Cost, f64)> {
        shapes
            .iter()
            .map(|&(rounds, link_bytes, local)| {
                let c = Cost {
                    rounds,
                    link_bytes,
                    path_link_bytes: link_bytes,
                    path_local_bytes: local,
                    local_bytes: local,
                };
                (c, link.time(&c))
            })
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 0.01 * b.abs()
    }

    #[test]
    fn fit_recovers_latency_and_per_byte_time_from_exact_points() {
        let truth = star8();
        let points = synthetic(
            &truth,
            &[
                (1.0, 8.0, 0.0),
                (3.0, 3e6, 0.0),
                (7.0, 7e3, 0.0),
                (48.0, 3e6, 0.0),
            ],
        );
        let fitted = Link::fit(&points).unwrap();
        assert!(close(fitted.latency_s, truth.latency_s), "{fitted:?}");
        assert!(close(fitted.s_per_byte, truth.s_per_byte), "{fitted:?}");
    }

    #[test]
    fn fit_finds_the_local_per_byte_time_when_points_have_both() {
        let truth = Link::from_ns(40_000.0, 80.0, 80.0 / 128.0);
        let points = synthetic(
            &truth,
            &[
                (2.0, 1e3, 1e6),
                (5.0, 1e6, 1e3),
                (3.0, 0.0, 1e7),
                (9.0, 5e5, 5e5),
            ],
        );
        let fitted = Link::fit(&points).unwrap();
        assert!(close(fitted.latency_s, truth.latency_s), "{fitted:?}");
        assert!(close(fitted.s_per_byte, truth.s_per_byte), "{fitted:?}");
        assert!(
            close(fitted.local_s_per_byte, truth.local_s_per_byte),
            "{fitted:?}"
        );
    }

    #[test]
    fn fit_on_one_host_recovers_the_local_per_byte_time() {
        let one = Layout::one_host(4);
        let truth = Link::from_ns(5_000.0, 50.0, 0.25);
        let points: Vec<(Cost, f64)> = ["bcast:binomial", "bcast:chain:seg=1K", "allreduce:ring"]
            .iter()
            .flat_map(|id| [8, 1 << 16, 1 << 20].map(|b| of(id, &one, b)))
            .map(|c| (c, truth.time(&c)))
            .collect();
        let fitted = Link::fit(&points).unwrap();
        assert!(close(fitted.latency_s, truth.latency_s), "{fitted:?}");
        assert!(
            close(fitted.local_s_per_byte, truth.local_s_per_byte),
            "{fitted:?}"
        );
    }

    #[test]
    fn fit_refuses_points_that_cannot_tell_latency_from_bytes() {
        let truth = star8();
        assert_eq!(Link::fit(&[]), None);
        let one = synthetic(&truth, &[(3.0, 1e3, 0.0)]);
        assert_eq!(Link::fit(&one), None);
        let twice = synthetic(&truth, &[(3.0, 1e3, 0.0), (3.0, 1e3, 0.0)]);
        assert_eq!(Link::fit(&twice), None);
        let same_bytes = synthetic(&truth, &[(3.0, 1e3, 0.0), (7.0, 1e3, 0.0)]);
        assert_eq!(Link::fit(&same_bytes), None);
        let proportional = synthetic(&truth, &[(1.0, 1e3, 0.0), (2.0, 2e3, 0.0)]);
        assert_eq!(Link::fit(&proportional), None);
        let no_bytes = synthetic(&truth, &[(1.0, 0.0, 0.0), (2.0, 0.0, 0.0)]);
        assert_eq!(Link::fit(&no_bytes), None);
    }

    #[test]
    fn fit_never_returns_negative_terms() {
        // Times that fall as rounds grow: least squares alone would give a
        // negative latency.
        let cost = |rounds, bytes| Cost {
            rounds,
            link_bytes: bytes,
            path_link_bytes: bytes,
            ..Cost::default()
        };
        let points = [
            (cost(1.0, 1e6), 0.09),
            (cost(10.0, 1e6), 0.08),
            (cost(20.0, 2e6), 0.15),
            (cost(2.0, 0.0), 1e-3),
        ];
        let fitted = Link::fit(&points).unwrap();
        assert!(
            fitted.latency_s >= 0.0 && fitted.s_per_byte >= 0.0,
            "{fitted:?}"
        );
        assert!(fitted.local_s_per_byte >= 0.0, "{fitted:?}");
        let falling = [
            (cost(1.0, 1e6), 0.09),
            (cost(2.0, 2e6), 0.01),
            (cost(3.0, 1e3), 0.2),
        ];
        let fitted = Link::fit(&falling).unwrap();
        assert!(
            fitted.latency_s >= 0.0 && fitted.s_per_byte >= 0.0,
            "{fitted:?}"
        );
    }
}
