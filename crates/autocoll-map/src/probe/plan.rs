//! What the probe measures: the curves of a topology, each a set of
//! disjoint pairs of ranks and what its measurement sets.

use serde::{Deserialize, Serialize};

use crate::topology::Topology;

/// How a pair exchanges messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Ping-pong: the first rank sends, the second sends it back; the
    /// one-way bandwidth is the length over half the round trip.
    OneWay,
    /// Both send at once, then both receive; the bandwidth each way is
    /// the length over the exchange's time (the first rank's clock stops
    /// when the second acknowledges the last message).
    BothWays,
    /// The first rank sends a train of messages, the second acknowledges
    /// the last: the bandwidth the train gets one way.
    Stream,
}

/// A link of the topology: element `e`'s link to its parent, or the link
/// of element `e`'s processing elements to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Port {
    /// Element `e`'s link to its parent.
    Link(usize),
    /// The `pe_link` of element `e`.
    Pe(usize),
}

/// A direction of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dir {
    /// Towards the parent.
    Up,
    /// Towards the child.
    Down,
}

/// What a curve's measurement sets in the topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sets {
    /// The bandwidth tables (both directions) of these links.
    Tables(Vec<Port>),
    /// Element `e`'s `max`: what all its ports carry together.
    SwitchMax(usize),
    /// The maximum of a link in one direction.
    LinkMax(Port, Dir),
    /// Nothing: measured for the report.
    Report,
}

/// One curve: disjoint pairs of ranks, measured together at every length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// What it measures, e.g. `h0 <-> h1 in sw0`.
    pub label: String,
    /// Its level, shared by the curves of one kind: `memory`, `in sw0`,
    /// `across sw1`, `4 ranks in sw0` (the figure keeps one curve per
    /// level and mode).
    pub level: String,
    /// How the pairs exchange messages.
    pub mode: Mode,
    /// The pairs (ranks, which are processing elements), the first of each
    /// timing.
    pub pairs: Vec<(usize, usize)>,
    /// Message lengths, increasing.
    pub lengths: Vec<u64>,
    /// What the result sets.
    pub sets: Sets,
}

/// What to measure and how long.
#[derive(Clone, Debug)]
pub struct Options {
    /// Message lengths of the bandwidth tables.
    pub lengths: Vec<u64>,
    /// Message lengths of the maxima (streams across a link).
    pub stream_lengths: Vec<u64>,
    /// Most pairs at once across one link.
    pub max_pairs: usize,
}

/// The measured aggregate bandwidth of a curve at one length (bytes per
/// second, summed over its pairs, one way each): median, lowest and
/// highest over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The message length.
    pub bytes: u64,
    /// Median over the repetitions.
    pub median: f64,
    /// Lowest.
    pub low: f64,
    /// Highest.
    pub high: f64,
}

/// The shape the plan works on: per element, its processing elements
/// (all below it) and its *units* (each child with processing elements
/// below it, and each of its own processing elements), and its height.
struct Shape<'a> {
    t: &'a Topology,
    below: Vec<Vec<usize>>,
    height: Vec<usize>,
}

impl<'a> Shape<'a> {
    fn new(t: &'a Topology) -> Shape<'a> {
        let n = t.elements().len();
        let mut below = vec![Vec::new(); n];
        for pe in 0..t.pe_count() {
            let mut at = Some(t.pe(pe).0);
            while let Some(e) = at {
                below[e].push(pe);
                at = t.elements()[e].parent;
            }
        }
        let mut height = vec![0; n];
        let mut by_depth: Vec<usize> = (0..n).collect();
        by_depth.sort_by_key(|&e| std::cmp::Reverse(t.depth(e)));
        for e in by_depth {
            if let Some(p) = t.elements()[e].parent {
                height[p] = height[p].max(height[e] + 1);
            }
        }
        Shape { t, below, height }
    }

    /// Element `e`'s children with processing elements below them, lowest
    /// first (hosts before switches), then in file order.
    fn kids(&self, e: usize) -> Vec<usize> {
        let mut kids: Vec<usize> = self
            .t
            .children(e)
            .iter()
            .copied()
            .filter(|&c| !self.below[c].is_empty())
            .collect();
        kids.sort_by_key(|&c| self.height[c]);
        kids
    }

    /// Element `e`'s units, each as its processing elements: its children
    /// (lowest first), then its own processing elements one by one.
    fn units(&self, e: usize) -> Vec<Vec<usize>> {
        let mut units: Vec<Vec<usize>> = self
            .kids(e)
            .into_iter()
            .map(|c| self.below[c].clone())
            .collect();
        let own = self.t.elements()[e].pes;
        units.extend((0..own).map(|s| vec![self.t.pe_at(e, s)]));
        units
    }

    fn name(&self, e: usize) -> &str {
        &self.t.elements()[e].name
    }
}

/// Processing elements of `units` taken round-robin: the first of each
/// unit, then the second of each, so that as few as possible share a
/// unit's link.
fn spread(units: &[Vec<usize>]) -> Vec<usize> {
    let longest = units.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| units.iter().filter_map(move |u| u.get(i).copied()))
        .collect()
}

/// The curves that measure `t`.
pub fn plan(t: &Topology, o: &Options) -> Vec<Curve> {
    let s = Shape::new(t);
    let mut curves = Vec::new();
    for (e, element) in t.elements().iter().enumerate() {
        if element.pes >= 2 {
            let pair = (t.pe_at(e, 0), t.pe_at(e, 1));
            let label = format!("{}/0 <-> {}/1", element.name, element.name);
            table_curves(
                &mut curves,
                label,
                "memory".into(),
                pair,
                vec![Port::Pe(e)],
                o,
            );
        }
    }
    for e in 0..t.elements().len() {
        link_curves(&s, e, o, &mut curves);
    }
    for e in 0..t.elements().len() {
        let units = s.units(e);
        let pairs: Vec<(usize, usize)> = units
            .chunks_exact(2)
            .map(|two| (two[0][0], two[1][0]))
            .collect();
        if pairs.len() >= 2 {
            curves.push(Curve {
                label: format!("{} pairs at once in {}", pairs.len(), s.name(e)),
                level: format!("{} ranks in {}", 2 * pairs.len(), s.name(e)),
                mode: Mode::BothWays,
                pairs: pairs.clone(),
                lengths: o.lengths.clone(),
                sets: Sets::Report,
            });
            curves.push(Curve {
                label: format!("{} streams at once in {}", pairs.len(), s.name(e)),
                level: format!("{} streams in {}", pairs.len(), s.name(e)),
                mode: Mode::Stream,
                pairs,
                lengths: o.stream_lengths.clone(),
                sets: Sets::SwitchMax(e),
            });
        }
    }
    for c in 0..t.elements().len() {
        max_curves(&s, c, o, &mut curves);
    }
    curves
}

/// A one-way curve that sets `ports`' tables and its both-ways twin.
fn table_curves(
    curves: &mut Vec<Curve>,
    label: String,
    level: String,
    pair: (usize, usize),
    ports: Vec<Port>,
    o: &Options,
) {
    curves.push(Curve {
        label: label.clone(),
        level: level.clone(),
        mode: Mode::OneWay,
        pairs: vec![pair],
        lengths: o.lengths.clone(),
        sets: Sets::Tables(ports),
    });
    curves.push(Curve {
        label,
        level,
        mode: Mode::BothWays,
        pairs: vec![pair],
        lengths: o.lengths.clone(),
        sets: Sets::Report,
    });
}

/// The table curves of the links of element `p`'s children: siblings of
/// one height pair up (each such pair measures both links), a child left
/// over pairs with the lowest sibling already measured, or with `p`'s own
/// processing element.
fn link_curves(s: &Shape, p: usize, o: &Options, curves: &mut Vec<Curve>) {
    let kids = s.kids(p);
    let mut done = vec![false; kids.len()];
    for i in 0..kids.len() {
        if done[i] {
            continue;
        }
        let c = kids[i];
        done[i] = true;
        let fresh = (i + 1..kids.len()).find(|&j| !done[j] && s.height[kids[j]] == s.height[c]);
        let (other, ports) = match fresh {
            Some(j) => {
                done[j] = true;
                (Some(kids[j]), vec![Port::Link(c), Port::Link(kids[j])])
            }
            None => (
                (0..kids.len())
                    .find(|&j| j != i && done[j])
                    .map(|j| kids[j]),
                vec![Port::Link(c)],
            ),
        };
        let partner = match other {
            Some(k) => Some((s.below[k][0], s.name(k).to_string())),
            None => {
                (s.t.elements()[p].pes > 0).then(|| (s.t.pe_at(p, 0), format!("{}/0", s.name(p))))
            }
        };
        let Some((b, b_name)) = partner else { continue };
        let level = match s.height[c] {
            0 => format!("in {}", s.name(p)),
            _ => format!("across {}", s.name(c)),
        };
        let label = format!("{} <-> {b_name} {level}", s.name(c));
        table_curves(curves, label, level, (s.below[c][0], b), ports, o);
    }
}

/// The maximum curves of element `c`'s link, if at least two pairs fit
/// across it: senders spread over `c`'s units, receivers over its
/// parent's other units.
fn max_curves(s: &Shape, c: usize, o: &Options, curves: &mut Vec<Curve>) {
    let Some(p) = s.t.elements()[c].parent else {
        return;
    };
    let inside = spread(&s.units(c));
    let beside: Vec<Vec<usize>> = s
        .units(p)
        .into_iter()
        .filter(|u| u[0] != s.below[c][0])
        .collect();
    let outside = spread(&beside);
    let k = inside.len().min(outside.len()).min(o.max_pairs);
    if k < 2 {
        return;
    }
    let up: Vec<(usize, usize)> = inside
        .iter()
        .copied()
        .zip(outside.iter().copied())
        .take(k)
        .collect();
    for dir in [Dir::Up, Dir::Down] {
        let (pairs, way) = match dir {
            Dir::Up => (up.clone(), "up"),
            Dir::Down => (up.iter().map(|&(a, b)| (b, a)).collect(), "down"),
        };
        curves.push(Curve {
            label: format!("{k} streams {way} {}'s link", s.name(c)),
            level: format!("{k} streams {way} {}", s.name(c)),
            mode: Mode::Stream,
            pairs,
            lengths: o.stream_lengths.clone(),
            sets: Sets::LinkMax(Port::Link(c), dir),
        });
    }
}
