//! Recursive-doubling scan: in the round of distance d = 1, 2, 4, …, rank
//! r sends what it has combined so far (ranks r − 2d + 1..=r) to rank
//! r + d and combines what rank r − d sends into both that running part
//! and its result. ⌈log₂ P⌉ rounds: for short messages.

use bytes::Bytes;

use super::super::{Combine, Ctx};
use crate::error::Result;

/// `recv` holds the prefix of this rank (`exclusive`: without its own
/// part; rank 0's `recv` is then left untouched).
pub(crate) fn recursive_doubling(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    exclusive: bool,
    combine: Combine<'_>,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    let mut running = send.to_vec();
    // Exclusive: nothing is in `recv` until the first part arrives.
    let mut empty = exclusive;
    if !exclusive {
        recv.copy_from_slice(send);
    }
    let mut d = 1;
    while d < p {
        if r + d < p {
            ctx.send(r + d, 0, Bytes::copy_from_slice(&running), d)?;
        }
        if r >= d {
            let part = ctx.recv(r - d, 0, send.len(), d)?;
            combine(&mut running, &part);
            match empty {
                true => recv.copy_from_slice(&part),
                false => combine(recv, &part),
            }
            empty = false;
        }
        d *= 2;
    }
    Ok(())
}
