//! What a lottery pool is for ([`Key`]) and what it draws from by default
//! ([`default_candidates`]).

use serde::{Deserialize, Serialize};

use super::implementation::{Algorithm, Implementation};
use crate::ids::Collective;
use crate::tree::Shape;

/// What a pool is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    /// The collective.
    pub op: Collective,
    /// The communicator size.
    pub ranks: usize,
    /// The message-size class: ⌈log2 bytes⌉ (0 for 0 and 1 byte).
    pub class: u32,
}

impl Key {
    /// The key of a call.
    pub fn of(op: Collective, ranks: usize, bytes: usize) -> Self {
        Key {
            op,
            ranks,
            class: Key::class(bytes),
        }
    }

    /// The size class of `bytes`.
    pub fn class(bytes: usize) -> u32 {
        bytes.max(1).next_power_of_two().trailing_zeros()
    }
}

/// The default candidates: the paper's four trees (flat, chain, binary,
/// binomial) and knomial k=4, and, when the ranks run on more than one of
/// `hosts`, `hier` (binomial at every level; on one host it is binomial),
/// unsegmented and, where the message is longer, at 8 KiB, 16 KiB and
/// 64 KiB segments, plus the collective's named algorithms (all there is
/// for a collective that runs over no tree; a scan's `linear` and
/// allgatherv's `ring` at the same segments too: a segmented ring keeps
/// uneven blocks from making every step as long as the largest).
pub fn default_candidates(
    op: Collective,
    _ranks: usize,
    bytes: usize,
    hosts: usize,
) -> Vec<Implementation> {
    let mut shapes = vec![
        Shape::Flat,
        Shape::Chain,
        Shape::Binary,
        Shape::Binomial,
        Shape::Knomial(4),
    ];
    if !op.over_trees() {
        shapes.clear();
    } else if hosts > 1 {
        shapes.push(Shape::Hier(Box::default()));
    }
    let segs: Vec<Option<usize>> = std::iter::once(None)
        .chain(
            [8 * 1024, 16 * 1024, 64 * 1024]
                .into_iter()
                .filter(|&s| s < bytes && op != Collective::Barrier)
                .map(Some),
        )
        .collect();
    let mut out: Vec<Implementation> = shapes
        .iter()
        .flat_map(|shape| segs.iter().map(move |&seg| (shape.clone(), seg)))
        .map(|(shape, seg)| Implementation::tree(op, shape, seg).expect("valid by construction"))
        .collect();
    out.extend(
        op.named_algorithms()
            .iter()
            .map(|a| Implementation::new(op, a.clone(), None).expect("named")),
    );
    let segmented = match op {
        _ if op.scans() => Some(Algorithm::Linear(None)),
        Collective::Allgatherv => Some(Algorithm::Ring),
        _ => None,
    };
    if let Some(algorithm) = segmented {
        out.extend(segs.iter().flatten().map(|&seg| Implementation {
            op,
            algorithm: algorithm.clone(),
            seg: Some(seg),
        }));
    }
    out
}
