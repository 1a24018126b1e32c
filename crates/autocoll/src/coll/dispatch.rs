//! The dispatch: an implementation's algorithm family picks the code that
//! runs a call.

use bytemuck::Pod;

use super::blocks::Blocks;
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
    /// The v-forms' block sizes in bytes, one per rank, of the side that
    /// sends blocks to every rank and of the side that receives from
    /// every rank, where this rank knows them (else empty).
    pub(crate) sizes: (&'a [usize], &'a [usize]),
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
            sizes: (&[], &[]),
        }
    }

    /// A v-form's call: its block sizes in bytes, as [`Call::sizes`].
    pub(crate) fn sized(self, sizes: (&'a [usize], &'a [usize])) -> Self {
        Call { sizes, ..self }
    }

    /// The blocks of the side that sends to every rank, if known here.
    fn sent(&self, size: usize) -> Option<Blocks> {
        self.blocks(self.sizes.0, size)
    }

    /// The blocks of the side that receives from every rank, if known here.
    fn received(&self, size: usize) -> Option<Blocks> {
        self.blocks(self.sizes.1, size)
    }

    /// Sizes where given (the v-forms, reduce-scatter's counts form),
    /// else the regular forms' equal blocks.
    fn blocks(&self, sizes: &[usize], size: usize) -> Option<Blocks> {
        match (sizes.is_empty(), self.op.varies()) {
            (false, _) => Some(Blocks::sizes(sizes)),
            (true, true) => None,
            (true, false) => Some(Blocks::equal(size, self.bytes)),
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
        Collective::Scatter => {
            let all = Blocks::equal(ctx.size, call.bytes);
            super::scatter::scatter(ctx, t, call.send, call.recv, &all, seg)
        }
        Collective::Gather => {
            let all = Blocks::equal(ctx.size, call.bytes);
            super::gather::gather(ctx, t, call.send, call.recv, &all, seg)
        }
        Collective::Gatherv => {
            let all = call.received(ctx.size);
            super::gather::gatherv(ctx, t, call.send, call.recv, all.as_ref(), seg)
        }
        Collective::Scatterv => {
            let all = call.sent(ctx.size);
            super::scatter::scatterv(ctx, t, call.send, call.recv, all.as_ref(), seg)
        }
        Collective::Allreduce => {
            super::allreduce::tree(ctx, t, call.send, call.recv, seg, combine())
        }
        Collective::Allgather | Collective::Allgatherv => {
            let all = known(call.received(ctx.size), call.op)?;
            super::allgather::tree(ctx, t, call.send, call.recv, &all, seg)
        }
        Collective::ReduceScatter => {
            let all = known(call.received(ctx.size), call.op)?;
            let sides = (call.send, call.recv);
            super::reduce_scatter::tree(ctx, t, sides, &all, seg, combine())
        }
        Collective::Barrier => super::barrier::tree(ctx, t),
        op => Err(wrong_op(op, &ctx.imp.algorithm)),
    }
}

/// The call by a named algorithm of its own.
fn treeless(ctx: &mut Ctx<'_>, call: Call<'_>) -> Result<()> {
    let blockwise = [
        Collective::Allgather,
        Collective::Alltoall,
        Collective::ReduceScatter,
    ];
    if blockwise.contains(&call.op.regular()) {
        return over_blocks(ctx, call);
    }
    let seg = segment_bytes(ctx.imp, call.elem);
    let combine = || call.combine.expect("reductions carry their op");
    let exclusive = call.op == Collective::Exscan;
    let (send, recv) = (call.send, call.recv);
    match (call.op.regular(), &ctx.imp.algorithm) {
        (Collective::Allreduce, Algorithm::Ring) => {
            super::allreduce::ring(ctx, send, recv, call.elem, combine())
        }
        (Collective::Allreduce, Algorithm::RecursiveDoubling) => {
            super::allreduce::recursive_doubling(ctx, send, recv, combine())
        }
        (Collective::Allreduce, Algorithm::Rabenseifner) => {
            super::allreduce::rabenseifner(ctx, send, recv, call.elem, combine())
        }
        (Collective::Scan | Collective::Exscan, Algorithm::Linear(None)) => {
            super::scan::linear(ctx, send, recv, seg, exclusive, combine())
        }
        (Collective::Scan | Collective::Exscan, Algorithm::RecursiveDoubling) => {
            super::scan::recursive_doubling(ctx, send, recv, exclusive, combine())
        }
        (Collective::Barrier, Algorithm::Dissemination) => super::barrier::dissemination(ctx),
        (_, alg) => Err(wrong_op(call.op, alg)),
    }
}

/// The named algorithms that move one block per rank: allgather(v),
/// alltoall(v) and reduce-scatter.
fn over_blocks(ctx: &mut Ctx<'_>, call: Call<'_>) -> Result<()> {
    let (op, reduction) = (call.op, call.combine);
    let (sent, received) = (call.sent(ctx.size), call.received(ctx.size));
    let into = || known(received.clone(), op);
    let out = || known(sent.clone(), op);
    let combine = || reduction.expect("reductions carry their op");
    let (send, recv) = (call.send, call.recv);
    match (op.regular(), &ctx.imp.algorithm) {
        (Collective::Allgather, Algorithm::Ring) => {
            let seg = super::segment_bytes(ctx.imp, 1);
            super::allgather::ring(ctx, send, recv, &into()?, seg)
        }
        (Collective::Allgather, Algorithm::RecursiveDoubling) => {
            super::allgather::recursive_doubling(ctx, send, recv, &into()?)
        }
        (Collective::Alltoall, Algorithm::Pairwise) => {
            super::alltoall::pairwise(ctx, send, recv, (&out()?, &into()?))
        }
        (Collective::Alltoall, Algorithm::Bruck) if !op.varies() => {
            super::alltoall::bruck(ctx, send, recv)
        }
        (Collective::Alltoall, Algorithm::Linear(_)) => {
            super::alltoall::linear(ctx, send, recv, (&out()?, &into()?))
        }
        (Collective::Alltoall, Algorithm::TwoLevel) if !op.varies() => {
            super::alltoall::two_level(ctx, send, recv)
        }
        (Collective::ReduceScatter, Algorithm::Ring) => {
            super::reduce_scatter::ring(ctx, send, recv, &into()?, combine())
        }
        (Collective::ReduceScatter, Algorithm::RecursiveHalving) => {
            super::reduce_scatter::recursive_halving(ctx, send, recv, &into()?, combine())
        }
        (Collective::ReduceScatter, Algorithm::Pairwise) => {
            super::reduce_scatter::pairwise(ctx, send, recv, &into()?, combine())
        }
        (_, alg) => Err(wrong_op(op, alg)),
    }
}

/// Blocks every rank must know for `op`.
fn known(blocks: Option<Blocks>, op: Collective) -> Result<Blocks> {
    blocks.ok_or_else(|| Error::Config(format!("{op} needs every rank's block sizes")))
}

fn wrong_op(op: Collective, alg: &Algorithm) -> Error {
    Error::WrongOp {
        imp: alg.name().to_string(),
        op: op.to_string(),
    }
}
