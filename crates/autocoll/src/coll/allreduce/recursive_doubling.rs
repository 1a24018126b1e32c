//! Recursive-doubling allreduce: log2 P rounds in which partners at
//! distance 1, 2, 4, ... swap everything they hold and combine. Latency-
//! optimal for small messages. Non-powers of two fold onto a power of two.

use bytes::Bytes;

use super::super::fold::Fold;
use super::super::{Combine, Ctx};
use crate::error::Result;

/// `recv` holds the combined `send` of every rank on return.
pub(crate) fn recursive_doubling(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    combine: Combine<'_>,
) -> Result<()> {
    recv.copy_from_slice(send);
    let fold = Fold::new(ctx.size);
    if fold_in(ctx, &fold, recv, combine)? {
        let nr = fold.new_rank(ctx.rank);
        let mut mask = 1;
        while mask < fold.p2 {
            let peer = fold.real(nr ^ mask);
            ctx.send(peer, 1, Bytes::copy_from_slice(recv), mask)?;
            ctx.recv_combine(peer, 1, recv, combine, mask)?;
            mask <<= 1;
        }
    }
    fold_out(ctx, &fold, recv)
}

/// The pairing step: even ranks of the first pairs hand their data to
/// their odd partner. Returns true when this rank goes on to the exchanges.
pub(super) fn fold_in(
    ctx: &mut Ctx<'_>,
    fold: &Fold,
    buf: &mut [u8],
    combine: Combine<'_>,
) -> Result<bool> {
    match fold.partner(ctx.rank) {
        Some(partner) if fold.sits_out(ctx.rank) => {
            ctx.send(partner, 0, Bytes::copy_from_slice(buf), 0)?;
            Ok(false)
        }
        Some(partner) => {
            ctx.recv_combine(partner, 0, buf, combine, 0)?;
            Ok(true)
        }
        None => Ok(true),
    }
}

/// Hands the result back to the ranks that sat out.
pub(super) fn fold_out(ctx: &mut Ctx<'_>, fold: &Fold, buf: &mut [u8]) -> Result<()> {
    const BACK: u8 = 3;
    match fold.partner(ctx.rank) {
        Some(partner) if fold.sits_out(ctx.rank) => {
            ctx.recv_into(partner, BACK, buf, 0)?;
        }
        Some(partner) => ctx.send(partner, BACK, Bytes::copy_from_slice(buf), 0)?,
        None => {}
    }
    Ok(())
}
