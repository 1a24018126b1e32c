//! Which implementation runs a call. Collectives never decide: a
//! [`Selector`] does, and hears back how long each call took.
//!
//! The communicator asks its selector on every plain call (`bcast`, not
//! `bcast_with`) and, when it wants times, reports each call's enter and
//! leave. Selectors that must agree across ranks do it through a [`Group`]
//! of small fixed collectives that never come back here. Three ship:
//! [`Fixed`] (MPI-like defaults), [`Table`] (a tuning file from `autocoll
//! tune`) and [`Lottery`] (learns at run time, and can keep what it learned
//! in a [`state`] file, shared by communicators of one shape). Under a
//! budget the lottery tries a candidate only where [`estimate`], a model
//! of the machine, says it could beat the incumbent. Every
//! [`Implementation`] has one text id, the name the command, tuning files
//! and results use, and [`export`] writes a table as Open MPI's and
//! MPICH's selection files.

mod adaptive;
pub mod estimate;
pub mod export;
mod implementation;
pub mod lottery;
pub mod state;
mod table;

use std::collections::HashMap;

/// Moved to [`crate::ids`]; the old path kept for the binary and the other crates.
pub use crate::ids::Collective;
pub use adaptive::{default_candidates, Lottery};
pub use implementation::{format_bytes, parse_bytes, Algorithm, Implementation};
pub use table::{Rule, Table};

use crate::error::Result;

use crate::tree::Shape;

/// What a selector may ask of the ranks so that all of them run the same
/// implementation. The communicator provides it with fixed, small
/// collectives that never go through a selector.
pub trait Group {
    /// This rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// True when all ranks read one monotonic clock.
    fn shared_clock(&self) -> bool;
    /// The number of hosts the ranks run on (candidates that follow the
    /// hosts, `hier` trees, join a lottery only above one).
    fn host_count(&self) -> usize {
        1
    }
    /// Where the ranks run, when that is known (a model's predictions need
    /// it).
    fn ranks_layout(&self) -> Option<std::sync::Arc<crate::layout::Layout>> {
        None
    }
    /// Replaces every value on rank 0 by its maximum, mean or minimum over
    /// all ranks, as `how` says (the other ranks' values are left as they
    /// were).
    fn fold_to_rank0(&mut self, values: &mut [f64], how: Fold) -> Result<()>;
    /// Replaces `values` on every rank by rank 0's.
    fn share_rank0(&mut self, values: &mut [u64]) -> Result<()>;
}

/// How [`Group::fold_to_rank0`] combines the ranks' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// The maximum over all ranks.
    Max,
    /// The mean over all ranks.
    Mean,
    /// The minimum over all ranks.
    Min,
}

/// Chooses the implementation of each call and learns from its time.
///
/// Every rank calls `select` for every call, in the same order, so a
/// selector that must agree across ranks can use the [`Group`].
pub trait Selector: Send {
    /// The implementation for `op` with `bytes` per rank.
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> Result<Implementation>;

    /// True when the communicator should time calls and report them with
    /// `record`; false spares the clock reads.
    fn wants_times(&self) -> bool {
        false
    }

    /// When this rank entered and left a call, in nanoseconds on
    /// [`crate::clock::now_ns`]'s clock; the default ignores it.
    fn record(&mut self, _imp: &Implementation, _bytes: usize, _enter_ns: u64, _leave_ns: u64) {}

    /// Learns from the calls it has not learnt from yet, as the
    /// communicator ends: a collective step, every rank calls it at the
    /// same point. The default has nothing to learn.
    fn finish(&mut self, _group: &mut dyn Group) -> Result<()> {
        Ok(())
    }

    /// Saves what the selector learned, if it keeps anything.
    fn save(&mut self) -> Result<()> {
        Ok(())
    }
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
