//! A rank's path through the tree, stage by stage (the paper's "path from
//! a thread to the root and back").
//!
//! For rank r with the path r = n0, n1, …, nk = root, the stages are, down
//! toward the root (when the call has a down direction):
//! - arrival wait @nj: the last contribution's arrival at nj − the arrival
//!   of the path's contribution (r's own entry at n0, n(j−1)'s message
//!   after);
//! - down latency @nj (at the root it ends at the turn);
//!
//! and back up (when the call has an up direction):
//! - up latency @nj (from the root down to n1);
//! - departure wait @nj→n(j−1): n(j−1)'s departure − the first departure;
//! - link nj→n(j−1): n(j−1)'s receive of its last message − its departure
//!   (one-way, on the common clock);
//! - leave @r: r done − the result's arrival (the turn at the root).
//!
//! The down stages add up to the root's turn − r's entry, the up stages to
//! r's leave − the turn: a stage is a piece of the rank's time, and the
//! timemap draws them end to end with 0 at the turn. Every stage needs
//! aligned clocks (they cross ranks), and every node of the path present.

use std::fmt;

use super::call::View;
use super::nodes::{NodeSample, Who};
use super::stats::Stat;

/// The kind of a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Waiting at a node for the last contribution.
    ArrivalWait,
    /// From the last contribution to the send toward the root.
    DownLatency,
    /// From the result's arrival to the first departure.
    UpLatency,
    /// From the first departure to this path's.
    DepartureWait,
    /// A message on its way from parent to child.
    Link,
    /// From the result's arrival to the end of the call.
    Leave,
}

impl Kind {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ArrivalWait => "arrival wait",
            Kind::DownLatency => "down latency",
            Kind::UpLatency => "up latency",
            Kind::DepartureWait => "departure wait",
            Kind::Link => "link",
            Kind::Leave => "leave",
        }
    }

    /// True for the stages before the turn.
    pub fn is_down(self) -> bool {
        matches!(self, Kind::ArrivalWait | Kind::DownLatency)
    }
}

/// One stage of a path: its kind, the node where it is spent and, for
/// departure waits and links, the child it leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stage {
    /// The kind.
    pub kind: Kind,
    /// The node.
    pub at: usize,
    /// The child the stage leads to.
    pub to: Option<usize>,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.to) {
            (Kind::Link, Some(to)) => write!(f, "link {}→{to}", self.at),
            (_, Some(to)) => write!(f, "{} @{}→{to}", self.kind.name(), self.at),
            (_, None) => write!(f, "{} @{}", self.kind.name(), self.at),
        }
    }
}

/// The nodes from `rank` to the root, if every one is present.
pub fn nodes(view: &View, rank: usize) -> Option<Vec<usize>> {
    let mut path = vec![rank];
    let mut at = rank;
    while let Some(p) = view.rank(at)?.parent() {
        if path.len() > view.ranks.len() {
            return None;
        }
        path.push(p);
        at = p;
    }
    Some(path)
}

/// The stages of `rank`'s path in one call, with their times (ns);
/// `directions` are the call's (see [`super::nodes::directions`]).
pub fn sample(
    view: &View,
    s: &[Option<NodeSample>],
    directions: (bool, bool),
    rank: usize,
) -> Option<Vec<(Stage, f64)>> {
    if !view.aligned {
        return None;
    }
    let path = nodes(view, rank)?;
    let node = |r: usize| s[r].as_ref();
    let (down, up) = directions;
    let mut out = Vec::new();
    let stage = |kind, at, to| Stage { kind, at, to };
    if down {
        for (j, &n) in path.iter().enumerate() {
            let ns = node(n)?;
            let who = if j == 0 {
                Who::Own
            } else {
                Who::Child(path[j - 1])
            };
            let arrived = ns.contributions.iter().find(|c| c.0 == who)?.1;
            let last = ns.last_arrival()?;
            out.push((stage(Kind::ArrivalWait, n, None), (last - arrived) as f64));
            out.push((stage(Kind::DownLatency, n, None), ns.down_latency()?));
        }
    }
    if up {
        for j in (1..path.len()).rev() {
            let (n, c) = (path[j], path[j - 1]);
            let ns = node(n)?;
            let first = ns.departures[ns.first_departure()?].1;
            let left = ns.departure(c)?;
            out.push((stage(Kind::UpLatency, n, None), ns.up_latency()?));
            out.push((
                stage(Kind::DepartureWait, n, Some(c)),
                (left - first) as f64,
            ));
            let got = node(c)?.result_in?;
            out.push((stage(Kind::Link, n, Some(c)), (got - left) as f64));
        }
    }
    if up || path.len() == 1 {
        let me = node(rank)?;
        let from = if path.len() == 1 {
            me.turn?
        } else {
            me.result_in?
        };
        out.push((stage(Kind::Leave, rank, None), (me.done - from) as f64));
    }
    Some(out)
}

/// A rank's path over the calls of a group.
#[derive(Clone, Debug)]
pub struct PathAgg {
    /// The stages, in path order, each with its time over calls.
    pub stages: Vec<(Stage, Stat)>,
}

impl PathAgg {
    /// Counts one call's sample if it has the same stages; returns false
    /// (counting nothing) when the path differs.
    pub fn add(&mut self, sample: &[(Stage, f64)]) -> bool {
        let same = self.stages.len() == sample.len()
            && self.stages.iter().zip(sample).all(|(a, b)| a.0 == b.0);
        if same {
            for ((_, stat), (_, x)) in self.stages.iter_mut().zip(sample) {
                stat.add(*x);
            }
        }
        same
    }

    /// A path that starts with `sample`.
    pub fn new(sample: &[(Stage, f64)]) -> PathAgg {
        let mut agg = PathAgg {
            stages: sample.iter().map(|(s, _)| (*s, Stat::default())).collect(),
        };
        agg.add(sample);
        agg
    }
}
