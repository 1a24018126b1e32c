//! Pairwise exchange: P−1 steps; in step s a rank sends its block for
//! rank + s and receives the block of rank − s, so every step is a
//! permutation and each link carries one block each way. It is `linear`
//! with one send ahead of the receives.

use super::super::blocks::Blocks;
use super::super::Ctx;
use super::linear::windowed;
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, in rank order; the
/// blocks of both sides are laid out by `blocks` (send, receive).
pub(crate) fn pairwise(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    blocks: (&Blocks, &Blocks),
) -> Result<()> {
    windowed(ctx, send, recv, blocks, 1)
}
