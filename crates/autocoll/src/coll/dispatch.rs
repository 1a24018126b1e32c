//! The dispatch: an implementation's algorithm family picks the code that
//! runs a call.

use bytemuck::Pod;

use super::{segment_bytes, Combine, Ctx};
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::select::Algorithm;
use crate::tree::Tree;

/// The byte-level arguments of one call.
pub(crate) struct Call<'a> {
    pub(crate) op: Collective,
    pub(crate) root: usize,
    pub(crate) bytes: usize,
    pub(crate) elem: usize,
    pub(crate) send: &'a [u8],
    pub(crate) recv: &'a mut [u8],
    pub(crate) combine: Option<Combine<'a>>,
}

impl<'a> Call<'a> {
    /// A call moving `count` elements of `T` per rank.
    pub(crate) fn new<T: Pod>(
        op: Collective,
        root: usize,
        count: usize,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Self {
        Call {
            op,
            root,
            bytes: count * size_of::<T>(),
            elem: size_of::<T>(),
            send: bytemuck::cast_slice(send),
            recv: bytemuck::cast_slice_mut(recv),
            combine: None,
        }
    }

    pub(crate) fn combining(self, combine: Combine<'a>) -> Self {
        Call {
            combine: Some(combine),
            ..self
        }
    }
}

/// Picks the algorithm family's code for the call.
pub(crate) fn dispatch(ctx: &mut Ctx<'_>, tree: Option<&Tree>, call: Call<'_>) -> Result<()> {
    let seg = segment_bytes(ctx.imp, call.elem);
    let combine = || call.combine.expect("reductions carry their op");
    match (call.op, &ctx.imp.algorithm, tree) {
        (Collective::Bcast, _, Some(t)) => super::bcast::bcast(ctx, t, call.recv, seg, 0),
        (Collective::Reduce, _, Some(t)) => {
            let recv = call.recv;
            super::reduce::reduce(ctx, t, call.send, seg, combine(), |_, _, range, acc| {
                recv[range].copy_from_slice(&acc);
                Ok(())
            })
        }
        (Collective::Scatter, _, Some(t)) => {
            super::scatter::scatter(ctx, t, call.send, call.recv, seg)
        }
        (Collective::Gather, _, Some(t)) => {
            super::gather::gather(ctx, t, call.send, call.recv, seg)
        }
        (Collective::Allreduce, _, Some(t)) => {
            super::allreduce::tree(ctx, t, call.send, call.recv, seg, combine())
        }
        (Collective::Allreduce, Algorithm::Ring, None) => {
            super::allreduce::ring(ctx, call.send, call.recv, call.elem, combine())
        }
        (Collective::Allreduce, Algorithm::RecursiveDoubling, None) => {
            super::allreduce::recursive_doubling(ctx, call.send, call.recv, combine())
        }
        (Collective::Allreduce, Algorithm::Rabenseifner, None) => {
            super::allreduce::rabenseifner(ctx, call.send, call.recv, call.elem, combine())
        }
        (Collective::Allgather, _, Some(t)) => {
            super::allgather::tree(ctx, t, call.send, call.recv, seg)
        }
        (Collective::Allgather, Algorithm::Ring, None) => {
            super::allgather::ring(ctx, call.send, call.recv)
        }
        (Collective::Allgather, Algorithm::RecursiveDoubling, None) => {
            super::allgather::recursive_doubling(ctx, call.send, call.recv)
        }
        (Collective::Alltoall, Algorithm::Pairwise, None) => {
            super::alltoall::pairwise(ctx, call.send, call.recv)
        }
        (Collective::Alltoall, Algorithm::Bruck, None) => {
            super::alltoall::bruck(ctx, call.send, call.recv)
        }
        (Collective::Alltoall, Algorithm::Linear(_), None) => {
            super::alltoall::linear(ctx, call.send, call.recv)
        }
        (op @ (Collective::Scan | Collective::Exscan), Algorithm::Linear(None), None) => {
            let exclusive = op == Collective::Exscan;
            super::scan::linear(ctx, call.send, call.recv, seg, exclusive, combine())
        }
        (op @ (Collective::Scan | Collective::Exscan), Algorithm::RecursiveDoubling, None) => {
            let exclusive = op == Collective::Exscan;
            super::scan::recursive_doubling(ctx, call.send, call.recv, exclusive, combine())
        }
        (Collective::Barrier, _, Some(t)) => super::barrier::tree(ctx, t),
        (Collective::Barrier, Algorithm::Dissemination, None) => super::barrier::dissemination(ctx),
        (_, Algorithm::Native, _) => Err(Error::Config(format!(
            "`{}` is the MPI library's own algorithm: only the MPI interposition library runs it",
            ctx.imp
        ))),
        (op, alg, _) => Err(Error::WrongOp {
            imp: alg.name().to_string(),
            op: op.to_string(),
        }),
    }
}
