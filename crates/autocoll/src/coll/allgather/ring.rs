//! Ring allgather: P−1 steps; in each, a rank passes to its right neighbour
//! the block it received in the step before (its own first). The received
//! payload is forwarded as it is, without a copy.

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::Ctx;
use crate::error::Result;

/// `recv` holds every rank's `send`, packed in rank order by `blocks`,
/// on return.
pub(crate) fn ring(ctx: &mut Ctx<'_>, send: &[u8], recv: &mut [u8], blocks: &Blocks) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    recv[blocks.get(r)].copy_from_slice(send);
    let right = (r + 1) % p;
    let left = (r + p - 1) % p;
    let mut passing = Bytes::copy_from_slice(send);
    for s in 0..p.saturating_sub(1) {
        ctx.send(right, 0, passing, s)?;
        let from = (r + 2 * p - s - 1) % p;
        passing = ctx.recv_into(left, 0, &mut recv[blocks.get(from)], s)?;
    }
    Ok(())
}
