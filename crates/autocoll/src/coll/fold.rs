//! Folding a communicator onto a power of two, for the algorithms built on
//! pairwise exchange (recursive doubling, Rabenseifner).
//!
//! With P = 2^m + rem, the first 2·rem ranks pair up: each even rank hands
//! its data to the odd rank above it and sits out; the odd rank stands for
//! both. The remaining 2^m ranks are numbered 0..2^m ("new ranks"). At the
//! end the odd ranks hand the result back. A new rank stands for a
//! contiguous run of real ranks, which keeps allgather's blocks contiguous.

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
