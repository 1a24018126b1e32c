//! The implementations a check runs when it is asked for `all`, and the
//! random user tree among them.

use super::reference::mix;
use crate::ids::Collective;
use crate::select::{Algorithm, Implementation};
use crate::tree::Shape;

/// A user tree for `p` ranks that no built-in shape produces: every
/// position's parent drawn at random from the positions before it.
pub fn user_tree(p: usize, seed: u64) -> Shape {
    let parents = (0..p)
        .map(|pos| {
            if pos == 0 {
                0
            } else {
                (mix(seed ^ pos as u64) % pos as u64) as usize
            }
        })
        .collect();
    Shape::User(parents)
}

/// The implementations `all` stands for in a check on `p` ranks at `bytes`
/// per rank: every family, segmented at 1 KiB and 64 KiB where the message
/// is at least that long, and a random user tree (for the collectives
/// over trees).
pub fn all_implementations(
    op: Collective,
    p: usize,
    bytes: usize,
    seed: u64,
) -> Vec<Implementation> {
    let segs: Vec<usize> = [1024, 64 * 1024]
        .into_iter()
        .filter(|&s| s <= bytes)
        .collect();
    let mut all = Implementation::all(op, &segs);
    if !op.over_trees() {
        return all;
    }
    let shape = user_tree(p, seed);
    let user_segs = if op == Collective::Barrier {
        vec![None]
    } else {
        vec![None, segs.first().copied()]
    };
    for seg in user_segs
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
    {
        all.push(Implementation {
            op,
            algorithm: Algorithm::Tree(shape.clone()),
            seg,
        });
    }
    all
}
