//! Beyond the paper (its future work): a search guided by the estimator,
//! and the spread of random placements.
//!
//! The search is simulated annealing over swaps of two ranks' processing
//! elements (a rank swapped with an idle processing element moves there),
//! from a start mapping, keeping the best seen. The temperature falls
//! geometrically from 5% to 0.01% of the start's cost over the budget of
//! evaluations, so the end is a descent. It stops at that budget or at a
//! time limit, whichever comes first; with the time limit out of reach
//! the result depends on the seed alone.

use std::time::{Duration, Instant};

use autocoll::select::lottery::Rng;

use crate::error::Result;
use crate::estimate::Estimator;
use crate::mapping::fits;
use crate::mapping::Mapping;
use crate::topology::Topology;
use crate::traffic::Traffic;

/// How long a search may run.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Evaluations of the estimator at most.
    pub evaluations: usize,
    /// Wall-clock time at most.
    pub time: Duration,
    /// The generator's seed.
    pub seed: u64,
}

impl Default for Budget {
    /// 20 000 evaluations or 2 s, seed 1.
    fn default() -> Budget {
        Budget {
            evaluations: 20_000,
            time: Duration::from_secs(2),
            seed: 1,
        }
    }
}

/// Every processing element's task: the ranks of `start`, then idle ones
/// on the processing elements left.
fn padded(start: &Mapping, pes: usize) -> Vec<usize> {
    let mut used = vec![false; pes];
    let mut out = start.pes().to_vec();
    for &p in start.pes() {
        used[p] = true;
    }
    out.extend((0..pes).filter(|&p| !used[p]));
    out
}

fn below(rng: &mut Rng, n: usize) -> usize {
    ((rng.uniform() * n as f64) as usize).min(n - 1)
}

/// The best mapping the search finds from `start`.
pub fn search(
    topology: &Topology,
    traffic: &Traffic,
    start: &Mapping,
    budget: Budget,
) -> Result<Mapping> {
    fits(traffic.ranks(), topology)?;
    let estimator = Estimator::new(topology);
    let ranks = traffic.ranks();
    let pes = topology.pe_count();
    let mut current = padded(start, pes);
    let mut cost = estimator.cost_of(traffic, &current[..ranks]);
    let mut best = (cost, current.clone());
    if ranks < 2 || cost == 0.0 {
        return Mapping::new(best.1[..ranks].to_vec(), pes);
    }
    let mut rng = Rng::new(budget.seed);
    let (hot, cold) = (0.05 * cost, 1e-4 * cost);
    let cooling = (cold / hot).powf(1.0 / budget.evaluations.max(1) as f64);
    let mut temperature = hot;
    let began = Instant::now();
    for _ in 0..budget.evaluations {
        // A clock read costs nothing beside an evaluation (µs to ms).
        if began.elapsed() >= budget.time {
            break;
        }
        let a = below(&mut rng, ranks);
        let b = below(&mut rng, pes - 1);
        let b = if b >= a { b + 1 } else { b };
        current.swap(a, b);
        let next = estimator.cost_of(traffic, &current[..ranks]);
        let accept = next <= cost || rng.uniform() < ((cost - next) / temperature).exp();
        if accept {
            cost = next;
            if cost < best.0 {
                best = (cost, current.clone());
            }
        } else {
            current.swap(a, b);
        }
        temperature *= cooling;
    }
    Mapping::new(best.1[..ranks].to_vec(), pes)
}

/// The estimated costs of random placements.
#[derive(Clone, Debug)]
pub struct Spread {
    /// How many placements were drawn.
    pub samples: usize,
    /// The lowest cost, and its mapping.
    pub best: (f64, Mapping),
    /// The median cost.
    pub median: f64,
    /// The highest cost.
    pub worst: f64,
}

/// `samples` (at least 1) random placements, uniformly drawn, from `seed`.
pub fn random(topology: &Topology, traffic: &Traffic, samples: usize, seed: u64) -> Result<Spread> {
    fits(traffic.ranks(), topology)?;
    let estimator = Estimator::new(topology);
    let (ranks, pes) = (traffic.ranks(), topology.pe_count());
    let mut rng = Rng::new(seed);
    let mut perm: Vec<usize> = (0..pes).collect();
    let mut costs = Vec::with_capacity(samples.max(1));
    let mut best: Option<(f64, Vec<usize>)> = None;
    for _ in 0..samples.max(1) {
        for i in (1..pes).rev() {
            perm.swap(i, below(&mut rng, i + 1));
        }
        let c = estimator.cost_of(traffic, &perm[..ranks]);
        costs.push(c);
        if best.as_ref().is_none_or(|b| c < b.0) {
            best = Some((c, perm[..ranks].to_vec()));
        }
    }
    costs.sort_by(f64::total_cmp);
    let (c, m) = best.expect("at least one sample");
    Ok(Spread {
        samples: costs.len(),
        best: (c, Mapping::new(m, pes)?),
        median: costs[costs.len() / 2],
        worst: costs[costs.len() - 1],
    })
}
