//! The `Lottery` selector: one [`Pool`] per (collective, communicator size,
//! message-size class), driven through the agreement protocol.
//!
//! Every rank runs the same calls, so every rank's pools count down the
//! same time-to-live and reach a draw at the same call. At a draw the ranks
//! (1) replace the times of the calls of the ending period by their maximum
//! over all ranks, so all ranks feed the same numbers to their averages;
//! the maximum of the per-rank durations is the call's span as the slowest
//! rank saw it, the cost the program actually pays; (2) rank 0 draws the
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
        let pool = self.pool(key, bytes)?;
        let index = match pool.next_call() {
            Some(index) => index,
            None => {
                let mut times = pool.take_period();
                if !times.is_empty() {
                    group.max_all(&mut times)?;
                }
                pool.settle(&times, &params);
                let mut msg = [0u64; 2];
                if group.rank() == 0 {
                    let d = pool.draw(u, &params);
                    msg = [d.index as u64, u64::from(d.ttl)];
                }
                group.share_rank0(&mut msg)?;
                pool.adopt(check_draw(msg, pool.candidates.len())?);
                pool.next_call()
                    .expect("a draw holds for at least one call")
            }
        };
        let imp = pool.candidates[index].imp.clone();
        self.in_flight = Some(key);
        Ok(imp)
    }

    fn wants_times(&self) -> bool {
        true
    }

    fn record(&mut self, _imp: &Implementation, _bytes: usize, seconds: f64) {
        if let Some(pool) = self.in_flight.take().and_then(|k| self.pools.get_mut(&k)) {
            pool.record(seconds);
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
