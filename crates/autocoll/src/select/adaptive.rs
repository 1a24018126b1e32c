//! The `Lottery` selector: one [`Pool`] per (collective, communicator size,
//! message-size class), driven through the agreement protocol.
//!
//! Every rank runs the same calls, so every rank's pools count down the
//! same time-to-live and reach a draw at the same call. At a draw (1) the
//! time of every call of the ending period, as all ranks together saw it,
//! reaches rank 0 in one small reduction (see [`agreed_times`]: the call's
//! span on the shared clock, else the slowest rank's own time); (2) rank 0
//! feeds them to its averages and draws the candidates and time-to-live of
//! the next [`Params::ahead`] periods (or the warm-up's next tries, up to
//! [`Params::slots`]) and (3) sends them to every rank with a fixed
//! broadcast of 16 bytes per slot. Only rank 0 draws, so only rank
//! 0 learns, loads and saves the state file; the other ranks' pools only
//! count down what rank 0 drew. The call that follows a draw message pays
//! for it (a reduction and a broadcast, 2(P−1) small messages), hence one
//! message per two periods, and a reduction to rank 0 rather than an
//! allreduce (P·log2 P messages) that would let every rank learn.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::estimate::{Cost, Link};
use super::implementation::Implementation;
use super::key::{default_candidates, Key};
use super::lottery::{Draw, Objective, Params, Pool, Rng};
use super::selector::{Fold, Group, Offspring, Selector};
use super::state::{CommShape, Learned, Shared, Store};
use crate::error::{Error, Result};
use crate::ids::Collective;

mod offspring;
mod predict;

// Shared, not boxed: a sub-communicator's lottery asks the same.
type Candidates = Arc<dyn Fn(Collective, usize, usize) -> Vec<Implementation> + Send + Sync>;
type Incumbent = Arc<dyn Fn(Collective, usize, usize) -> Option<Implementation> + Send + Sync>;

/// The paper's lottery scheduler as a selector.
pub struct Lottery {
    params: Params,
    /// The candidates of each new pool; `None` for [`default_candidates`].
    candidates: Option<Candidates>,
    pools: BTreeMap<Key, Pool>,
    prior: HashMap<Key, Learned>,
    /// The implementation that holds a new pool from its first call, where
    /// there is one ([`Params::budget`]).
    incumbent: Option<Incumbent>,
    /// What the lotteries of this process learned, by communicator shape,
    /// and this one's shape.
    shared: Option<Shared>,
    shape: Option<CommShape>,
    /// The machine's model, where one is given; else fitted to what the
    /// pools measured.
    link: Option<Link>,
    /// A model a start-up probe measured, for sizes the pools have not
    /// measured near enough to fit one.
    probed: Option<Link>,
    /// Candidates' costs by (ranks, size class, implementation).
    costs: HashMap<(usize, u32, Implementation), Option<Cost>>,
    rng: Rng,
    store: Option<Store>,
    in_flight: Option<InFlight>,
    /// This rank's calls of the periods since the last draw message, per
    /// pool. A B-tree: with a few keys its comparisons cost less than
    /// hashing the key with SipHash on every call.
    recorded: BTreeMap<Key, Recorded>,
}

/// The call under way: its pool, candidate and holding period, and
/// whether a draw message came just before it.
#[derive(Clone, Copy)]
struct InFlight {
    key: Key,
    index: usize,
    period: u64,
    after_message: bool,
}

impl InFlight {
    /// The call of candidate `index` of `key`'s `pool`, and that candidate.
    fn of(pool: &Pool, key: Key, index: usize, after_message: bool) -> (Self, Implementation) {
        let call = InFlight {
            key,
            index,
            period: pool.periods,
            after_message,
        };
        (call, pool.candidates[index].imp.clone())
    }
}

/// This rank's (enter, leave) of every call since the last draw message,
/// and the holding periods they belong to. Cleared, never freed, at each
/// message: on 4 threads a 64 KiB call takes 15–20 µs, and a vector
/// growing inside the timed call (a reallocation on the 2nd, 5th, 9th …
/// call of a period) made those calls 25% slower.
#[derive(Default)]
struct Recorded {
    periods: Vec<Period>,
    calls: Vec<(u64, u64)>,
    /// The candidate of the pool's last call (kept across messages).
    last: Option<usize>,
}

/// One holding period: its calls are the next `calls` of [`Recorded`]'s.
struct Period {
    number: u64,
    index: usize,
    calls: usize,
    /// The period's first call came right after a draw message or after a
    /// call of another candidate.
    switched: bool,
}

impl Period {
    /// The times to learn from. The first call after a switch is off: the
    /// ranks leave a draw message staggered (rank 0 first), and on 4 local
    /// ranks (64 KiB) the span of the call that follows measured 10–20%
    /// away from the period's other calls, below in one run and above in
    /// the next; the first call of a candidate after another's runs up to
    /// 80% slower than its next ones, and learnt from, it makes every
    /// exploration look slower than the incumbent's long runs of calls
    /// (`a_candidate_slow_only_on_its_first_call_after_a_switch_is_found_best`).
    /// That call is left out unless it is the period's only one.
    fn clean<'t>(&self, times: &'t [f64]) -> &'t [f64] {
        match times {
            [_, rest @ ..] if self.switched && !rest.is_empty() => rest,
            all => all,
        }
    }
}

impl Lottery {
    /// A lottery with `params`, draws seeded by `seed`, and the default
    /// candidates ([`default_candidates`] for the job's hosts).
    pub fn new(params: Params, seed: u64) -> Self {
        Lottery {
            params,
            candidates: None,
            pools: BTreeMap::new(),
            prior: HashMap::new(),
            incumbent: None,
            shared: None,
            shape: None,
            link: None,
            probed: None,
            costs: HashMap::new(),
            rng: Rng::new(seed),
            store: None,
            in_flight: None,
            recorded: BTreeMap::new(),
        }
    }

    /// Uses `f(op, ranks, bytes)` for the candidates of each new pool.
    pub fn with_candidates(
        mut self,
        f: impl Fn(Collective, usize, usize) -> Vec<Implementation> + Send + Sync + 'static,
    ) -> Self {
        self.candidates = Some(Arc::new(f));
        self
    }

    /// Holds each new pool with `f(op, ranks, bytes)` from its first call
    /// (added to the candidates if it is not one), and, under a budget,
    /// tries the others only as the budget allows.
    pub fn with_incumbent(
        mut self,
        f: impl Fn(Collective, usize, usize) -> Option<Implementation> + Send + Sync + 'static,
    ) -> Self {
        self.incumbent = Some(Arc::new(f));
        self
    }

    /// Starts each new pool where the last communicator of its shape in
    /// `shared` got to, and keeps what this one learns there.
    pub fn with_shared(mut self, shared: Shared) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Predicts candidates' times with `link` instead of fitting a model
    /// to what the pools measured.
    pub fn with_link(mut self, link: Link) -> Self {
        self.link = Some(link);
        self
    }

    /// Predicts with `link`, a model a probe measured, where what the
    /// pools measured cannot be fitted near the pool's size.
    pub fn with_probed(mut self, link: Link) -> Self {
        self.probed = Some(link);
        self
    }

    /// The shape of the communicator it selects for, under which it shares
    /// what it learns (set by the communicator).
    pub fn set_shape(&mut self, shape: CommShape) {
        self.shape = Some(shape);
    }

    /// Starts from what `store` holds (on rank 0) and saves back to it.
    pub fn with_store(mut self, mut store: Store) -> Self {
        self.prior = store.load();
        self.store = Some(store);
        self
    }

    /// Whether the state file held what an earlier run learned (on rank
    /// 0; other ranks load nothing).
    pub fn restored(&self) -> bool {
        !self.prior.is_empty()
    }

    /// Whether the call just chosen (until its time is recorded) paid for a
    /// draw message: the reduction and broadcast ran inside it.
    pub fn after_message(&self) -> bool {
        self.in_flight.is_some_and(|call| call.after_message)
    }

    /// The scheduler's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Every pool so far.
    pub fn pools(&self) -> &BTreeMap<Key, Pool> {
        &self.pools
    }

    /// A pool for `key`'s calls, starting from what this shape's
    /// communicators or the state file know, its incumbent set and, on
    /// rank 0 under a budget, its candidates' predicted times.
    fn new_pool(&mut self, key: Key, bytes: usize, group: &dyn Group) -> Result<Pool> {
        let mut candidates = match &self.candidates {
            Some(f) => f(key.op, key.ranks, bytes),
            None => default_candidates(key.op, key.ranks, bytes, group.host_count()),
        };
        let incumbent = self
            .incumbent
            .as_ref()
            .and_then(|f| f(key.op, key.ranks, bytes));
        if let Some(imp) = incumbent.as_ref().filter(|imp| !candidates.contains(imp)) {
            candidates.push(imp.clone());
        }
        if candidates.is_empty() {
            return Err(Error::Config(format!(
                "the lottery has no candidates for {} at {bytes} bytes",
                key.op
            )));
        }
        let mut pool = Pool::new(candidates);
        pool.set_home(&self.params);
        if let Some(imp) = incumbent {
            let index = pool.candidates.iter().position(|s| s.imp == imp);
            pool.set_incumbent(index.expect("added above"));
        }
        if let Some(known) = self.known(&key) {
            pool.resume(&known.candidates, &self.params);
            pool.spent_s = known.spent_s;
            pool.lost_s = known.lost_s;
        }
        if let (Some(budget), 0) = (self.params.budget, group.rank()) {
            self.predict(&mut pool, bytes, group, &budget);
        }
        Ok(pool)
    }

    /// What the communicators of this shape learned of `key`, else what
    /// the state file held.
    fn known(&self, key: &Key) -> Option<Learned> {
        let shared = self.shared.as_ref().zip(self.shape.as_ref());
        shared
            .and_then(|(shared, shape)| shared.get(shape, key))
            .or_else(|| self.prior.get(key).cloned())
    }
}

impl Lottery {
    /// Brings the times of the periods since the last draw message to rank
    /// 0, which feeds them to `key`'s pool.
    fn learn(&mut self, group: &mut dyn Group, key: Key) -> Result<()> {
        let mut ended = std::mem::take(self.recorded.entry(key).or_default());
        let measure = Measure::of(key.op, self.params.objective);
        let times = agreed_times(group, &ended, measure)?;
        let params = &self.params;
        let pool = self
            .pools
            .get_mut(&key)
            .expect("a pool exists before its first draw");
        let periods = || ended.periods.iter().zip(&times);
        pool.charge(
            periods().map(|(period, t)| (period.index, &t[..], period.switched)),
            params,
        );
        pool.settle_all(
            periods().map(|(period, t)| (period.index, period.clean(t))),
            params,
        );
        if let (Some(shared), Some(shape), false) = (&self.shared, &self.shape, times.is_empty()) {
            shared.put(shape, key, Learned::of(pool));
        }
        ended.periods.clear();
        ended.calls.clear();
        self.recorded.insert(key, ended);
        Ok(())
    }

    /// The candidate `index` of `key`'s pool, noted as the call in flight.
    fn chosen(&mut self, key: Key, index: usize, after_message: bool) -> Implementation {
        let pool = &self.pools[&key];
        let (call, imp) = InFlight::of(pool, key, index, after_message);
        self.in_flight = Some(call);
        imp
    }
}

/// How a call's time is read from the ranks' times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Measure {
    /// [`Objective::Slowest`]: with one clock, the call's span (latest
    /// leave − earliest enter over all ranks, the truth's measure);
    /// without, the slowest rank's own time, which a rank that entered
    /// late may understate.
    Slowest,
    /// [`Objective::Mean`]: the mean of the ranks' own times.
    Mean,
    /// A barrier's: the fastest rank's own time, that of the last to
    /// arrive. A barrier is there to line the ranks up: every other
    /// measure is mostly the early arrivers' wait, which no implementation
    /// changes and which depends on what the program did before (a
    /// program's first barriers after uneven work waited milliseconds, its
    /// barriers back to back a fifth of one, and a tree tried only back to
    /// back looked faster than the MPI library's own, measured in both).
    Last,
}

impl Measure {
    fn of(op: Collective, objective: Objective) -> Measure {
        match (op, objective) {
            (Collective::Barrier, _) => Measure::Last,
            (_, Objective::Slowest) => Measure::Slowest,
            (_, Objective::Mean) => Measure::Mean,
        }
    }
}

/// The times of the ended periods' calls over all ranks, at rank 0, one
/// list per period (other ranks get no lists), as `measure` reads them
/// (the span's enter times are negated so that one maximum serves both).
fn agreed_times(
    group: &mut dyn Group,
    recorded: &Recorded,
    measure: Measure,
) -> Result<Vec<Vec<f64>>> {
    let raw = &recorded.calls;
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let n = raw.len();
    let span = measure == Measure::Slowest && group.shared_clock();
    let mut v: Vec<f64> = if span {
        let leaves = raw.iter().map(|&(_, leave)| leave as f64);
        let enters = raw.iter().map(|&(enter, _)| -(enter as f64));
        leaves.chain(enters).collect()
    } else {
        raw.iter()
            .map(|&(e, l)| l.saturating_sub(e) as f64)
            .collect()
    };
    let fold = match measure {
        Measure::Slowest => Fold::Max,
        Measure::Mean => Fold::Mean,
        Measure::Last => Fold::Min,
    };
    group.fold_to_rank0(&mut v, fold)?;
    if group.rank() != 0 {
        return Ok(Vec::new());
    }
    let ns = |i: usize| if span { v[i] + v[n + i] } else { v[i] };
    let mut times = (0..n).map(|i| ns(i) * 1e-9);
    Ok(recorded
        .periods
        .iter()
        .map(|p| times.by_ref().take(p.calls).collect())
        .collect())
}

impl Selector for Lottery {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> Result<Implementation> {
        let key = Key::of(op, group.size(), bytes);
        match self.pools.get_mut(&key) {
            Some(pool) => {
                if let Some(index) = pool.next_call() {
                    // Most calls end here: one lookup of the pool, not two.
                    let (call, imp) = InFlight::of(pool, key, index, false);
                    self.in_flight = Some(call);
                    return Ok(imp);
                }
            }
            None => {
                let pool = self.new_pool(key, bytes, group)?;
                self.pools.insert(key, pool);
            }
        }
        let started = Instant::now();
        self.learn(group, key)?;
        let params = self.params.clone();
        let slots = params.slots();
        let us: Vec<f64> = (0..slots).map(|_| self.rng.uniform()).collect();
        let pool = self.pools.get_mut(&key).expect("made above");
        let mut msg = vec![0u64; 2 * slots];
        if group.rank() == 0 {
            for (slot, d) in pool.draw_ahead(&us, &params).iter().enumerate() {
                msg[2 * slot] = d.index as u64;
                msg[2 * slot + 1] = u64::from(d.ttl);
            }
        }
        group.share_rank0(&mut msg)?;
        let draws = check_draws(&msg, pool.candidates.len())?;
        pool.adopt(&draws);
        pool.note_message(started.elapsed().as_secs_f64());
        let index = pool
            .next_call()
            .expect("a draw holds for at least one call");
        Ok(self.chosen(key, index, true))
    }

    fn wants_times(&self) -> bool {
        true
    }

    fn record(&mut self, _imp: &Implementation, _bytes: usize, enter_ns: u64, leave_ns: u64) {
        let Some(call) = self.in_flight.take() else {
            return;
        };
        let recorded = self.recorded.entry(call.key).or_default();
        recorded.calls.push((enter_ns, leave_ns));
        let switched = call.after_message || recorded.last != Some(call.index);
        recorded.last = Some(call.index);
        match recorded.periods.last_mut() {
            Some(p) if p.number == call.period => p.calls += 1,
            _ => recorded.periods.push(Period {
                number: call.period,
                index: call.index,
                calls: 1,
                switched,
            }),
        }
    }

    /// Learns from each pool's periods since its last draw message: a
    /// program that calls a size fewer times than a hold would otherwise
    /// never learn from it, nor count its time in the budget, run after
    /// run. Every rank recorded the same calls, so all take the same steps.
    fn finish(&mut self, group: &mut dyn Group) -> Result<()> {
        let keys: Vec<Key> = self
            .recorded
            .iter()
            .filter(|(_, r)| !r.calls.is_empty())
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.learn(group, key)?;
        }
        Ok(())
    }

    /// Saves every pool of this communicator's shape that the process
    /// learned, or this lottery's own without a [`Shared`].
    fn save(&mut self) -> Result<()> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let pools = match (&self.shared, &self.shape) {
            (Some(shared), Some(shape)) => shared.pools(shape),
            _ => self
                .pools
                .iter()
                .map(|(k, p)| (*k, Learned::of(p)))
                .collect(),
        };
        store.save(&pools)
    }

    fn offspring(&mut self, ranks: &Offspring<'_>) -> Option<Box<dyn Selector>> {
        Some(Box::new(self.offspring_lottery(ranks)))
    }
}

/// The draws of a message from rank 0, (candidate, TTL) pairs: the first
/// must name a candidate and hold for at least a call; a TTL of 0 ends the
/// list.
fn check_draws(msg: &[u64], candidates: usize) -> Result<Vec<Draw>> {
    let mut draws = Vec::new();
    for (slot, pair) in msg.chunks_exact(2).enumerate() {
        let (index, ttl) = (pair[0], pair[1]);
        if ttl == 0 && slot > 0 {
            break;
        }
        if index as usize >= candidates || ttl == 0 || ttl > u64::from(u32::MAX) {
            return Err(Error::Protocol {
                peer: "rank 0".into(),
                reason: format!("lottery draw ({index}, {ttl}) for {candidates} candidates: do the ranks use the same candidates and parameters?"),
            });
        }
        draws.push(Draw {
            index: index as usize,
            ttl: ttl as u32,
        });
    }
    Ok(draws)
}

#[cfg(test)]
mod tests;
