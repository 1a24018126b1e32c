//! The lottery's predictions: what each candidate of a new pool would
//! take on this machine, so that a budget tries only those that could win.
//! The model is the one given; else one fitted to the times the pools
//! have measured, where they measured sizes near the pool's (a time per
//! byte read off calls of a few bytes is the latencies' leftovers, and
//! would rule on megabytes), its time per byte no slower than a start-up
//! probe measured; else the probe's.

use std::collections::BTreeMap;

use super::{Key, Lottery};
use crate::layout::Layout;
use crate::select::estimate::{self, Cost, Link};
use crate::select::implementation::Implementation;
use crate::select::lottery::{Budget, Pool};
use crate::select::selector::Group;
use crate::select::state::Learned;

/// How many size classes (doublings) above the largest it saw a fitted
/// model predicts.
const NEAR_CLASSES: u32 = 2;

impl Lottery {
    /// Sets the pool's predicted times, from the given model, one fitted
    /// to the times measured near the pool's size, or the probed one; none
    /// without a layout or a model.
    pub(super) fn predict(
        &mut self,
        pool: &mut Pool,
        bytes: usize,
        group: &dyn Group,
        budget: &Budget,
    ) {
        let Some(layout) = group.ranks_layout() else {
            return;
        };
        let class = Key::class(bytes);
        let link = match self.link {
            Some(given) => Some(given),
            None => match (self.fitted(&layout, class), self.probed) {
                (Some(fit), Some(probed)) => Some(fit.bytes_no_slower_than(probed)),
                (fit, probed) => fit.or(probed),
            },
        };
        let Some(link) = link else {
            return;
        };
        let times: Vec<Option<f64>> = pool
            .candidates
            .iter()
            .map(|s| self.cost(&s.imp, &layout, class).map(|c| link.time(&c)))
            .collect();
        pool.set_predictions(&times, budget.model_slack);
    }

    /// What `imp` asks of the machine at size class `class`, worked out
    /// once: a cost replays the algorithm's messages, and fitting asks
    /// for every measured candidate's at each new pool.
    fn cost(&mut self, imp: &Implementation, layout: &Layout, class: u32) -> Option<Cost> {
        let key = (layout.size(), class, imp.clone());
        if let Some(known) = self.costs.get(&key) {
            return *known;
        }
        let bytes = 1usize << class.min(40);
        let cost = estimate::cost(imp, layout, bytes);
        self.costs.insert(key, cost);
        cost
    }

    /// A model fitted to every average measured on this communicator's
    /// size, here and in what it resumed from (each candidate's cost at
    /// its pool's size class against its average); none for size class
    /// `class` more than [`NEAR_CLASSES`] above the largest it saw.
    fn fitted(&mut self, layout: &Layout, class: u32) -> Option<Link> {
        let mut learned: BTreeMap<Key, Learned> =
            self.prior.iter().map(|(k, l)| (*k, l.clone())).collect();
        if let (Some(shared), Some(shape)) = (&self.shared, &self.shape) {
            learned.extend(shared.pools(shape));
        }
        learned.extend(self.pools.iter().map(|(k, p)| (*k, Learned::of(p))));
        let measured: Vec<(u32, Implementation, f64)> = learned
            .iter()
            .filter(|(key, _)| key.ranks == layout.size())
            .flat_map(|(key, l)| {
                l.candidates
                    .iter()
                    .filter(|s| s.count >= self.params.min_tries && s.mean_s > 0.0)
                    .map(move |s| (key.class, s.imp.clone(), s.mean_s))
            })
            .collect();
        let largest = measured.iter().map(|m| m.0).max()?;
        if class > largest + NEAR_CLASSES {
            return None;
        }
        let points: Vec<(Cost, f64)> = measured
            .into_iter()
            .filter_map(|(class, imp, mean)| Some((self.cost(&imp, layout, class)?, mean)))
            .collect();
        Link::fit(&points)
    }
}

#[cfg(test)]
mod tests;
