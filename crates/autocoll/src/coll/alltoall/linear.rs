//! Linear: every block goes straight to its rank (to rank + 1, + 2, …),
//! with at most a window of sends ahead of the receives (from rank − 1,
//! − 2, …; [`Algorithm::window`]). Sends overlap where pairwise waits for
//! each step, and the window bounds what queues at a receiver.

use bytes::Bytes;

use super::super::blocks::Blocks;
use super::super::Ctx;
use crate::error::{Error, Result};
#[cfg(doc)]
use crate::select::Algorithm;

/// `recv` holds block `rank` of every rank's `send`, in rank order; the
/// blocks of both sides are laid out by `blocks` (send, receive).
pub(crate) fn linear(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    blocks: (&Blocks, &Blocks),
) -> Result<()> {
    let window = ctx.imp.algorithm.window(ctx.size);
    windowed(ctx, send, recv, blocks, window)
}

/// Sends to rank + 1, + 2, … at most `window` ahead of the receives from
/// rank − 1, − 2, …
pub(super) fn windowed(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    (out, into): (&Blocks, &Blocks),
    window: usize,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    if out.len(r) != into.len(r) {
        return Err(Error::MessageSize {
            rank: r,
            peer: r,
            expected: into.len(r),
            got: out.len(r),
            call: ctx.call,
        });
    }
    recv[into.get(r)].copy_from_slice(&send[out.get(r)]);
    let mut sent = 1;
    for s in 1..p {
        while sent < p && sent < s + window {
            let to = (r + sent) % p;
            ctx.send(to, 0, Bytes::copy_from_slice(&send[out.get(to)]), sent)?;
            sent += 1;
        }
        let from = (r + p - s) % p;
        ctx.recv_into(from, 0, &mut recv[into.get(from)], s)?;
    }
    Ok(())
}
