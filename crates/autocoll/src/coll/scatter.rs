//! Scatter: forwarding over any tree.
//!
//! Every rank's *bundle* is the blocks of its subtree in the tree's
//! preorder: its own block, then each child's bundle. The root builds its
//! bundle from the send buffer; an interior rank receives its bundle in
//! segments and passes each child the part of it that is the child's
//! bundle, segment by segment, as soon as the bytes are there.
//!
//! In scatterv only the root knows the blocks' sizes: before its bundle,
//! a rank gets the sizes of its subtree's blocks from its parent (one
//! small message, 8 bytes a rank) and hands each child its part of them.

use std::ops::Range;

use bytes::Bytes;

use super::blocks::Blocks;
use super::{segments, Ctx};
use crate::error::{Error, Result};
use crate::tree::Tree;

/// Scatters block i of `send` (read at the root only), laid out by
/// `blocks`, which every rank knows, to rank i's `recv`.
pub(crate) fn scatter(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    seg: usize,
) -> Result<()> {
    let sizes: Vec<usize> = tree
        .subtree(ctx.rank)
        .iter()
        .map(|&r| blocks.len(r))
        .collect();
    spread(ctx, tree, (send, blocks), recv, &sizes, seg)
}

/// Scatters block i of `send`, packed in rank order by `blocks` (both
/// known at the root only), to rank i's `recv`.
pub(crate) fn scatterv(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    blocks: Option<&Blocks>,
    seg: usize,
) -> Result<()> {
    let mine = tree.subtree(ctx.rank);
    let sizes = match (tree.parent(ctx.rank), blocks) {
        (None, Some(blocks)) => mine.iter().map(|&r| blocks.len(r)).collect(),
        (None, None) => return Err(Error::Config("scatterv's root needs the sizes".into())),
        (Some(parent), _) => read_sizes(ctx, parent, mine.len())?,
    };
    let base = tree.preorder_index(ctx.rank);
    for &child in tree.children(ctx.rank) {
        let at = tree.preorder_index(child) - base;
        let theirs = &sizes[at..at + tree.subtree(child).len()];
        let header: Vec<u64> = theirs.iter().map(|&s| s as u64).collect();
        let header = Bytes::copy_from_slice(bytemuck::cast_slice(&header));
        ctx.send(child, 1, header, 0)?;
    }
    if sizes[0] != recv.len() {
        return Err(Error::MessageSize {
            rank: ctx.rank,
            peer: tree.parent(ctx.rank).unwrap_or(ctx.rank),
            expected: recv.len(),
            got: sizes[0],
            call: ctx.call,
        });
    }
    let empty = Blocks::equal(ctx.size, 0);
    spread(
        ctx,
        tree,
        (send, blocks.unwrap_or(&empty)),
        recv,
        &sizes,
        seg,
    )
}

/// The sizes of this rank's subtree's blocks, from its parent.
fn read_sizes(ctx: &mut Ctx<'_>, parent: usize, ranks: usize) -> Result<Vec<usize>> {
    let header = ctx.recv(parent, 1, 8 * ranks, 0)?;
    Ok(header
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize)
        .collect())
}

/// The scatter's data flow: `sizes` are this rank's subtree's blocks in
/// preorder; the root reads its bundle from `source`.
fn spread(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    source: (&[u8], &Blocks),
    recv: &mut [u8],
    sizes: &[usize],
    seg: usize,
) -> Result<()> {
    let mine = tree.subtree(ctx.rank);
    let mut out = Forwarder::new(tree, ctx.rank, sizes, seg);
    let own = sizes[0];
    match tree.parent(ctx.rank) {
        None => {
            let (send, blocks) = source;
            let mut bundle = Vec::with_capacity(sizes.iter().sum());
            for &r in mine {
                bundle.extend_from_slice(&send[blocks.get(r)]);
            }
            let bundle = Bytes::from(bundle);
            recv.copy_from_slice(&bundle[..own]);
            out.send_ready(ctx, bundle.len(), |r| bundle.slice(r))
        }
        Some(parent) => {
            let total = sizes.iter().sum();
            let mut bundle = Vec::with_capacity(total);
            for (k, range) in segments(total, seg).enumerate() {
                bundle.extend_from_slice(&ctx.recv(parent, 0, range.len(), k)?);
                out.send_ready(ctx, bundle.len(), |r| Bytes::copy_from_slice(&bundle[r]))?;
            }
            recv.copy_from_slice(&bundle[..own]);
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
    /// `sizes` are the blocks of `rank`'s subtree in preorder.
    fn new(tree: &Tree, rank: usize, sizes: &[usize], seg: usize) -> Self {
        let base = tree.preorder_index(rank);
        let children = tree
            .children(rank)
            .iter()
            .map(|&c| {
                let at = tree.preorder_index(c) - base;
                let start: usize = sizes[..at].iter().sum();
                let len: usize = sizes[at..at + tree.subtree(c).len()].iter().sum();
                (c, start..start + len, 0)
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
