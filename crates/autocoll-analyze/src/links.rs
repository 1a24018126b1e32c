//! Link latencies: the paper's two-way latency, which needs no common
//! clock, and one-way times, which do.
//!
//! Two ranks a and b that exchange messages both ways in one call give a
//! two-way latency from the last message each way (the last segment):
//! m1 from a to b, m2 from b to a,
//!
//!   (t4 − t1) − (t3 − t2)  =  (recv_a(m2) − send_a(m1)) + (recv_b(m1) − send_b(m2)),
//!
//! each bracket a difference of two times of one rank, so that no clock
//! offset enters it (the paper's t1, t4 on the child, t2, t3 on the
//! parent). It is the sum of the two one-way times, whatever the order of
//! the four events: over a tree the pair is a child and its parent, for
//! exchange algorithms (recursive doubling, Rabenseifner, a 2-rank ring)
//! any two partners. Calls whose data go one way only (bcast, reduce,
//! scatter, gather) have no two-way latency; their links get one-way
//! times (receive − send on the common clock) when the clocks align.

use std::collections::BTreeMap;

use autocoll::trace::messages::Message;

use super::call::View;
use super::stats::Stat;

/// The latencies of one pair of ranks (a < b, or child a and parent b).
#[derive(Clone, Debug, Default)]
pub struct LinkAgg {
    /// The two-way latency.
    pub two_way: Stat,
    /// One-way times from a to b.
    pub a_to_b: Stat,
    /// One-way times from b to a.
    pub b_to_a: Stat,
}

/// The name of the link between `x` and `y`: (child, parent) over a tree,
/// else (lower, higher).
fn link(view: &View, x: usize, y: usize) -> (usize, usize) {
    let parent_of = |r: usize| view.rank(r).and_then(|v| v.parent());
    if parent_of(x) == Some(y) {
        (x, y)
    } else if parent_of(y) == Some(x) {
        (y, x)
    } else {
        (x.min(y), x.max(y))
    }
}

/// Adds one call's latencies to `links`, and each two-way latency's half
/// (a one-way time that needs no common clock) to `halves`, each one-way
/// time to `one_way`.
pub fn add(
    view: &View,
    links: &mut BTreeMap<(usize, usize), LinkAgg>,
    halves: &mut Stat,
    one_way: &mut Stat,
) {
    // The last message (latest send) from each rank to each other.
    let mut last: BTreeMap<(usize, usize), &Message> = BTreeMap::new();
    for m in &view.messages.paired {
        let key = (m.send.rank, m.recv.rank);
        match last.get(&key) {
            Some(l) if l.send.index >= m.send.index => {}
            _ => {
                last.insert(key, m);
            }
        }
    }
    for (&(from, to), m1) in &last {
        let (a, b) = link(view, from, to);
        let agg = links.entry((a, b)).or_default();
        if view.aligned {
            let t = (view.time(m1.recv) - view.time(m1.send)) as f64;
            one_way.add(t);
            if from == a {
                agg.a_to_b.add(t);
            } else {
                agg.b_to_a.add(t);
            }
        }
        if from != a {
            continue;
        }
        if let Some(m2) = last.get(&(to, from)) {
            let raw = |at: autocoll::trace::messages::At| {
                view.ranks[at.rank]
                    .as_ref()
                    .expect("paired events are present")
                    .call
                    .events[at.index]
                    .time_ns as i64
            };
            let two_way = (raw(m2.recv) - raw(m1.send)) + (raw(m1.recv) - raw(m2.send));
            agg.two_way.add(two_way as f64);
            halves.add(two_way as f64 / 2.0);
        }
    }
}
