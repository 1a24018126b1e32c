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
    match (&ctx.imp.algorithm, tree) {
        (Algorithm::Native, _) => Err(Error::Config(format!(
            "`{}` is the MPI library's own algorithm: only the MPI interposition library runs it",
            ctx.imp
        ))),
        (_, Some(t)) => over_tree(ctx, t, call),
        (_, None) => treeless(ctx, call),
    }
}

/// The call on a tree: one segmented pipeline per data-flow pattern.
fn over_tree(ctx: &mut Ctx<'_>, t: &Tree, call: Call<'_>) -> Result<()> {
    let seg = segment_bytes(ctx.imp, call.elem);
    let combine = || call.combine.expect("reductions carry their op");
    match call.op {
        Collective::Bcast => super::bcast::bcast(ctx, t, call.recv, seg, 0),
        Collective::Reduce => {
            let recv = call.recv;
            super::reduce::reduce(ctx, t, call.send, seg, combine(), |_, _, range, acc| {
                recv[range].copy_from_slice(&acc);
                Ok(())
            })
        }
        Collective::Scatter => super::scatter::scatter(ctx, t, call.send, call.recv, seg),
        Collective::Gather => super::gather::gather(ctx, t, call.send, call.recv, seg),
        Collective::Allreduce => {
            super::allreduce::tree(ctx, t, call.send, call.recv, seg, combine())
        }
        Collective::Allgather => super::allgather::tree(ctx, t, call.send, call.recv, seg),
        Collective::ReduceScatter => {
            super::reduce_scatter::tree(ctx, t, call.send, call.recv, seg, combine())
        }
        Collective::Barrier => super::barrier::tree(ctx, t),
        op => Err(wrong_op(op, &ctx.imp.algorithm)),
    }
}

/// The call by a named algorithm of its own.
fn treeless(ctx: &mut Ctx<'_>, call: Call<'_>) -> Result<()> {
    let seg = segment_bytes(ctx.imp, call.elem);
    let combine = || call.combine.expect("reductions carry their op");
    let (send, recv) = (call.send, call.recv);
    let exclusive = call.op == Collective::Exscan;
    match (call.op, &ctx.imp.algorithm) {
        (Collective::Allreduce, Algorithm::Ring) => {
            super::allreduce::ring(ctx, send, recv, call.elem, combine())
        }
        (Collective::Allreduce, Algorithm::RecursiveDoubling) => {
            super::allreduce::recursive_doubling(ctx, send, recv, combine())
        }
        (Collective::Allreduce, Algorithm::Rabenseifner) => {
            super::allreduce::rabenseifner(ctx, send, recv, call.elem, combine())
        }
        (Collective::Allgather, Algorithm::Ring) => super::allgather::ring(ctx, send, recv),
        (Collective::Allgather, Algorithm::RecursiveDoubling) => {
            super::allgather::recursive_doubling(ctx, send, recv)
        }
        (Collective::Alltoall, Algorithm::Pairwise) => super::alltoall::pairwise(ctx, send, recv),
        (Collective::Alltoall, Algorithm::Bruck) => super::alltoall::bruck(ctx, send, recv),
        (Collective::Alltoall, Algorithm::Linear(_)) => super::alltoall::linear(ctx, send, recv),
        (Collective::Alltoall, Algorithm::TwoLevel) => super::alltoall::two_level(ctx, send, recv),
        (Collective::Scan | Collective::Exscan, Algorithm::Linear(None)) => {
            super::scan::linear(ctx, send, recv, seg, exclusive, combine())
        }
        (Collective::Scan | Collective::Exscan, Algorithm::RecursiveDoubling) => {
            super::scan::recursive_doubling(ctx, send, recv, exclusive, combine())
        }
        (Collective::ReduceScatter, Algorithm::Ring) => {
            super::reduce_scatter::ring(ctx, send, recv, combine())
        }
        (Collective::ReduceScatter, Algorithm::RecursiveHalving) => {
            super::reduce_scatter::recursive_halving(ctx, send, recv, combine())
        }
        (Collective::ReduceScatter, Algorithm::Pairwise) => {
            super::reduce_scatter::pairwise(ctx, send, recv, combine())
        }
        (Collective::Barrier, Algorithm::Dissemination) => super::barrier::dissemination(ctx),
        (op, alg) => Err(wrong_op(op, alg)),
    }
}

fn wrong_op(op: Collective, alg: &Algorithm) -> Error {
    Error::WrongOp {
        imp: alg.name().to_string(),
        op: op.to_string(),
    }
}
