//! Cost breakdown of a representative path: each stage's mean time and its
//! share, and the hotspot (the paper's section 3: "find hotspots by
//! breaking down the cost of a path into several stages").
//!
//! The path is that of the representative of the slowest class. Over a
//! tree it is the rank's path to the root and back (see `paths.rs`); the
//! hotspot is its largest stage other than an arrival wait, since arrival
//! waits are load imbalance, which reshaping the tree does not remove (the
//! paper leaves them out of its hotspot analysis for that reason). Their
//! share is reported beside it, and when it is half of the path or more
//! the sentence says that the call is dominated by arrival wait — unless
//! the load-imbalance analysis found that the collectives make that
//! imbalance themselves (the source rank leaves the previous call late),
//! in which case a reshaped tree can shorten it and the sentence says so.
//! Calls not over a tree are broken down into the rank's local stages.

use serde::Serialize;

/// One stage's share of the path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Part {
    /// The stage's name.
    pub stage: String,
    /// Its mean time over calls.
    pub mean_s: f64,
    /// Its share of the path's total.
    pub share: f64,
}

/// The breakdown of one rank's path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Breakdown {
    /// The rank whose path it is.
    pub rank: usize,
    /// Its class.
    pub class: String,
    /// `path` (to the root and back) or `local stages`.
    pub basis: &'static str,
    /// The stages in order.
    pub stages: Vec<Part>,
    /// The sum of the stages' means.
    pub total_s: f64,
    /// The hotspot's stage name.
    pub hotspot: String,
    /// The hotspot's share.
    pub hotspot_share: f64,
    /// The arrival waits' share (over a tree).
    pub arrival_wait_share: Option<f64>,
    /// The finding as a sentence.
    pub sentence: String,
}

/// The breakdown of `stages` (name, mean ns, is an arrival wait);
/// `made_by_calls`: the arrival waits come from the collectives
/// themselves.
pub fn breakdown(
    rank: usize,
    class: &str,
    basis: &'static str,
    stages: &[(String, f64, bool)],
    made_by_calls: bool,
) -> Option<Breakdown> {
    let total: f64 = stages.iter().map(|s| s.1).filter(|x| x.is_finite()).sum();
    if stages.is_empty() || total <= 0.0 {
        return None;
    }
    let parts: Vec<Part> = stages
        .iter()
        .map(|(name, mean, _)| Part {
            stage: name.clone(),
            mean_s: mean * 1e-9,
            share: mean / total,
        })
        .collect();
    let hot = hotspot(stages);
    let over_tree = basis == "path";
    let waits: f64 = stages.iter().filter(|s| s.2).map(|s| s.1).sum();
    let wait_share = over_tree.then_some(waits / total);
    let sentence = format!(
        "{} is the hotspot: {:.0}% of rank {rank}'s {} (class {class}, {:.1} µs)",
        parts[hot].stage,
        parts[hot].share * 100.0,
        if over_tree {
            "path"
        } else {
            "time in the call"
        },
        total / 1e3
    ) + &wait_clause(wait_share, made_by_calls);
    Some(Breakdown {
        rank,
        class: class.to_string(),
        basis,
        total_s: total * 1e-9,
        hotspot: parts[hot].stage.clone(),
        hotspot_share: parts[hot].share,
        arrival_wait_share: wait_share,
        stages: parts,
        sentence,
    })
}

/// The largest stage other than an arrival wait; the largest of all when
/// every stage is one.
fn hotspot(stages: &[(String, f64, bool)]) -> usize {
    let pick = |waits_too: bool| {
        stages
            .iter()
            .enumerate()
            .filter(|(_, s)| waits_too || !s.2)
            .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map(|(i, _)| i)
    };
    pick(false).or_else(|| pick(true)).expect("a stage")
}

/// What the sentence adds on the arrival waits' share of the path (none
/// off a tree or where they are small).
fn wait_clause(wait_share: Option<f64>, made_by_calls: bool) -> String {
    match wait_share {
        Some(w) if w >= 0.5 && made_by_calls => format!(
            "; arrival wait is {:.0}% of the path: the call is dominated by arrival wait, which the collectives make themselves (see the load imbalance), so a tree that releases the ranks closer together can shorten it",
            w * 100.0
        ),
        Some(w) if w >= 0.5 => format!(
            "; arrival wait is {:.0}% of the path: the call is dominated by arrival wait (load imbalance before the call), which reshaping the tree does not remove",
            w * 100.0
        ),
        Some(w) if w >= 0.05 => format!(
            "; arrival waits (load imbalance, left out of the hotspot) are {:.0}% of it",
            w * 100.0
        ),
        _ => String::new(),
    }
}
