//! Reduce: one segmented pipeline over any tree, the mirror of broadcast.
//!
//! For segment k a rank combines its own data with each child's segment k
//! as it arrives (children in send order) and passes the result up before
//! it starts on k+1. Children keep sending while the parent combines.

use std::ops::Range;

use bytes::Bytes;

use super::{segments, Combine, Ctx};
use crate::error::Result;
use crate::tree::Tree;

/// Reduces `send` towards the tree's root in `seg`-byte segments; the root
/// hands each finished segment (its byte range and value) to `finished`.
pub(crate) fn reduce<F>(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    seg: usize,
    combine: Combine<'_>,
    mut finished: F,
) -> Result<()>
where
    F: FnMut(&mut Ctx<'_>, usize, Range<usize>, Vec<u8>) -> Result<()>,
{
    for (k, range) in segments(send.len(), seg).enumerate() {
        let mut acc = send[range.clone()].to_vec();
        for &child in tree.children(ctx.rank) {
            ctx.recv_combine(child, 0, &mut acc, combine, k)?;
        }
        match tree.parent(ctx.rank) {
            Some(parent) => ctx.send(parent, 0, Bytes::from(acc), k)?,
            None => finished(ctx, k, range, acc)?,
        }
    }
    Ok(())
}
