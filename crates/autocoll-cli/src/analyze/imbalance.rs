//! Load imbalance: the weighted graph of last arrivals and its heaviest
//! path (the paper's section 3), naming where the imbalance starts.
//!
//! The graph has an edge from each contributor to each node, weighted by
//! the share of calls in which that contributor arrived last there; a
//! node's own entry is one of its contributions (an edge from the node to
//! itself), since a rank that enters late holds its subtree back exactly
//! as a late child does — on a chain, where every node has one child, only
//! that makes the source visible.
//!
//! The heaviest path starts at the root and follows edges down: at each
//! node either it ends at the node's own entry, or it goes on into a
//! child (a child without children, or whose node has no record, ends it
//! there). Its weight is the product of its edges' shares (were the nodes
//! independent, the share of calls in which the whole path was the chain
//! of last arrivals); the path with the greatest weight is kept (ties: own
//! entry first, then children in send order). Not the sum: a sum favours
//! long paths, so a child that is rarely last but heads a deep subtree
//! (3% + 97% one level further down) would outweigh the child that is
//! last in 97% of calls. The source is read from its *dominant* prefix,
//! the edges that
//! carry more than half of their node's calls: the rank at its end, or the
//! subtree of that rank when the path goes on but no contribution is last
//! there in most calls. Calls not over a tree get the simpler statement:
//! which rank entered the call last, and how often.

use std::collections::BTreeMap;

use serde::Serialize;

use super::nodes::{NodeAgg, Who};

/// An edge of the graph of last arrivals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Edge {
    /// The contributor: a child, or the node itself for its own entry.
    pub from: usize,
    /// The node.
    pub to: usize,
    /// True for the node's own entry.
    pub own: bool,
    /// Calls in which it arrived last.
    pub last: u64,
    /// `last` over the node's calls with arrivals.
    pub share: f64,
}

/// What the load-imbalance analysis found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Imbalance {
    /// Every edge of the graph (over a tree).
    pub graph: Vec<Edge>,
    /// The heaviest path, from the root down.
    pub path: Vec<Edge>,
    /// Where the imbalance starts, if one place dominates.
    pub source: Option<usize>,
    /// True when the source is a subtree (its root named) rather than the
    /// rank itself.
    pub source_is_subtree: bool,
    /// The finding as a sentence.
    pub sentence: String,
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// The edges into `node`.
fn edges_into(node: usize, agg: &NodeAgg) -> Vec<Edge> {
    let calls = agg.down_calls.max(1) as f64;
    agg.contributors
        .iter()
        .map(|c| Edge {
            from: match c.who {
                Who::Own => node,
                Who::Child(r) => r,
            },
            to: node,
            own: c.who == Who::Own,
            last: c.last,
            share: c.last as f64 / calls,
        })
        .collect()
}

/// The heaviest path from `node` down, with its weight.
fn heaviest(node: usize, nodes: &BTreeMap<usize, NodeAgg>, depth: usize) -> (f64, Vec<Edge>) {
    let Some(agg) = nodes.get(&node).filter(|a| a.down_calls > 0) else {
        return (1.0, Vec::new());
    };
    let mut best: (f64, Vec<Edge>) = (f64::NEG_INFINITY, Vec::new());
    for e in edges_into(node, agg) {
        let (below, mut rest) = match e.own || depth > nodes.len() {
            true => (1.0, Vec::new()),
            false => heaviest(e.from, nodes, depth + 1),
        };
        let weight = e.share * below;
        if weight > best.0 {
            rest.insert(0, e);
            best = (weight, rest);
        }
    }
    best
}

/// The analysis over a tree rooted at `root`; `None` when the root has no
/// record of arrivals (a call without a down direction, or unaligned
/// clocks).
pub fn over_tree(nodes: &BTreeMap<usize, NodeAgg>, root: usize) -> Option<Imbalance> {
    let root_agg = nodes.get(&root).filter(|a| a.down_calls > 0)?;
    let graph: Vec<Edge> = nodes.iter().flat_map(|(&n, a)| edges_into(n, a)).collect();
    let (_, path) = heaviest(root, nodes, 0);
    let dominant: Vec<&Edge> = path.iter().take_while(|e| e.share > 0.5).collect();
    let (source, subtree, sentence) = match dominant.last() {
        None => {
            let top = edges_into(root, root_agg)
                .into_iter()
                .max_by(|a, b| a.share.total_cmp(&b.share).then(b.from.cmp(&a.from)))
                .expect("a node with arrivals has contributors");
            let who = if top.own {
                format!("the root's own entry (rank {root})")
            } else {
                format!("rank {}", top.from)
            };
            (
                None,
                false,
                format!(
                    "no contribution is last at the root in most calls (most often {who}, in {}): no single source of imbalance",
                    pct(top.share)
                ),
            )
        }
        Some(end) => {
            let below = path.get(dominant.len());
            let subtree = !end.own && below.is_some();
            let mut steps: Vec<String> = dominant
                .iter()
                .rev()
                .enumerate()
                .map(|(i, e)| step_text(e, root, i == 0))
                .collect();
            if let Some(first) = steps.first_mut() {
                *first = capitalised(first);
            }
            let tail = match (end.own, subtree) {
                (true, _) => format!("the imbalance starts at rank {} (it enters the call late)", end.from),
                (false, true) => format!(
                    "the imbalance comes from the subtree of rank {} (within it no contribution is last in most calls)",
                    end.from
                ),
                (false, false) => format!("the imbalance starts at rank {}", end.from),
            };
            (
                Some(end.from),
                subtree,
                format!("{}: {tail}", steps.join(", ")),
            )
        }
    };
    Some(Imbalance {
        graph,
        path,
        source,
        source_is_subtree: subtree,
        sentence,
    })
}

/// One edge of the path in words; the first one said (the deepest)
/// carries "of calls".
fn step_text(e: &Edge, root: usize, first: bool) -> String {
    let at = |r: usize| match r == root {
        true => format!("the root (rank {r})"),
        false => format!("rank {r}"),
    };
    let of = if first { " of calls" } else { "" };
    match (e.own, first) {
        (true, _) => format!(
            "{} entered after its children's contributions had arrived in {}{of}",
            at(e.from),
            pct(e.share)
        ),
        (false, true) => format!(
            "rank {} was last at {} in {}{of}",
            e.from,
            at(e.to),
            pct(e.share)
        ),
        (false, false) => format!("rank {} last at {} in {}", e.from, at(e.to), pct(e.share)),
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The analysis of calls not over a tree: which rank entered last, from
/// the count of calls each rank entered last in.
pub fn by_entry(last_enter: &[u64], calls: u64) -> Option<Imbalance> {
    let (rank, &count) = last_enter
        .iter()
        .enumerate()
        .max_by_key(|&(r, c)| (*c, std::cmp::Reverse(r)))?;
    if count == 0 || calls == 0 {
        return None;
    }
    let share = count as f64 / calls as f64;
    let (source, sentence) = if share > 0.5 {
        (
            Some(rank),
            format!("Rank {rank} entered the call last in {} of calls: the imbalance starts at rank {rank}", pct(share)),
        )
    } else {
        (
            None,
            format!("no rank enters last in most calls (most often rank {rank}, in {}): no single source of imbalance", pct(share)),
        )
    };
    Some(Imbalance {
        graph: Vec::new(),
        path: Vec::new(),
        source,
        source_is_subtree: false,
        sentence,
    })
}

#[cfg(test)]
mod tests {
    use super::super::nodes::ContribAgg;
    use super::*;

    /// A node whose contributors were last in `last` of `calls` calls.
    fn node(children: &[usize], last: &[(Who, u64)], calls: u64) -> NodeAgg {
        NodeAgg {
            children: children.to_vec(),
            calls,
            down_calls: calls,
            contributors: last
                .iter()
                .map(|&(who, last)| ContribAgg {
                    who,
                    order: Vec::new(),
                    wait: Default::default(),
                    last,
                })
                .collect(),
            ..NodeAgg::default()
        }
    }

    /// Rank 4 has children 6 (heading 6 → 7) and 5: 5 is last at 4 in 97
    /// calls of 100, 6 in 3, and at 6 its child 7 is last in 97. The sum
    /// of shares would prefer 4 ← 6 ← 7 (0.03 + 0.97 > 0.97); the source
    /// is 5.
    #[test]
    fn a_rarely_late_child_heading_a_deep_subtree_does_not_hide_the_source() {
        let mut nodes = BTreeMap::new();
        nodes.insert(0, node(&[4], &[(Who::Own, 2), (Who::Child(4), 98)], 100));
        nodes.insert(
            4,
            node(
                &[6, 5],
                &[(Who::Own, 0), (Who::Child(6), 3), (Who::Child(5), 97)],
                100,
            ),
        );
        nodes.insert(6, node(&[7], &[(Who::Own, 3), (Who::Child(7), 97)], 100));
        let found = over_tree(&nodes, 0).unwrap();
        assert_eq!(found.source, Some(5), "{}", found.sentence);
        assert!(!found.source_is_subtree);
        let path: Vec<(usize, usize)> = found.path.iter().map(|e| (e.from, e.to)).collect();
        assert_eq!(path, [(4, 0), (5, 4)]);
        assert_eq!(
            found.sentence,
            "Rank 5 was last at rank 4 in 97% of calls, rank 4 last at the root (rank 0) in 98%: the imbalance starts at rank 5"
        );
    }
}
