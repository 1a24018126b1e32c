//! What happened to each collective call, for the summary that rank 0
//! prints at `MPI_Finalize` under `AUTOCOLL_VERBOSE=1`.

use std::collections::BTreeMap;

use autocoll::{Collective, Implementation};

/// Why a call went to the MPI library unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// `AUTOCOLL_SELECT=native`.
    Native,
    /// The library turned itself off after an internal failure.
    Disabled,
    /// An intercommunicator.
    Intercomm,
    /// A datatype whose data is not one contiguous block.
    NonContiguous,
    /// Send and receive types or counts describe different byte counts.
    Differing,
    /// `MPI_BOTTOM` as a buffer (absolute addresses in the datatype).
    Bottom,
    /// A user-defined operation that is not commutative.
    NonCommutative,
    /// Arguments the MPI library must judge (and report) itself.
    Invalid,
    /// More bytes than one message can carry.
    TooLarge,
    /// MPI is finalised, or a communicator could not be set up.
    Unavailable,
    /// A gatherv, scatterv or alltoallv under the lottery: its ranks do
    /// not share their sizes, so they agree on no size class to learn by
    /// (one pool for every size let small calls explore on large calls'
    /// budget).
    SizesUnshared,
    /// A scan or exscan shorter than [`SHORT_SCAN`]: MPI's own pipeline
    /// lets ranks run ahead across back-to-back calls, which the
    /// lottery's agreement messages would hold back.
    ShortScan,
}

/// Scans and exscans below this many bytes go straight to MPI.
pub const SHORT_SCAN: usize = 64 * 1024;

impl Reason {
    /// The reason's key in the summary.
    pub fn key(self) -> &'static str {
        match self {
            Reason::Native => "native",
            Reason::Disabled => "disabled",
            Reason::Intercomm => "intercomm",
            Reason::NonContiguous => "non-contiguous",
            Reason::Differing => "differing-types",
            Reason::Bottom => "mpi-bottom",
            Reason::NonCommutative => "non-commutative",
            Reason::Invalid => "invalid-args",
            Reason::TooLarge => "too-large",
            Reason::Unavailable => "unavailable",
            Reason::ShortScan => "short-scan",
            Reason::SizesUnshared => "sizes-unshared",
        }
    }
}

/// Counts per collective.
#[derive(Debug, Default)]
pub struct Stats {
    ops: BTreeMap<Collective, Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Run by one of autocoll's implementations.
    autocoll: u64,
    /// Chosen by the selector as `<op>:mpi`.
    native: u64,
    passed: BTreeMap<Reason, u64>,
    last: Option<Implementation>,
}

impl Stats {
    /// A call the selector gave to `imp`.
    pub fn ran(&mut self, imp: &Implementation) {
        let counts = self.ops.entry(imp.op).or_default();
        match imp.algorithm {
            autocoll::Algorithm::Native => counts.native += 1,
            _ => counts.autocoll += 1,
        }
        if counts.last.as_ref() != Some(imp) {
            counts.last = Some(imp.clone());
        }
    }

    /// A call passed to the MPI library untouched.
    pub fn passed(&mut self, op: Collective, reason: Reason) {
        *self
            .ops
            .entry(op)
            .or_default()
            .passed
            .entry(reason)
            .or_default() += 1;
    }

    /// Calls of `op` that autocoll ran, the selector gave to the MPI
    /// library, and that were passed through.
    pub fn counts(&self, op: Collective) -> (u64, u64, u64) {
        self.ops.get(&op).map_or((0, 0, 0), |c| {
            (c.autocoll, c.native, c.passed.values().sum())
        })
    }

    /// Calls of `op` passed through for `reason`.
    pub fn passed_for(&self, op: Collective, reason: Reason) -> u64 {
        self.ops
            .get(&op)
            .and_then(|c| c.passed.get(&reason))
            .copied()
            .unwrap_or(0)
    }

    /// The summary's lines: per collective called, `autocoll-mpi: <op>
    /// autocoll=N native=N passed=N`, then one line per reason of passing
    /// and the implementation the selector chose last.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (op, c) in &self.ops {
            let passed: u64 = c.passed.values().sum();
            lines.push(format!(
                "autocoll-mpi: {op} autocoll={} native={} passed={passed}",
                c.autocoll, c.native
            ));
            for (reason, n) in &c.passed {
                lines.push(format!("autocoll-mpi: {op} passed {}={n}", reason.key()));
            }
            if let Some(last) = &c.last {
                lines.push(format!("autocoll-mpi: {op} ended on {last}"));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_each_op_and_reason() {
        let mut stats = Stats::default();
        let binary: Implementation = "bcast:binary".parse().unwrap();
        stats.ran(&binary);
        stats.ran(&Implementation::native(Collective::Bcast));
        stats.ran(&binary);
        stats.passed(Collective::Bcast, Reason::NonContiguous);
        stats.passed(Collective::Reduce, Reason::Intercomm);
        stats.passed(Collective::Reduce, Reason::Intercomm);
        assert_eq!(stats.counts(Collective::Bcast), (2, 1, 1));
        assert_eq!(stats.passed_for(Collective::Reduce, Reason::Intercomm), 2);
        assert_eq!(
            stats.summary(),
            [
                "autocoll-mpi: bcast autocoll=2 native=1 passed=1",
                "autocoll-mpi: bcast passed non-contiguous=1",
                "autocoll-mpi: bcast ended on bcast:binary",
                "autocoll-mpi: reduce autocoll=0 native=0 passed=2",
                "autocoll-mpi: reduce passed intercomm=2",
            ]
        );
    }
}
