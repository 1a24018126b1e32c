//! Recursive-doubling allreduce: log2 P rounds in which partners at
//! distance 1, 2, 4, ... swap everything they hold and combine. Latency-
//! optimal for small messages. Non-powers of two fold onto a power of two.

use bytes::Bytes;

use super::super::fold::{fold_in, fold_out, Fold};
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
