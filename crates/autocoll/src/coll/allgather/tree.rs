//! Allgather over any tree: gather every block at the root, then broadcast
//! the assembled vector over the same tree.

use super::super::bcast::bcast;
use super::super::gather::gather;
use super::super::Ctx;
use crate::error::Result;
use crate::tree::Tree;

/// `recv` holds every rank's `send`, in rank order, on return.
pub(crate) fn tree(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    seg: usize,
) -> Result<()> {
    gather(ctx, tree, send, recv, seg)?;
    bcast(ctx, tree, recv, seg, 1)
}
