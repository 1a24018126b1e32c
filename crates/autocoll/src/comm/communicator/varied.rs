//! The v-forms: gather, scatter, allgather and alltoall with a count per
//! rank, and reduce-scatter's counts form. Counts are in elements, and
//! the blocks lie packed in rank order (MPI's displacements that leave
//! gaps are the caller's to pack).

use bytemuck::Pod;

use super::Communicator;
use crate::coll::dispatch::Call;
use crate::coll::op::{Element, Op};
use crate::comm::raw::expect_len;
use crate::error::Result;
use crate::ids::Collective;
use crate::select::Implementation;

/// Counts of `T` as bytes.
fn bytes_of<T>(counts: &[usize]) -> Vec<usize> {
    counts.iter().map(|c| c * size_of::<T>()).collect()
}

impl Communicator {
    /// Collects rank i's `send` into `recv` at `root`, packed in rank order;
    /// `counts` (rank i's count) is read at the root only.
    pub fn gatherv<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<()> {
        let imp = self.choose(Collective::Gatherv, 0)?;
        self.gatherv_with(&imp, send, recv, counts, root)
    }

    /// [`Self::gatherv`] with `imp`.
    pub fn gatherv_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<()> {
        let at_root = self.rank() == root;
        let sizes = match at_root {
            true => self.counted::<T>(counts, recv.len())?,
            false => Vec::new(),
        };
        let call = Call::new(Collective::Gatherv, root, 0, send, recv);
        self.run(imp, call.sized((&[], &sizes)))
    }

    /// Sends the i-th block of `send` (packed in rank order, `counts[i]`
    /// elements; both read at `root` only) to rank i's `recv`.
    pub fn scatterv<T: Pod>(
        &mut self,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()> {
        let imp = self.choose(Collective::Scatterv, 0)?;
        self.scatterv_with(&imp, send, counts, recv, root)
    }

    /// [`Self::scatterv`] with `imp`.
    pub fn scatterv_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()> {
        let sizes = match self.rank() == root {
            true => self.counted::<T>(counts, send.len())?,
            false => Vec::new(),
        };
        let call = Call::new(Collective::Scatterv, root, 0, send, recv);
        self.run(imp, call.sized((&sizes, &[])))
    }

    /// Collects rank i's `send` (`counts[i]` elements) into every rank's
    /// `recv`, packed in rank order.
    pub fn allgatherv<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<()> {
        let bytes = Collective::Allgatherv.agreed_bytes(&bytes_of::<T>(counts));
        let imp = self.choose(Collective::Allgatherv, bytes)?;
        self.allgatherv_with(&imp, send, recv, counts)
    }

    /// [`Self::allgatherv`] with `imp`.
    pub fn allgatherv_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<()> {
        let sizes = self.counted::<T>(counts, recv.len())?;
        expect_len("allgatherv send buffer", counts[self.rank()], send.len())?;
        let bytes = Collective::Allgatherv.agreed_bytes(&sizes);
        let mut call = Call::new(Collective::Allgatherv, 0, 0, send, recv);
        call.bytes = bytes;
        self.run(imp, call.sized((&[], &sizes)))
    }

    /// Sends `send_counts[j]` elements to rank j and receives
    /// `recv_counts[i]` from rank i; both buffers packed in rank order.
    pub fn alltoallv<T: Pod>(
        &mut self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        let imp = self.choose(Collective::Alltoallv, 0)?;
        self.alltoallv_with(&imp, send, send_counts, recv, recv_counts)
    }

    /// [`Self::alltoallv`] with `imp`.
    pub fn alltoallv_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        let out = self.counted::<T>(send_counts, send.len())?;
        let into = self.counted::<T>(recv_counts, recv.len())?;
        let call = Call::new(Collective::Alltoallv, 0, 0, send, recv);
        self.run(imp, call.sized((&out, &into)))
    }

    /// Combines with `op` every rank's `send`, whose block i holds
    /// `counts[i]` elements, and gives this rank block `rank` of the result
    /// in `recv` (`MPI_Reduce_scatter`).
    pub fn reduce_scatter_counts<T: Element>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op<T>,
    ) -> Result<()> {
        let bytes = Collective::ReduceScatter.agreed_bytes(&bytes_of::<T>(counts));
        let imp = self.choose(Collective::ReduceScatter, bytes)?;
        self.reduce_scatter_counts_with(&imp, send, recv, counts, op)
    }

    /// [`Self::reduce_scatter_counts`] with `imp`.
    pub fn reduce_scatter_counts_with<T: Element>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op<T>,
    ) -> Result<()> {
        op.check()?;
        let sizes = self.counted::<T>(counts, send.len())?;
        expect_len(
            "reduce-scatter receive buffer",
            counts[self.rank()],
            recv.len(),
        )?;
        let combine = |a: &mut [u8], b: &[u8]| op.on_bytes(a, b);
        let mut call = Call::new(Collective::ReduceScatter, 0, 0, send, recv);
        call.bytes = Collective::ReduceScatter.agreed_bytes(&sizes);
        self.run(imp, call.sized((&[], &sizes)).combining(&combine))
    }

    /// `counts` in bytes, checked to hold one count per rank that add up
    /// to the `len` elements of the buffer they describe.
    fn counted<T>(&self, counts: &[usize], len: usize) -> Result<Vec<usize>> {
        expect_len("list of counts", self.size(), counts.len())?;
        expect_len("buffer the counts describe", counts.iter().sum(), len)?;
        Ok(bytes_of::<T>(counts))
    }
}
