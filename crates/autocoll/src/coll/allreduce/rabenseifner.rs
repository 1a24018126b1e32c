//! Rabenseifner's allreduce: a reduce-scatter by recursive halving (each
//! round, partners split their current range, each keeps one half and
//! combines the other's copy of it), then an allgather by recursive doubling
//! that retraces the halvings. Each rank sends about 2·(P−1)/P of the vector
//! in 2·log2 P rounds. Non-powers of two fold onto a power of two.

use std::ops::Range;

use bytes::Bytes;

use super::super::fold::{fold_in, fold_out, Fold};
use super::super::{Combine, Ctx};
use crate::error::Result;

/// `recv` holds the combined `send` of every rank on return.
pub(crate) fn rabenseifner(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    elem: usize,
    combine: Combine<'_>,
) -> Result<()> {
    recv.copy_from_slice(send);
    let fold = Fold::new(ctx.size);
    if fold_in(ctx, &fold, recv, combine)? {
        let nr = fold.new_rank(ctx.rank);
        let halvings = reduce_scatter(ctx, &fold, nr, recv, elem, combine)?;
        allgather(ctx, &fold, nr, recv, halvings)?;
    }
    fold_out(ctx, &fold, recv)
}

/// Returns the ranges this rank held before each halving, outermost first.
fn reduce_scatter(
    ctx: &mut Ctx<'_>,
    fold: &Fold,
    nr: usize,
    buf: &mut [u8],
    elem: usize,
    combine: Combine<'_>,
) -> Result<Vec<Range<usize>>> {
    let mut held = 0..buf.len();
    let mut history = Vec::new();
    let mut mask = fold.p2 / 2;
    while mask > 0 {
        let peer = fold.real(nr ^ mask);
        let mid = held.start + (held.len() / elem / 2) * elem;
        let (keep, give) = if nr & mask == 0 {
            (held.start..mid, mid..held.end)
        } else {
            (mid..held.end, held.start..mid)
        };
        ctx.send(peer, 1, Bytes::copy_from_slice(&buf[give]), mask)?;
        ctx.recv_combine(peer, 1, &mut buf[keep.clone()], combine, mask)?;
        history.push(std::mem::replace(&mut held, keep));
        mask /= 2;
    }
    history.push(held);
    Ok(history)
}

/// Retraces the halvings: each round, swap the finished part with the
/// partner that holds the other half of the range held before it.
fn allgather(
    ctx: &mut Ctx<'_>,
    fold: &Fold,
    nr: usize,
    buf: &mut [u8],
    mut history: Vec<Range<usize>>,
) -> Result<()> {
    let mut held = history.pop().unwrap_or(0..buf.len());
    let mut mask = 1;
    while let Some(outer) = history.pop() {
        let peer = fold.real(nr ^ mask);
        let other = if held.start == outer.start {
            held.end..outer.end
        } else {
            outer.start..held.start
        };
        ctx.send(peer, 2, Bytes::copy_from_slice(&buf[held]), mask)?;
        ctx.recv_into(peer, 2, &mut buf[other], mask)?;
        held = outer;
        mask <<= 1;
    }
    Ok(())
}
