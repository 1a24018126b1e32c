//! Pairwise exchange: P − 1 steps; in step s a rank sends its part of
//! block rank + s to that rank and combines the part of block `rank` that
//! rank − s sends. Every block goes straight to its owner: no partial
//! result travels twice, and every step is a permutation.

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::{Combine, Ctx};
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, combined; `blocks`
/// lays out the vector.
pub(crate) fn pairwise(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    combine: Combine<'_>,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    recv.copy_from_slice(&send[blocks.get(r)]);
    for s in 1..p {
        let (to, from) = ((r + s) % p, (r + p - s) % p);
        ctx.send(to, 0, Bytes::copy_from_slice(&send[blocks.get(to)]), s)?;
        ctx.recv_combine(from, 0, recv, combine, s)?;
    }
    Ok(())
}
