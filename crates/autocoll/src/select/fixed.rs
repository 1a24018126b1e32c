//! The selector that never learns: MPI-like defaults, overridable per
//! collective.

use std::collections::HashMap;

use super::implementation::{Algorithm, Implementation};
use super::selector::{Group, Offspring, Selector};
use crate::error::Result;
use crate::ids::Collective;
use crate::tree::Shape;

/// A fixed rule per collective: no learning, no surprises.
///
/// The built-in rule (`Defaults`) follows what MPI libraries ship: binomial
/// trees for small messages, segmented pipelines and ring/Rabenseifner for
/// large ones. `Fixed::new` overrides it for one collective at a time.
#[derive(Clone, Debug, Default)]
pub struct Fixed {
    choices: HashMap<Collective, Implementation>,
}

impl Fixed {
    /// Uses `imp` for its collective, the defaults for the others.
    pub fn new(imp: Implementation) -> Self {
        Fixed::default().with(imp)
    }

    /// Adds `imp` as the choice for its collective.
    pub fn with(mut self, imp: Implementation) -> Self {
        self.choices.insert(imp.op, imp);
        self
    }
}

impl Selector for Fixed {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> Result<Implementation> {
        Ok(match self.choices.get(&op) {
            Some(imp) => imp.clone(),
            None => default_for(op, group.size(), bytes),
        })
    }

    /// The same choices: they hold at every size.
    fn offspring(&mut self, _ranks: &Offspring<'_>) -> Option<Box<dyn Selector>> {
        Some(Box::new(self.clone()))
    }
}

/// Above this many bytes per rank the defaults switch to bandwidth-bound
/// algorithms.
const LARGE: usize = 64 * 1024;

/// The built-in choice when nothing else is known.
pub fn default_for(op: Collective, _ranks: usize, bytes: usize) -> Implementation {
    let large = bytes > LARGE;
    let tree = |shape, seg| Implementation {
        op,
        algorithm: Algorithm::Tree(shape),
        seg,
    };
    let named = |algorithm| Implementation {
        op,
        algorithm,
        seg: None,
    };
    match op {
        Collective::Bcast | Collective::Reduce if large => tree(Shape::Binomial, Some(32 * 1024)),
        Collective::Bcast | Collective::Reduce => tree(Shape::Binomial, None),
        Collective::Scatter | Collective::Gather => tree(Shape::Binomial, None),
        Collective::Allreduce if large => named(Algorithm::Rabenseifner),
        Collective::Allreduce => named(Algorithm::RecursiveDoubling),
        // Uneven blocks make every step of a whole-block ring as long as
        // the largest in flight; in 16 KiB segments they flow on as they
        // come (docs/comparison.md#against-mpich).
        Collective::Allgatherv if bytes >= 16 * 1024 => Implementation {
            op,
            algorithm: Algorithm::Ring,
            seg: Some(16 * 1024),
        },
        Collective::Allgather | Collective::Allgatherv if large => named(Algorithm::Ring),
        Collective::Allgather | Collective::Allgatherv => named(Algorithm::RecursiveDoubling),
        Collective::Barrier => named(Algorithm::Dissemination),
        // Where latency rules, log P rounds beat P − 1 steps (the bound
        // Open MPI and MPICH use too); long blocks keep every link busy
        // with all of them in flight (docs/collectives.md).
        Collective::Alltoall if bytes <= 256 => named(Algorithm::Bruck),
        Collective::Alltoall if bytes <= 32 * 1024 => named(Algorithm::Pairwise),
        Collective::Alltoall => named(Algorithm::Linear(None)),
        // Short prefixes in log P rounds; long ones pipelined, each byte
        // through every link once.
        Collective::Scan | Collective::Exscan if bytes > 16 * 1024 => Implementation {
            op,
            algorithm: Algorithm::Linear(None),
            seg: Some(16 * 1024),
        },
        Collective::Scan | Collective::Exscan => named(Algorithm::RecursiveDoubling),
        // Short blocks: two latencies of a tree beat P − 1 steps; from
        // 1 KiB the ring keeps every link busy (docs/comparison.md).
        Collective::ReduceScatter if bytes <= 256 => tree(Shape::Binomial, None),
        Collective::ReduceScatter => named(Algorithm::Ring),
        // Sizes known to one rank only: every block crosses one link
        // once, as Open MPI's and MPICH's linear ones do.
        Collective::Gatherv | Collective::Scatterv => tree(Shape::Flat, None),
        Collective::Alltoallv => named(Algorithm::Linear(None)),
    }
}
