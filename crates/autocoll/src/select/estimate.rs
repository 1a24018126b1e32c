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

use super::implementation::{Algorithm, Implementation};
use crate::ids::Collective;
use crate::layout::Layout;

mod plan;
mod steps;
mod tree_plan;

use plan::plan;
use steps::{Op, Plan};

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
        Collective::Scatter | Collective::Gather | Collective::Allgather | Collective::Alltoall => {
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
        // A scan's linear pipeline sends a message per segment.
        Algorithm::Ring | Algorithm::Pairwise | Algorithm::Linear(_) | Algorithm::TwoLevel => {
            ranks.max(units.saturating_add(1))
        }
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

    /// The machine as one pair of ranks measured it: `latency_s` a message,
    /// `per_byte_s` a byte between them, across a host link if `crosses`,
    /// else within a host; the other per-byte time at the usual share.
    pub fn of_pair(latency_s: f64, per_byte_s: f64, crosses: bool) -> Link {
        let (link, local) = match crosses {
            true => (per_byte_s, per_byte_s * LOCAL_FRACTION),
            false => (per_byte_s / LOCAL_FRACTION, per_byte_s),
        };
        Link {
            latency_s,
            s_per_byte: link,
            local_s_per_byte: local,
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

    /// This machine with its times per byte no slower than `measured`'s
    /// (a probe of the link itself): a fit slower per byte blames the link
    /// for what some algorithms lose to effects the model does not replay,
    /// and would hide the trees that do not lose it.
    pub fn bytes_no_slower_than(self, measured: Link) -> Link {
        Link {
            s_per_byte: self.s_per_byte.min(measured.s_per_byte),
            local_s_per_byte: self.local_s_per_byte.min(measured.local_s_per_byte),
            ..self
        }
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
            return Some(Link::of_pair(fit.latency_s, fit.s_per_byte, false));
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
mod tests;
