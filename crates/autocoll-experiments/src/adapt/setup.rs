//! What every rank needs to run the experiment, and the default candidates.

use std::path::PathBuf;
use std::time::Duration;

use autocoll::select::lottery::Params;
use autocoll::select::Lottery;
use autocoll::{Collective, Implementation, Shape};

use super::disturb::Disturb;

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

/// The paper's four trees, segmented at 16K when the message is longer;
/// for a collective that runs over no tree, its named algorithms.
pub fn paper_trees(op: Collective, bytes: usize) -> Vec<Implementation> {
    if !op.over_trees() {
        return op
            .named_algorithms()
            .iter()
            .map(|a| Implementation::new(op, a.clone(), None).expect("named"))
            .collect();
    }
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
