//! Pairwise exchange: P − 1 steps; in step s a rank sends its part of
//! block rank + s to that rank and combines the part of block `rank` that
//! rank − s sends. Every block goes straight to its owner: no partial
//! result travels twice, and every step is a permutation.

use bytes::Bytes;

use super::super::{nth_block, Combine, Ctx};
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, combined.
pub(crate) fn pairwise(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    combine: Combine<'_>,
) -> Result<()> {
    let (r, p, b) = (ctx.rank, ctx.size, recv.len());
    recv.copy_from_slice(&send[nth_block(r, b)]);
    for s in 1..p {
        let (to, from) = ((r + s) % p, (r + p - s) % p);
        ctx.send(to, 0, Bytes::copy_from_slice(&send[nth_block(to, b)]), s)?;
        ctx.recv_combine(from, 0, recv, combine, s)?;
    }
    Ok(())
}
