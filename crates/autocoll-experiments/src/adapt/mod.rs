//! The lottery's adaptation (the paper's Figure 7/8 experiment). K calls
//! of every candidate and K calls under the `Lottery` selector,
//! interleaved round by round so that the machine's drift hits all alike;
//! then each one's mean and median, the oracle (the best fixed candidate
//! by mean), and how the lottery compares with it.
//!
//! Every timed call starts after an untimed barrier. Per-call time, agreed
//! by all ranks: with a shared clock the call's span,
//! max(leave) − min(enter) over the ranks; otherwise the longest rank's
//! duration. Lottery calls are timed around the plain call, so they include
//! the selector's agreement collectives at each draw.
//!
//! Definitions. `settled_at_call`: the first call (1-based) from which the
//! final choice holds the majority of every later 50-call window (`null`
//! when the last window has no majority). `near_best_from_call`: the same
//! for the candidates whose mean is within 3% of the oracle's taken
//! together (near-equal candidates can trade the lead at random for the
//! whole run). `explore_share`: the share of
//! lottery calls not on the pool's best candidate at that time.
//! `final_impl`: the pool's best candidate after the last call.
//!
//! The parts: [`run`] runs the series on every rank, `log` notes what
//! the lottery chose on every call, [`report`] turns a run's [`Trace`]
//! into the report, [`disturb`] slows a link halfway and [`replay`] runs
//! the lottery again over a recorded run.

use std::path::PathBuf;
use std::time::Duration;

use autocoll::select::lottery::Params;
use autocoll::select::Lottery;
use autocoll::{Collective, Implementation, Shape};

pub mod disturb;
mod log;
pub mod replay;
pub mod report;
mod run;

pub use disturb::{Disturb, Outside};
pub use log::Trace;
pub use run::run;

/// What every rank needs to run the experiment.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The collective.
    pub op: Collective,
    /// Ranks of the job.
    pub ranks: usize,
    /// Bytes per rank.
    pub bytes: usize,
    /// Root of rooted collectives.
    pub root: usize,
    /// Calls per candidate and under the lottery.
    pub calls: usize,
    /// The fixed candidates, which are also the lottery's.
    pub candidates: Vec<Implementation>,
    /// The lottery's parameters.
    pub params: Params,
    /// Seed of the lottery's draws and of the order of the series.
    pub seed: u64,
    /// Runs, with seeds `seed`, `seed + 1`, …
    pub seeds: u64,
    /// The lottery's state file: read at the start, written at the end.
    pub state: Option<PathBuf>,
    /// What slows the run from its middle call on.
    pub disturb: Option<Disturb>,
    /// How long a rank waits for a peer.
    pub timeout: Duration,
}

/// The paper's four trees, segmented at 16K when the message is longer.
pub fn paper_trees(op: Collective, bytes: usize) -> Vec<Implementation> {
    let seg = (bytes > 16 * 1024 && op != Collective::Barrier).then_some(16 * 1024);
    [Shape::Flat, Shape::Chain, Shape::Binary, Shape::Binomial]
        .into_iter()
        .map(|s| Implementation::tree(op, s, seg).expect("trees of every collective"))
        .collect()
}

impl Setup {
    /// The lottery this setup runs: its parameters, seed and candidates (a
    /// replay builds the very same one).
    pub fn lottery(&self) -> Lottery {
        let candidates = self.candidates.clone();
        Lottery::new(self.params.clone(), self.seed)
            .with_candidates(move |_, _, _| candidates.clone())
    }

    /// This setup once per seed of [`Setup::seeds`].
    pub fn each_seed(&self) -> impl Iterator<Item = Setup> + '_ {
        (0..self.seeds).map(|k| Setup {
            seed: self.seed + k,
            ..self.clone()
        })
    }

    /// The candidates' names, as the report gives them.
    pub fn names(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.to_string()).collect()
    }
}
