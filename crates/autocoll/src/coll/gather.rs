//! Gather: forwarding over any tree, the mirror of scatter.
//!
//! A rank's bundle is its own block followed by each child's bundle, in
//! send order. It receives the children's bundles one after the other, in
//! segments, and sends each whole segment of its own bundle up as soon as
//! the bytes are there; children that are not yet being read keep sending
//! into the transport's queue.
//!
//! In gatherv only the root knows the blocks' sizes, so a bundle's length
//! is open: its last segment is shorter than a whole one (empty when the
//! bundle fills its segments), which tells the parent it has all of it.
//! The root checks the whole against the sizes it knows.

use bytes::Bytes;

use super::blocks::Blocks;
use super::{segments, Ctx};
use crate::error::{Error, Result};
use crate::tree::Tree;

/// Gathers every rank's `send` at the tree's root into `recv` (written at
/// the root only), packed in rank order by `blocks`, which every rank
/// knows.
pub(crate) fn gather(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    seg: usize,
) -> Result<()> {
    let known = |r: usize| tree.subtree(r).iter().map(|&x| blocks.len(x)).sum();
    let bundle = collect(ctx, tree, send, seg, Some(&known))?;
    unpack(ctx, tree, &bundle, recv, blocks)
}

/// Gathers every rank's `send` at the root into `recv`, packed in rank
/// order by `blocks` (known at the root only).
pub(crate) fn gatherv(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    blocks: Option<&Blocks>,
    seg: usize,
) -> Result<()> {
    let bundle = collect(ctx, tree, send, seg, None)?;
    match blocks {
        Some(blocks) if tree.parent(ctx.rank).is_none() => {
            if bundle.len() != blocks.total() {
                return Err(Error::MessageSize {
                    rank: ctx.rank,
                    peer: ctx.rank,
                    expected: blocks.total(),
                    got: bundle.len(),
                    call: ctx.call,
                });
            }
            unpack(ctx, tree, &bundle, recv, blocks)
        }
        _ => Ok(()),
    }
}

/// The root's bundle: its subtree's blocks in the tree's order, each
/// moved to where `blocks` puts its rank's block.
fn unpack(
    ctx: &Ctx<'_>,
    tree: &Tree,
    bundle: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
) -> Result<()> {
    if tree.parent(ctx.rank).is_some() {
        return Ok(());
    }
    let mut at = 0;
    for &r in tree.subtree(ctx.rank) {
        let range = blocks.get(r);
        recv[range.clone()].copy_from_slice(&bundle[at..at + range.len()]);
        at += range.len();
    }
    Ok(())
}

/// This rank's bundle, sent on to the parent as it fills, and returned.
/// `known` gives a subtree's bundle length where every rank knows it;
/// without it, lengths are open (see the module's note).
fn collect(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    own: &[u8],
    seg: usize,
    known: Option<&dyn Fn(usize) -> usize>,
) -> Result<Vec<u8>> {
    let mut up = Upward {
        parent: tree.parent(ctx.rank),
        total: known.map(|len| len(ctx.rank)),
        sent: 0,
        seg,
    };
    let mut bundle = Vec::with_capacity(up.total.unwrap_or(own.len()));
    bundle.extend_from_slice(own);
    up.send_ready(ctx, &bundle)?;
    for &child in tree.children(ctx.rank) {
        match known {
            Some(len) => {
                for (k, range) in segments(len(child), seg).enumerate() {
                    bundle.extend_from_slice(&ctx.recv(child, 0, range.len(), k)?);
                    up.send_ready(ctx, &bundle)?;
                }
            }
            None => {
                for k in 0.. {
                    let part = ctx.recv_any(child, 0, k)?;
                    bundle.extend_from_slice(&part);
                    up.send_ready(ctx, &bundle)?;
                    if part.len() < seg {
                        break;
                    }
                }
            }
        }
    }
    up.finish(ctx, &bundle)?;
    Ok(bundle)
}

/// What of a bundle has gone to the parent.
struct Upward {
    parent: Option<usize>,
    /// The bundle's length, where known.
    total: Option<usize>,
    sent: usize,
    seg: usize,
}

impl Upward {
    /// Sends every whole segment of the bundle that is there.
    fn send_ready(&mut self, ctx: &mut Ctx<'_>, bundle: &[u8]) -> Result<()> {
        let Some(parent) = self.parent else {
            return Ok(());
        };
        let total = self.total.unwrap_or(usize::MAX);
        while self.sent < total {
            let end = self.sent.saturating_add(self.seg).min(total);
            if end > bundle.len() {
                break;
            }
            self.send(ctx, parent, bundle, end)?;
        }
        Ok(())
    }

    /// Sends the rest of an open bundle: a segment shorter than a whole
    /// one, empty if need be, ends it.
    fn finish(&mut self, ctx: &mut Ctx<'_>, bundle: &[u8]) -> Result<()> {
        match (self.parent, self.total) {
            (Some(parent), None) => self.send(ctx, parent, bundle, bundle.len()),
            _ => Ok(()),
        }
    }

    fn send(&mut self, ctx: &mut Ctx<'_>, parent: usize, bundle: &[u8], end: usize) -> Result<()> {
        let part = Bytes::copy_from_slice(&bundle[self.sent..end]);
        ctx.send(parent, 0, part, self.sent / self.seg)?;
        self.sent = end;
        Ok(())
    }
}
