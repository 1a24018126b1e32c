//! `--compare OTHER_DIR`: the same rank in two configurations (the paper's
//! Figure 3a), with a table of per-stage differences and the speedup.
//!
//! Groups are matched by (collective, bytes, root); where the other run
//! has several, the one with the most calls. The rank followed is
//! `--rank`, else the representative of this run's slowest class. Over
//! trees the table sums the rank's path stages by kind (arrival wait, down
//! latency, up latency, departure wait, link, leave), since the two paths
//! may differ in length and nodes; otherwise it compares the rank's local
//! stages. The speedup is this run's mean call time over the other's: above
//! 1 the other configuration is faster.

use crate::error::{Error, Result};
use crate::result::{GroupReport, Report};
use crate::timemap::{draw, line, Line};

/// One matched pair of groups.
pub struct Comparison {
    /// This run's group.
    pub this: GroupReport,
    /// The other run's.
    pub other: GroupReport,
    /// The directories, for labels.
    pub dirs: (String, String),
    /// The rank followed.
    pub rank: usize,
    /// Per stage kind: (name, this run's mean µs, the other's).
    pub rows: Vec<(String, f64, f64)>,
    /// This run's mean call time over the other's.
    pub speedup: f64,
}

/// Every matched group of `this` and `other`.
pub fn compare(this: &Report, other: &Report, rank: Option<usize>) -> Result<Vec<Comparison>> {
    if let Some(r) = rank.filter(|&r| r >= this.ranks.min(other.ranks)) {
        return Err(Error::Compare(format!(
            "--rank {r} is not a rank of both runs ({} and {} ranks)",
            this.ranks, other.ranks
        )));
    }
    let mut out = Vec::new();
    for g in &this.groups {
        let Some(o) = other
            .groups
            .iter()
            .filter(|o| o.op == g.op && o.bytes == g.bytes && o.root == g.root)
            .max_by_key(|o| o.calls)
        else {
            continue;
        };
        let r = rank
            .or_else(|| g.classes.first().map(|c| c.representative))
            .unwrap_or(0);
        out.push(Comparison {
            rows: rows(g, o, r),
            speedup: g.call_time.mean_s / o.call_time.mean_s,
            this: g.clone(),
            other: o.clone(),
            dirs: (this.dir.clone(), other.dir.clone()),
            rank: r,
        });
    }
    if out.is_empty() {
        return Err(Error::Compare(format!(
            "--compare: no (collective, bytes, root) is in both {} and {}",
            this.dir, other.dir
        )));
    }
    Ok(out)
}

/// The per-kind sums of `rank`'s path in each group, or its local stages.
fn rows(a: &GroupReport, b: &GroupReport, rank: usize) -> Vec<(String, f64, f64)> {
    let path_sums = |g: &GroupReport| {
        let p = g.paths.iter().find(|p| p.rank == rank)?;
        let mut sums: Vec<(String, f64)> = Vec::new();
        for s in &p.stages {
            match sums.iter_mut().find(|x| x.0 == s.kind) {
                Some(x) => x.1 += s.time.mean_s * 1e6,
                None => sums.push((s.kind.to_string(), s.time.mean_s * 1e6)),
            }
        }
        Some(sums)
    };
    if let (Some(x), Some(y)) = (path_sums(a), path_sums(b)) {
        let mut kinds: Vec<String> = x.iter().map(|k| k.0.clone()).collect();
        kinds.extend(
            y.iter()
                .map(|k| k.0.clone())
                .filter(|k| !x.iter().any(|j| &j.0 == k)),
        );
        let get = |v: &[(String, f64)], k: &str| v.iter().find(|j| j.0 == k).map_or(0.0, |j| j.1);
        return kinds
            .iter()
            .map(|k| (k.clone(), get(&x, k), get(&y, k)))
            .collect();
    }
    let local = |g: &GroupReport| {
        g.ranks.iter().find(|r| r.rank == rank).map(|r| {
            let s = &r.stages;
            [
                s.receive.mean_s,
                s.combine.mean_s,
                s.send.mean_s,
                s.finish.mean_s,
            ]
            .map(|x| x * 1e6)
        })
    };
    let (x, y) = (
        local(a).unwrap_or([f64::NAN; 4]),
        local(b).unwrap_or([f64::NAN; 4]),
    );
    crate::group::LOCAL
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), x[i], y[i]))
        .collect()
}

/// Figure 3a for one comparison (file name, SVG), when the rank has a
/// path over a tree in either run.
pub fn figure(c: &Comparison) -> Result<Option<(String, String)>> {
    let lines: Vec<Line> = [(&c.this, &c.dirs.0), (&c.other, &c.dirs.1)]
        .iter()
        .filter_map(|(g, dir)| {
            let p = g.paths.iter().find(|p| p.rank == c.rank)?;
            Some(line(format!("{} ({dir})", g.imp), p))
        })
        .collect();
    if lines.is_empty() {
        return Ok(None);
    }
    let title = format!(
        "rank {}, {} bytes: {} against {} (speedup {:.2}×)",
        c.rank, c.this.bytes, c.this.imp, c.other.imp, c.speedup
    );
    let name = format!("{}-compare-rank{}.svg", c.this.slug(), c.rank);
    let svg = draw(&title, &lines).map_err(|reason| Error::Plot {
        what: "comparison plot",
        reason,
    })?;
    Ok(Some((name, svg)))
}
