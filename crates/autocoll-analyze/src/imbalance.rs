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
//!
//! Why the source rank enters late ([`explain`]): its lateness (its
//! entry − the call's median entry) is about what it spends between calls
//! beyond the median rank (from its previous call's end to its entry, on
//! its own clock) plus how late it left the previous call (its end − that
//! call's median end, known when the rank received a message there: a
//! call that only sent from it, as a reduce's leaf, did not release it);
//! each is its median over calls, and the larger part names the cause
//! (without the second, the first must make up half of the lateness).
//! Longer between calls: the program holds it back (its
//! work between calls: the paper's SOR), which reshaping the tree does not
//! remove. Left the previous call late: the collectives make the imbalance
//! themselves (a tree's broadcast releases its deepest leaf last, which
//! then enters the next call last: the paper's Gsum), and a reshaped tree
//! can change it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::group::RankAgg;
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
    /// Why the source enters late, when the source is one rank and the
    /// calls say.
    pub cause: Option<Cause>,
    /// The finding as a sentence.
    pub sentence: String,
}

/// Why the source rank enters late.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    /// `between_calls`: it spends longer between calls than the others
    /// (the program's imbalance); `previous_call`: it leaves the previous
    /// call late (the collectives' own).
    pub kind: &'static str,
    /// Its time between calls (median over calls), s.
    pub between_s: f64,
    /// The median over ranks of that time, s.
    pub median_between_s: f64,
    /// How late it enters: its entry − the call's median entry (median
    /// over calls), s.
    pub late_entry_s: f64,
    /// How late it leaves the previous call: its end − that call's median
    /// end (median over calls), s; `None` when no previous call released
    /// it (it received nothing there).
    pub left_late_s: Option<f64>,
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
        None => (None, false, no_single_source(root, root_agg)),
        Some(end) => {
            let subtree = !end.own && path.get(dominant.len()).is_some();
            let sentence = source_sentence(&dominant, root, subtree);
            (Some(end.from), subtree, sentence)
        }
    };
    Some(Imbalance {
        graph,
        path,
        source,
        source_is_subtree: subtree,
        cause: None,
        sentence,
    })
}

/// The sentence when no contribution is last at the root in most calls:
/// which one most often is.
fn no_single_source(root: usize, root_agg: &NodeAgg) -> String {
    let top = edges_into(root, root_agg)
        .into_iter()
        .max_by(|a, b| a.share.total_cmp(&b.share).then(b.from.cmp(&a.from)))
        .expect("a node with arrivals has contributors");
    let who = if top.own {
        format!("the root's own entry (rank {root})")
    } else {
        format!("rank {}", top.from)
    };
    format!(
        "no contribution is last at the root in most calls (most often {who}, in {}): no single source of imbalance",
        pct(top.share)
    )
}

/// The sentence that follows the `dominant` edges (last in most calls,
/// from the root down) to where the imbalance starts, or to the subtree
/// it comes from (`subtree`).
fn source_sentence(dominant: &[&Edge], root: usize, subtree: bool) -> String {
    let end = dominant.last().expect("a dominant edge");
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
    format!("{}: {tail}", steps.join(", "))
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
        cause: None,
        sentence,
    })
}

/// A time given in ns, in µs for a sentence.
fn us(ns: f64) -> String {
    format!("{} µs", crate::stats::us(ns * 1e-9))
}

/// Says why the source rank enters late, from its lateness, its time
/// between calls against the median rank's and how late it left the
/// previous call (see the module's note), when the source is one rank
/// that enters late and its times between calls are known.
pub fn explain(found: &mut Imbalance, ranks: &[RankAgg]) {
    let Some(source) = found.source.filter(|_| !found.source_is_subtree) else {
        return;
    };
    // Medians over calls, not means: one call in which a rank waited a
    // few ms for a core would move its mean past the others'.
    let mut between: Vec<f64> = ranks
        .iter()
        .filter(|r| r.between.count() > 0)
        .map(|r| r.between.quantile(0.5))
        .collect();
    let mine = &ranks[source];
    if between.is_empty() || mine.between.count() == 0 || mine.late_entry.count() == 0 {
        return;
    }
    between.sort_by(f64::total_cmp);
    let median = between[between.len() / 2];
    let late = mine.late_entry.quantile(0.5);
    if late <= 0.0 {
        return;
    }
    let own = mine.between.quantile(0.5);
    let left_late = (mine.left_late.count() > 0).then(|| mine.left_late.quantile(0.5));
    let kind = match left_late {
        Some(l) if own - median > l => "between_calls",
        Some(_) => "previous_call",
        None if own - median >= 0.5 * late => "between_calls",
        None => return,
    };
    let left = match left_late {
        Some(l) if l < 0.0 => format!("left the previous call {} early", us(-l)),
        Some(l) => format!("left the previous call {} late", us(l)),
        None => "was not released late by the previous call".into(),
    };
    found.sentence.push_str(&match kind {
        "between_calls" => format!(
            ". Rank {source} enters {} late: it spends {} between calls against the median rank's {} (and {left}): the program holds it back (its work between calls), which reshaping the tree does not remove",
            us(late), us(own), us(median)
        ),
        _ => format!(
            ". Rank {source} enters {} late: it {left} (and spends {} between calls against the median rank's {}): the collectives make the imbalance themselves (the order in which the previous call released the ranks), which a reshaped tree can change",
            us(late), us(own), us(median)
        ),
    });
    found.cause = Some(Cause {
        kind,
        between_s: own * 1e-9,
        median_between_s: median * 1e-9,
        late_entry_s: late * 1e-9,
        left_late_s: left_late.map(|l| l * 1e-9),
    });
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
