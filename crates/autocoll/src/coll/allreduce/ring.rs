//! Ring allreduce: a reduce-scatter around the ring (P−1 steps, each rank
//! passing one block to its right neighbour and combining the one from its
//! left), then an allgather around the ring (P−1 more steps). Each rank
//! sends 2(P−1)/P of the vector: bandwidth-optimal for large messages.

use bytes::Bytes;

use super::super::{block, Combine, Ctx};
use crate::error::Result;

/// `recv` holds the combined `send` of every rank on return.
pub(crate) fn ring(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    elem: usize,
    combine: Combine<'_>,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    recv.copy_from_slice(send);
    if p == 1 {
        return Ok(());
    }
    let n = send.len() / elem;
    let right = (r + 1) % p;
    let left = (r + p - 1) % p;
    let blk = |i: usize| block(n, p, i % p, elem);
    for s in 0..p - 1 {
        let out = blk(r + p - s);
        ctx.send(right, 0, Bytes::copy_from_slice(&recv[out]), s)?;
        ctx.recv_combine(left, 0, &mut recv[blk(r + 2 * p - s - 1)], combine, s)?;
    }
    // Rank r now holds block r+1 whole; pass the finished blocks around.
    for s in 0..p - 1 {
        let out = blk(r + 1 + p - s);
        ctx.send(right, 1, Bytes::copy_from_slice(&recv[out]), s)?;
        ctx.recv_into(left, 1, &mut recv[blk(r + p - s)], s)?;
    }
    Ok(())
}
