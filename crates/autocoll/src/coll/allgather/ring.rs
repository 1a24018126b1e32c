//! Ring allgather: P−1 steps; in each, a rank passes to its right neighbour
//! the block it received in the step before (its own first). The received
//! payload is forwarded as it is, without a copy.
//!
//! With a segment size the blocks travel in segments, and a rank forwards
//! each segment as soon as it has it rather than at the next step. A rank
//! sends its own block and then exactly what it receives, less the last
//! block (its right neighbour's own), so the ring is one pipeline: uneven
//! blocks (allgatherv) no longer make every step as long as the largest
//! block in flight.

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::{segments, Ctx};
use crate::error::Result;

/// `recv` holds every rank's `send`, packed in rank order by `blocks`,
/// on return; blocks travel in segments of `seg` bytes (`usize::MAX`:
/// whole).
pub(crate) fn ring(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    seg: usize,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    recv[blocks.get(r)].copy_from_slice(send);
    if p < 2 {
        return Ok(());
    }
    let right = (r + 1) % p;
    let left = (r + p - 1) % p;
    for piece in segments(send.len(), seg) {
        ctx.send(right, 0, Bytes::copy_from_slice(&send[piece]), 0)?;
    }
    for s in 0..p - 1 {
        let from = (r + 2 * p - s - 1) % p;
        let block = blocks.get(from);
        for piece in segments(block.len(), seg) {
            let at = block.start + piece.start..block.start + piece.end;
            let got = ctx.recv_into(left, 0, &mut recv[at], s)?;
            if s + 2 < p {
                ctx.send(right, 0, got, s + 1)?;
            }
        }
    }
    Ok(())
}
