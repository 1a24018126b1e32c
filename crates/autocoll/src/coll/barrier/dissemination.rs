//! Dissemination barrier: in round j every rank signals rank + 2^j and
//! waits for rank − 2^j; after ⌈log2 P⌉ rounds every rank has heard,
//! directly or not, from every other.

use bytes::Bytes;

use super::super::Ctx;
use crate::error::Result;

/// Returns once every rank has entered.
pub(crate) fn dissemination(ctx: &mut Ctx<'_>) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    let (mut dist, mut round) = (1, 0u8);
    while dist < p {
        ctx.send((r + dist) % p, round, Bytes::new(), round.into())?;
        ctx.recv((r + p - dist) % p, round, 0, round.into())?;
        dist <<= 1;
        round += 1;
    }
    Ok(())
}
