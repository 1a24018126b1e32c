//! Where each rank's block lies in a buffer that holds one block per rank,
//! packed in rank order: equal blocks for the regular collectives, a size
//! per rank for the v-forms. The algorithms ask this, never `i × b`, so
//! one pipeline serves both.

use std::ops::Range;

/// The blocks of a buffer of one block per rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Blocks {
    /// `p` blocks of `b` bytes each.
    Equal { p: usize, b: usize },
    /// Block i is `starts[i]..starts[i + 1]`.
    Sizes { starts: Vec<usize> },
}

impl Blocks {
    /// `p` blocks of `b` bytes.
    pub fn equal(p: usize, b: usize) -> Blocks {
        Blocks::Equal { p, b }
    }

    /// Blocks of the given sizes, in rank order.
    pub fn sizes(sizes: &[usize]) -> Blocks {
        let mut starts = Vec::with_capacity(sizes.len() + 1);
        starts.push(0);
        for &s in sizes {
            starts.push(starts.last().copied().unwrap_or(0) + s);
        }
        Blocks::Sizes { starts }
    }

    /// The number of blocks.
    pub fn count(&self) -> usize {
        match self {
            Blocks::Equal { p, .. } => *p,
            Blocks::Sizes { starts } => starts.len() - 1,
        }
    }

    /// The bytes of block `i`.
    pub fn get(&self, i: usize) -> Range<usize> {
        self.run(i, i + 1)
    }

    /// The bytes of blocks `first..end`, which lie next to each other.
    pub fn run(&self, first: usize, end: usize) -> Range<usize> {
        match self {
            Blocks::Equal { b, .. } => first * b..end * b,
            Blocks::Sizes { starts } => starts[first]..starts[end],
        }
    }

    /// The size of block `i`.
    pub fn len(&self, i: usize) -> usize {
        self.get(i).len()
    }

    /// The bytes of every block.
    pub fn total(&self) -> usize {
        self.run(0, self.count()).end
    }
}

#[cfg(test)]
mod tests {
    use super::Blocks;

    #[test]
    fn sized_blocks_follow_each_other_in_rank_order() {
        let blocks = Blocks::sizes(&[3, 0, 5]);
        assert_eq!(blocks.count(), 3);
        assert_eq!(blocks.get(0), 0..3);
        assert_eq!(blocks.get(1), 3..3);
        assert_eq!(blocks.get(2), 3..8);
        assert_eq!(blocks.run(1, 3), 3..8);
        assert_eq!(blocks.total(), 8);
    }

    #[test]
    fn equal_blocks_are_sized_blocks_of_one_size() {
        let equal = Blocks::equal(4, 6);
        let sized = Blocks::sizes(&[6; 4]);
        for i in 0..4 {
            assert_eq!(equal.get(i), sized.get(i));
            assert_eq!(equal.run(i, 4), sized.run(i, 4));
        }
        assert_eq!(equal.total(), 24);
        assert_eq!(Blocks::sizes(&[]).total(), 0);
    }
}
