//! The ids every layer shares: which collective ([`Collective`]), which
//! call of a communicator ([`CallSig`]), and the byte counts that ids and
//! settings spell with K, M or G ([`parse_bytes`]). They import nothing of
//! the crate, so that errors, transports and everything above can name a
//! call and read a size.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The collective operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Collective {
    /// One root's buffer to every rank.
    Bcast,
    /// Every rank's buffer combined at one root.
    Reduce,
    /// One root's blocks, block i to rank i.
    Scatter,
    /// Every rank's block to one root, in rank order.
    Gather,
    /// Every rank's buffer combined, the result on every rank.
    Allreduce,
    /// Every rank's block to every rank, in rank order.
    Allgather,
    /// No rank leaves before every rank has entered.
    Barrier,
    /// Every rank's block i to rank i: block j of rank i's result is
    /// block i of rank j's send buffer.
    Alltoall,
    /// Rank i gets the buffers of ranks 0..=i combined (inclusive prefix).
    Scan,
    /// Rank i gets the buffers of ranks 0..i combined (exclusive prefix;
    /// rank 0's receive buffer is left as it was).
    Exscan,
    /// Every rank's P blocks combined, block i of the result to rank i
    /// (`MPI_Reduce_scatter_block`).
    #[serde(rename = "reduce-scatter")]
    ReduceScatter,
    /// Gather with a block size per rank: rank i's block to the root,
    /// packed in rank order (only the root knows every size).
    Gatherv,
    /// Scatter with a block size per rank, packed at the root in rank
    /// order (only the root knows every size).
    Scatterv,
    /// Allgather with a block size per rank (every rank knows them all).
    Allgatherv,
    /// Alltoall with a block size per pair of ranks: each rank knows
    /// what it sends to and receives from every rank.
    Alltoallv,
}

impl Collective {
    /// All of them, in the order the docs list them; an operation's index
    /// here is its code on the wire, so new ones go at the end.
    pub const ALL: [Collective; 15] = [
        Collective::Bcast,
        Collective::Reduce,
        Collective::Scatter,
        Collective::Gather,
        Collective::Allreduce,
        Collective::Allgather,
        Collective::Barrier,
        Collective::Alltoall,
        Collective::Scan,
        Collective::Exscan,
        Collective::ReduceScatter,
        Collective::Gatherv,
        Collective::Scatterv,
        Collective::Allgatherv,
        Collective::Alltoallv,
    ];

    /// The name used in implementation ids.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Bcast => "bcast",
            Collective::Reduce => "reduce",
            Collective::Scatter => "scatter",
            Collective::Gather => "gather",
            Collective::Allreduce => "allreduce",
            Collective::Allgather => "allgather",
            Collective::Barrier => "barrier",
            Collective::Alltoall => "alltoall",
            Collective::Scan => "scan",
            Collective::Exscan => "exscan",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::Gatherv => "gatherv",
            Collective::Scatterv => "scatterv",
            Collective::Allgatherv => "allgatherv",
            Collective::Alltoallv => "alltoallv",
        }
    }

    /// True for the collectives that take a root.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Collective::Bcast
                | Collective::Reduce
                | Collective::Scatter
                | Collective::Gather
                | Collective::Gatherv
                | Collective::Scatterv
        )
    }

    /// True for the collectives that run over any tree shape; the others
    /// have only their named algorithms.
    pub fn over_trees(self) -> bool {
        !matches!(
            self,
            Collective::Alltoall | Collective::Alltoallv | Collective::Scan | Collective::Exscan
        )
    }

    /// True for the collectives that combine values with a reduction op.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Collective::Reduce
                | Collective::Allreduce
                | Collective::Scan
                | Collective::Exscan
                | Collective::ReduceScatter
        )
    }

    /// True for the v-forms, whose blocks differ in size from rank to
    /// rank. Their [`CallSig::bytes`] is what every rank knows of the
    /// sizes: allgatherv's mean block, 0 for the others, whose sizes
    /// travel with the data.
    pub fn varies(self) -> bool {
        matches!(
            self,
            Collective::Gatherv
                | Collective::Scatterv
                | Collective::Allgatherv
                | Collective::Alltoallv
        )
    }

    /// A v-form's [`CallSig::bytes`]: allgatherv's mean block, from the
    /// sizes every rank receives, and 0 for the others (a rank knows only
    /// its own sizes). The regular forms' bytes are their own.
    pub fn agreed_bytes(self, recv_sizes: &[usize]) -> usize {
        match self {
            Collective::Allgatherv => recv_sizes.iter().sum::<usize>() / recv_sizes.len().max(1),
            _ => 0,
        }
    }

    /// The collective with equal blocks that a v-form generalizes.
    pub fn regular(self) -> Collective {
        match self {
            Collective::Gatherv => Collective::Gather,
            Collective::Scatterv => Collective::Scatter,
            Collective::Allgatherv => Collective::Allgather,
            Collective::Alltoallv => Collective::Alltoall,
            op => op,
        }
    }

    /// True for the prefix reductions, scan and exscan.
    pub fn scans(self) -> bool {
        matches!(self, Collective::Scan | Collective::Exscan)
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Collective {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Collective::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Collective::ALL.iter().map(|c| c.name()).collect();
                format!(
                    "unknown collective `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Identifies one collective call: the n-th call on a communicator, what it
/// is, its root and its per-rank message size. Every message of the call
/// carries it, so ranks that disagree about a call are caught by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallSig {
    /// Index of the call on this communicator (all ranks count alike).
    pub seq: u64,
    /// Which collective.
    pub op: Collective,
    /// The root rank (0 for rootless collectives).
    pub root: u32,
    /// Bytes per rank, as MPI counts them (count × element size); for the
    /// v-forms, what every rank knows of them ([`Collective::varies`]).
    pub bytes: u64,
}

impl fmt::Display for CallSig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "call #{} {} root={} bytes={}",
            self.seq, self.op, self.root, self.bytes
        )
    }
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "`{s}` is not a byte count (digits with an optional K, M or G)"
        ));
    }
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "`{s}`: unknown size suffix `{unit}` (use K, M or G)"
            ))
        }
    };
    let n: usize = digits.parse().map_err(|_| format!("`{s}` is too large"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("`{s}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts_take_powers_of_1024_and_errors_quote_the_text() {
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes("16k"), Ok(16 << 10));
        assert_eq!(parse_bytes("2M"), Ok(2 << 20));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        for (text, says) in [
            ("", "not a byte count"),
            ("K", "not a byte count"),
            ("4Q", "unknown size suffix `Q`"),
            ("99999999999999999999", "too large"),
            ("17179869184G", "too large"),
        ] {
            let err = parse_bytes(text).unwrap_err();
            assert!(err.contains(says), "`{text}` gave `{err}`");
        }
    }
}
