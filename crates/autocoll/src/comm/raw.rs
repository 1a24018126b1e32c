//! A call given as bytes, as a foreign caller (the MPI interposition
//! library) hands it over, and the checks of its buffers' lengths.

use crate::error::{Error, Result};
use crate::ids::Collective;

pub(crate) fn expect_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::BufferSize {
            what,
            expected,
            got,
        });
    }
    Ok(())
}

/// A combining function on bytes: `acc ← acc ⊕ inc`, element by element.
pub type RawCombine<'a> = dyn Fn(&mut [u8], &[u8]) + Sync + 'a;

/// One call's arguments as bytes (see [`Communicator::run_raw`](crate::Communicator::run_raw)).
pub struct RawCall<'a> {
    /// The collective.
    pub op: Collective,
    /// The root (0 for the collectives without one).
    pub root: usize,
    /// Bytes per rank: the buffer of bcast and the reductions, one rank's
    /// block of scatter, gather, allgather, alltoall and reduce-scatter.
    pub bytes: usize,
    /// Bytes per element: segments never split one.
    pub elem: usize,
    /// What this rank sends (empty for bcast and barrier, and where the
    /// collective reads nothing on this rank).
    pub send: &'a [u8],
    /// Where this rank receives (bcast's buffer on every rank).
    pub recv: &'a mut [u8],
    /// The reduction, for reduce, allreduce, scan, exscan and
    /// reduce-scatter.
    pub combine: Option<&'a RawCombine<'a>>,
}

impl RawCall<'_> {
    pub(crate) fn check(&self, rank: usize, size: usize) -> Result<()> {
        let root = rank == self.root;
        let (n, all) = (self.bytes, self.bytes * size);
        let (send, recv): (Option<usize>, Option<usize>) = match self.op {
            Collective::Bcast => (None, Some(n)),
            Collective::Reduce => (Some(n), root.then_some(n)),
            Collective::Allreduce => (Some(n), Some(n)),
            Collective::Scatter => (root.then_some(all), Some(n)),
            Collective::Gather => (Some(n), root.then_some(all)),
            Collective::Allgather => (Some(n), Some(all)),
            Collective::Alltoall => (Some(all), Some(all)),
            Collective::Scan | Collective::Exscan => (Some(n), Some(n)),
            Collective::ReduceScatter => (Some(all), Some(n)),
            Collective::Barrier => (Some(0), Some(0)),
        };
        if let Some(expected) = send {
            expect_len("send buffer", expected, self.send.len())?;
        }
        if let Some(expected) = recv {
            expect_len("receive buffer", expected, self.recv.len())?;
        }
        if self.elem == 0 || !self.bytes.is_multiple_of(self.elem) {
            return Err(Error::Config(format!(
                "{} of {} bytes is not a whole number of {}-byte elements",
                self.op, self.bytes, self.elem
            )));
        }
        if self.op.reduces() && self.combine.is_none() {
            return Err(Error::Config(format!("{} needs its reduction", self.op)));
        }
        Ok(())
    }
}
