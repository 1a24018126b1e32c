//! Allgather over any tree: gather every block at the root, then broadcast
//! the assembled vector over the same tree.

use super::super::bcast::bcast;
use super::super::blocks::Blocks;
use super::super::gather::gather;
use super::super::Ctx;
use crate::error::Result;
use crate::tree::Tree;

/// `recv` holds every rank's `send`, packed in rank order by `blocks`,
/// on return.
pub(crate) fn tree(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    blocks: &Blocks,
    seg: usize,
) -> Result<()> {
    gather(ctx, tree, send, recv, blocks, seg)?;
    bcast(ctx, tree, recv, seg, 1)
}
