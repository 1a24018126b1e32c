//! The analysis as a document: what `--json` writes (`autocoll.analysis/1`,
//! described field by field in docs/formats.md) and what the terminal
//! report and the pictures are drawn from.

use std::collections::BTreeMap;

use autocoll::trace::format::Header;
use serde::Serialize;

use crate::clocks::{Alignment, Clocks};
use crate::group::{Analysis, Group};
use crate::imbalance;
use crate::paths::PathAgg;
use crate::read::TraceSet;

mod critical;
mod ranks;
mod timing;
mod tree;

pub use crate::breakdown::{Breakdown, Part};
pub use crate::critical::StepKind;
pub use crate::imbalance::{Cause, Edge, Imbalance};
pub use crate::stats::Summary;
pub use critical::{CriticalRank, CriticalReport, CriticalStage, SlowestCall, StepReport};
pub use ranks::{ClassReport, LocalStages, ProfileEntry, RankReport};
pub use timing::{ArrivalPattern, Factors, MessageTime, RankWait, WaitStates};
pub use tree::{
    ContributorReport, DepartureReport, LinkReport, NodeReport, PathReport, PathStageReport,
};

/// The schema of the document.
pub const SCHEMA: &str = "autocoll.analysis/1";

/// The whole analysis of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The directory analysed.
    pub dir: String,
    /// The run's id.
    pub run: String,
    /// Ranks in the run.
    pub ranks: usize,
    /// The transport.
    pub transport: String,
    /// The hosts and their ranks.
    pub hosts: Vec<Host>,
    /// The files read.
    pub files: Vec<FileEntry>,
    /// Ranks without a file.
    pub missing_ranks: Vec<usize>,
    /// How the clocks were aligned.
    pub clock: ClockEntry,
    /// Calls analysed.
    pub calls: u64,
    /// Calls left out because not every file holds them.
    pub left_out_calls: u64,
    /// Warnings, as printed.
    pub warnings: Vec<String>,
    /// One entry per (implementation, bytes, root).
    pub groups: Vec<GroupReport>,
}

/// A host and its ranks.
#[derive(Clone, Debug, Serialize)]
pub struct Host {
    /// Its name, from the files' headers.
    pub name: String,
    /// Its ranks (with a file).
    pub ranks: Vec<usize>,
}

/// One rank's file.
#[derive(Clone, Debug, Serialize)]
pub struct FileEntry {
    /// The rank.
    pub rank: usize,
    /// The file.
    pub path: String,
    /// Calls it holds.
    pub calls: u64,
    /// Events it holds.
    pub events: u64,
    /// Calls the recorder dropped (buffer full).
    pub dropped_calls: u64,
}

/// How the ranks' clocks were brought onto one line.
#[derive(Clone, Debug, Serialize)]
pub struct ClockEntry {
    /// `shared`, `estimated` or `none`.
    pub alignment: &'static str,
    /// Distinct clocks among the files.
    pub clocks: usize,
    /// The largest uncertainty of an offset estimate used (half its round
    /// trip), when estimated.
    pub uncertainty_s: Option<f64>,
    /// Ranks that could not be placed (alignment `none`).
    pub unaligned_ranks: Vec<usize>,
}

/// The analysis of one group of calls.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// The implementation id.
    #[serde(rename = "impl")]
    pub imp: String,
    /// The collective.
    pub op: String,
    /// Bytes per rank.
    pub bytes: u64,
    /// The root.
    pub root: usize,
    /// True when the calls ran over a tree.
    pub tree: bool,
    /// Calls in the group.
    pub calls: u64,
    /// The first call's number.
    pub first_call: u64,
    /// The last call's number.
    pub last_call: u64,
    /// The call's time.
    pub call_time: Summary,
    /// One message's time, the unit of the arrival pattern's factors.
    pub message_time: Option<MessageTime>,
    /// The arrival pattern.
    pub arrival_pattern: Option<ArrivalPattern>,
    /// Scalasca's wait states.
    pub wait_states: Option<WaitStates>,
    /// Per rank.
    pub ranks: Vec<RankReport>,
    /// Classes of alike ranks, slowest first.
    pub classes: Vec<ClassReport>,
    /// Per tree node.
    pub nodes: Vec<NodeReport>,
    /// Per link.
    pub links: Vec<LinkReport>,
    /// Load imbalance.
    pub load_imbalance: Option<Imbalance>,
    /// Each rank's path to the root and back (the timemap's data).
    pub paths: Vec<PathReport>,
    /// Calls whose path differed from the rank's most common one.
    pub path_changes: u64,
    /// Cost breakdown of the slowest class's representative.
    pub cost_breakdown: Option<Breakdown>,
    /// The critical path.
    pub critical_path: Option<CriticalReport>,
}

impl GroupReport {
    /// The group's name in file names: `allreduce-binomial-seg16K_8B`.
    pub fn slug(&self) -> String {
        let imp: String = self
            .imp
            .chars()
            .map(|c| match c {
                ':' => '-',
                '=' | '.' => '_',
                c => c,
            })
            .collect();
        let size = autocoll::select::format_bytes(self.bytes as usize);
        let size = if size.ends_with(|c: char| c.is_ascii_digit()) {
            format!("{size}B")
        } else {
            size
        };
        match self.root {
            0 => format!("{imp}_{size}"),
            r => format!("{imp}_{size}_root{r}"),
        }
    }
}

/// Builds the document from a finished analysis.
pub(crate) fn report(
    set: &TraceSet,
    clocks: &Clocks,
    analysis: Analysis,
    tolerance: f64,
) -> Report {
    let headers = set.headers();
    let first = headers.iter().flatten().next().expect("a run has a file");
    let hosts: Vec<String> = headers
        .iter()
        .map(|h| {
            h.as_ref()
                .map_or_else(|| "?".to_string(), |h| h.host.clone())
        })
        .collect();
    Report {
        schema: SCHEMA,
        dir: set.dir().display().to_string(),
        run: first.run.clone(),
        ranks: first.size as usize,
        transport: first.transport.clone(),
        hosts: hosts_of(headers),
        files: files_of(set),
        missing_ranks: set.missing.clone(),
        clock: clock_entry(clocks),
        calls: analysis.calls,
        left_out_calls: set.left_out,
        warnings: set.warnings.clone(),
        groups: analysis
            .groups
            .iter()
            .map(|g| group_report(g, &hosts, clocks, tolerance))
            .collect(),
    }
}

/// Each host with the ranks whose trace files say they ran on it, by
/// name.
fn hosts_of(headers: &[Option<Header>]) -> Vec<Host> {
    let mut by_host: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (r, h) in headers.iter().enumerate() {
        if let Some(h) = h {
            by_host.entry(h.host.as_str()).or_default().push(r);
        }
    }
    by_host
        .into_iter()
        .map(|(name, ranks)| Host {
            name: name.to_string(),
            ranks,
        })
        .collect()
}

/// The trace files read, by rank.
fn files_of(set: &TraceSet) -> Vec<FileEntry> {
    set.paths()
        .iter()
        .zip(set.headers())
        .enumerate()
        .filter_map(|(rank, (p, h))| {
            let (p, h) = (p.as_ref()?, h.as_ref()?);
            Some(FileEntry {
                rank,
                path: p.display().to_string(),
                calls: h.calls,
                events: h.events,
                dropped_calls: h.dropped_calls,
            })
        })
        .collect()
}

fn clock_entry(clocks: &Clocks) -> ClockEntry {
    let (uncertainty_s, unaligned_ranks) = match &clocks.alignment {
        Alignment::Shared => (None, Vec::new()),
        Alignment::Estimated { uncertainty_ns } => (Some(uncertainty_ns * 1e-9), Vec::new()),
        Alignment::Unaligned { ranks } => (None, ranks.clone()),
    };
    ClockEntry {
        alignment: clocks.word(),
        clocks: clocks.clocks,
        uncertainty_s,
        unaligned_ranks,
    }
}

fn group_report(g: &Group, hosts: &[String], clocks: &Clocks, tolerance: f64) -> GroupReport {
    let message_time = timing::message_time(g);
    let paths = main_paths(g);
    let classes = ranks::rank_classes(g, &paths, tolerance);
    let load_imbalance = load_imbalance(g);
    let made_by_calls = load_imbalance
        .as_ref()
        .and_then(|i| i.cause.as_ref())
        .is_some_and(|c| c.kind == "previous_call");
    GroupReport {
        imp: g.imp.clone(),
        op: g.op.to_string(),
        bytes: g.bytes,
        root: g.root,
        tree: g.tree,
        calls: g.calls,
        first_call: g.seqs.0,
        last_call: g.seqs.1,
        call_time: g.call_time.summary(),
        arrival_pattern: timing::arrival_pattern(g, message_time.as_ref()),
        message_time,
        wait_states: timing::wait_states(g, clocks),
        ranks: ranks::rank_reports(g, hosts, &classes, clocks),
        cost_breakdown: ranks::cost_breakdown(g, &classes, &paths, made_by_calls),
        classes: ranks::class_reports(g, &classes, &paths),
        nodes: g
            .nodes
            .iter()
            .map(|(&r, n)| tree::node_report(r, n))
            .collect(),
        links: g
            .links
            .iter()
            .map(|(&k, l)| tree::link_report(k, l))
            .collect(),
        load_imbalance,
        paths: paths
            .iter()
            .enumerate()
            .filter_map(|(rank, p)| Some(tree::path_report(rank, (*p)?)))
            .collect(),
        path_changes: g.path_changes,
        critical_path: critical::critical_report(g),
    }
}

/// Each rank's path the most calls took, if it has one.
fn main_paths(g: &Group) -> Vec<Option<&PathAgg>> {
    g.paths
        .iter()
        .map(|ps| {
            ps.iter()
                .max_by_key(|p| p.stages.first().map_or(0, |s| s.1.count()))
        })
        .collect()
}

/// The group's load imbalance, explained: over its tree if it has one and
/// that finds it, else by when the ranks entered the calls.
fn load_imbalance(g: &Group) -> Option<Imbalance> {
    let mut found = match g.tree {
        true => imbalance::over_tree(&g.nodes, g.root),
        false => None,
    }
    .or_else(|| {
        let last: Vec<u64> = g.ranks.iter().map(|r| r.last_enter).collect();
        imbalance::by_entry(&last, g.calls)
    });
    if let Some(found) = found.as_mut() {
        imbalance::explain(found, &g.ranks);
    }
    found
}
