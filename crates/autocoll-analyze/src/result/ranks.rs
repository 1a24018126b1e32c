//! Ranks and their classes: each rank's time and stages, the classes of
//! alike ranks, and the cost breakdown of the slowest class.

use serde::Serialize;

use crate::breakdown::{self, Breakdown};
use crate::classes::{self, Class};
use crate::clocks::Clocks;
use crate::group::{Group, LOCAL};
use crate::paths::{Kind, PathAgg};
use crate::stats::{share, some, Stat, Summary};

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

pub(super) fn rank_reports(
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

pub(super) fn class_reports(
    g: &Group,
    classes: &[Class],
    paths: &[Option<&PathAgg>],
) -> Vec<ClassReport> {
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

/// The names of the profile's stages for this group.
fn profile_names(g: &Group, paths: &[Option<&PathAgg>]) -> Vec<&'static str> {
    let mut names = vec!["time in call"];
    names.extend(LOCAL);
    if g.tree && paths.iter().any(Option::is_some) {
        names.extend(["path arrival wait", "path down", "path up"]);
    }
    names
}

pub(super) fn rank_classes(g: &Group, paths: &[Option<&PathAgg>], tolerance: f64) -> Vec<Class> {
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
pub(super) fn cost_breakdown(
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
