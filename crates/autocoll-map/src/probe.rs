//! The probe: measuring a topology's links and switches (the paper's §2
//! and Figure 1), NetPIPE-like, from inside a job of one rank per
//! processing element placed linearly.
//!
//! [`plan`] is pure: from the topology's shape it picks the *curves* to
//! measure, each a set of disjoint pairs of ranks exchanging messages over
//! a range of lengths in one [`Mode`], and what each curve sets:
//!
//! - every link gets the one-way bandwidth table of a pair whose path has
//!   that link at its top (two processing elements of one host for its
//!   memory; two sibling hosts for their links; a switch's uplink through
//!   a pair that crosses it), bottom-up, so that a pair's lower links are
//!   already those of another curve. One pair alone gets the table's
//!   bandwidth in the paper's model, so the table is the pair's bandwidth
//!   over the whole path: the path's slowest link is what one pair sees;
//! - every such pair is measured both ways too (each sends while the other
//!   does): the report's "B" curves, which say whether links are full
//!   duplex;
//! - a switch with at least four units below it (children or its own
//!   processing elements) is measured with as many disjoint pairs as fit,
//!   all at once: both ways for the report (Figure 1's "4T B in subnet"),
//!   and streaming one way for its `max`, which is set only when the
//!   streams together get clearly less than each gets alone (the switch,
//!   not the links, is then the bottleneck);
//! - a link with at least two processing elements below it and two units
//!   beside it gets its maximum each way from that many pairs streaming
//!   across it at once.
//!
//! [`run`] is the measurement, every rank of the job running the same
//! plan; [`apply`] writes the results into the topology.

use std::time::Instant;

use autocoll::Communicator;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::topology::Hop;
use crate::topology::{Table, Topology};

/// The tag of the probe's messages.
const TAG: u64 = 0x9_0be;

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

/// Messages per repetition: enough that small ones are not all latency
/// (about 256 KiB a repetition for tables, 1 MiB for streams), at most 64.
pub fn calls(mode: Mode, bytes: u64) -> usize {
    let target: u64 = match mode {
        Mode::Stream => 1 << 20,
        _ => 1 << 18,
    };
    (target / bytes.max(1)).clamp(1, 64) as usize
}

/// Measures `plan` with every rank of `comm` (one per processing
/// element, rank i on processing element i); `reps` timed repetitions per
/// length after one untimed one. Rank 0 gets the points of every curve
/// (the others an empty list); `progress` is called on rank 0 after
/// each curve with the number done.
pub fn run(
    comm: &mut Communicator,
    plan: &[Curve],
    reps: usize,
    progress: &mut dyn FnMut(usize),
) -> autocoll::Result<Vec<Vec<Point>>> {
    let mut all = Vec::new();
    for (i, curve) in plan.iter().enumerate() {
        let mut points = Vec::new();
        for &len in &curve.lengths {
            let calls = calls(curve.mode, len);
            let data = Bytes::from(vec![0u8; len as usize]);
            let mut rates = Vec::new();
            for rep in 0..=reps {
                comm.barrier()?;
                let start = Instant::now();
                let mut mine = [time(comm, curve, &data, calls)?];
                if curve.pairs.len() > 1 {
                    // Pairs leave the barrier at different times: what the
                    // switch or link carried is the bytes over the window
                    // from the first start to the last end, which the
                    // closing barrier bounds (each pair's own time would
                    // overstate it).
                    comm.barrier()?;
                    mine[0] = start.elapsed().as_secs_f64();
                }
                let mut times = vec![0.0f64; comm.size()];
                comm.gather(&mine, &mut times, 0)?;
                let slowest = curve.pairs.iter().map(|p| times[p.0]).fold(0.0, f64::max);
                if rep > 0 && slowest > 0.0 {
                    let moved = (curve.pairs.len() * calls) as f64 * len as f64;
                    rates.push(moved / slowest);
                }
            }
            if comm.rank() == 0 {
                points.push(point(len, rates));
            }
        }
        if comm.rank() == 0 {
            all.push(points);
            progress(i + 1);
        }
    }
    Ok(all)
}

/// The median, lowest and highest of `rates`.
fn point(bytes: u64, mut rates: Vec<f64>) -> Point {
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median = match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => rates[n / 2],
        _ => (rates[n / 2 - 1] + rates[n / 2]) / 2.0,
    };
    Point {
        bytes,
        median,
        low: rates.first().copied().unwrap_or(f64::NAN),
        high: rates.last().copied().unwrap_or(f64::NAN),
    }
}

/// This rank's part in one repetition: its one-way time (seconds for
/// `calls` messages one way) if it times a pair, else 0.
fn time(
    comm: &mut Communicator,
    curve: &Curve,
    data: &Bytes,
    calls: usize,
) -> autocoll::Result<f64> {
    let me = comm.rank();
    let Some(&(a, b)) = curve.pairs.iter().find(|p| p.0 == me || p.1 == me) else {
        return Ok(0.0);
    };
    let start = Instant::now();
    match (curve.mode, me == a) {
        (Mode::OneWay, true) => {
            for _ in 0..calls {
                comm.send_bytes(b, TAG, data.clone())?;
                comm.recv_bytes(b, TAG)?;
            }
            return Ok(start.elapsed().as_secs_f64() / 2.0);
        }
        (Mode::OneWay, false) => {
            for _ in 0..calls {
                let back = comm.recv_bytes(a, TAG)?;
                comm.send_bytes(a, TAG, back)?;
            }
        }
        (Mode::BothWays, first) => {
            let peer = if first { b } else { a };
            for _ in 0..calls {
                comm.send_bytes(peer, TAG, data.clone())?;
                comm.recv_bytes(peer, TAG)?;
            }
            // Sends are queued: the first rank's own messages are known to
            // have arrived only when the second says so.
            match first {
                true => drop(comm.recv_bytes(b, TAG)?),
                false => comm.send_bytes(a, TAG, Bytes::from_static(&[1]))?,
            }
        }
        (Mode::Stream, true) => {
            for _ in 0..calls {
                comm.send_bytes(b, TAG, data.clone())?;
            }
            comm.recv_bytes(b, TAG)?;
        }
        (Mode::Stream, false) => {
            for _ in 0..calls {
                comm.recv_bytes(a, TAG)?;
            }
            comm.send_bytes(a, TAG, Bytes::from_static(&[1]))?;
        }
    }
    Ok(match me == a {
        true => start.elapsed().as_secs_f64(),
        false => 0.0,
    })
}

/// `t` with the measured tables and maxima of `plan`'s curves (`measured`
/// in the same order), and a note per link or switch that no curve could
/// measure.
pub fn apply(
    t: &Topology,
    plan: &[Curve],
    measured: &[Vec<Point>],
) -> Result<(Topology, Vec<String>)> {
    if plan.len() != measured.len() {
        return Err(Error::Mismatch(format!(
            "the probe measured {} curves of a plan of {}",
            measured.len(),
            plan.len()
        )));
    }
    let mut elements = t.elements().to_vec();
    let mut measured_ports = Vec::new();
    let mut notes = Vec::new();
    // Tables first: a maximum is never below the bandwidth one pair gets.
    for (curve, points) in plan.iter().zip(measured) {
        let Sets::Tables(ports) = &curve.sets else {
            continue;
        };
        let table = table_of(curve, points)?;
        for &port in ports {
            let link = port_of(&mut elements, port)?;
            link.up = table.clone();
            link.down = table.clone();
            link.max_up = sustained(points);
            link.max_down = sustained(points);
            measured_ports.push(port);
        }
    }
    for (curve, points) in plan.iter().zip(measured) {
        let peak = sustained(points);
        if peak <= 0.0 {
            continue;
        }
        match curve.sets {
            Sets::LinkMax(port, dir) => {
                let link = port_of(&mut elements, port)?;
                let max = match dir {
                    Dir::Up => &mut link.max_up,
                    Dir::Down => &mut link.max_down,
                };
                *max = max.max(peak);
            }
            Sets::SwitchMax(e) => {
                let alone: f64 = curve
                    .pairs
                    .iter()
                    .map(|&(a, b)| path_rate(t, &elements, a, b))
                    .sum();
                let name = &elements[e].name;
                match peak < LIMITED * alone {
                    true => elements[e].max = Some(peak),
                    false => notes.push(format!(
                        "{name} carried {} streams at once at {:.0}% of what they get alone: no maximum set",
                        curve.pairs.len(),
                        100.0 * peak / alone
                    )),
                }
            }
            _ => {}
        }
    }
    notes.extend(unmeasured(t, &measured_ports));
    let topology = Topology::new(&t.name, elements).map_err(Error::Mismatch)?;
    Ok((topology, notes))
}

/// A switch is a bottleneck when streams through it together get less
/// than this share of what each gets alone.
const LIMITED: f64 = 0.9;

/// What one stream from processing element `a` to `b` sustains alone: the
/// least of the measured maxima on its path.
fn path_rate(t: &Topology, elements: &[crate::topology::Element], a: usize, b: usize) -> f64 {
    let mut rate = f64::INFINITY;
    let mut take = |l: Option<&crate::topology::Link>, up: bool| {
        if let Some(l) = l {
            rate = rate.min(if up { l.max_up } else { l.max_down });
        }
    };
    take(elements[t.pe(a).0].pe_link.as_ref(), true);
    take(elements[t.pe(b).0].pe_link.as_ref(), false);
    t.walk(a, b, |hop| match hop {
        Hop::Up(e) => take(elements[e].link.as_ref(), true),
        Hop::Down(e) => take(elements[e].link.as_ref(), false),
    });
    rate
}

/// What a curve sustains: the higher median of its two longest lengths.
/// Not the peak: a token-bucket link (and a real switch's buffers) lets a
/// ping-pong of a few KiB through faster than its rate, which a long
/// transfer never sees.
fn sustained(points: &[Point]) -> f64 {
    points
        .iter()
        .rev()
        .take(2)
        .map(|p| p.median)
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max)
}

/// The table of a one-way curve's medians.
fn table_of(curve: &Curve, points: &[Point]) -> Result<Table> {
    let good: Vec<(u64, f64)> = points
        .iter()
        .filter(|p| p.median.is_finite() && p.median > 0.0)
        .map(|p| (p.bytes, p.median))
        .collect();
    Table::new(good).map_err(|why| Error::Mismatch(format!("{}: {why}", curve.label)))
}

fn port_of(
    elements: &mut [crate::topology::Element],
    port: Port,
) -> Result<&mut crate::topology::Link> {
    let (e, link) = match port {
        Port::Link(e) => (e, elements.get_mut(e).and_then(|x| x.link.as_mut())),
        Port::Pe(e) => (e, elements.get_mut(e).and_then(|x| x.pe_link.as_mut())),
    };
    link.ok_or_else(|| Error::Mismatch(format!("the probe's plan names a link element {e} lacks")))
}

/// The links no curve measured.
fn unmeasured(t: &Topology, done: &[Port]) -> Vec<String> {
    let mut notes = Vec::new();
    for (e, element) in t.elements().iter().enumerate() {
        if element.link.is_some() && !done.contains(&Port::Link(e)) {
            notes.push(format!(
                "{}'s link kept its table: no pair has it at the top of its path",
                element.name
            ));
        }
        if element.pes > 0 && !done.contains(&Port::Pe(e)) {
            notes.push(format!(
                "{}'s pe_link kept its table: it has one processing element",
                element.name
            ));
        }
    }
    notes
}
