//! Pairwise exchange: P−1 steps; in step s a rank sends its block for
//! rank + s and receives the block of rank − s, so every step is a
//! permutation and each link carries one block each way. It is `linear`
//! with one send ahead of the receives.

use super::super::Ctx;
use super::linear::windowed;
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, in rank order.
pub(crate) fn pairwise(ctx: &mut Ctx<'_>, send: &[u8], recv: &mut [u8]) -> Result<()> {
    windowed(ctx, send, recv, 1)
}
