//! What every method shares: the harness's tags, the job, a repetition's
//! sample, and how the leader tells the others.

use crate::comm::communicator::Communicator;
use crate::error::Result;
use crate::ids::Collective;
use crate::measure::call::control_bcast;
use crate::measure::method::Options;

/// User tags of the harness's point-to-point messages.
pub(crate) mod tags {
    /// Round-trip probes of `ol-i`.
    pub const PING: u64 = 0xA17C_0001;
    /// Acknowledgements to the leader (`ack`, `ol-i`).
    pub const ACK: u64 = 0xA17C_0002;
    /// The leader's release of one rank (`ol-i` for fan-in collectives).
    pub const GO: u64 = 0xA17C_0003;
    /// A finished measurement on its way to rank 0.
    pub const RESULT: u64 = 0xA17C_0004;
}

/// One repetition's outcome at the leader.
pub(crate) struct Sample {
    /// Seconds per call; `None` when every call was discarded.
    pub value: Option<f64>,
    /// Calls discarded in this repetition.
    pub discarded: usize,
    /// `ol-i`: this repetition's OL_i of every rank.
    pub ol_i: Option<Vec<f64>>,
}

impl Sample {
    pub fn of(value: f64) -> Sample {
        Sample {
            value: Some(value),
            discarded: 0,
            ol_i: None,
        }
    }
}

/// What every method needs to know about the job besides the communicator.
pub(crate) struct Job {
    /// The rank that times and decides.
    pub leader: usize,
    /// The root of the calls.
    pub root: usize,
    /// Calls per repetition.
    pub calls: usize,
    /// `truth` spins through its waits ([`Options::spin_waits`]).
    pub spin_waits: bool,
}

impl Job {
    /// The job of calls of `op` from `root`: the root leads a rooted
    /// collective, rank 0 the others.
    pub(super) fn of(op: Collective, root: usize, opts: &Options) -> Job {
        Job {
            leader: if op.rooted() { root } else { 0 },
            root,
            calls: opts.calls.max(1),
            spin_waits: opts.spin_waits,
        }
    }
}

/// Sends `words` from `from` to every rank (a binomial broadcast).
pub(crate) fn share(comm: &mut Communicator, from: usize, words: &mut [u64]) -> Result<()> {
    comm.unbalanced(|c| c.bcast_with(&control_bcast(), words, from))
}
