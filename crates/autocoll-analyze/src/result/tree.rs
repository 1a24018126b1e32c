//! The tree: each node's latencies, arrival and departure orders and
//! serialization, each link's latencies, each rank's path to the root and
//! back.

use serde::Serialize;

use crate::links::LinkAgg;
use crate::nodes::{NodeAgg, Who};
use crate::paths::PathAgg;
use crate::stats::{some, Stat, Summary};

/// A tree node's quantities.
#[derive(Clone, Debug, Serialize)]
pub struct NodeReport {
    /// The node.
    pub rank: usize,
    /// Its parent.
    pub parent: Option<usize>,
    /// Its children, in send order.
    pub children: Vec<usize>,
    /// Calls counted.
    pub calls: u64,
    /// Down latency.
    pub down_latency: Option<Summary>,
    /// Up latency.
    pub up_latency: Option<Summary>,
    /// Its contributions.
    pub contributors: Vec<ContributorReport>,
    /// Its departures.
    pub departures: Vec<DepartureReport>,
    /// Up latency + departure wait of the departure at each position.
    pub serialization: Vec<Summary>,
}

/// One contributor at a node.
#[derive(Clone, Debug, Serialize)]
pub struct ContributorReport {
    /// The child, or the node for its own entry.
    pub rank: usize,
    /// True for the node's own entry.
    pub own: bool,
    /// Calls in which it arrived at position 0, 1, …
    pub arrival_order: Vec<u64>,
    /// Its arrival wait.
    pub arrival_wait: Summary,
    /// Calls in which it arrived last.
    pub last: u64,
    /// `last` over the node's calls with arrivals.
    pub last_share: f64,
}

/// One child's departures from a node.
#[derive(Clone, Debug, Serialize)]
pub struct DepartureReport {
    /// The child.
    pub rank: usize,
    /// Calls in which it departed at position 0, 1, …
    pub departure_order: Vec<u64>,
    /// Its departure wait.
    pub departure_wait: Summary,
}

/// One link's latencies.
#[derive(Clone, Debug, Serialize)]
pub struct LinkReport {
    /// The child (over a tree) or the lower rank.
    pub a: usize,
    /// The parent or the higher rank.
    pub b: usize,
    /// (t4 − t1) − (t3 − t2), no common clock needed.
    pub two_way_latency: Option<Summary>,
    /// Last message a → b, receive − send (common clock).
    pub one_way_a_to_b: Option<Summary>,
    /// Last message b → a.
    pub one_way_b_to_a: Option<Summary>,
}

/// A rank's path through the tree.
#[derive(Clone, Debug, Serialize)]
pub struct PathReport {
    /// The rank.
    pub rank: usize,
    /// Its stages in order.
    pub stages: Vec<PathStageReport>,
}

/// One stage of a path.
#[derive(Clone, Debug, Serialize)]
pub struct PathStageReport {
    /// Its name, e.g. `down latency @4`, `link 0→4`.
    pub stage: String,
    /// Its kind: `arrival wait`, `down latency`, `up latency`,
    /// `departure wait`, `link`, `leave`.
    pub kind: &'static str,
    /// The node where it is spent.
    pub at: usize,
    /// The child it leads to (departure waits and links).
    pub to: Option<usize>,
    /// Its time over calls.
    pub time: Summary,
}

pub(super) fn node_report(rank: usize, n: &NodeAgg) -> NodeReport {
    let calls = n.down_calls.max(1) as f64;
    NodeReport {
        rank,
        parent: n.parent,
        children: n.children.clone(),
        calls: n.calls,
        down_latency: some(&n.down_latency),
        up_latency: some(&n.up_latency),
        contributors: n
            .contributors
            .iter()
            .map(|c| ContributorReport {
                rank: match c.who {
                    Who::Own => rank,
                    Who::Child(r) => r,
                },
                own: c.who == Who::Own,
                arrival_order: c.order.clone(),
                arrival_wait: c.wait.summary(),
                last: c.last,
                last_share: c.last as f64 / calls,
            })
            .collect(),
        departures: n
            .departures
            .iter()
            .map(|d| DepartureReport {
                rank: d.child,
                departure_order: d.order.clone(),
                departure_wait: d.wait.summary(),
            })
            .collect(),
        serialization: n.serialization.iter().map(Stat::summary).collect(),
    }
}

pub(super) fn path_report(rank: usize, p: &PathAgg) -> PathReport {
    PathReport {
        rank,
        stages: p
            .stages
            .iter()
            .map(|(s, stat)| PathStageReport {
                stage: s.to_string(),
                kind: s.kind.name(),
                at: s.at,
                to: s.to,
                time: stat.summary(),
            })
            .collect(),
    }
}

pub(super) fn link_report((a, b): (usize, usize), l: &LinkAgg) -> LinkReport {
    LinkReport {
        a,
        b,
        two_way_latency: some(&l.two_way),
        one_way_a_to_b: some(&l.a_to_b),
        one_way_b_to_a: some(&l.b_to_a),
    }
}
