//! Scatter: forwarding over any tree.
//!
//! Every rank's *bundle* is the blocks of its subtree in the tree's
//! preorder: its own block, then each child's bundle. The root builds its
//! bundle from the send buffer; an interior rank receives its bundle in
//! segments and passes each child the part of it that is the child's
//! bundle, segment by segment, as soon as the bytes are there.

use std::ops::Range;

use bytes::Bytes;

use super::{segments, Ctx};
use crate::error::Result;
use crate::tree::Tree;

/// Scatters `b = recv.len()` bytes per rank from the tree's root, where
/// `send` (read at the root only) holds block i for rank i.
pub(crate) fn scatter(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    seg: usize,
) -> Result<()> {
    let b = recv.len();
    let mine = tree.subtree(ctx.rank);
    let mut out = Forwarder::new(tree, ctx.rank, b, seg);
    match tree.parent(ctx.rank) {
        None => {
            let mut bundle = Vec::with_capacity(mine.len() * b);
            for &r in mine {
                bundle.extend_from_slice(&send[r * b..(r + 1) * b]);
            }
            let bundle = Bytes::from(bundle);
            recv.copy_from_slice(&bundle[..b]);
            out.send_ready(ctx, bundle.len(), |r| bundle.slice(r))
        }
        Some(parent) => {
            let total = mine.len() * b;
            let mut bundle = Vec::with_capacity(total);
            for (k, range) in segments(total, seg).enumerate() {
                bundle.extend_from_slice(&ctx.recv(parent, 0, range.len(), k)?);
                out.send_ready(ctx, bundle.len(), |r| Bytes::copy_from_slice(&bundle[r]))?;
            }
            recv.copy_from_slice(&bundle[..b]);
            Ok(())
        }
    }
}

/// Tracks, per child, which segments of its bundle have gone out.
struct Forwarder {
    /// (child, byte range of its bundle within ours, bytes of it sent).
    children: Vec<(usize, Range<usize>, usize)>,
    seg: usize,
}

impl Forwarder {
    fn new(tree: &Tree, rank: usize, b: usize, seg: usize) -> Self {
        let base = tree.preorder_index(rank);
        let children = tree
            .children(rank)
            .iter()
            .map(|&c| {
                let start = (tree.preorder_index(c) - base) * b;
                (c, start..start + tree.subtree(c).len() * b, 0)
            })
            .collect();
        Forwarder { children, seg }
    }

    /// Sends every whole segment of every child's bundle that lies within
    /// the first `available` bytes, one segment per child in turn.
    fn send_ready(
        &mut self,
        ctx: &mut Ctx<'_>,
        available: usize,
        chunk: impl Fn(Range<usize>) -> Bytes,
    ) -> Result<()> {
        loop {
            let mut progress = false;
            for (child, range, sent) in &mut self.children {
                let start = range.start + *sent;
                let end = start.saturating_add(self.seg).min(range.end);
                if start < end && end <= available {
                    ctx.send(*child, 0, chunk(start..end), *sent / self.seg)?;
                    *sent += end - start;
                    progress = true;
                }
            }
            if !progress {
                return Ok(());
            }
        }
    }
}
