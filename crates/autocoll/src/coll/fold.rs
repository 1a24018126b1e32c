//! Folding a communicator onto a power of two, for the algorithms built on
//! pairwise exchange (recursive doubling, Rabenseifner, recursive halving).
//!
//! With P = 2^m + rem, the first 2·rem ranks pair up: each even rank hands
//! its data to the odd rank above it and sits out; the odd rank stands for
//! both. The remaining 2^m ranks are numbered 0..2^m ("new ranks"). At the
//! end the odd ranks hand the result back. A new rank stands for a
//! contiguous run of real ranks, which keeps allgather's blocks contiguous.

use bytes::Bytes;

use super::{Combine, Ctx};
use crate::error::Result;

pub(crate) struct Fold {
    /// The largest power of two not above the size.
    pub p2: usize,
    rem: usize,
}

impl Fold {
    pub fn new(size: usize) -> Self {
        let p2 = if size == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - size.leading_zeros())
        };
        Fold { p2, rem: size - p2 }
    }

    /// True for the even ranks that hand their data over and sit out.
    pub fn sits_out(&self, rank: usize) -> bool {
        rank < 2 * self.rem && rank.is_multiple_of(2)
    }

    /// The partner of a rank in the pairing step, if it has one.
    pub fn partner(&self, rank: usize) -> Option<usize> {
        (rank < 2 * self.rem).then_some(rank ^ 1)
    }

    /// The new rank of a rank that takes part in the exchanges.
    pub fn new_rank(&self, rank: usize) -> usize {
        if rank < 2 * self.rem {
            rank / 2
        } else {
            rank - self.rem
        }
    }

    /// The real rank that acts for new rank `nr`.
    pub fn real(&self, nr: usize) -> usize {
        if nr < self.rem {
            2 * nr + 1
        } else {
            nr + self.rem
        }
    }

    /// The lowest real rank that new rank `nr` stands for; new ranks
    /// `a..b` stand for real ranks `first(a)..first(b)`.
    pub fn first(&self, nr: usize) -> usize {
        if nr <= self.rem {
            2 * nr
        } else {
            nr + self.rem
        }
    }
}

/// The pairing step: even ranks of the first pairs hand their data to
/// their odd partner. Returns true when this rank goes on to the exchanges.
pub(crate) fn fold_in(
    ctx: &mut Ctx<'_>,
    fold: &Fold,
    buf: &mut [u8],
    combine: Combine<'_>,
) -> Result<bool> {
    match fold.partner(ctx.rank) {
        Some(partner) if fold.sits_out(ctx.rank) => {
            ctx.send(partner, 0, Bytes::copy_from_slice(buf), 0)?;
            Ok(false)
        }
        Some(partner) => {
            ctx.recv_combine(partner, 0, buf, combine, 0)?;
            Ok(true)
        }
        None => Ok(true),
    }
}

/// Hands the result back to the ranks that sat out.
pub(crate) fn fold_out(ctx: &mut Ctx<'_>, fold: &Fold, buf: &mut [u8]) -> Result<()> {
    const BACK: u8 = 3;
    match fold.partner(ctx.rank) {
        Some(partner) if fold.sits_out(ctx.rank) => {
            ctx.recv_into(partner, BACK, buf, 0)?;
        }
        Some(partner) => ctx.send(partner, BACK, Bytes::copy_from_slice(buf), 0)?,
        None => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ranks_cover_every_real_rank_once() {
        for size in 1..40 {
            let fold = Fold::new(size);
            assert!(fold.p2.is_power_of_two() && fold.p2 <= size && size < 2 * fold.p2);
            let mut covered = Vec::new();
            for nr in 0..fold.p2 {
                let real = fold.real(nr);
                assert!(!fold.sits_out(real));
                assert_eq!(fold.new_rank(real), nr);
                covered.extend(fold.first(nr)..fold.first(nr + 1));
            }
            assert_eq!(covered, (0..size).collect::<Vec<_>>());
        }
    }
}
