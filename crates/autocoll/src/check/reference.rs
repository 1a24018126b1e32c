//! The reference every rank computes on its own: every rank's input,
//! made up from the seed, and the comparison of a result with what it
//! must be.

use crate::coll::op::Element;

/// Splitmix64: a fast, well-mixed hash of a 64-bit value.
pub(super) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Every rank's input, made up from the seed on demand.
pub(super) struct Inputs {
    /// The seed of this case.
    pub(super) seed: u64,
    /// Ranks of the communicator.
    pub(super) p: usize,
    /// This rank.
    pub(super) me: usize,
}

impl Inputs {
    /// Elements `range` of `rank`'s input.
    pub(super) fn values<T: Sample>(&self, rank: usize, range: std::ops::Range<usize>) -> Vec<T> {
        let base = mix(self.seed ^ (rank as u64).wrapping_mul(0x1000_0000_01B3));
        range.map(|i| T::sample(mix(base ^ i as u64))).collect()
    }

    /// The first `n` bytes of every rank's input, in rank order: what a
    /// gather of `n` bytes per rank ends with.
    pub(super) fn blocks(&self, n: usize) -> Vec<u8> {
        (0..self.p)
            .flat_map(|r| self.values::<u8>(r, 0..n))
            .collect()
    }
}

/// Element values a reduction keeps exact: floats are small whole numbers,
/// so every combination order gives the same bits.
pub(super) trait Sample: Element {
    /// The element `bits` stands for.
    fn sample(bits: u64) -> Self;
}

macro_rules! sample_int {
    ($($t:ty),*) => {$( impl Sample for $t { fn sample(bits: u64) -> Self { bits as $t } } )*};
}
sample_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Sample for f32 {
    fn sample(bits: u64) -> Self {
        (bits % 3 + 1) as f32
    }
}

impl Sample for f64 {
    fn sample(bits: u64) -> Self {
        (bits % 3 + 1) as f64
    }
}

/// `got` against `want`, naming `what`, how many elements are wrong and
/// the first of them.
pub(super) fn compare<T: PartialEq + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what} has {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => {
            let wrong = got.iter().zip(want).filter(|(g, w)| g != w).count();
            Err(format!(
                "{what}: {wrong} of {} elements wrong, first at {i}: got {:?}, expected {:?}",
                got.len(),
                got[i],
                want[i]
            ))
        }
    }
}

/// The v-forms' block sizes for `n` bytes: none, half, once and one and
/// a half times `n`, in turn by `k`, so that every case has empty and
/// uneven blocks.
pub(super) fn vsize(n: usize, k: usize) -> usize {
    n * (k % 4) / 2
}
