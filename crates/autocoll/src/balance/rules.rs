//! The balancer's rules: what a rank reports of its waits, and what rank 0
//! makes of the reports. Pure and deterministic: no clock, no message; the
//! protocol feeds them waits and carries their decisions, and the tests
//! drive them with simulated waits.
//!
//! - A [`Reporter`] summarises a rank's waits since the last decision (the
//!   median of the latest [`WINDOW`] calls, so that one descheduled call
//!   does not count) and says when the summary moved away from what it last
//!   reported by more than the thresholds.
//! - [`Rules`] keep rank 0's view (every rank's latest report) and decide,
//!   once a period, one change of the table: a swap (the paper's pair, made
//!   safe: the late rank with a rank of its own subtree), a sort (every
//!   position at once), the revert of a trial that did not pay, or nothing.
//!
//! A rank is *late* when its children waited for it longer than children
//! usually wait for their parent: a child's *hop* is its wait less its
//! parent's, and the usual hop of the i-th child is the median over the
//! tree of the hops of i-th children. Balanced ranks show no lateness, so
//! nothing is tried on them.

use super::params::{Mode, Params};
use crate::error::Result;
use crate::layout::Layout;
use crate::tree::{Shape, Tree};

/// The calls a report summarises: the latest of the period, at most this
/// many.
pub(crate) const WINDOW: usize = 8;

/// When a wait, or the total of the waits, has changed enough to count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    /// A change must be larger than this (ns)...
    pub threshold_ns: u64,
    /// ...and larger than this share of the value before it.
    pub relative: f64,
    /// A trial is kept when it lowers the total wait by more than this
    /// share (and by more than `threshold_ns`).
    pub gain: f64,
}

impl Limits {
    /// The larger threshold for a wait of `wait` ns: how far a rank's
    /// last report may lie from its wait now (it reports when it moves
    /// further).
    pub fn margin(&self, wait: u64) -> u64 {
        self.threshold_ns.max((self.relative * wait as f64) as u64)
    }

    /// True when `now` differs from `before` by more than both thresholds.
    pub fn changed(&self, before: u64, now: u64) -> bool {
        before.abs_diff(now) > self.margin(before)
    }

    /// True when `high` lies above `low` by more than both thresholds.
    pub fn above(&self, high: u64, low: u64) -> bool {
        high > low && self.changed(low, high)
    }

    /// True when `high` lies above `low` by more than both could be off:
    /// twice the margin.
    pub fn clearly_above(&self, high: u64, low: u64) -> bool {
        high > low + 2 * self.margin(low)
    }
}

impl Params {
    pub(super) fn limits(&self) -> Limits {
        Limits {
            threshold_ns: self.threshold.as_nanos().min(u128::from(u64::MAX)) as u64,
            relative: self.relative,
            gain: self.gain,
        }
    }
}

/// One rank's waits since the last decision, and what it last reported.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reporter {
    recent: [u64; WINDOW],
    len: usize,
    next: usize,
    skip: bool,
    reported: Option<u64>,
}

impl Reporter {
    /// A new period begins (the table may have changed): the waits before
    /// it no longer count. With `skip_first`, the period's first call is
    /// left out: the ranks enter it staggered by the decision's message.
    pub fn restart(&mut self, skip_first: bool) {
        self.len = 0;
        self.next = 0;
        self.skip = skip_first;
    }

    /// Forgets what was reported: the next summary goes whatever it is.
    pub fn forget(&mut self) {
        self.reported = None;
    }

    /// Adds a call's wait (ns); returns the summary to report, if it moved
    /// away from the last one reported by more than `limits` (the first
    /// summary is always reported).
    pub fn add(&mut self, wait: u64, limits: &Limits) -> Option<u64> {
        if std::mem::take(&mut self.skip) {
            return None;
        }
        self.recent[self.next] = wait;
        self.next = (self.next + 1) % WINDOW;
        self.len = (self.len + 1).min(WINDOW);
        let mut sorted = self.recent;
        let sorted = &mut sorted[..self.len];
        sorted.sort_unstable();
        let median = sorted[self.len / 2];
        match self.reported {
            Some(last) if !limits.changed(last, median) => None,
            _ => {
                self.reported = Some(median);
                Some(median)
            }
        }
    }
}

/// A change of the table, as every rank applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The table stays.
    Keep,
    /// The entries of two ranks trade places.
    Swap(usize, usize),
    /// A whole new table.
    Table(Vec<usize>),
}

impl Change {
    /// Applies the change to `table`.
    pub fn apply(&self, table: &mut Vec<usize>) {
        match self {
            Change::Keep => {}
            Change::Swap(a, b) => *table = swapped(table, *a, *b),
            Change::Table(t) => table.clone_from(t),
        }
    }
}

/// Why the table changes (or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No change.
    Keep,
    /// A change on trial: the next decision keeps it or reverts it.
    Trial,
    /// A trial that did not pay, undone.
    Revert,
    /// The table an earlier run learned (the state file's).
    Restore,
}

/// What rank 0 decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// Why.
    pub kind: Kind,
    /// The change.
    pub change: Change,
    /// How long the next period is.
    pub pace: Pace,
}

/// The next period's length against the one in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Nothing to do and nothing moved: twice as long (up to the longest).
    Longer,
    /// A late rank seen once, not yet confirmed: as long. On a busy
    /// machine noise shows one every few periods; going back to the base
    /// period for each would cost a decision message every N calls.
    Same,
    /// A change, a trial to judge, or a total wait that rose: the base
    /// period N.
    Base,
}

impl Decision {
    fn keep(pace: Pace) -> Decision {
        Decision {
            kind: Kind::Keep,
            change: Change::Keep,
            pace,
        }
    }
}

/// The tree the rules reason about: the last balanced call's.
pub(crate) struct Situation<'a> {
    /// Its shape.
    pub shape: &'a Shape,
    /// Where the ranks run (only `hier` reads it).
    pub layout: &'a Layout,
    /// Its root, which never moves.
    pub root: usize,
    /// The table in force.
    pub table: &'a [usize],
}

impl Situation<'_> {
    fn tree(&self, table: &[usize]) -> Result<Tree> {
        Tree::build_in(self.shape, self.layout, self.root, Some(table))
    }
}

/// A change on trial, and what undoes it.
#[derive(Clone, Debug)]
struct Trial {
    /// The total wait of the period before it.
    before: u64,
    undo: Change,
    /// The late rank a swap moved down (`None` for a sort).
    late: Option<usize>,
}

/// Rank 0's view of one collective and its decisions.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    mode: Mode,
    limits: Limits,
    /// Every rank's latest reported wait; `None` until it reports.
    heard: Vec<Option<u64>>,
    trial: Option<Trial>,
    /// Late ranks whose move down did not pay, until the loads move.
    frozen: Vec<bool>,
    /// A sort was tried (kept or not), until the loads move.
    sorted: bool,
    /// The ranks late at the last decision that looked: a rank counts as
    /// late when it was at two in a row, so that one period's noise does
    /// not start a trial.
    late_before: Vec<bool>,
    /// The total wait of the last period without a trial (while a rise
    /// waits for confirmation, the one before the rise).
    baseline: Option<u64>,
    /// The total rose above the baseline at the last decision: a second
    /// rise in a row means the loads moved.
    rising: bool,
    /// How much the total moves from one quiet period to the next, as
    /// measured (a running mean of the differences, ns): on a busy
    /// machine far more than the reports' thresholds say.
    spread: u64,
    /// A table an earlier run learned, applied at the first decision.
    restore: Option<Vec<usize>>,
}

impl Rules {
    /// Rules for `size` ranks.
    pub fn new(size: usize, mode: Mode, limits: Limits) -> Rules {
        Rules {
            mode,
            limits,
            heard: vec![None; size],
            trial: None,
            frozen: vec![false; size],
            sorted: false,
            late_before: vec![false; size],
            baseline: None,
            rising: false,
            spread: 0,
            restore: None,
        }
    }

    /// Applies `table` at the next decision.
    pub fn restore(&mut self, table: Vec<usize>) {
        self.restore = Some(table);
    }

    /// Starts the view afresh: the waits heard so far were of another
    /// root's tree. A trial under way is kept (it cannot be judged), and
    /// late ranks must be seen again.
    pub fn forget(&mut self) {
        self.heard.fill(None);
        self.trial = None;
        self.baseline = None;
        self.rising = false;
        self.spread = 0;
        self.late_before.fill(false);
    }

    /// Rank `rank` reported `wait` (ns).
    pub fn hear(&mut self, rank: usize, wait: u64) {
        if let Some(slot) = self.heard.get_mut(rank) {
            *slot = Some(wait);
        }
    }

    /// The sum of every rank's latest wait, once every rank has reported.
    fn total(&self) -> Option<u64> {
        self.heard.iter().try_fold(0u64, |sum, w| Some(sum + (*w)?))
    }

    /// How much two totals of the view may differ with nothing changed:
    /// each rank's report may be off by its margin, independently, and
    /// two totals are compared (twice the root of the summed squares);
    /// or twice what the totals of quiet periods were seen to move by,
    /// if more.
    fn noise(&self) -> u64 {
        let squares: f64 = self
            .heard
            .iter()
            .map(|w| self.limits.margin(w.unwrap_or(0)) as f64)
            .map(|m| m * m)
            .sum();
        (2 * squares.sqrt() as u64).max(2 * self.spread)
    }

    /// Files how far a quiet period's total lay from the one before
    /// (capped at half of it: a moved load is not noise).
    fn observe_spread(&mut self, before: u64, total: u64) {
        let moved = total.abs_diff(before).min(before / 2);
        self.spread = (3 * self.spread + moved) / 4;
    }

    /// The decision of a period's end, about `at` (`None` before the first
    /// balanced call). One change at a time: a trial is judged at the next
    /// decision, which makes no other change.
    pub fn decide(&mut self, at: Option<&Situation<'_>>) -> Result<Decision> {
        if let Some(table) = self.restore.take() {
            return Ok(Decision {
                kind: Kind::Restore,
                change: Change::Table(table),
                pace: Pace::Base,
            });
        }
        let (Some(at), Some(total)) = (at, self.total()) else {
            return Ok(Decision::keep(Pace::Base));
        };
        if let Some(trial) = self.trial.take() {
            return Ok(self.judge(trial, total));
        }
        let above = self.follow_total(total);
        let tree = at.tree(at.table)?;
        let (seen, late) = self.late_ranks(&tree);
        let proposal = match self.mode {
            Mode::Swap => self.propose_swap(at, &tree, &late)?,
            Mode::Sort => self.propose_sort(at, &tree, &late)?,
        };
        let Some((change, trial)) = proposal else {
            return Ok(Decision::keep(self.pace_unchanged(above, &seen)));
        };
        self.trial = Some(Trial {
            before: total,
            ..trial
        });
        Ok(Decision {
            kind: Kind::Trial,
            change,
            pace: Pace::Base,
        })
    }

    /// Follows the total wait of a period without a trial against the
    /// baseline; true when it lies above it by more than the noise.
    fn follow_total(&mut self, total: u64) -> bool {
        // A total wait that rose without a change of ours, at two
        // decisions in a row: the loads moved, and what did not pay before
        // may pay now. (One rise is as often a busy moment of the machine.)
        let noise = self.noise();
        let above = self
            .baseline
            .is_some_and(|b| total > b + noise.max((self.limits.relative * b as f64) as u64));
        let moved = above && self.rising;
        self.rising = above && !moved;
        if moved {
            self.frozen.fill(false);
            self.sorted = false;
        }
        if let Some(b) = self.baseline {
            self.observe_spread(b, total);
        }
        if !self.rising {
            self.baseline = Some(total);
        }
        above
    }

    /// How late each rank is in `tree` now, and the same kept only for
    /// the ranks that were late at the decision before too (what a change
    /// may act on).
    fn late_ranks(&mut self, tree: &Tree) -> (Vec<u64>, Vec<u64>) {
        let seen = lateness(tree, &self.waits(), &self.limits);
        let late: Vec<u64> = seen
            .iter()
            .zip(&self.late_before)
            .map(|(&l, &before)| if before { l } else { 0 })
            .collect();
        self.late_before = seen.iter().map(|&l| l > 0).collect();
        (seen, late)
    }

    /// The next period's pace when nothing is tried: the base one after a
    /// rise of the total (`above`).
    fn pace_unchanged(&self, above: bool, seen: &[u64]) -> Pace {
        // A late rank seen once is looked at again soon.
        let open = match self.mode {
            Mode::Swap => (0..seen.len()).any(|r| seen[r] > 0 && !self.frozen[r]),
            Mode::Sort => !self.sorted && seen.iter().any(|&l| l > 0),
        };
        match (above, open) {
            (true, _) => Pace::Base,
            (false, true) => Pace::Same,
            (false, false) => Pace::Longer,
        }
    }

    /// Keeps the trial if the total wait dropped enough; otherwise undoes
    /// it and freezes what it tried.
    fn judge(&mut self, trial: Trial, total: u64) -> Decision {
        let drop = trial.before.saturating_sub(total);
        if drop > self.noise() && drop as f64 > self.limits.gain * trial.before as f64 {
            self.baseline = Some(total);
            // A sort is made from waits its own order no longer shows; sorting
            // again on the waits it caused would undo it.
            self.sorted |= trial.late.is_none();
            return Decision::keep(Pace::Base);
        }
        match trial.late {
            Some(late) => self.frozen[late] = true,
            None => self.sorted = true,
        }
        self.baseline = Some(trial.before);
        Decision {
            kind: Kind::Revert,
            change: trial.undo,
            pace: Pace::Base,
        }
    }

    /// Every rank's latest wait; 0 for one not heard (decisions are made
    /// only once all are).
    fn waits(&self) -> Vec<u64> {
        self.heard.iter().map(|w| w.unwrap_or(0)).collect()
    }
}

/// How late each rank was (ns): by how much its children's hops exceeded
/// the usual hop of their place among siblings (the median of the other
/// children's of that place; of all the others' when it has none), the
/// most over its children, when that is clearly above the thresholds (a
/// hop is the difference of two reports, each off by up to its margin);
/// 0 for a rank that was not late, the root and leaves.
fn lateness(tree: &Tree, waits: &[u64], limits: &Limits) -> Vec<u64> {
    // Every non-root rank's index among its parent's children, and its hop.
    let mut hops: Vec<(usize, usize, i64)> = Vec::with_capacity(waits.len());
    for &rank in tree.preorder() {
        for (i, &kid) in tree.children(rank).iter().enumerate() {
            hops.push((kid, i, waits[kid] as i64 - waits[rank] as i64));
        }
    }
    let mut by_place = vec![Vec::new(); tree.fan_out()];
    for &(_, i, hop) in &hops {
        by_place[i].push(hop);
    }
    let mut all: Vec<i64> = hops.iter().map(|h| h.2).collect();
    all.sort_unstable();
    for place in &mut by_place {
        place.sort_unstable();
    }
    let mut late = vec![0u64; waits.len()];
    for &(kid, i, hop) in &hops {
        let Some(parent) = tree.parent(kid).filter(|&p| p != tree.root()) else {
            continue;
        };
        let usual = median_without(&by_place[i], hop)
            .or_else(|| median_without(&all, hop))
            .unwrap_or(0);
        let (usual, hop) = (usual.max(0) as u64, hop.max(0) as u64);
        if limits.clearly_above(hop, usual) {
            late[parent] = late[parent].max(hop - usual);
        }
    }
    late
}

/// The (upper) median of `sorted` without one element equal to `value`;
/// `None` when nothing else is left.
fn median_without(sorted: &[i64], value: i64) -> Option<i64> {
    if sorted.len() < 2 {
        return None;
    }
    let at = sorted.partition_point(|&x| x < value);
    let mid = (sorted.len() - 1) / 2;
    Some(if mid < at {
        sorted[mid]
    } else {
        sorted[mid + 1]
    })
}

/// `table` with the entries of ranks `a` and `b` traded.
pub(crate) fn swapped(table: &[usize], a: usize, b: usize) -> Vec<usize> {
    table
        .iter()
        .map(|&r| match r {
            r if r == a => b,
            r if r == b => a,
            r => r,
        })
        .collect()
}

mod propose;

#[cfg(test)]
mod tests;
