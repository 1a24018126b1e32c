//! Which implementation runs a call. Collectives never decide: a
//! [`Selector`] does, and hears back how long each call took.

mod implementation;
pub mod lottery;

use std::collections::HashMap;

pub use implementation::{format_bytes, parse_bytes, Algorithm, Collective, Implementation};

use crate::tree::Shape;

/// Chooses the implementation of each call and learns from its time.
pub trait Selector: Send {
    /// The implementation for `op` on `ranks` ranks with `bytes` per rank.
    fn select(&mut self, op: Collective, ranks: usize, bytes: usize) -> Implementation;

    /// True when the communicator should time calls and report them with
    /// `record`; false spares the clock reads.
    fn wants_times(&self) -> bool {
        false
    }

    /// How long a call took, in seconds; the default ignores it.
    fn record(&mut self, _imp: &Implementation, _ranks: usize, _bytes: usize, _seconds: f64) {}
}

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
    fn select(&mut self, op: Collective, ranks: usize, bytes: usize) -> Implementation {
        match self.choices.get(&op) {
            Some(imp) => imp.clone(),
            None => default_for(op, ranks, bytes),
        }
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
        Collective::Allgather if large => named(Algorithm::Ring),
        Collective::Allgather => named(Algorithm::RecursiveDoubling),
        Collective::Barrier => named(Algorithm::Dissemination),
    }
}
