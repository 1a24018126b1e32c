//! The crate's errors.

/// What went wrong running an experiment or reading a recorded one.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A collective or the communicator failed.
    #[error(transparent)]
    Comm(#[from] autocoll::Error),
    /// The lottery's state file could not be written.
    #[error("saving the lottery's state")]
    Save(#[source] autocoll::Error),
    /// A balancer could not be put into the communicator.
    #[error("making a balancer")]
    Balancer(#[source] autocoll::Error),
    /// A rank of a job of threads failed.
    #[error("{ranks}-rank job, rank {rank}")]
    Rank {
        /// The job's ranks.
        ranks: usize,
        /// The rank that failed.
        rank: usize,
        /// Why.
        source: Box<Error>,
    },
    /// Rank 0 of a job returned no trace, or not one per seed.
    #[error("rank 0 returned {found} traces for {wanted} runs")]
    Traces {
        /// Traces returned.
        found: usize,
        /// Runs asked for.
        wanted: usize,
    },
    /// The change outside the job (a throttled link) failed.
    #[error("{0}")]
    Outside(String),
    /// A text given to a parser (a load, a disturbance) is not one.
    #[error("{0}")]
    Spec(String),
    /// A recorded run is not JSON of `autocoll adapt`.
    #[error("{0}")]
    Recorded(String),
    /// A recorded run cannot be replayed.
    #[error("run {run}: {why}")]
    Unusable {
        /// The run's place in its file, from 1.
        run: usize,
        /// Why.
        why: String,
    },
    /// A recorded run's file is not JSON.
    #[error("not JSON")]
    NotJson(#[source] serde_json::Error),
    /// Replaying a recorded run failed.
    #[error("run {run}")]
    Replay {
        /// The run's place in its file, from 1.
        run: usize,
        /// Why.
        source: Box<Error>,
    },
    /// A recorded run is JSON but not a run with per-call times.
    #[error("run {run}: not a recorded run with per-call times")]
    NotARun {
        /// The run's place in its file, from 1.
        run: usize,
        /// Why.
        source: serde_json::Error,
    },
}
