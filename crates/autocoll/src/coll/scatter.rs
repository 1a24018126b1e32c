//! Scatter: forwarding over any tree.
//!
//! Every rank's *bundle* is the blocks of its subtree in the tree's
//! preorder: its own block, then each child's bundle. The root builds its
//! bundle from the send buffer; an interior rank receives its bundle in
//! segments and passes each child the part of it that is the child's
//! bundle, segment by segment, as soon as the bytes are there.
//!
//! In scatterv only the root knows the blocks' sizes: a rank's first
//! message from its parent begins with the sizes of its subtree's blocks
//! (8 bytes a rank), and it hands each child its part of them at the head
//! of that child's first message (alone, when the child's bundle is
//! empty).

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
    let (sizes, first) = match (tree.parent(ctx.rank), blocks) {
        (None, Some(blocks)) => (mine.iter().map(|&r| blocks.len(r)).collect(), None),
        (None, None) => return Err(Error::Config("scatterv's root needs the sizes".into())),
        (Some(parent), _) => {
            let (sizes, first) = read_sizes(ctx, parent, mine.len())?;
            (sizes, Some(first))
        }
    };
    if sizes[0] != recv.len() {
        return Err(Error::MessageSize {
            rank: ctx.rank,
            peer: tree.parent(ctx.rank).unwrap_or(ctx.rank),
            expected: recv.len(),
            got: sizes[0],
            call: ctx.call,
        });
    }
    let mut out = Forwarder::new(tree, ctx.rank, &sizes, seg);
    out.add_headers(ctx, tree, &sizes)?;
    match (tree.parent(ctx.rank), blocks) {
        (Some(parent), _) => from_parent(ctx, (parent, first), recv, &sizes, out),
        (None, blocks) => {
            let empty = Blocks::equal(ctx.size, 0);
            from_root(ctx, tree, (send, blocks.unwrap_or(&empty)), recv, out)
        }
    }
}

/// The sizes of this rank's subtree's blocks, at the head of its parent's
/// first message, and the rest of that message.
fn read_sizes(ctx: &mut Ctx<'_>, parent: usize, ranks: usize) -> Result<(Vec<usize>, Bytes)> {
    let first = ctx.recv_any(parent, 0, 0)?;
    let head = 8 * ranks;
    if first.len() < head {
        return Err(Error::MessageSize {
            rank: ctx.rank,
            peer: parent,
            expected: head,
            got: first.len(),
            call: ctx.call,
        });
    }
    let sizes = first[..head]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize)
        .collect();
    Ok((sizes, first.slice(head..)))
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
    let out = Forwarder::new(tree, ctx.rank, sizes, seg);
    match tree.parent(ctx.rank) {
        None => from_root(ctx, tree, source, recv, out),
        Some(parent) => from_parent(ctx, (parent, None), recv, sizes, out),
    }
}

/// The root: its bundle from the send buffer, its own block kept.
fn from_root(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    (send, blocks): (&[u8], &Blocks),
    recv: &mut [u8],
    mut out: Forwarder,
) -> Result<()> {
    let mut bundle = Vec::with_capacity(blocks.total());
    for &r in tree.subtree(ctx.rank) {
        bundle.extend_from_slice(&send[blocks.get(r)]);
    }
    let bundle = Bytes::from(bundle);
    recv.copy_from_slice(&bundle[..recv.len()]);
    out.send_ready(ctx, bundle.len(), |r| bundle.slice(r))
}

/// Below the root: the bundle from the parent in segments (the first of
/// them already read, where it came with the sizes), each passed on as
/// it arrives.
fn from_parent(
    ctx: &mut Ctx<'_>,
    (parent, mut first): (usize, Option<Bytes>),
    recv: &mut [u8],
    sizes: &[usize],
    mut out: Forwarder,
) -> Result<()> {
    let total = sizes.iter().sum();
    let mut bundle = Vec::with_capacity(total);
    for (k, range) in segments(total, out.seg).enumerate() {
        let part = match first.take() {
            Some(part) if part.len() == range.len() => part,
            Some(part) => {
                return Err(Error::MessageSize {
                    rank: ctx.rank,
                    peer: parent,
                    expected: range.len(),
                    got: part.len(),
                    call: ctx.call,
                })
            }
            None => ctx.recv(parent, 0, range.len(), k)?,
        };
        bundle.extend_from_slice(&part);
        out.send_ready(ctx, bundle.len(), |r| Bytes::copy_from_slice(&bundle[r]))?;
    }
    recv.copy_from_slice(&bundle[..sizes[0]]);
    Ok(())
}

/// Tracks, per child, which segments of its bundle have gone out.
struct Forwarder {
    /// (child, byte range of its bundle within ours, bytes of it sent).
    children: Vec<(usize, Range<usize>, usize)>,
    /// scatterv's: the sizes each child's first message begins with.
    headers: Vec<Option<Bytes>>,
    seg: usize,
}

impl Forwarder {
    /// `sizes` are the blocks of `rank`'s subtree in preorder.
    fn new(tree: &Tree, rank: usize, sizes: &[usize], seg: usize) -> Self {
        let base = tree.preorder_index(rank);
        let children: Vec<_> = tree
            .children(rank)
            .iter()
            .map(|&c| {
                let at = tree.preorder_index(c) - base;
                let start: usize = sizes[..at].iter().sum();
                let len: usize = sizes[at..at + tree.subtree(c).len()].iter().sum();
                (c, start..start + len, 0)
            })
            .collect();
        let headers = vec![None; children.len()];
        Forwarder {
            children,
            headers,
            seg,
        }
    }

    /// Puts each child's subtree sizes at the head of its first message;
    /// a child with nothing to receive gets them alone, now.
    fn add_headers(&mut self, ctx: &mut Ctx<'_>, tree: &Tree, sizes: &[usize]) -> Result<()> {
        let base = tree.preorder_index(ctx.rank);
        for (i, (child, range, _)) in self.children.iter().enumerate() {
            let at = tree.preorder_index(*child) - base;
            let theirs = &sizes[at..at + tree.subtree(*child).len()];
            let header: Vec<u64> = theirs.iter().map(|&s| s as u64).collect();
            let header = Bytes::copy_from_slice(bytemuck::cast_slice(&header));
            match range.is_empty() {
                true => ctx.send(*child, 0, header, 0)?,
                false => self.headers[i] = Some(header),
            }
        }
        Ok(())
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
            for (i, (child, range, sent)) in self.children.iter_mut().enumerate() {
                let start = range.start + *sent;
                let end = start.saturating_add(self.seg).min(range.end);
                if start < end && end <= available {
                    let data = match self.headers[i].take() {
                        Some(header) => [header, chunk(start..end)].concat().into(),
                        None => chunk(start..end),
                    };
                    ctx.send(*child, 0, data, *sent / self.seg)?;
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
