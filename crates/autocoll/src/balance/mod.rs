//! The load balancer: a virtual-rank table per collective that learns, at
//! run time, which ranks come late (Soga et al., 2007).
//!
//! A broadcast tree assumes every rank enters at once. A rank that comes
//! late because of its own work makes its whole subtree wait, and the
//! positions that receive first have the largest subtrees. The balancer
//! measures every rank's *wait* in every broadcast (from entering the call
//! to the first segment from its parent, through the observer hook) and
//! changes the table, the only way it changes a tree, so that late ranks
//! move to positions where nobody waits for them:
//!
//! - each rank compares its wait with the one it last reported and, when it
//!   changed by more than the thresholds, sends the new one to rank 0 (a
//!   small message on a reserved tag that never blocks, after the period's
//!   last call: at most one per rank and period);
//! - every N-th balanced call of a collective, before it, rank 0 drains the
//!   reports (`Transport::try_recv`), decides one change (the
//!   [`rules`](self)), and one small binomial broadcast carries it and the
//!   next N to every rank: all ranks change the table at the same call.
//!   When nothing is to be done N doubles, up to `max_period`;
//! - a change is a trial: the next decision keeps it if the total wait
//!   dropped, and otherwise undoes it and leaves it alone until the loads
//!   move (hysteresis: balanced ranks see no change after a few periods).
//!
//! Turn it on with [`crate::Communicator::use_balancer`], or with
//! `AUTOCOLL_BALANCE` for programs built on [`crate::init`] and
//! [`crate::local::run`]. docs/balance.md has the whole story.

mod op;
mod protocol;
mod rules;

use std::sync::Arc;
use std::time::Duration;

use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::observe::Observer;
use crate::select::state::{Store, TableEntry};
use crate::tree::table::RankTable;

use op::OpState;
use protocol::Probe;
pub use protocol::{REPORT_TAGS, REPORT_TAG_BASE};
use rules::Limits;

/// The variable that turns the balancer on for programs built on
/// [`crate::init`] and for [`crate::local::run`]: `swap`, `sort`, or
/// `key=value` pairs (see [`Params::parse`]); `off` or empty leaves it off.
pub const ENV_BALANCE: &str = "AUTOCOLL_BALANCE";

/// The collectives the balancer can balance.
pub const BALANCED_OPS: [Collective; 1] = [Collective::Bcast];

/// How the balancer changes a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The paper's: one pair of ranks trades places per period, the late
    /// rank with the rank of its subtree that waited most for it.
    Swap,
    /// Every position at once: the ranks that waited longest take the
    /// positions that receive earliest.
    Sort,
}

impl Mode {
    /// `swap` or `sort`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Swap => "swap",
            Mode::Sort => "sort",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Mode, String> {
        match text {
            "swap" => Ok(Mode::Swap),
            "sort" => Ok(Mode::Sort),
            _ => Err(format!("mode `{text}` is not swap or sort")),
        }
    }
}

/// The balancer's knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Swap pairs or sort every position.
    pub mode: Mode,
    /// Balanced calls of a collective between decisions, N (at least 1),
    /// whenever the balancer has something to do.
    pub period: u32,
    /// The longest period: while there is nothing to do, each decision
    /// doubles the period up to this.
    pub max_period: u32,
    /// A wait must change by more than this to be reported, a trial must
    /// lower the total wait by more than this to be kept, and the total
    /// must rise by more than this for the loads to count as moved.
    pub threshold: Duration,
    /// ...and by more than this share of the value before (the reports
    /// and the loads; 0.25 = 25%).
    pub relative: f64,
    /// A trial is kept when it lowers the total wait by more than this
    /// share (0.10 = 10%).
    pub gain: f64,
    /// The collectives balanced (each with its own table).
    pub ops: Vec<Collective>,
    /// Which of the [`REPORT_TAGS`] the reports travel on: balancers that
    /// take turns on one communicator need one each.
    pub channel: u16,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            mode: Mode::Swap,
            period: 8,
            max_period: 256,
            threshold: Duration::from_micros(20),
            relative: 0.25,
            gain: 0.10,
            ops: vec![Collective::Bcast],
            channel: 0,
        }
    }
}

impl Params {
    /// Parses `AUTOCOLL_BALANCE`'s value: `swap` (or `on`), `sort`, or
    /// comma-separated `key=value` pairs over the defaults: `mode=swap|sort`,
    /// `period=N`, `max-period=N`, `threshold=20us`, `relative=0.25` (or
    /// `25%`), `gain=0.1` (or `10%`), `ops=bcast`. `None` for `off` or
    /// nothing.
    pub fn parse(text: &str) -> std::result::Result<Option<Params>, String> {
        let text = text.trim();
        let mut params = Params::default();
        match text {
            "" | "off" => return Ok(None),
            "on" | "swap" => return Ok(Some(params)),
            "sort" => {
                params.mode = Mode::Sort;
                return Ok(Some(params));
            }
            _ => {}
        }
        for item in text.split(',') {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}` is not swap, sort, off or key=value"))?;
            params.set(key.trim(), value.trim())?;
        }
        params.check()?;
        Ok(Some(params))
    }

    fn set(&mut self, key: &str, value: &str) -> std::result::Result<(), String> {
        let count = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("{key}={v} is not a whole number"))
        };
        match key {
            "mode" => self.mode = value.parse()?,
            "period" => self.period = count(value)?,
            "max-period" => self.max_period = count(value)?,
            "threshold" => self.threshold = crate::clock::parse_duration(value)?,
            "relative" => self.relative = share(key, value)?,
            "gain" => self.gain = share(key, value)?,
            "ops" => {
                self.ops = value
                    .split('+')
                    .map(|op| op.trim().parse::<Collective>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| format!("ops={value}: {e}"))?
            }
            _ => {
                return Err(format!(
                    "unknown key `{key}` (mode, period, max-period, threshold, relative, gain, ops)"
                ))
            }
        }
        Ok(())
    }

    /// Refuses parameters the balancer cannot work with, saying which.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.period == 0 {
            return Err("period must be at least 1 call".into());
        }
        if self.max_period < self.period {
            return Err(format!(
                "max-period {} is below period {}",
                self.max_period, self.period
            ));
        }
        if !(self.relative.is_finite() && self.relative >= 0.0) {
            return Err(format!("relative {} is not a share >= 0", self.relative));
        }
        if !(self.gain.is_finite() && (0.0..1.0).contains(&self.gain)) {
            return Err(format!("gain {} is not a share in [0, 1)", self.gain));
        }
        if self.ops.is_empty() {
            return Err("ops names no collective".into());
        }
        if let Some(op) = self.ops.iter().find(|op| !BALANCED_OPS.contains(op)) {
            return Err(format!(
                "the balancer balances bcast only, not {op} (docs/balance.md says why)"
            ));
        }
        Ok(())
    }

    fn limits(&self) -> Limits {
        Limits {
            threshold_ns: self.threshold.as_nanos().min(u128::from(u64::MAX)) as u64,
            relative: self.relative,
            gain: self.gain,
        }
    }
}

/// `0.25` or `25%`.
fn share(key: &str, value: &str) -> std::result::Result<f64, String> {
    let (number, scale) = match value.strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (value, 1.0),
    };
    number
        .parse::<f64>()
        .map(|x| x * scale)
        .map_err(|_| format!("{key}={value} is not a number (0.25 or 25%)"))
}

/// Turns the balancer on as `AUTOCOLL_BALANCE` asks, if it is set
/// (collective: every rank's environment must agree). A value that does
/// not parse is an error naming the variable.
pub fn from_env(comm: &mut Communicator) -> Result<()> {
    match params_of_env(std::env::var_os(ENV_BALANCE))? {
        Some(params) => comm.use_balancer(params),
        None => Ok(()),
    }
}

/// The parameters `AUTOCOLL_BALANCE=value` asks for, if any.
fn params_of_env(value: Option<std::ffi::OsString>) -> Result<Option<Params>> {
    let Some(text) = value else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    Params::parse(&text).map_err(|why| Error::Config(format!("{ENV_BALANCE}={text}: {why}")))
}

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

/// A communicator's balancer: one table per balanced collective, the same
/// on every rank. Made by [`Communicator::use_balancer`]; tools that
/// compare several take them out and put them back
/// ([`Communicator::take_balancer`], [`Communicator::put_balancer`]).
pub struct Balancer {
    params: Params,
    rank: usize,
    size: usize,
    ops: Vec<OpState>,
    probe: Arc<Probe>,
    /// The same probe, as the communicator's observers hold it.
    observer: Arc<dyn Observer>,
    store: Option<Store>,
}

impl Balancer {
    /// A balancer of `params` for rank `rank` of `size`, each collective's
    /// table starting from `table_of(op)`.
    pub(crate) fn new(
        params: Params,
        rank: usize,
        size: usize,
        table_of: impl Fn(Collective) -> Vec<usize>,
    ) -> Result<Balancer> {
        params
            .check()
            .map_err(|why| Error::Config(format!("balancer: {why}")))?;
        let ops = params
            .ops
            .iter()
            .map(|&op| OpState::new(op, table_of(op), rank, size, &params))
            .collect();
        let probe = Arc::new(Probe::default());
        Ok(Balancer {
            params,
            rank,
            size,
            ops,
            observer: probe.clone(),
            probe,
            store: None,
        })
    }

    /// Its parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The communicator size it was made for.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The table in force for `op`, if balanced.
    pub fn table(&self, op: Collective) -> Option<&[usize]> {
        self.state(op).map(|s| &s.table.ranks[..])
    }

    /// What it did to `op`'s table, if balanced.
    pub fn status(&self, op: Collective) -> Option<Status> {
        self.state(op).map(OpState::status)
    }

    pub(crate) fn balances(&self, op: Collective) -> bool {
        self.state(op).is_some()
    }

    pub(crate) fn rank_table(&self, op: Collective) -> Option<&RankTable> {
        self.state(op).map(|s| &s.table)
    }

    pub(crate) fn observer(&self) -> &Arc<dyn Observer> {
        &self.observer
    }

    fn state(&self, op: Collective) -> Option<&OpState> {
        self.ops.iter().find(|s| s.op == op)
    }

    fn state_mut(&mut self, op: Collective) -> Option<&mut OpState> {
        self.ops.iter_mut().find(|s| s.op == op)
    }

    /// Keeps the tables in `store` (the lottery's state file): rank 0
    /// reads the ones an earlier run learned for this communicator size,
    /// and every collective not yet balanced starts from its table.
    pub(crate) fn attach_store(&mut self, store: Store) {
        for entry in store.load_tables() {
            if entry.ranks != self.size {
                continue;
            }
            let Some(state) = self.state_mut(entry.op) else {
                continue;
            };
            if let Err(why) = check_table(&entry.table, entry.ranks) {
                eprintln!(
                    "autocoll: warning: {}: the {} table {why}; not restored",
                    store.path().display(),
                    entry.op
                );
                continue;
            }
            state.restore(entry.table);
        }
        self.store = Some(store);
    }

    /// Writes every balanced collective's table into the state file (rank
    /// 0, when one is attached and the collective ran).
    pub(crate) fn save(&self) -> Result<()> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let tables: Vec<TableEntry> = self
            .ops
            .iter()
            .filter(|s| s.calls > 0)
            .map(|s| TableEntry {
                op: s.op,
                ranks: self.size,
                table: s.table.ranks.to_vec(),
            })
            .collect();
        store.save_tables(&tables)
    }
}

/// Why `table` is not a permutation of `0..size`, if it is not.
fn check_table(table: &[usize], size: usize) -> std::result::Result<(), String> {
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

#[cfg(test)]
mod tests;
