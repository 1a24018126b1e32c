//! The `Lottery` selector: one [`Pool`] per (collective, communicator size,
//! message-size class), driven through the agreement protocol.
//!
//! Every rank runs the same calls, so every rank's pools count down the
//! same time-to-live and reach a draw at the same call. At a draw the ranks
//! (1) agree on the time of every call of the ending period with one small
//! allreduce (see [`agreed_times`]: the call's span on the shared clock,
//! else the slowest rank's own time), so all ranks feed the same numbers to
//! their averages; (2) rank 0 draws the
//! next candidate and its time-to-live and (3) sends both to every rank
//! with a fixed 16-byte broadcast. Only rank 0's draw counts, so only rank
//! 0 loads and saves the state file.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::lottery::{Draw, Params, Pool, Rng, Stats};
use super::state::Store;
use super::{Collective, Group, Implementation, Selector};
use crate::error::{Error, Result};
use crate::tree::Shape;

/// What a pool is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    /// The collective.
    pub op: Collective,
    /// The communicator size.
    pub ranks: usize,
    /// The message-size class: ⌈log2 bytes⌉ (0 for 0 and 1 byte).
    pub class: u32,
}

impl Key {
    /// The key of a call.
    pub fn of(op: Collective, ranks: usize, bytes: usize) -> Self {
        Key {
            op,
            ranks,
            class: bytes.max(1).next_power_of_two().trailing_zeros(),
        }
    }
}

type Candidates = Box<dyn Fn(Collective, usize, usize) -> Vec<Implementation> + Send>;

/// The paper's lottery scheduler as a selector.
pub struct Lottery {
    params: Params,
    candidates: Candidates,
    pools: BTreeMap<Key, Pool>,
    prior: HashMap<Key, Vec<Stats>>,
    rng: Rng,
    store: Option<Store>,
    in_flight: Option<Key>,
    /// This rank's (enter, leave) of each call of the current periods.
    spans: HashMap<Key, Vec<(u64, u64)>>,
}

impl Lottery {
    /// A lottery with `params`, draws seeded by `seed`, and the default
    /// candidates ([`default_candidates`]).
    pub fn new(params: Params, seed: u64) -> Self {
        Lottery {
            params,
            candidates: Box::new(default_candidates),
            pools: BTreeMap::new(),
            prior: HashMap::new(),
            rng: Rng::new(seed),
            store: None,
            in_flight: None,
            spans: HashMap::new(),
        }
    }

    /// Uses `f(op, ranks, bytes)` for the candidates of each new pool.
    pub fn with_candidates(
        mut self,
        f: impl Fn(Collective, usize, usize) -> Vec<Implementation> + Send + 'static,
    ) -> Self {
        self.candidates = Box::new(f);
        self
    }

    /// Starts from what `store` holds (on rank 0) and saves back to it.
    pub fn with_store(mut self, mut store: Store) -> Self {
        self.prior = store.load();
        self.store = Some(store);
        self
    }

    /// The scheduler's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Every pool so far.
    pub fn pools(&self) -> &BTreeMap<Key, Pool> {
        &self.pools
    }

    fn pool(&mut self, key: Key, bytes: usize) -> Result<&mut Pool> {
        if !self.pools.contains_key(&key) {
            let mut pool = Pool::new((self.candidates)(key.op, key.ranks, bytes));
            if pool.candidates.is_empty() {
                return Err(Error::Config(format!(
                    "the lottery has no candidates for {} at {bytes} bytes",
                    key.op
                )));
            }
            if let Some(known) = self.prior.get(&key) {
                for stats in &mut pool.candidates {
                    if let Some(old) = known.iter().find(|s| s.imp == stats.imp) {
                        *stats = old.clone();
                    }
                }
            }
            self.pools.insert(key, pool);
        }
        Ok(self.pools.get_mut(&key).expect("inserted above"))
    }
}

impl Lottery {
    /// The candidate `index` of `key`'s pool, noted as the call in flight.
    fn chosen(&mut self, key: Key, index: usize) -> Implementation {
        self.in_flight = Some(key);
        self.pools[&key].candidates[index].imp.clone()
    }
}

/// The times of the ended period's calls as every rank agrees on them. With
/// one clock, each call's span: latest leave − earliest enter over all
/// ranks, the truth's measure (the enter times are negated so that one
/// maximum serves both). Without, the slowest rank's own time in the call,
/// which a rank that entered late may understate.
fn agreed_times(group: &mut dyn Group, raw: &[(u64, u64)]) -> Result<Vec<f64>> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    if group.shared_clock() {
        let n = raw.len();
        let leaves = raw.iter().map(|&(_, leave)| leave as f64);
        let enters = raw.iter().map(|&(enter, _)| -(enter as f64));
        let mut v: Vec<f64> = leaves.chain(enters).collect();
        group.max_all(&mut v)?;
        return Ok((0..n).map(|i| (v[i] + v[n + i]) * 1e-9).collect());
    }
    let mut v: Vec<f64> = raw
        .iter()
        .map(|&(e, l)| l.saturating_sub(e) as f64 * 1e-9)
        .collect();
    group.max_all(&mut v)?;
    Ok(v)
}

impl Selector for Lottery {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> Result<Implementation> {
        let key = Key::of(op, group.size(), bytes);
        let params = self.params.clone();
        let u = self.rng.uniform();
        if let Some(index) = self.pool(key, bytes)?.next_call() {
            return Ok(self.chosen(key, index));
        }
        let raw = self.spans.remove(&key).unwrap_or_default();
        let times = agreed_times(group, &raw)?;
        let pool = self.pool(key, bytes)?;
        pool.settle(&times, &params);
        let mut msg = [0u64; 2];
        if group.rank() == 0 {
            let d = pool.draw(u, &params);
            msg = [d.index as u64, u64::from(d.ttl)];
        }
        group.share_rank0(&mut msg)?;
        pool.adopt(check_draw(msg, pool.candidates.len())?);
        let index = pool
            .next_call()
            .expect("a draw holds for at least one call");
        Ok(self.chosen(key, index))
    }

    fn wants_times(&self) -> bool {
        true
    }

    fn record(&mut self, _imp: &Implementation, _bytes: usize, enter_ns: u64, leave_ns: u64) {
        if let Some(key) = self.in_flight.take() {
            self.spans
                .entry(key)
                .or_default()
                .push((enter_ns, leave_ns));
        }
    }

    fn save(&mut self) -> Result<()> {
        match &self.store {
            Some(store) => store.save(&self.pools),
            None => Ok(()),
        }
    }
}

/// A draw from rank 0 must name a candidate and hold for at least a call.
fn check_draw(msg: [u64; 2], candidates: usize) -> Result<Draw> {
    let [index, ttl] = msg;
    if index as usize >= candidates || ttl == 0 || ttl > u64::from(u32::MAX) {
        return Err(Error::Protocol {
            peer: "rank 0".into(),
            reason: format!("lottery draw ({index}, {ttl}) for {candidates} candidates: do the ranks use the same candidates?"),
        });
    }
    Ok(Draw {
        index: index as usize,
        ttl: ttl as u32,
    })
}

/// The default candidates: the paper's four trees (flat, chain, binary,
/// binomial) and knomial k=4, unsegmented and, where the message is longer,
/// at 16 KiB and 64 KiB segments, plus the collective's named algorithms.
pub fn default_candidates(op: Collective, _ranks: usize, bytes: usize) -> Vec<Implementation> {
    let shapes = [
        Shape::Flat,
        Shape::Chain,
        Shape::Binary,
        Shape::Binomial,
        Shape::Knomial(4),
    ];
    let segs: Vec<Option<usize>> = std::iter::once(None)
        .chain(
            [16 * 1024, 64 * 1024]
                .into_iter()
                .filter(|&s| s < bytes && op != Collective::Barrier)
                .map(Some),
        )
        .collect();
    let mut out: Vec<Implementation> = shapes
        .iter()
        .flat_map(|shape| segs.iter().map(move |&seg| (shape.clone(), seg)))
        .map(|(shape, seg)| Implementation::tree(op, shape, seg).expect("valid by construction"))
        .collect();
    out.extend(
        op.named_algorithms()
            .iter()
            .map(|a| Implementation::new(op, a.clone(), None).expect("named")),
    );
    out
}
