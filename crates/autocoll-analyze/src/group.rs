//! The calls of a run, grouped by (implementation, bytes, root), each
//! group's quantities kept as running statistics: memory grows with the
//! groups, ranks and links, never with the calls.
//!
//! The root is part of a group's key because the tree depends on it: a
//! node's children, and so its statistics, are those of one tree.
//!
//! Each rank's time in a call splits into local stages, by the event that
//! ends each piece (the same for every algorithm): `receive` (up to a
//! `Received`, which includes waiting for the message), `combine`, `send`,
//! and `finish` (from the last event to `Done`: sends still being taken).
//!
//! Between calls: a rank's time from the end (`Done`) of its previous call
//! to its entry into this one, on its own clock (what the program did
//! between the two), and how late it left that previous call (its `Done` −
//! that call's median `Done`, on the common clock, where the rank received
//! a message in that call), both counted only when the previous call is
//! the one numbered just before; and how late it
//! entered this one (its entry − the call's median entry). Together they
//! say why a rank enters late: it worked longer between calls, or it left
//! the previous call late.

use std::collections::{BTreeMap, HashMap};

use autocoll::observe::Stage;
use autocoll::Collective;

use super::call::{RankView, View};
use super::critical::{self, Step, StepKind};
use super::links::{self, LinkAgg};
use super::nodes::{self, NodeAgg};
use super::paths::{self, PathAgg};
use super::stats::Stat;
use super::waits;

/// The local stages of a rank's time, in order.
pub const LOCAL: [&str; 4] = ["receive", "combine", "send", "finish"];

/// One call's split of a rank's time into [`LOCAL`] stages, ns.
pub fn local_stages(v: &RankView) -> [f64; 4] {
    let mut out = [0.0; 4];
    for (i, e) in v.call.events.iter().enumerate().skip(1) {
        let k = match e.stage {
            Stage::Received => 0,
            Stage::Combined => 1,
            Stage::Sent => 2,
            Stage::Done | Stage::Enter => 3,
        };
        out[k] += (v.t[i] - v.t[i - 1]) as f64;
    }
    out
}

/// One rank's quantities over a group's calls.
#[derive(Clone, Debug, Default)]
pub struct RankAgg {
    /// Calls it holds.
    pub calls: u64,
    /// Done − enter.
    pub time_in_call: Stat,
    /// Its [`LOCAL`] stages.
    pub local: [Stat; 4],
    /// Its Scalasca wait state.
    pub wait: Stat,
    /// Its completion wait state, where the collective has one.
    pub completion: Stat,
    /// Calls in which it entered last.
    pub last_enter: u64,
    /// Its time between its previous call's end and its entry, ns (own
    /// clock; only after the call numbered just before).
    pub between: Stat,
    /// Its entry − the call's median entry, ns (aligned clocks only).
    pub late_entry: Stat,
    /// Its previous call's `Done` − that call's median `Done`, ns (aligned
    /// clocks only; only after the call numbered just before, and when it
    /// received a message in that call).
    pub left_late: Stat,
    /// Calls whose critical path passes through it.
    pub critical_calls: u64,
    /// Calls whose critical path starts at its entry.
    pub critical_starts: u64,
    /// Time of its steps on critical paths, ns, by [`StepKind::ALL`].
    pub critical_time: [f64; 5],
}

/// The slowest call of a group and its critical path.
#[derive(Clone, Debug)]
pub struct Slowest {
    /// The call's number.
    pub seq: u64,
    /// Its time, ns.
    pub time: f64,
    /// Its critical path.
    pub steps: Vec<Step>,
}

/// The calls of one (implementation, bytes, root).
#[derive(Clone, Debug)]
pub struct Group {
    /// The implementation id.
    pub imp: String,
    /// The collective.
    pub op: Collective,
    /// Bytes per rank.
    pub bytes: u64,
    /// The root.
    pub root: usize,
    /// Calls counted.
    pub calls: u64,
    /// The first and last call numbers.
    pub seqs: (u64, u64),
    /// The call's time (see [`View::duration`]).
    pub call_time: Stat,
    /// Per rank.
    pub ranks: Vec<RankAgg>,
    /// Per tree node (rank with children).
    pub nodes: BTreeMap<usize, NodeAgg>,
    /// Per rank, its path(s) to the root and back.
    pub paths: Vec<Vec<PathAgg>>,
    /// Per link.
    pub links: BTreeMap<(usize, usize), LinkAgg>,
    /// Half of every two-way latency: one message's time, no clock needed.
    pub halves: Stat,
    /// Every last message's one-way time (aligned clocks only).
    pub one_way: Stat,
    /// Arrival pattern: average-case and worst-case imbalance, ns.
    pub pattern: (Stat, Stat),
    /// Calls with a critical path.
    pub critical_calls: u64,
    /// The summed length of the critical paths, ns.
    pub critical_total: f64,
    /// The slowest call.
    pub slowest: Option<Slowest>,
    /// True when the calls ran over a tree.
    pub tree: bool,
    /// Calls over a tree whose path changed from the first one seen.
    pub path_changes: u64,
}

impl Group {
    fn new(view: &View) -> Group {
        let size = view.ranks.len();
        Group {
            imp: view.imp.to_string(),
            op: view.op,
            bytes: view.bytes,
            root: view.root,
            calls: 0,
            seqs: (view.seq, view.seq),
            call_time: Stat::default(),
            ranks: vec![RankAgg::default(); size],
            nodes: BTreeMap::new(),
            paths: vec![Vec::new(); size],
            links: BTreeMap::new(),
            halves: Stat::default(),
            one_way: Stat::default(),
            pattern: (Stat::default(), Stat::default()),
            critical_calls: 0,
            critical_total: 0.0,
            slowest: None,
            tree: false,
            path_changes: 0,
        }
    }

    /// Counts one call; `between[r]` is rank r's time since its previous
    /// call and how late it left it, where known.
    pub fn add(&mut self, view: &View, between: &[Between]) {
        self.calls += 1;
        self.seqs.1 = view.seq;
        let duration = view.duration();
        self.call_time.add(duration);
        self.add_ranks(view, between);
        if let Some((average, worst)) = waits::arrival_pattern(view) {
            self.pattern.0.add(average);
            self.pattern.1.add(worst);
        }
        links::add(view, &mut self.links, &mut self.halves, &mut self.one_way);
        if view.is_tree() {
            self.tree = true;
            self.add_tree(view);
        }
        self.add_critical(view, duration);
    }

    fn add_ranks(&mut self, view: &View, between: &[Between]) {
        let waits = waits::of_call(view);
        let median_enter = median(view, |v| v.enter());
        for (r, v) in view.ranks.iter().enumerate() {
            let Some(v) = v else { continue };
            let agg = &mut self.ranks[r];
            agg.calls += 1;
            if let Some((b, left_late)) = between[r] {
                agg.between.add(b);
                if let Some(l) = left_late {
                    agg.left_late.add(l);
                }
            }
            if let Some(m) = median_enter {
                agg.late_entry.add((v.enter() - m) as f64);
            }
            agg.time_in_call.add((v.done() - v.enter()) as f64);
            for (stat, x) in agg.local.iter_mut().zip(local_stages(v)) {
                stat.add(x);
            }
            if let Some((wait, completion)) = waits[r] {
                agg.wait.add(wait);
                if let Some(c) = completion {
                    agg.completion.add(c);
                }
            }
        }
        if let Some(r) = waits::last_to_enter(view) {
            self.ranks[r].last_enter += 1;
        }
    }

    fn add_tree(&mut self, view: &View) {
        let samples = nodes::samples(view);
        let directions = nodes::directions(view);
        for (r, s) in samples.iter().enumerate() {
            let (Some(s), Some(v)) = (s, view.rank(r)) else {
                continue;
            };
            if v.children().next().is_some() {
                self.nodes.entry(r).or_default().add(v, s);
            }
            let Some(sample) = paths::sample(view, &samples, directions, r) else {
                continue;
            };
            let known = &mut self.paths[r];
            if !known.iter_mut().any(|p| p.add(&sample)) {
                if !known.is_empty() {
                    self.path_changes += 1;
                }
                known.push(PathAgg::new(&sample));
            }
        }
    }

    fn add_critical(&mut self, view: &View, duration: f64) {
        let Some(steps) = critical::path(view) else {
            return;
        };
        self.critical_calls += 1;
        let mut on_path = vec![false; self.ranks.len()];
        for s in &steps {
            on_path[s.rank] = true;
            let k = StepKind::ALL
                .iter()
                .position(|&k| k == s.kind)
                .expect("a kind");
            self.ranks[s.rank].critical_time[k] += (s.end - s.start) as f64;
            self.critical_total += (s.end - s.start) as f64;
        }
        for (r, on) in on_path.iter().enumerate() {
            self.ranks[r].critical_calls += u64::from(*on);
        }
        if let Some(r) = critical::start(view, &steps) {
            self.ranks[r].critical_starts += 1;
        }
        if self.slowest.as_ref().is_none_or(|s| duration > s.time) {
            self.slowest = Some(Slowest {
                seq: view.seq,
                time: duration,
                steps,
            });
        }
    }
}

/// The median over the ranks of a time in a call (`RankView::enter`,
/// `RankView::done`) on the common clock (the upper one of an even
/// count); `None` when the clocks do not align.
fn median(view: &View, time: impl Fn(&RankView) -> i64) -> Option<i64> {
    if !view.aligned {
        return None;
    }
    let mut times: Vec<i64> = view.ranks.iter().flatten().map(time).collect();
    times.sort_unstable();
    times.get(times.len() / 2).copied()
}

/// A rank's time since its previous call ended (own clock, ns) and how
/// late it left that call (ns, aligned clocks only), where known.
pub type Between = Option<(f64, Option<f64>)>;

/// A rank's record of the call it made last.
#[derive(Clone, Copy)]
struct Previous {
    seq: u64,
    /// Its `Done`, on its own clock.
    done: u64,
    /// Its `Done` − the call's median `Done`, on the common clock.
    left_late: Option<f64>,
}

/// Every group of a run, in the order their first calls came.
#[derive(Default)]
pub struct Analysis {
    /// The groups.
    pub groups: Vec<Group>,
    index: HashMap<(String, u64, usize), usize>,
    /// Calls counted.
    pub calls: u64,
    /// Per rank, the last call counted.
    previous: Vec<Option<Previous>>,
}

impl Analysis {
    /// Each rank's [`Between`] (when its previous call is the one numbered
    /// just before), and the record of this call as the previous.
    fn between(&mut self, view: &View) -> Vec<Between> {
        if self.previous.len() < view.ranks.len() {
            self.previous.resize(view.ranks.len(), None);
        }
        let median_done = median(view, |v| v.done());
        view.ranks
            .iter()
            .zip(self.previous.iter_mut())
            .map(|(v, previous)| {
                let v = v.as_ref()?;
                let events = &v.call.events;
                let (enter, done) = (events[0].time_ns, events[events.len() - 1].time_ns);
                let before = previous
                    .filter(|p| p.seq + 1 == view.seq)
                    .map(|p| (enter as f64 - p.done as f64, p.left_late));
                // Only a call that released the rank (it waited there for
                // a message) can leave it late by its own order: a reduce's
                // leaf, which only sends, leaves late when it came late.
                let released = events.iter().any(|e| e.stage == Stage::Received);
                *previous = Some(Previous {
                    seq: view.seq,
                    done,
                    left_late: median_done
                        .filter(|_| released)
                        .map(|m| (v.done() - m) as f64),
                });
                before
            })
            .collect()
    }

    /// Counts one call in its group.
    pub fn add(&mut self, view: &View) {
        self.calls += 1;
        let between = self.between(view);
        let key = (view.imp.to_string(), view.bytes, view.root);
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.groups.push(Group::new(view));
                self.index.insert(key, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        self.groups[i].add(view, &between);
    }
}
