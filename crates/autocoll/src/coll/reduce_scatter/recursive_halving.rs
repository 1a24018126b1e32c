//! Recursive halving: log₂ P rounds; each round partners split the blocks
//! they hold, each keeps the half with its own block and combines the
//! partner's copy of it. Each rank sends (P − 1)/P of the vector in log P
//! messages. A non-power of two folds onto one first: a new rank stands
//! for one or two real ranks and holds their blocks, and at the end hands
//! the one that is not its own to the rank that sat out.

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::fold::{fold_in, Fold};
use super::super::{Combine, Ctx};
use crate::error::Result;

const BACK: u8 = 2;

/// `recv` holds block `rank` of every rank's `send`, combined; `blocks`
/// lays out the vector.
pub(crate) fn recursive_halving(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    combine: Combine<'_>,
) -> Result<()> {
    let r = ctx.rank;
    let fold = Fold::new(ctx.size);
    let mut buf = send.to_vec();
    if !fold_in(ctx, &fold, &mut buf, combine)? {
        let survivor = fold.partner(r).expect("a rank that sat out has a partner");
        ctx.recv_into(survivor, BACK, recv, 0)?;
        return Ok(());
    }
    halve(ctx, &fold, &mut buf, blocks, combine)?;
    if let Some(out) = fold.partner(r) {
        ctx.send(out, BACK, Bytes::copy_from_slice(&buf[blocks.get(out)]), 0)?;
    }
    recv.copy_from_slice(&buf[blocks.get(r)]);
    Ok(())
}

/// The rounds among the new ranks; on return this rank's new rank holds
/// its blocks combined over every rank.
fn halve(
    ctx: &mut Ctx<'_>,
    fold: &Fold,
    buf: &mut [u8],
    blocks: &Blocks,
    combine: Combine<'_>,
) -> Result<()> {
    let nr = fold.new_rank(ctx.rank);
    // New ranks lo..hi hold the blocks of real ranks first(lo)..first(hi).
    let bytes = |lo: usize, hi: usize| blocks.run(fold.first(lo), fold.first(hi));
    let (mut lo, mut hi) = (0, fold.p2);
    let mut mask = fold.p2 / 2;
    while mask > 0 {
        let peer = fold.real(nr ^ mask);
        let mid = lo + mask;
        let (keep, give) = match nr & mask {
            0 => ((lo, mid), (mid, hi)),
            _ => ((mid, hi), (lo, mid)),
        };
        let out = Bytes::copy_from_slice(&buf[bytes(give.0, give.1)]);
        ctx.send(peer, 1, out, mask)?;
        ctx.recv_combine(peer, 1, &mut buf[bytes(keep.0, keep.1)], combine, mask)?;
        (lo, hi) = keep;
        mask /= 2;
    }
    Ok(())
}
