//! What the lottery did on every call: [`Logged`] wraps the selector and
//! notes each call's candidate in a [`Log`]; at the end the log and the
//! series' times become the run's [`Trace`], the record rank 0 reports
//! and a replay rebuilds.

use std::sync::{Arc, Mutex};

use autocoll::select::lottery::Key;
use autocoll::select::{Group, Lottery};
use autocoll::{Collective, Implementation, Selector};
use serde::{Deserialize, Serialize};

/// Rank 0's record of the run: every series' per-call times.
#[derive(Debug, Serialize, Deserialize)]
pub struct Trace {
    /// Every rank's host.
    pub hosts: Vec<String>,
    /// Per candidate, per call, seconds.
    pub fixed: Vec<Vec<f64>>,
    /// Per lottery call, seconds.
    pub lottery: Vec<f64>,
    /// Per lottery call, the implementation that ran.
    pub chosen: Vec<String>,
    /// Per lottery call, whether it was off the pool's best.
    pub explored: Vec<bool>,
    /// Per lottery call, whether a draw (agreement and broadcast) preceded it.
    pub drew: Vec<bool>,
    /// The pool's best after the last call.
    pub final_impl: String,
    /// The lottery started from what an earlier run saved.
    pub restored: bool,
}

/// The lottery, noting which candidate each call ran and whether it was
/// exploring (off the pool's best at the time).
pub(super) struct Logged {
    inner: Lottery,
    log: Arc<Mutex<Log>>,
}

/// Indices into the candidates (the pool keeps them in the same order);
/// names are made once at the end, not on every call.
#[derive(Default)]
pub(super) struct Log {
    pub(super) chosen: Vec<usize>,
    explored: Vec<bool>,
    pub(super) drew: Vec<bool>,
    best: Option<usize>,
    restored: bool,
}

impl Log {
    /// The run's trace: the series' times, with the candidates' `names`
    /// in place of the log's indices.
    pub(super) fn trace(
        &self,
        names: &[String],
        hosts: Vec<String>,
        fixed: Vec<Vec<f64>>,
        lottery: Vec<f64>,
    ) -> Trace {
        Trace {
            hosts,
            fixed,
            lottery,
            chosen: self.chosen.iter().map(|&i| names[i].clone()).collect(),
            explored: self.explored.clone(),
            drew: self.drew.clone(),
            final_impl: self.best.map(|i| names[i].clone()).unwrap_or_default(),
            restored: self.restored,
        }
    }

    fn with_capacity(calls: usize) -> Self {
        Log {
            chosen: Vec::with_capacity(calls),
            explored: Vec::with_capacity(calls),
            drew: Vec::with_capacity(calls),
            best: None,
            restored: false,
        }
    }
}

impl Logged {
    /// `inner`, noting each call in a log with room for `calls` up front
    /// (the log grows inside the timed calls).
    pub(super) fn new(inner: Lottery, calls: usize) -> (Self, Arc<Mutex<Log>>) {
        let mut log = Log::with_capacity(calls);
        log.restored = inner.restored();
        let log = Arc::new(Mutex::new(log));
        let logged = Logged {
            inner,
            log: log.clone(),
        };
        (logged, log)
    }
}

impl Selector for Logged {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> autocoll::Result<Implementation> {
        let key = Key::of(op, group.size(), bytes);
        let imp = self.inner.select(group, op, bytes)?;
        let drew = self.inner.after_message();
        let pool = &self.inner.pools()[&key];
        let (chosen, _) = pool
            .current
            .expect("a call the lottery chose has a holding candidate");
        let best = pool.best();
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.explored.push(best != Some(chosen));
        log.drew.push(drew);
        log.chosen.push(chosen);
        log.best = best;
        Ok(imp)
    }

    fn wants_times(&self) -> bool {
        self.inner.wants_times()
    }

    fn record(&mut self, imp: &Implementation, bytes: usize, enter_ns: u64, leave_ns: u64) {
        self.inner.record(imp, bytes, enter_ns, leave_ns)
    }

    fn save(&mut self) -> autocoll::Result<()> {
        self.inner.save()
    }
}
