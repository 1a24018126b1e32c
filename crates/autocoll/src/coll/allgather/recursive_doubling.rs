//! Recursive-doubling allgather: log2 P rounds; in round j partners at
//! distance 2^j swap the contiguous run of blocks each holds, doubling it.
//! Non-powers of two fold onto a power of two first (the even rank of each
//! pair hands its block to the odd one and gets the whole vector back).

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::fold::Fold;
use super::super::Ctx;
use crate::error::Result;

/// `recv` holds every rank's `send`, packed in rank order by `blocks`,
/// on return.
pub(crate) fn recursive_doubling(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    all: &Blocks,
) -> Result<()> {
    let r = ctx.rank;
    recv[all.get(r)].copy_from_slice(send);
    let fold = Fold::new(ctx.size);
    let partner = fold.partner(r);
    if let Some(partner) = partner {
        if fold.sits_out(r) {
            ctx.send(partner, 0, Bytes::copy_from_slice(send), 0)?;
            ctx.recv_into(partner, 2, recv, 0)?;
            return Ok(());
        }
        ctx.recv_into(partner, 0, &mut recv[all.get(partner)], 0)?;
    }
    let nr = fold.new_rank(r);
    let blocks =
        |first_nr: usize, count: usize| all.run(fold.first(first_nr), fold.first(first_nr + count));
    let mut mask = 1;
    while mask < fold.p2 {
        let base = nr & !(mask - 1);
        let peer = fold.real(nr ^ mask);
        ctx.send(
            peer,
            1,
            Bytes::copy_from_slice(&recv[blocks(base, mask)]),
            mask,
        )?;
        ctx.recv_into(peer, 1, &mut recv[blocks(base ^ mask, mask)], mask)?;
        mask <<= 1;
    }
    if let Some(partner) = partner {
        ctx.send(partner, 2, Bytes::copy_from_slice(recv), 0)?;
    }
    Ok(())
}
