//! Ring: P − 1 steps to the right neighbour. In step s a rank passes on
//! the partial result of block rank − s − 1 and adds its own part to the
//! block that arrives (rank − s − 2), so after the last step it holds
//! block `rank` combined over every rank. Each rank sends (P − 1)/P of the
//! vector, one link each way: for long messages.

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::{Combine, Ctx};
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, combined; `blocks`
/// lays out the vector.
pub(crate) fn ring(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    combine: Combine<'_>,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    let mut partial = send[blocks.get(left)].to_vec();
    for s in 0..p - 1 {
        ctx.send(right, 0, Bytes::from(partial), s)?;
        let arriving = (r + 2 * p - s - 2) % p;
        partial = send[blocks.get(arriving)].to_vec();
        ctx.recv_combine(left, 0, &mut partial, combine, s)?;
    }
    recv.copy_from_slice(&partial);
    Ok(())
}
