//! Allreduce over any tree: the reduce pipeline up to the root, then the
//! broadcast pipeline down. The root starts broadcasting segment k as soon
//! as it has reduced it, so the two pipelines overlap on full-duplex links.

use super::super::bcast::{bcast, send_down};
use super::super::reduce::reduce;
use super::super::{Combine, Ctx};
use crate::error::Result;
use crate::tree::Tree;

/// `recv` holds the combined `send` of every rank on return.
pub(crate) fn tree(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    send: &[u8],
    recv: &mut [u8],
    seg: usize,
    combine: Combine<'_>,
) -> Result<()> {
    const DOWN: u8 = 1;
    reduce(ctx, tree, send, seg, combine, |ctx, k, range, acc| {
        recv[range].copy_from_slice(&acc);
        send_down(ctx, tree, &acc.into(), DOWN, k)
    })?;
    if tree.parent(ctx.rank).is_some() {
        bcast(ctx, tree, recv, seg, DOWN)?;
    }
    Ok(())
}
