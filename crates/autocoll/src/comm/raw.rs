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
    /// A v-form's block sizes in bytes, one per rank, on the side that
    /// sends a block to every rank (scatterv's root, alltoallv); empty
    /// elsewhere.
    pub send_sizes: &'a [usize],
    /// A v-form's block sizes in bytes, one per rank, on the side that
    /// receives a block from every rank (gatherv's root, allgatherv,
    /// alltoallv); empty elsewhere.
    pub recv_sizes: &'a [usize],
}

impl RawCall<'_> {
    pub(crate) fn check(&self, rank: usize, size: usize) -> Result<()> {
        let root = rank == self.root;
        if self.op.varies() || !self.recv_sizes.is_empty() {
            return self.check_sizes(rank, size);
        }
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
            op => unreachable!("{op} varies: checked above"),
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

    /// A v-form's checks: the sizes each side needs, and buffers that
    /// hold them.
    fn check_sizes(&self, rank: usize, size: usize) -> Result<()> {
        let root = rank == self.root;
        let (sends_all, receives_all) = match self.op {
            Collective::Gatherv => (false, root),
            Collective::Scatterv => (root, false),
            Collective::Allgatherv => (false, true),
            // Its sizes lay out the send side and give this rank's block.
            Collective::ReduceScatter => (false, false),
            _ => (true, true),
        };
        for (needed, sizes, buf, what) in [
            (sends_all, self.send_sizes, self.send.len(), "send buffer"),
            (
                receives_all,
                self.recv_sizes,
                self.recv.len(),
                "receive buffer",
            ),
        ] {
            if needed {
                expect_len("list of block sizes", size, sizes.len())?;
                expect_len(what, sizes.iter().sum(), buf)?;
            }
        }
        match self.op {
            Collective::Allgatherv => {
                expect_len("send buffer", self.recv_sizes[rank], self.send.len())?
            }
            Collective::ReduceScatter => self.check_counts(rank, size)?,
            _ => {}
        }
        if self.bytes != self.op.agreed_bytes(self.recv_sizes) {
            return Err(Error::Config(format!(
                "{} carries {} bytes in its call, where every rank knows {}",
                self.op,
                self.bytes,
                self.op.agreed_bytes(self.recv_sizes)
            )));
        }
        Ok(())
    }

    /// Reduce-scatter's counts form: one size per rank, each whole
    /// elements, laying out the send side.
    fn check_counts(&self, rank: usize, size: usize) -> Result<()> {
        let sizes = self.recv_sizes;
        expect_len("list of block sizes", size, sizes.len())?;
        expect_len("send buffer", sizes.iter().sum(), self.send.len())?;
        expect_len("receive buffer", sizes[rank], self.recv.len())?;
        if self.elem == 0 || sizes.iter().any(|s| !s.is_multiple_of(self.elem)) {
            return Err(Error::Config(format!(
                "{}'s blocks are not whole numbers of {}-byte elements",
                self.op, self.elem
            )));
        }
        match self.combine {
            Some(_) => Ok(()),
            None => Err(Error::Config(format!("{} needs its reduction", self.op))),
        }
    }
}
