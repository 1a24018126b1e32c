//! The paper's quantities at every tree node, for every call over a tree.
//!
//! Directions as in the paper: *down* is toward the root (reduce, gather,
//! a barrier's arrival, the first half of allreduce and allgather), *up*
//! is away from it (bcast, scatter, the second halves). A message's
//! direction follows from the tree: from a child to its parent is down.
//!
//! Of a segmented call every quantity uses the last message on each link
//! in each direction: the last segment, the one that completes the call.
//!
//! Down. A node's contributions are its own entry into the call and each
//! child's last message to it. A contribution *arrives* when its sender
//! handed it to the transport (the child's `Sent` event, on the common
//! clock), not when the node's receive completed: the node receives its
//! children one after another in send order, so the time a receive
//! completes says when the node got to it. Hence the transfer of the last
//! contribution is part of the node's down latency. The node's own
//! contribution arrives at its entry, since a rank that enters late holds
//! its subtree back as a late child does.
//! - down latency: the node's last send to its parent (at the root: the
//!   *turn*, its last receive or combine of a child's segment) − the
//!   arrival of the last contribution;
//! - arrival order of each contributor (0 = first; ties in the order own,
//!   then children in send order) and arrival wait: last arrival − its own.
//!
//! Up. A child *departs* when the node hands it its last message (the
//! node's last `Sent` to it, on the node's clock).
//! - up latency: the first departure − the arrival of the result from the
//!   parent (the node's last receive from its parent before that
//!   departure; at the root, the turn, or its entry when there is no down
//!   direction);
//! - departure order, and departure wait: this child's departure − the
//!   first departure.
//!
//! Down quantities compare times of different ranks and need aligned
//! clocks; up quantities use the node's clock alone.

use autocoll::observe::Stage;

use super::call::{RankView, View};
use super::stats::Stat;

/// Who made a contribution at a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Who {
    /// The node's own entry into the call.
    Own,
    /// A child's last message.
    Child(usize),
}

/// What one call says about one rank's place in the tree.
#[derive(Clone, Debug, Default)]
pub struct NodeSample {
    /// When the rank entered.
    pub enter: i64,
    /// When it was done.
    pub done: i64,
    /// Contributions and their arrival times (down direction, aligned
    /// clocks only): own entry first, then the children in send order.
    pub contributions: Vec<(Who, i64)>,
    /// The end of the down stage: the last send to the parent, or the turn
    /// at the root.
    pub down_end: Option<i64>,
    /// The root's turn from down to up.
    pub turn: Option<i64>,
    /// The arrival of the result from the parent (its last receive).
    pub result_in: Option<i64>,
    /// Departures (child, time), in send order.
    pub departures: Vec<(usize, i64)>,
    /// The start of the up stage (see the module note).
    pub up_start: Option<i64>,
}

impl NodeSample {
    /// The last contribution's index (the latest; the first of equals).
    pub fn last(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, c) in self.contributions.iter().enumerate() {
            if best.is_none_or(|b| c.1 > self.contributions[b].1) {
                best = Some(i);
            }
        }
        best
    }

    /// The arrival of the last contribution.
    pub fn last_arrival(&self) -> Option<i64> {
        self.last().map(|i| self.contributions[i].1)
    }

    /// Down latency, ns.
    pub fn down_latency(&self) -> Option<f64> {
        Some((self.down_end? - self.last_arrival()?) as f64)
    }

    /// The first departure's index.
    pub fn first_departure(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, d) in self.departures.iter().enumerate() {
            if best.is_none_or(|b| d.1 < self.departures[b].1) {
                best = Some(i);
            }
        }
        best
    }

    /// Up latency, ns.
    pub fn up_latency(&self) -> Option<f64> {
        let f = self.departures[self.first_departure()?].1;
        Some((f - self.up_start?) as f64)
    }

    /// The departure time of `child`.
    pub fn departure(&self, child: usize) -> Option<i64> {
        self.departures.iter().find(|d| d.0 == child).map(|d| d.1)
    }

    /// Positions (0 = first) of `times` in time order, ties in list order.
    fn order(times: &[i64]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..times.len()).collect();
        idx.sort_by_key(|&i| (times[i], i));
        let mut pos = vec![0; times.len()];
        for (p, &i) in idx.iter().enumerate() {
            pos[i] = p;
        }
        pos
    }

    /// Each contribution's arrival position.
    pub fn arrival_order(&self) -> Vec<usize> {
        Self::order(&self.contributions.iter().map(|c| c.1).collect::<Vec<_>>())
    }

    /// Each departure's position.
    pub fn departure_order(&self) -> Vec<usize> {
        Self::order(&self.departures.iter().map(|d| d.1).collect::<Vec<_>>())
    }
}

/// Whether any message of the call goes down (child to parent) and any
/// goes up.
pub fn directions(view: &View) -> (bool, bool) {
    let (mut down, mut up) = (false, false);
    for v in view.ranks.iter().flatten() {
        if let Some(p) = v.parent() {
            down |= v.last(Stage::Sent, p).is_some();
            up |= v.last(Stage::Received, p).is_some();
        }
    }
    (down, up)
}

/// Every present rank's sample of a tree call (`None` elsewhere).
pub fn samples(view: &View) -> Vec<Option<NodeSample>> {
    let (down, up) = directions(view);
    (0..view.ranks.len())
        .map(|r| view.rank(r).map(|v| sample(view, r, v, down, up)))
        .collect()
}

fn sample(view: &View, rank: usize, v: &RankView, down: bool, up: bool) -> NodeSample {
    let at = |i: Option<usize>| i.map(|i| v.t[i]);
    let mut s = NodeSample {
        enter: v.enter(),
        done: v.done(),
        ..NodeSample::default()
    };
    let parent = v.parent();
    if down {
        s.down_end = parent.and_then(|p| at(v.last(Stage::Sent, p)));
        if parent.is_none() {
            let last_in = v.call.events.iter().rposition(|e| {
                matches!(e.stage, Stage::Received | Stage::Combined)
                    && e.peer().is_some_and(|p| v.children().any(|c| c == p))
            });
            s.turn = Some(at(last_in).unwrap_or(s.enter));
            s.down_end = s.turn;
        }
        if view.aligned {
            s.contributions.push((Who::Own, s.enter));
            for c in v.children() {
                let sent = view
                    .rank(c)
                    .and_then(|cv| cv.last(Stage::Sent, rank).map(|i| cv.t[i]));
                if let Some(t) = sent {
                    s.contributions.push((Who::Child(c), t));
                }
            }
        }
    } else if parent.is_none() {
        s.turn = Some(s.enter);
    }
    if up {
        if let Some(p) = parent {
            s.result_in = at(v.last(Stage::Received, p));
        }
        let departures: Vec<(usize, usize)> = v
            .children()
            .filter_map(|c| v.last(Stage::Sent, c).map(|i| (c, i)))
            .collect();
        s.departures = departures.iter().map(|&(c, i)| (c, v.t[i])).collect();
        let first = departures.iter().map(|d| d.1).min_by_key(|&i| (v.t[i], i));
        s.up_start = match parent {
            None => s.turn,
            Some(p) => first.and_then(|f| {
                at(v.call.events[..f]
                    .iter()
                    .rposition(|e| e.stage == Stage::Received && e.peer() == Some(p)))
            }),
        };
    }
    s
}

/// One contributor's record at a node.
#[derive(Clone, Debug)]
pub struct ContribAgg {
    /// Who.
    pub who: Who,
    /// Calls in which it arrived at each position.
    pub order: Vec<u64>,
    /// Its arrival wait.
    pub wait: Stat,
    /// Calls in which it arrived last.
    pub last: u64,
}

/// One child's departures from a node.
#[derive(Clone, Debug)]
pub struct DepartAgg {
    /// The child.
    pub child: usize,
    /// Calls in which it departed at each position.
    pub order: Vec<u64>,
    /// Its departure wait.
    pub wait: Stat,
}

/// A node's quantities over the calls of a group.
#[derive(Clone, Debug, Default)]
pub struct NodeAgg {
    /// Its parent (as of the last call).
    pub parent: Option<usize>,
    /// Its children (as of the last call).
    pub children: Vec<usize>,
    /// Calls counted.
    pub calls: u64,
    /// Down latency.
    pub down_latency: Stat,
    /// Up latency.
    pub up_latency: Stat,
    /// Contributors.
    pub contributors: Vec<ContribAgg>,
    /// Departures.
    pub departures: Vec<DepartAgg>,
    /// Up latency + departure wait of the departure at each position (the
    /// paper's Figure 3b).
    pub serialization: Vec<Stat>,
    /// Calls whose down quantities were counted (the denominator of
    /// shares of last arrivals).
    pub down_calls: u64,
}

/// The element of `list` that `is` picks, pushed from `make` if none.
fn find_or_push<T>(list: &mut Vec<T>, is: impl Fn(&T) -> bool, make: impl FnOnce() -> T) -> &mut T {
    match list.iter().position(is) {
        Some(k) => &mut list[k],
        None => {
            list.push(make());
            list.last_mut().expect("just pushed")
        }
    }
}

/// Counts one call at `pos`.
fn grow(order: &mut Vec<u64>, pos: usize) {
    if order.len() <= pos {
        order.resize(pos + 1, 0);
    }
    order[pos] += 1;
}

impl NodeAgg {
    /// Counts one call's sample of this node.
    pub fn add(&mut self, v: &RankView, s: &NodeSample) {
        self.calls += 1;
        self.parent = v.parent();
        self.children = v.children().collect();
        if let Some(d) = s.down_latency() {
            self.down_latency.add(d);
        }
        if let Some(u) = s.up_latency() {
            self.up_latency.add(u);
        }
        self.add_arrivals(s);
        self.add_departures(s);
    }

    fn add_arrivals(&mut self, s: &NodeSample) {
        let (Some(last), Some(t_last)) = (s.last(), s.last_arrival()) else {
            return;
        };
        self.down_calls += 1;
        let order = s.arrival_order();
        for (i, &(who, t)) in s.contributions.iter().enumerate() {
            let agg = find_or_push(
                &mut self.contributors,
                |c| c.who == who,
                || ContribAgg {
                    who,
                    order: Vec::new(),
                    wait: Stat::default(),
                    last: 0,
                },
            );
            grow(&mut agg.order, order[i]);
            agg.wait.add((t_last - t) as f64);
            agg.last += u64::from(i == last);
        }
    }

    fn add_departures(&mut self, s: &NodeSample) {
        let Some(f) = s.first_departure() else { return };
        let t_first = s.departures[f].1;
        let up = s.up_latency();
        let order = s.departure_order();
        for (i, &(child, t)) in s.departures.iter().enumerate() {
            let agg = find_or_push(
                &mut self.departures,
                |d| d.child == child,
                || DepartAgg {
                    child,
                    order: Vec::new(),
                    wait: Stat::default(),
                },
            );
            let wait = (t - t_first) as f64;
            grow(&mut agg.order, order[i]);
            agg.wait.add(wait);
            if let Some(up) = up {
                if self.serialization.len() <= order[i] {
                    self.serialization.resize(order[i] + 1, Stat::default());
                }
                self.serialization[order[i]].add(up + wait);
            }
        }
    }
}
