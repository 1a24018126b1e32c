//! One collective's balancing on one rank: its table, when the next
//! decision comes, what the rank reports, and on rank 0 the rules. Pure:
//! the protocol moves the reports and the decisions, the tests drive it
//! with simulated waits.

use super::params::Params;
use super::rules::{Change, Kind, Limits, Pace, Reporter, Rules, Situation};
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::layout::Layout;
use crate::tree::table::RankTable;
use crate::tree::Shape;

/// What the balancer did to one collective's table, for tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The collective.
    pub op: Collective,
    /// The table in force (rank i of the list takes the i-th place).
    pub table: Vec<usize>,
    /// Balanced calls so far.
    pub calls: u64,
    /// Decisions so far (one per period).
    pub decisions: u32,
    /// The period in force.
    pub period: u32,
    /// Changes of the table so far (trials, reverts and a restore).
    pub changes: u64,
    /// Of which trials undone because they did not pay.
    pub reverts: u64,
    /// The table came from the state file.
    pub restored: bool,
    /// The call (0-based, counting this collective's balanced calls) from
    /// which the table holds still: the first under the table in force.
    pub still_since: u64,
}

/// Why `table` is not a permutation of `0..size`, if it is not.
pub(super) fn check_table(table: &[usize], size: usize) -> std::result::Result<(), String> {
    let mut seen = vec![false; size];
    if table.len() != size {
        return Err(format!("has {} entries for {size} ranks", table.len()));
    }
    for &r in table {
        if r >= size || std::mem::replace(&mut seen[r], true) {
            return Err(format!("is not a permutation of 0..{size}"));
        }
    }
    Ok(())
}

/// A decision as it travels to every rank: why, the change, the number
/// of balanced calls until the next one, and the root whose calls count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Message {
    pub kind: Kind,
    pub change: Change,
    pub period: u32,
    pub focus: Option<usize>,
}

/// Rank 0's count of the roots of a period's calls: the majority root
/// (Boyer and Moore's vote, in constant space), and whether any call had
/// another root than the first.
#[derive(Clone, Copy, Debug, Default)]
struct Roots {
    candidate: Option<usize>,
    votes: u32,
    first: Option<usize>,
    mixed: bool,
}

impl Roots {
    fn add(&mut self, root: usize) {
        match self.candidate {
            Some(c) if c == root => self.votes += 1,
            _ if self.votes == 0 => {
                self.candidate = Some(root);
                self.votes = 1;
            }
            _ => self.votes -= 1,
        }
        self.mixed |= self.first.is_some_and(|f| f != root);
        self.first.get_or_insert(root);
    }
}

/// One collective's balancing on one rank.
pub(crate) struct OpState {
    pub op: Collective,
    pub table: RankTable,
    /// Balanced calls before the next decision; 0: the next call decides
    /// first.
    until: u32,
    period: u32,
    pub calls: u64,
    decisions: u32,
    changes: u64,
    reverts: u64,
    restored: bool,
    still_since: u64,
    /// Fewer than 3 ranks leave nothing to balance: the root never moves.
    active: bool,
    limits: Limits,
    reporter: Reporter,
    /// The latest summary that moved enough, not sent yet: a rank sends
    /// at most one report per period, after its last call, since rank 0
    /// reads only the latest at the decision (a message per call that
    /// moved would cost a send each time on a noisy machine).
    pending: Option<u64>,
    /// The root whose calls' waits count (a wait depends on the root's
    /// tree); `None` until rank 0 has seen a period: every root's.
    focus: Option<usize>,
    /// Rank 0's rules.
    rules: Option<Rules>,
    /// Rank 0: the shape of the last call from the focus root, which the
    /// rules reason about.
    shape: Option<Shape>,
    /// Rank 0: the roots of this period's calls.
    roots: Roots,
}

impl OpState {
    /// The state of `op` on `rank` of `size`, starting from `table`.
    pub fn new(
        op: Collective,
        table: Vec<usize>,
        rank: usize,
        size: usize,
        params: &Params,
    ) -> OpState {
        let limits = params.limits();
        OpState {
            op,
            table: RankTable::new(table),
            until: 0,
            period: params.period,
            calls: 0,
            decisions: 0,
            changes: 0,
            reverts: 0,
            restored: false,
            still_since: 0,
            active: size >= 3,
            limits,
            reporter: Reporter::default(),
            pending: None,
            focus: None,
            rules: (rank == 0).then(|| Rules::new(size, params.mode, limits)),
            shape: None,
            roots: Roots::default(),
        }
    }

    /// Decisions applied so far.
    #[cfg(test)]
    pub fn decisions(&self) -> u32 {
        self.decisions
    }

    /// True when the call about to start begins with a decision.
    pub fn due(&self) -> bool {
        self.active && self.until == 0
    }

    /// Rank 0: the decision before the call about to start. When the
    /// period's calls came mostly from another root than the focus, the
    /// focus moves there and the view starts afresh (unless it is the
    /// first focus and every call so far had that root).
    pub fn decide(&mut self, layout: &Layout, params: &Params) -> Result<Message> {
        let rules = self
            .rules
            .as_mut()
            .ok_or_else(|| Error::Config("only rank 0 decides for the balancer".into()))?;
        let roots = std::mem::take(&mut self.roots);
        let mut focus = self.focus;
        if roots.candidate.is_some() && roots.candidate != focus {
            if focus.is_some() || roots.mixed {
                rules.forget();
            }
            focus = roots.candidate;
        }
        let at = match (&self.shape, focus) {
            (Some(shape), Some(root)) => Some(Situation {
                shape,
                layout,
                root,
                table: &self.table.ranks,
            }),
            _ => None,
        };
        let decision = rules.decide(at.as_ref())?;
        let period = match decision.pace {
            Pace::Longer => self.period.saturating_mul(2).min(params.max_period),
            Pace::Same => self.period,
            Pace::Base => params.period,
        };
        Ok(Message {
            kind: decision.kind,
            change: decision.change,
            period,
            focus,
        })
    }

    /// Every rank: applies rank 0's decision, after checking it.
    pub fn apply(&mut self, msg: &Message) -> Result<()> {
        let size = self.table.ranks.len();
        let bad = |reason: String| Error::Protocol {
            peer: "rank 0".into(),
            reason: format!("balancer decision for {}: {reason}", self.op),
        };
        match &msg.change {
            Change::Keep => {}
            Change::Swap(a, b) if a == b || *a >= size || *b >= size => {
                return Err(bad(format!("swap of ranks {a} and {b} of {size}")))
            }
            Change::Swap(..) => {}
            Change::Table(t) => check_table(t, size).map_err(|why| bad(format!("table {why}")))?,
        }
        if msg.period == 0 {
            return Err(bad("a period of 0 calls".into()));
        }
        if msg.focus.is_some_and(|f| f >= size) {
            return Err(bad(format!(
                "focus on root {:?} of {size} ranks",
                msg.focus
            )));
        }
        if msg.change != Change::Keep {
            let mut table = self.table.ranks.to_vec();
            msg.change.apply(&mut table);
            self.table = RankTable::new(table);
            self.changes += 1;
            self.reverts += u64::from(msg.kind == Kind::Revert);
            self.restored |= msg.kind == Kind::Restore;
            self.still_since = self.calls;
        }
        self.period = msg.period;
        self.until = msg.period;
        self.decisions += 1;
        // Below 4 calls a period would lose too many of its calls.
        self.reporter.restart(msg.period >= 4);
        self.pending = None;
        if msg.focus != self.focus {
            // Rank 0 forgot what it heard about the other root.
            self.reporter.forget();
            self.focus = msg.focus;
        }
        Ok(())
    }

    /// After a balanced call of `shape` from `root` in which this rank
    /// waited `wait` ns: at the period's last call, the wait to report to
    /// rank 0, the latest summary of the period that moved enough (rank 0
    /// hears its own at once).
    pub fn called(&mut self, wait: u64, shape: &Shape, root: usize) -> Option<u64> {
        self.calls += 1;
        self.until = self.until.saturating_sub(1);
        if !self.active {
            return None;
        }
        let focused = self.focus.is_none_or(|f| f == root);
        if self.rules.is_some() {
            self.roots.add(root);
            if focused && self.shape.as_ref() != Some(shape) {
                self.shape = Some(shape.clone());
            }
        }
        if focused {
            if let Some(report) = self.reporter.add(wait, &self.limits) {
                self.pending = Some(report);
            }
        }
        if self.until > 0 {
            return None;
        }
        let report = self.pending.take()?;
        match &mut self.rules {
            Some(rules) => {
                rules.hear(0, report);
                None
            }
            None => Some(report),
        }
    }

    /// Rank 0: rank `rank` reported `wait`.
    pub fn hear(&mut self, rank: usize, wait: u64) {
        if let Some(rules) = &mut self.rules {
            rules.hear(rank, wait);
        }
    }

    /// Rank 0: the first decision applies `table`.
    pub fn restore(&mut self, table: Vec<usize>) {
        if let (Some(rules), 0) = (&mut self.rules, self.decisions) {
            rules.restore(table);
        }
    }

    pub fn status(&self) -> Status {
        Status {
            op: self.op,
            table: self.table.ranks.to_vec(),
            calls: self.calls,
            decisions: self.decisions,
            period: self.period,
            changes: self.changes,
            reverts: self.reverts,
            restored: self.restored,
            still_since: self.still_since,
        }
    }
}
