//! One time line for all ranks, where the trace allows one.
//!
//! Ranks whose headers name the same clock (the kernel's boot id) read one
//! monotonic clock: their times compare directly. Ranks on other clocks
//! are brought onto rank 0's with the offset their file carries, taken
//! from one estimate per clock (the one with the smallest round trip among
//! the ranks on it, since they all read that clock) and interpolated
//! linearly between its start and end samples. A rank whose clock is not
//! rank 0's and has no estimate cannot be placed: then every analysis that
//! compares times of different ranks is left out, and those that compare
//! times of one rank only (latencies at a node, two-way link latencies)
//! still run.

use std::collections::BTreeMap;

use autocoll::trace::format::{ClockOffset, Header};

/// How the ranks' times were brought onto one line.
#[derive(Clone, Debug, PartialEq)]
pub enum Alignment {
    /// Every rank read one clock.
    Shared,
    /// Ranks on other clocks than rank 0's were moved by their offset
    /// estimate, each within ± `uncertainty_ns` (half its round trip).
    Estimated {
        /// The largest half round trip of the estimates used.
        uncertainty_ns: f64,
    },
    /// These ranks read another clock and carry no offset estimate.
    Unaligned {
        /// The ranks that cannot be placed.
        ranks: Vec<usize>,
    },
}

/// Each rank's way onto rank 0's clock.
#[derive(Clone, Debug)]
pub struct Clocks {
    offsets: Vec<Option<ClockOffset>>,
    /// How the times were aligned.
    pub alignment: Alignment,
    /// Distinct clocks among the ranks with a file.
    pub clocks: usize,
}

impl Clocks {
    /// The alignment of the ranks whose headers are given.
    pub fn new(headers: &[Option<Header>]) -> Clocks {
        let mut by_clock: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (rank, h) in headers.iter().enumerate() {
            if let Some(h) = h {
                by_clock.entry(h.clock.as_str()).or_default().push(rank);
            }
        }
        let mut offsets = vec![None; headers.len()];
        let clocks = by_clock.len();
        if clocks <= 1 {
            return Clocks {
                offsets,
                alignment: Alignment::Shared,
                clocks,
            };
        }
        let rank0_clock = headers[0].as_ref().map(|h| h.clock.as_str());
        let (mut unaligned, mut uncertainty) = (Vec::new(), 0.0f64);
        for (clock, ranks) in &by_clock {
            if Some(*clock) == rank0_clock {
                continue;
            }
            let best = ranks
                .iter()
                .filter_map(|&r| headers[r].as_ref().and_then(|h| h.offset))
                .min_by_key(|o| o.start.rtt_ns);
            match best {
                Some(o) => {
                    let rtt = o
                        .end
                        .map_or(o.start.rtt_ns, |e| e.rtt_ns.max(o.start.rtt_ns));
                    uncertainty = uncertainty.max(rtt as f64 / 2.0);
                    ranks.iter().for_each(|&r| offsets[r] = Some(o));
                }
                None => unaligned.extend(ranks),
            }
        }
        let alignment = if unaligned.is_empty() {
            Alignment::Estimated {
                uncertainty_ns: uncertainty,
            }
        } else {
            unaligned.sort_unstable();
            Alignment::Unaligned { ranks: unaligned }
        };
        Clocks {
            offsets,
            alignment,
            clocks,
        }
    }

    /// True when times of different ranks can be compared.
    pub fn aligned(&self) -> bool {
        !matches!(self.alignment, Alignment::Unaligned { .. })
    }

    /// `t` on `rank`'s clock, on rank 0's (unchanged where no offset is
    /// known: those times are compared only with the same rank's).
    pub fn common(&self, rank: usize, t: u64) -> i64 {
        let offset = self.offsets[rank].map_or(0, |o| o.at(t));
        t as i64 - offset
    }

    /// A word for reports: `shared`, `estimated` or `none`.
    pub fn word(&self) -> &'static str {
        match self.alignment {
            Alignment::Shared => "shared",
            Alignment::Estimated { .. } => "estimated",
            Alignment::Unaligned { .. } => "none",
        }
    }
}
