//! Scotch, side by side: the pattern as a Scotch source graph, the
//! topology as a Scotch target, Debian's `scotch_gmap` between them, and
//! its mapping read back (to be scored by our estimator like any other).
//!
//! The graph (`.grf`): one vertex per rank, an edge per communicating
//! pair weighted by the bytes both ways (Scotch wants symmetric integer
//! weights and no self-loops), scaled so that the heaviest is 10^6.
//!
//! The target: a `tleaf` (a tree of equal arity per level, the distance
//! between two leaves the sum of the levels' link costs from their common
//! ancestor's level down) wrapped in a `sub` that keeps the leaves that
//! exist. Our trees have unequal arity and depth, so they are first made
//! level: an element's children that hang less deep than the rest are
//! gathered under one virtual child (the paper's five hosts on the top
//! switch become one virtual switch beside the three-host switch); each
//! level's arity is the largest there, and the leaves that padding adds
//! are left out of the `sub`. A level's link cost is the inverse of the
//! lowest peak bandwidth of its real links, scaled to whole numbers (the
//! cheapest 1).

use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};
use crate::mapping::Mapping;
use crate::topology::Topology;
use crate::traffic::Traffic;

/// The weight of the heaviest edge in the graph.
const HEAVIEST: f64 = 1e6;

/// The Scotch source graph of `traffic`.
pub fn graph(traffic: &Traffic) -> String {
    let pairs = traffic.pairs();
    let max = pairs.iter().map(|p| p.2).fold(0.0, f64::max);
    let mut adjacency = vec![Vec::new(); traffic.ranks()];
    for &(a, b, bytes) in &pairs {
        let w = ((bytes / max * HEAVIEST).round() as u64).max(1);
        adjacency[a].push((b, w));
        adjacency[b].push((a, w));
    }
    let arcs: usize = adjacency.iter().map(Vec::len).sum();
    let mut out = format!("0\n{} {arcs}\n0 010\n", traffic.ranks());
    for edges in adjacency {
        out += &edges.len().to_string();
        for (v, w) in edges {
            out += &format!(" {w} {v}");
        }
        out += "\n";
    }
    out
}

/// A node of the levelled tree: a processing element, or children.
enum Node {
    /// A processing element and its link's peak bandwidth.
    Pe(usize, f64),
    Inner {
        children: Vec<Node>,
        /// The link from this node to its parent: its peak bandwidth
        /// (`None` for a virtual node).
        bandwidth: Option<f64>,
    },
}

/// The Scotch target of `topology`, and for each of its terminals (in
/// the `sub`'s order) the processing element.
pub fn target(topology: &Topology) -> (String, Vec<usize>) {
    let root = levelled(topology);
    let mut arity = Vec::new();
    let mut slowest: Vec<Option<f64>> = Vec::new();
    measure(&root, 0, &mut arity, &mut slowest);
    let costs: Vec<f64> = slowest.iter().map(|b| b.map_or(0.0, |b| 1.0 / b)).collect();
    let cheapest = costs
        .iter()
        .copied()
        .filter(|c| *c > 0.0)
        .fold(f64::INFINITY, f64::min);
    let mut leaves = Vec::new();
    number(&root, 0, 0, &arity, &mut leaves);
    let mut tleaf = format!("tleaf {}", arity.len());
    for (a, c) in arity.iter().zip(&costs) {
        let c = match c {
            c if *c > 0.0 => (c / cheapest).round().max(1.0),
            _ => 1.0,
        };
        tleaf += &format!(" {a} {c}");
    }
    let numbers: Vec<String> = leaves.iter().map(|(leaf, _)| leaf.to_string()).collect();
    let text = format!("sub\n{} {}\n{tleaf}\n", leaves.len(), numbers.join(" "));
    (text, leaves.into_iter().map(|(_, pe)| pe).collect())
}

/// The topology as a tree whose leaves are all equally deep.
fn levelled(t: &Topology) -> Node {
    build(t, t.top()).1
}

/// Element `e` as a node, with its height.
fn build(t: &Topology, e: usize) -> (usize, Node) {
    let element = &t.elements()[e];
    let mut items: Vec<(usize, Node)> = Vec::new();
    for slot in 0..element.pes {
        let link = element.pe_link.as_ref().expect("checked by Topology::new");
        let bandwidth = link.up.peak().min(link.down.peak());
        items.push((0, Node::Pe(t.pe_at(e, slot), bandwidth)));
    }
    for &c in t.children(e) {
        items.push(build(t, c));
    }
    let height = items.iter().map(|i| i.0).max().unwrap_or(0) + 1;
    let bandwidth = element
        .link
        .as_ref()
        .map(|l| l.up.peak().min(l.down.peak()));
    (height, group(items, height, bandwidth))
}

/// A node of `height` over `items` (all lower): those one level down are
/// its children, the lower ones go under one virtual child.
fn group(items: Vec<(usize, Node)>, height: usize, bandwidth: Option<f64>) -> Node {
    let (mut direct, lower): (Vec<_>, Vec<_>) = items.into_iter().partition(|i| i.0 + 1 == height);
    if !lower.is_empty() {
        direct.push((height - 1, group(lower, height - 1, None)));
    }
    Node::Inner {
        children: direct.into_iter().map(|i| i.1).collect(),
        bandwidth,
    }
}

/// Each level's largest arity and its links' lowest bandwidth.
fn measure(node: &Node, depth: usize, arity: &mut Vec<usize>, slowest: &mut Vec<Option<f64>>) {
    let Node::Inner { children, .. } = node else {
        return;
    };
    if arity.len() <= depth {
        arity.push(0);
        slowest.push(None);
    }
    arity[depth] = arity[depth].max(children.len());
    for c in children {
        let b = match c {
            Node::Pe(_, b) => Some(*b),
            Node::Inner { bandwidth, .. } => *bandwidth,
        };
        if let Some(b) = b {
            slowest[depth] = Some(slowest[depth].map_or(b, |s: f64| s.min(b)));
        }
        measure(c, depth + 1, arity, slowest);
    }
}

/// The tleaf number of every processing element under `node`, whose
/// leaves' numbers start at `base`.
fn number(node: &Node, depth: usize, base: usize, arity: &[usize], out: &mut Vec<(usize, usize)>) {
    match node {
        Node::Pe(pe, _) => out.push((base, *pe)),
        Node::Inner { children, .. } => {
            let span: usize = arity[depth + 1..].iter().product();
            for (i, c) in children.iter().enumerate() {
                number(c, depth + 1, base + i * span, arity, out);
            }
        }
    }
}

/// Reads `scotch_gmap`'s output (a count, then `vertex terminal` lines)
/// into each rank's processing element. Ranks Scotch put on a processing
/// element already taken move to the first free one; how many moved is
/// returned beside the mapping.
pub fn read_mapping(
    text: &str,
    ranks: usize,
    terminals: &[usize],
    pes: usize,
) -> Result<(Mapping, usize)> {
    let bad = |why: String| Error::Format(format!("scotch_gmap's mapping: {why}"));
    let mut numbers = text.split_whitespace().map(|w| {
        w.parse::<usize>()
            .map_err(|_| bad(format!("`{w}` is not a number")))
    });
    let count = numbers.next().ok_or_else(|| bad("empty".into()))??;
    if count != ranks {
        return Err(bad(format!("{count} vertices, the job has {ranks} ranks")));
    }
    let mut pe = vec![usize::MAX; ranks];
    for _ in 0..count {
        let vertex = numbers.next().ok_or_else(|| bad("cut short".into()))??;
        let term = numbers.next().ok_or_else(|| bad("cut short".into()))??;
        if vertex >= ranks || term >= terminals.len() {
            return Err(bad(format!(
                "vertex {vertex} on terminal {term} is out of range"
            )));
        }
        pe[vertex] = terminals[term];
    }
    let mut used = vec![false; pes];
    let mut moved = 0;
    let given: std::collections::HashSet<usize> = pe.iter().copied().collect();
    let mut free = (0..pes).filter(|p| !given.contains(p));
    for p in pe.iter_mut() {
        if *p == usize::MAX || used[*p] {
            *p = free
                .next()
                .ok_or_else(|| bad("more ranks than processing elements".into()))?;
            moved += 1;
        }
        used[*p] = true;
    }
    Ok((Mapping::new(pe, pes)?, moved))
}

/// Scotch's mapping of `traffic` onto `topology`: writes the graph and the
/// target into `dir`, runs `scotch_gmap` (Debian's package `scotch`) and
/// reads its mapping back; also returns how many ranks had to move off a
/// processing element Scotch had given twice.
pub fn scotch(topology: &Topology, traffic: &Traffic, dir: &Path) -> Result<(Mapping, usize)> {
    crate::mapping::fits(traffic.ranks(), topology)?;
    let (tgt, terminals) = target(topology);
    let files = [
        dir.join("pattern.grf"),
        dir.join("topology.tgt"),
        dir.join("scotch.map"),
    ];
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
    };
    write(&files[0], &graph(traffic))?;
    write(&files[1], &tgt)?;
    let out = Command::new("scotch_gmap")
        .args(&files)
        .output()
        .map_err(|e| Error::io("running scotch_gmap (Debian package `scotch`)", e))?;
    if !out.status.success() {
        return Err(Error::Mismatch(format!(
            "scotch_gmap failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = std::fs::read_to_string(&files[2])
        .map_err(|e| Error::io(format!("reading {}", files[2].display()), e))?;
    read_mapping(&text, traffic.ranks(), &terminals, topology.pe_count())
}
