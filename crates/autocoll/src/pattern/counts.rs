//! What every rank counts: its sends by kind, destination and size class,
//! in a [`Recorder`], and the [`Entry`] a pattern lists them as.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The messages one rank sent another in one size class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The sending rank.
    pub src: usize,
    /// The receiving rank.
    pub dst: usize,
    /// The messages' size class ([`class_of`]).
    pub class: u32,
    /// How many messages (at least one).
    pub count: u64,
    /// Their bytes in all.
    pub bytes: u64,
}

/// The `schema` of a pattern file.
pub const SCHEMA: &str = "autocoll.pattern/1";

/// The largest size class: that of `u64::MAX` bytes.
pub const MAX_CLASS: u32 = 64;

/// Reserved user tag on which ranks send their [`Recorder`] to rank 0 at
/// the end. Messages with it are not counted, and programs must not use it.
pub const GATHER_TAG: u64 = u64::MAX - 0x70;

/// Reserved user tag of the start-up link probe (`measure::link`). Messages
/// with it are not counted, and programs must not use it.
pub const PROBE_TAG: u64 = u64::MAX - 0x71;

/// Which traffic a message belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A point-to-point message of the program.
    P2p,
    /// A message of a collective call.
    Collective,
}

/// Size class of a message: 0 for 0..=1 bytes, k for 2^(k-1) < b <= 2^k.
pub fn class_of(bytes: u64) -> u32 {
    match bytes {
        0 | 1 => 0,
        b => u64::BITS - (b - 1).leading_zeros(),
    }
}

/// The smallest and largest message of `class`, in bytes.
fn class_range(class: u32) -> (u128, u128) {
    match class {
        0 => (0, 1),
        k => ((1u128 << (k - 1)) + 1, 1u128 << k),
    }
}

/// How many messages of one key were sent, and their bytes in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Totals {
    pub(super) count: u64,
    pub(super) bytes: u64,
}

/// One rank's counts: per (kind, destination, size class), how many
/// messages it sent and their bytes in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorder {
    pub(super) rank: usize,
    pub(super) ranks: usize,
    pub(super) counts: BTreeMap<(Kind, usize, u32), Totals>,
}

impl Recorder {
    /// The empty counts of `rank` in a job of `ranks`.
    pub fn new(rank: usize, ranks: usize) -> Recorder {
        Recorder {
            rank,
            ranks,
            counts: BTreeMap::new(),
        }
    }

    /// The rank whose sends these are.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks of the job.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Counts one message of `bytes` to `dst`. A destination outside the
    /// job is kept, and refused by [`Pattern::merge`](crate::pattern::Pattern::merge) with its name.
    pub fn record(&mut self, kind: Kind, dst: usize, bytes: u64) {
        let totals = self.counts.entry((kind, dst, class_of(bytes))).or_default();
        // Saturating: a total that overflows is wrong either way, but a
        // panic in the middle of a send would take the program down.
        totals.count = totals.count.saturating_add(1);
        totals.bytes = totals.bytes.saturating_add(bytes);
    }

    /// The count and byte total of one key, if anything was sent with it.
    pub fn totals(&self, kind: Kind, dst: usize, class: u32) -> Option<(u64, u64)> {
        self.counts
            .get(&(kind, dst, class))
            .map(|t| (t.count, t.bytes))
    }

    /// The entries of `kind`, in (destination, class) order, as this rank's.
    pub(super) fn entries(&self, kind: Kind) -> impl Iterator<Item = Entry> + '_ {
        self.counts
            .iter()
            .filter(move |((k, _, _), _)| *k == kind)
            .map(|(&(_, dst, class), t)| Entry {
                src: self.rank,
                dst,
                class,
                count: t.count,
                bytes: t.bytes,
            })
    }
}

/// Why one entry cannot be: a rank outside the job, a class past
/// [`MAX_CLASS`], no message, or bytes its count of messages of its class
/// cannot add up to. Shared by the file's reader and the record's decoder.
pub(super) fn check_entry(ranks: usize, e: &Entry) -> Result<(), String> {
    for (name, rank) in [("src", e.src), ("dst", e.dst)] {
        if rank >= ranks {
            return Err(format!("{name} {rank} is not below ranks {ranks}"));
        }
    }
    if e.class > MAX_CLASS {
        return Err(format!("class {} is above {MAX_CLASS}", e.class));
    }
    if e.count == 0 {
        return Err("count 0: an entry counts at least one message".into());
    }
    let (lo, hi) = class_range(e.class);
    let count = u128::from(e.count);
    if !(count * lo..=count * hi).contains(&u128::from(e.bytes)) {
        return Err(format!(
            "{} bytes cannot be {} messages of class {} ({lo} to {hi} bytes each)",
            e.bytes, e.count, e.class
        ));
    }
    Ok(())
}
