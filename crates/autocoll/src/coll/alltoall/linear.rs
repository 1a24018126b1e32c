//! Linear: every block goes straight to its rank (to rank + 1, + 2, …),
//! with at most a window of sends ahead of the receives (from rank − 1,
//! − 2, …; [`Algorithm::window`]). Sends overlap where pairwise waits for
//! each step, and the window bounds what queues at a receiver.

use bytes::Bytes;

use super::super::{nth_block, Ctx};
use crate::error::Result;
#[cfg(doc)]
use crate::select::Algorithm;

/// `recv` holds block `rank` of every rank's `send`, in rank order.
pub(crate) fn linear(ctx: &mut Ctx<'_>, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let window = ctx.imp.algorithm.window(ctx.size);
    windowed(ctx, send, recv, window)
}

/// Sends to rank + 1, + 2, … at most `window` ahead of the receives from
/// rank − 1, − 2, …
pub(super) fn windowed(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    window: usize,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    let b = send.len() / p;
    recv[nth_block(r, b)].copy_from_slice(&send[nth_block(r, b)]);
    let mut sent = 1;
    for s in 1..p {
        while sent < p && sent < s + window {
            let to = (r + sent) % p;
            ctx.send(to, 0, Bytes::copy_from_slice(&send[nth_block(to, b)]), sent)?;
            sent += 1;
        }
        let from = (r + p - s) % p;
        ctx.recv_into(from, 0, &mut recv[nth_block(from, b)], s)?;
    }
    Ok(())
}
