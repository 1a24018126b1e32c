//! Tree barrier: every rank waits for each child's arrival, reports its
//! subtree's arrival to its parent, waits for the release from its parent
//! and passes the release to its children.

use bytes::Bytes;

use super::super::Ctx;
use crate::error::Result;
use crate::tree::Tree;

/// Returns once every rank has entered.
pub(crate) fn tree(ctx: &mut Ctx<'_>, tree: &Tree) -> Result<()> {
    const ARRIVE: u8 = 0;
    const RELEASE: u8 = 1;
    for &child in tree.children(ctx.rank) {
        ctx.recv(child, ARRIVE, 0, 0)?;
    }
    if let Some(parent) = tree.parent(ctx.rank) {
        ctx.send(parent, ARRIVE, Bytes::new(), 0)?;
        ctx.recv(parent, RELEASE, 0, 1)?;
    }
    for &child in tree.children(ctx.rank) {
        ctx.send(child, RELEASE, Bytes::new(), 1)?;
    }
    Ok(())
}
