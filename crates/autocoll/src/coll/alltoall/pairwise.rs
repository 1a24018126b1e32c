//! Pairwise exchange: P−1 steps; in step s a rank sends its block for
//! rank + s and receives the block of rank − s, so every step is a
//! permutation and each link carries one block each way.

use bytes::Bytes;

use super::super::{nth_block, Ctx};
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, in rank order.
pub(crate) fn pairwise(ctx: &mut Ctx<'_>, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    let b = send.len() / p;
    recv[nth_block(r, b)].copy_from_slice(&send[nth_block(r, b)]);
    for s in 1..p {
        let (to, from) = ((r + s) % p, (r + p - s) % p);
        ctx.send(to, 0, Bytes::copy_from_slice(&send[nth_block(to, b)]), s)?;
        ctx.recv_into(from, 0, &mut recv[nth_block(from, b)], s)?;
    }
    Ok(())
}
