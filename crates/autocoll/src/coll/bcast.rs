//! Broadcast: one segmented pipeline over any tree.
//!
//! A rank receives segment k from its parent and hands it to each child
//! before it asks for segment k+1; sends are queued, never awaited, so the
//! receive of k+1 overlaps the sends of k. The received payload is shared
//! with the children, not copied: a receiving rank copies the data once,
//! into its own buffer.

use bytes::Bytes;

use super::{segments, Ctx};
use crate::error::Result;
use crate::tree::Tree;

/// Broadcasts `buf` from the tree's root in `seg`-byte segments.
pub(crate) fn bcast(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    buf: &mut [u8],
    seg: usize,
    phase: u8,
) -> Result<()> {
    let parent = tree.parent(ctx.rank);
    for (k, range) in segments(buf.len(), seg).enumerate() {
        let data = match parent {
            None => Bytes::copy_from_slice(&buf[range]),
            Some(p) => ctx.recv_into(p, phase, &mut buf[range], k)?,
        };
        send_down(ctx, tree, &data, phase, k)?;
    }
    Ok(())
}

/// Hands one segment to every child, in the tree's send order.
pub(crate) fn send_down(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    data: &Bytes,
    phase: u8,
    k: usize,
) -> Result<()> {
    for &child in tree.children(ctx.rank) {
        ctx.send(child, phase, data.clone(), k)?;
    }
    Ok(())
}
