//! Over any tree: the reduce pipeline brings the whole vector, combined,
//! to the root; the scatter pipeline hands each rank its block. Open MPI's
//! `basic_linear` and MPICH's non-overlapping form are this on a flat
//! tree. The root carries P blocks both ways: for short vectors and
//! shapes that suit the network.

use super::super::blocks::Blocks;
use super::super::reduce::reduce;
use super::super::scatter::scatter;
use super::super::{Combine, Ctx};
use crate::error::Result;
use crate::tree::Tree;

/// `recv` holds block `rank` of every rank's `send`, combined; `blocks`
/// lays out the vector.
pub(crate) fn tree(
    ctx: &mut Ctx<'_>,
    tree: &Tree,
    (send, recv): (&[u8], &mut [u8]),
    blocks: &Blocks,
    seg: usize,
    combine: Combine<'_>,
) -> Result<()> {
    // Only the root's stays whole-sized: scatter reads it there alone.
    let mut whole = Vec::new();
    reduce(ctx, tree, send, seg, combine, |_, _, range, acc| {
        whole.resize(send.len(), 0);
        whole[range].copy_from_slice(&acc);
        Ok(())
    })?;
    scatter(ctx, tree, &whole, recv, blocks, seg)
}
