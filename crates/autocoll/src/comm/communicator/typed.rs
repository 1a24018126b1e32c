//! The typed collectives: each with the selector's choice, and `_with`
//! an implementation named.

use bytemuck::Pod;

use super::Communicator;
use crate::coll::dispatch::Call;
use crate::coll::op::{Element, Op};
use crate::comm::raw::expect_len;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::select::Implementation;

impl Communicator {
    /// Broadcasts `buf` from `root` with the selector's choice.
    pub fn bcast<T: Pod>(&mut self, buf: &mut [T], root: usize) -> Result<()> {
        let imp = self.choose(Collective::Bcast, std::mem::size_of_val(buf))?;
        self.bcast_with(&imp, buf, root)
    }

    /// Broadcasts `buf` from `root` with `imp`.
    pub fn bcast_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        buf: &mut [T],
        root: usize,
    ) -> Result<()> {
        let count = buf.len();
        self.run(imp, Call::new(Collective::Bcast, root, count, &[], buf))
    }

    /// Combines every rank's `send` with `op` into `recv` at `root` (other
    /// ranks may pass an empty `recv`).
    pub fn reduce<T: Element>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
        root: usize,
    ) -> Result<()> {
        let imp = self.choose(Collective::Reduce, std::mem::size_of_val(send))?;
        self.reduce_with(&imp, send, recv, op, root)
    }

    /// [`Self::reduce`] with `imp`.
    pub fn reduce_with<T: Element>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
        root: usize,
    ) -> Result<()> {
        op.check()?;
        if self.rank() == root {
            expect_len("reduce receive buffer", send.len(), recv.len())?;
        }
        let combine = |a: &mut [u8], b: &[u8]| op.on_bytes(a, b);
        let call = Call::new(Collective::Reduce, root, send.len(), send, recv);
        self.run(imp, call.combining(&combine))
    }

    /// Sends block i of `send` (read at `root` only, `size × recv.len()`
    /// elements) to rank i's `recv`.
    pub fn scatter<T: Pod>(&mut self, send: &[T], recv: &mut [T], root: usize) -> Result<()> {
        let imp = self.choose(Collective::Scatter, std::mem::size_of_val(recv))?;
        self.scatter_with(&imp, send, recv, root)
    }

    /// [`Self::scatter`] with `imp`.
    pub fn scatter_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        root: usize,
    ) -> Result<()> {
        if self.rank() == root {
            expect_len("scatter send buffer", self.size() * recv.len(), send.len())?;
        }
        self.run(
            imp,
            Call::new(Collective::Scatter, root, recv.len(), send, recv),
        )
    }

    /// Collects every rank's `send` into block i of `recv` at `root`
    /// (`size × send.len()` elements there; other ranks may pass empty).
    pub fn gather<T: Pod>(&mut self, send: &[T], recv: &mut [T], root: usize) -> Result<()> {
        let imp = self.choose(Collective::Gather, std::mem::size_of_val(send))?;
        self.gather_with(&imp, send, recv, root)
    }

    /// [`Self::gather`] with `imp`.
    pub fn gather_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        root: usize,
    ) -> Result<()> {
        if self.rank() == root {
            expect_len(
                "gather receive buffer",
                self.size() * send.len(),
                recv.len(),
            )?;
        }
        self.run(
            imp,
            Call::new(Collective::Gather, root, send.len(), send, recv),
        )
    }

    /// Combines every rank's `send` with `op` into every rank's `recv`.
    pub fn allreduce<T: Element>(&mut self, send: &[T], recv: &mut [T], op: &Op<T>) -> Result<()> {
        let imp = self.choose(Collective::Allreduce, std::mem::size_of_val(send))?;
        self.allreduce_with(&imp, send, recv, op)
    }

    /// [`Self::allreduce`] with `imp`.
    pub fn allreduce_with<T: Element>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        self.rootless_reduction(Collective::Allreduce, imp, send, recv, op)
    }

    /// Combines with `op` the `send` of ranks 0..=this rank into `recv`
    /// (an inclusive prefix, `MPI_Scan`).
    pub fn scan<T: Element>(&mut self, send: &[T], recv: &mut [T], op: &Op<T>) -> Result<()> {
        let imp = self.choose(Collective::Scan, std::mem::size_of_val(send))?;
        self.scan_with(&imp, send, recv, op)
    }

    /// [`Self::scan`] with `imp`.
    pub fn scan_with<T: Element>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        self.rootless_reduction(Collective::Scan, imp, send, recv, op)
    }

    /// Combines with `op` the `send` of ranks 0..this rank into `recv`
    /// (an exclusive prefix, `MPI_Exscan`); rank 0's `recv` is left as it
    /// was.
    pub fn exscan<T: Element>(&mut self, send: &[T], recv: &mut [T], op: &Op<T>) -> Result<()> {
        let imp = self.choose(Collective::Exscan, std::mem::size_of_val(send))?;
        self.exscan_with(&imp, send, recv, op)
    }

    /// [`Self::exscan`] with `imp`.
    pub fn exscan_with<T: Element>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        self.rootless_reduction(Collective::Exscan, imp, send, recv, op)
    }

    /// Allreduce, scan and exscan (`recv` as long as `send` on every rank)
    /// and reduce-scatter (`send` one `recv` per rank).
    fn rootless_reduction<T: Element>(
        &mut self,
        which: Collective,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        op.check()?;
        let (what, expected, got) = match which {
            Collective::Allreduce => ("allreduce receive buffer", send.len(), recv.len()),
            Collective::ReduceScatter => (
                "reduce-scatter send buffer",
                self.size() * recv.len(),
                send.len(),
            ),
            _ => ("scan receive buffer", send.len(), recv.len()),
        };
        expect_len(what, expected, got)?;
        let combine = |a: &mut [u8], b: &[u8]| op.on_bytes(a, b);
        let call = Call::new(which, 0, recv.len(), send, recv);
        self.run(imp, call.combining(&combine))
    }

    /// Combines with `op` every rank's `send`, `size` equal blocks, and
    /// gives this rank block `rank` of the result in `recv`
    /// (`MPI_Reduce_scatter_block`).
    pub fn reduce_scatter<T: Element>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        let imp = self.choose(Collective::ReduceScatter, std::mem::size_of_val(recv))?;
        self.reduce_scatter_with(&imp, send, recv, op)
    }

    /// [`Self::reduce_scatter`] with `imp`.
    pub fn reduce_scatter_with<T: Element>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
        op: &Op<T>,
    ) -> Result<()> {
        self.rootless_reduction(Collective::ReduceScatter, imp, send, recv, op)
    }

    /// Collects every rank's `send` into block i of every rank's `recv`.
    pub fn allgather<T: Pod>(&mut self, send: &[T], recv: &mut [T]) -> Result<()> {
        let imp = self.choose(Collective::Allgather, std::mem::size_of_val(send))?;
        self.allgather_with(&imp, send, recv)
    }

    /// [`Self::allgather`] with `imp`.
    pub fn allgather_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        expect_len(
            "allgather receive buffer",
            self.size() * send.len(),
            recv.len(),
        )?;
        self.run(
            imp,
            Call::new(Collective::Allgather, 0, send.len(), send, recv),
        )
    }

    /// Sends block j of `send` to rank j, and receives rank i's block for
    /// this rank into block i of `recv`; both hold `size` equal blocks.
    pub fn alltoall<T: Pod>(&mut self, send: &[T], recv: &mut [T]) -> Result<()> {
        let block = std::mem::size_of_val(send) / self.size();
        let imp = self.choose(Collective::Alltoall, block)?;
        self.alltoall_with(&imp, send, recv)
    }

    /// [`Self::alltoall`] with `imp`.
    pub fn alltoall_with<T: Pod>(
        &mut self,
        imp: &Implementation,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        let size = self.size();
        if !send.len().is_multiple_of(size) {
            return Err(Error::Config(format!(
                "an alltoall send buffer of {} elements does not split into {size} equal blocks",
                send.len()
            )));
        }
        expect_len("alltoall receive buffer", send.len(), recv.len())?;
        let count = send.len() / size;
        self.run(imp, Call::new(Collective::Alltoall, 0, count, send, recv))
    }

    /// Returns once every rank has called it.
    pub fn barrier(&mut self) -> Result<()> {
        let imp = self.choose(Collective::Barrier, 0)?;
        self.barrier_with(&imp)
    }

    /// [`Self::barrier`] with `imp`.
    pub fn barrier_with(&mut self, imp: &Implementation) -> Result<()> {
        self.run(
            imp,
            Call::new::<u8>(Collective::Barrier, 0, 0, &[], &mut []),
        )
    }
}
