//! Gather: forwarding over any tree, the mirror of scatter.
//!
//! A rank's bundle is its own block followed by each child's bundle, in
//! send order. It receives the children's bundles one after the other, in
//! segments, and sends each whole segment of its own bundle up as soon as
//! the bytes are there; children that are not yet being read keep sending
//! into the transport's queue.

use bytes::Bytes;

use super::{segments, Ctx};
use crate::error::Result;
use crate::tree::Tree;

/// Gathers `b = send.len()` bytes per rank at the tree's root into `recv`
/// (written at the root only), block i from rank i.
pub(crate) fn gather(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    seg: usize,
) -> Result<()> {
    let b = send.len();
    let total = tree.subtree(ctx.rank).len() * b;
    let parent = tree.parent(ctx.rank);
    let mut bundle = Vec::with_capacity(total);
    bundle.extend_from_slice(send);
    let mut sent = 0;
    let mut send_ready = |ctx: &mut Ctx<'_>, bundle: &[u8]| -> Result<()> {
        let Some(parent) = parent else { return Ok(()) };
        while sent < total {
            let end = sent.saturating_add(seg).min(total);
            if end > bundle.len() {
                break;
            }
            ctx.send(
                parent,
                0,
                Bytes::copy_from_slice(&bundle[sent..end]),
                sent / seg,
            )?;
            sent = end;
        }
        Ok(())
    };
    send_ready(ctx, &bundle)?;
    for &child in tree.children(ctx.rank) {
        let len = tree.subtree(child).len() * b;
        for (k, range) in segments(len, seg).enumerate() {
            bundle.extend_from_slice(&ctx.recv(child, 0, range.len(), k)?);
            send_ready(ctx, &bundle)?;
        }
    }
    if parent.is_none() {
        for (i, &r) in tree.subtree(ctx.rank).iter().enumerate() {
            recv[r * b..(r + 1) * b].copy_from_slice(&bundle[i * b..(i + 1) * b]);
        }
    }
    Ok(())
}
