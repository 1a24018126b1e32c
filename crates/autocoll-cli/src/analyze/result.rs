//! The analysis as a document: what `--json` writes (`autocoll.analysis/1`,
//! described field by field in docs/formats.md) and what the terminal
//! report and the pictures are drawn from.

use std::collections::BTreeMap;

use serde::Serialize;

use super::breakdown::{self, Breakdown};
use super::classes::{self, Class};
use super::clocks::{Alignment, Clocks};
use super::critical::StepKind;
use super::group::{Analysis, Group, LOCAL};
use super::imbalance::{self, Imbalance};
use super::nodes::{NodeAgg, Who};
use super::paths::{Kind, PathAgg};
use super::read::TraceSet;
use super::stats::{Stat, Summary};
use super::waits;

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

/// The time of one message of the group's size.
#[derive(Clone, Debug, Serialize)]
pub struct MessageTime {
    /// The time.
    pub time_s: f64,
    /// What it was estimated from.
    pub from: &'static str,
}

/// Ratios of an imbalance to one message's time.
#[derive(Clone, Debug, Serialize)]
pub struct Factors {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
}

/// The enter times' spread over calls.
#[derive(Clone, Debug, Serialize)]
pub struct ArrivalPattern {
    /// Mean |e_i − ē| per call.
    pub average_case: Summary,
    /// max e − min e per call.
    pub worst_case: Summary,
    /// `average_case` over one message's time.
    pub average_case_factor: Option<Factors>,
    /// `worst_case` over one message's time.
    pub worst_case_factor: Option<Factors>,
}

/// Scalasca's wait states of the group.
#[derive(Clone, Debug, Serialize)]
pub struct WaitStates {
    /// The wait pattern's name.
    pub pattern: &'static str,
    /// The completion pattern's name, if the collective has one.
    pub completion_pattern: Option<&'static str>,
    /// `shared` or `estimated`: how the ranks' times were compared.
    pub clock: &'static str,
    /// Summed over ranks and calls.
    pub total_s: f64,
    /// The completion pattern's total.
    pub completion_total_s: Option<f64>,
    /// `total_s` over the ranks' summed time in the calls.
    pub share_of_time: f64,
    /// Per rank the pattern applies to.
    pub by_rank: Vec<RankWait>,
}

/// One rank's wait states.
#[derive(Clone, Debug, Serialize)]
pub struct RankWait {
    /// The rank.
    pub rank: usize,
    /// Its wait per call.
    pub wait: Summary,
    /// Summed over calls.
    pub total_s: f64,
    /// Its completion wait per call.
    pub completion: Option<Summary>,
}

/// A rank's quantities.
#[derive(Clone, Debug, Serialize)]
pub struct RankReport {
    /// The rank.
    pub rank: usize,
    /// Its host.
    pub host: String,
    /// Its class.
    pub class: String,
    /// Done − enter.
    pub time_in_call: Summary,
    /// Its local stages.
    pub stages: LocalStages,
    /// Share of calls it entered last in.
    pub last_to_enter_share: Option<f64>,
    /// Its time from its previous call's end to its entry (own clock;
    /// calls that follow the call numbered just before).
    pub between_calls: Option<Summary>,
    /// Its entry − the call's median entry (aligned clocks only; can be
    /// negative).
    pub late_entry: Option<Summary>,
    /// Share of calls whose critical path passes through it.
    pub critical_path_share: Option<f64>,
}

/// The local stages of a rank's time.
#[derive(Clone, Debug, Serialize)]
pub struct LocalStages {
    /// Up to each receive (waiting for the message included).
    pub receive: Summary,
    /// Combining.
    pub combine: Summary,
    /// Handing messages to the transport.
    pub send: Summary,
    /// From the last event to done.
    pub finish: Summary,
}

/// A class of ranks.
#[derive(Clone, Debug, Serialize)]
pub struct ClassReport {
    /// A, B, …
    pub name: String,
    /// Its ranks.
    pub ranks: Vec<usize>,
    /// The rank that stands for it.
    pub representative: usize,
    /// The members' mean profile: stage name → mean, s.
    pub profile: Vec<ProfileEntry>,
}

/// One stage of a profile.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileEntry {
    /// The stage.
    pub stage: &'static str,
    /// Its mean.
    pub mean_s: Option<f64>,
}

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

/// The critical paths of a group's calls.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalReport {
    /// Calls with a critical path.
    pub calls: u64,
    /// Its mean length.
    pub mean_length_s: f64,
    /// Ranks on it, most often first.
    pub ranks: Vec<CriticalRank>,
    /// Its stages by rank and kind, most time first.
    pub stages: Vec<CriticalStage>,
    /// The slowest call's critical path.
    pub slowest_call: SlowestCall,
}

/// A rank's part in the critical paths.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalRank {
    /// The rank.
    pub rank: usize,
    /// Share of calls whose path passes through it.
    pub share: f64,
    /// Share of calls whose path starts at its entry.
    pub start_share: f64,
    /// Share of the paths' summed length spent on it.
    pub time_share: f64,
}

/// One (rank, kind) on the critical paths.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalStage {
    /// The rank (the receiver, for transfers).
    pub rank: usize,
    /// `receive`, `combine`, `send`, `finish`, `transfer`.
    pub step: StepKind,
    /// Summed over calls.
    pub time_s: f64,
    /// Share of the paths' summed length.
    pub share: f64,
}

/// The slowest call and its path.
#[derive(Clone, Debug, Serialize)]
pub struct SlowestCall {
    /// Its number.
    pub seq: u64,
    /// Its time.
    pub time_s: f64,
    /// Its critical path.
    pub steps: Vec<StepReport>,
}

/// One step of a critical path.
#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    /// The rank (the receiver, for a transfer).
    pub rank: usize,
    /// What it is.
    pub step: StepKind,
    /// The other rank of a transfer, send or receive.
    pub peer: Option<usize>,
    /// Its start, from the start of the path.
    pub start_s: f64,
    /// Its length.
    pub duration_s: f64,
}

/// Builds the document from a finished analysis.
pub fn report(set: &TraceSet, clocks: &Clocks, analysis: Analysis, tolerance: f64) -> Report {
    let headers = set.headers();
    let first = headers.iter().flatten().next().expect("a run has a file");
    let hosts: Vec<String> = headers
        .iter()
        .map(|h| {
            h.as_ref()
                .map_or_else(|| "?".to_string(), |h| h.host.clone())
        })
        .collect();
    let mut by_host: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (r, h) in headers.iter().enumerate() {
        if let Some(h) = h {
            by_host.entry(h.host.as_str()).or_default().push(r);
        }
    }
    let files = set
        .paths()
        .iter()
        .zip(headers)
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
        .collect();
    Report {
        schema: SCHEMA,
        dir: set.dir().display().to_string(),
        run: first.run.clone(),
        ranks: first.size as usize,
        transport: first.transport.clone(),
        hosts: by_host
            .into_iter()
            .map(|(name, ranks)| Host {
                name: name.to_string(),
                ranks,
            })
            .collect(),
        files,
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

fn some(stat: &Stat) -> Option<Summary> {
    (stat.count() > 0).then(|| stat.summary())
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

fn group_report(g: &Group, hosts: &[String], clocks: &Clocks, tolerance: f64) -> GroupReport {
    let message_time = message_time(g);
    let paths: Vec<Option<&PathAgg>> = g
        .paths
        .iter()
        .map(|ps| {
            ps.iter()
                .max_by_key(|p| p.stages.first().map_or(0, |s| s.1.count()))
        })
        .collect();
    let classes = rank_classes(g, &paths, tolerance);
    let mut load_imbalance = match g.tree {
        true => imbalance::over_tree(&g.nodes, g.root),
        false => None,
    }
    .or_else(|| {
        let last: Vec<u64> = g.ranks.iter().map(|r| r.last_enter).collect();
        imbalance::by_entry(&last, g.calls)
    });
    if let Some(found) = load_imbalance.as_mut() {
        imbalance::explain(found, &g.ranks);
    }
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
        arrival_pattern: arrival_pattern(g, message_time.as_ref()),
        message_time,
        wait_states: wait_states(g, clocks),
        ranks: rank_reports(g, hosts, &classes, clocks),
        cost_breakdown: cost_breakdown(g, &classes, &paths, made_by_calls),
        classes: class_reports(g, &classes, &paths),
        nodes: g.nodes.iter().map(|(&r, n)| node_report(r, n)).collect(),
        links: g
            .links
            .iter()
            .map(|(&(a, b), l)| LinkReport {
                a,
                b,
                two_way_latency: some(&l.two_way),
                one_way_a_to_b: some(&l.a_to_b),
                one_way_b_to_a: some(&l.b_to_a),
            })
            .collect(),
        load_imbalance,
        paths: paths
            .iter()
            .enumerate()
            .filter_map(|(rank, p)| Some(path_report(rank, (*p)?)))
            .collect(),
        path_changes: g.path_changes,
        critical_path: critical_report(g),
    }
}

fn rank_reports(
    g: &Group,
    hosts: &[String],
    classes: &[Class],
    clocks: &Clocks,
) -> Vec<RankReport> {
    let class_of = |r: usize| {
        classes
            .iter()
            .position(|c| c.ranks.contains(&r))
            .map_or_else(|| "-".to_string(), classes::name)
    };
    g.ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.calls > 0)
        .map(|(rank, r)| RankReport {
            rank,
            host: hosts[rank].clone(),
            class: class_of(rank),
            time_in_call: r.time_in_call.summary(),
            stages: LocalStages {
                receive: r.local[0].summary(),
                combine: r.local[1].summary(),
                send: r.local[2].summary(),
                finish: r.local[3].summary(),
            },
            last_to_enter_share: clocks
                .aligned()
                .then(|| r.last_enter as f64 / g.calls as f64),
            between_calls: some(&r.between),
            late_entry: some(&r.late_entry),
            critical_path_share: share(r.critical_calls, g.critical_calls),
        })
        .collect()
}

fn class_reports(g: &Group, classes: &[Class], paths: &[Option<&PathAgg>]) -> Vec<ClassReport> {
    let names = profile_names(g, paths);
    classes
        .iter()
        .enumerate()
        .map(|(i, c)| ClassReport {
            name: classes::name(i),
            ranks: c.ranks.clone(),
            representative: c.representative,
            profile: names
                .iter()
                .zip(&c.mean)
                .map(|(&stage, &m)| ProfileEntry {
                    stage,
                    mean_s: m.is_finite().then_some(m * 1e-9),
                })
                .collect(),
        })
        .collect()
}

/// One message's time: half the median two-way latency where ranks
/// exchange both ways (no clock needed), else the median one-way time.
fn message_time(g: &Group) -> Option<MessageTime> {
    if g.halves.count() > 0 {
        return Some(MessageTime {
            time_s: g.halves.quantile(0.5) * 1e-9,
            from: "half the median two-way latency",
        });
    }
    (g.one_way.count() > 0).then(|| MessageTime {
        time_s: g.one_way.quantile(0.5) * 1e-9,
        from: "the median one-way time (common clock)",
    })
}

fn arrival_pattern(g: &Group, message: Option<&MessageTime>) -> Option<ArrivalPattern> {
    let (average, worst) = &g.pattern;
    if average.count() == 0 {
        return None;
    }
    let factors = |s: &Stat| {
        let t = message.map(|m| m.time_s * 1e9).filter(|&t| t > 0.0)?;
        Some(Factors {
            mean: s.mean() / t,
            p50: s.quantile(0.5) / t,
            p90: s.quantile(0.9) / t,
            max: s.quantile(1.0) / t,
        })
    };
    Some(ArrivalPattern {
        average_case: average.summary(),
        worst_case: worst.summary(),
        average_case_factor: factors(average),
        worst_case_factor: factors(worst),
    })
}

fn wait_states(g: &Group, clocks: &Clocks) -> Option<WaitStates> {
    if !clocks.aligned() {
        return None;
    }
    let (pattern, completion_pattern) = waits::patterns(g.op);
    let by_rank: Vec<RankWait> = g
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.wait.count() > 0)
        .map(|(rank, r)| RankWait {
            rank,
            wait: r.wait.summary(),
            total_s: r.wait.sum() * 1e-9,
            completion: some(&r.completion),
        })
        .collect();
    let total: f64 = g.ranks.iter().map(|r| r.wait.sum()).sum();
    let time: f64 = g.ranks.iter().map(|r| r.time_in_call.sum()).sum();
    Some(WaitStates {
        pattern,
        completion_pattern,
        clock: clocks.word(),
        total_s: total * 1e-9,
        completion_total_s: completion_pattern
            .map(|_| g.ranks.iter().map(|r| r.completion.sum()).sum::<f64>() * 1e-9),
        share_of_time: if time > 0.0 { total / time } else { 0.0 },
        by_rank,
    })
}

/// The names of the profile's stages for this group.
fn profile_names(g: &Group, paths: &[Option<&PathAgg>]) -> Vec<&'static str> {
    let mut names = vec!["time in call"];
    names.extend(LOCAL);
    if g.tree && paths.iter().any(Option::is_some) {
        names.extend(["path arrival wait", "path down", "path up"]);
    }
    names
}

fn rank_classes(g: &Group, paths: &[Option<&PathAgg>], tolerance: f64) -> Vec<Class> {
    let with_paths = profile_names(g, paths).len() > 5;
    let profiles: Vec<(usize, Vec<f64>)> = g
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.calls > 0)
        .map(|(rank, r)| {
            let mut p = vec![r.time_in_call.mean()];
            p.extend(r.local.iter().map(Stat::mean));
            if with_paths {
                p.extend(path_totals(paths[rank]));
            }
            (rank, p)
        })
        .collect();
    classes::classes(&profiles, g.call_time.mean(), tolerance)
}

/// (arrival wait, the rest of the down path, the up path) of a path, ns.
fn path_totals(path: Option<&PathAgg>) -> [f64; 3] {
    let Some(path) = path else {
        return [f64::NAN; 3];
    };
    let mut out = [0.0; 3];
    for (stage, stat) in &path.stages {
        let k = match stage.kind {
            Kind::ArrivalWait => 0,
            k if k.is_down() => 1,
            _ => 2,
        };
        out[k] += stat.mean();
    }
    out
}

/// `made_by_calls`: the load imbalance was found to come from the
/// collectives themselves (see `imbalance::explain`).
fn cost_breakdown(
    g: &Group,
    classes: &[Class],
    paths: &[Option<&PathAgg>],
    made_by_calls: bool,
) -> Option<Breakdown> {
    let class = classes.first()?;
    let rank = class.representative;
    let name = classes::name(0);
    if let Some(path) = paths[rank] {
        let stages: Vec<(String, f64, bool)> = path
            .stages
            .iter()
            .map(|(s, stat)| (s.to_string(), stat.mean(), s.kind == Kind::ArrivalWait))
            .collect();
        return breakdown::breakdown(rank, &name, "path", &stages, made_by_calls);
    }
    let r = &g.ranks[rank];
    let stages: Vec<(String, f64, bool)> = LOCAL
        .iter()
        .zip(&r.local)
        .map(|(n, s)| (n.to_string(), s.mean(), false))
        .collect();
    breakdown::breakdown(rank, &name, "local stages", &stages, made_by_calls)
}

fn node_report(rank: usize, n: &NodeAgg) -> NodeReport {
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

fn path_report(rank: usize, p: &PathAgg) -> PathReport {
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

fn critical_report(g: &Group) -> Option<CriticalReport> {
    let slowest = g.slowest.as_ref()?;
    let total = g.critical_total.max(1.0);
    let calls = g.critical_calls;
    let mut ranks: Vec<CriticalRank> = g
        .ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.critical_calls > 0)
        .map(|(rank, r)| CriticalRank {
            rank,
            share: r.critical_calls as f64 / calls as f64,
            start_share: r.critical_starts as f64 / calls as f64,
            time_share: r.critical_time.iter().sum::<f64>() / total,
        })
        .collect();
    ranks.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(b.time_share.total_cmp(&a.time_share))
    });
    let mut stages: Vec<CriticalStage> = g
        .ranks
        .iter()
        .enumerate()
        .flat_map(|(rank, r)| {
            StepKind::ALL
                .iter()
                .zip(r.critical_time)
                .filter(|(_, t)| *t > 0.0)
                .map(move |(&step, t)| CriticalStage {
                    rank,
                    step,
                    time_s: t * 1e-9,
                    share: t / total,
                })
        })
        .collect();
    stages.sort_by(|a, b| b.share.total_cmp(&a.share));
    let origin = slowest.steps.first().map_or(0, |s| s.start);
    Some(CriticalReport {
        calls,
        mean_length_s: g.critical_total / calls.max(1) as f64 * 1e-9,
        ranks,
        stages,
        slowest_call: SlowestCall {
            seq: slowest.seq,
            time_s: slowest.time * 1e-9,
            steps: slowest
                .steps
                .iter()
                .map(|s| StepReport {
                    rank: s.rank,
                    step: s.kind,
                    peer: s.peer,
                    start_s: (s.start - origin) as f64 * 1e-9,
                    duration_s: (s.end - s.start) as f64 * 1e-9,
                })
                .collect(),
        },
    })
}
