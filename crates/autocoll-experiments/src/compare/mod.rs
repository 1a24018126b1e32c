//! autocoll against the MPI library's defaults: what runs ([`candidates`],
//! [`Plan`], [`Effort`]) and what the report says of it ([`report`]).
//!
//! The command `autocoll compare` brings an emulated cluster up, runs
//! `autocoll bench` under mpirun and over tcp for each collective and size
//! group this module plans, and hands the benches' rows to [`report`].

pub mod report;

use autocoll::Collective;

/// autocoll's candidates per collective: the shapes that win on switched
/// Ethernet (pipelined chains with two segment sizes, binomial for small
/// messages, a segmented binary tree; ring, Rabenseifner and recursive
/// doubling for allreduce and allgather(v); every alltoall(v), scan and
/// reduce-scatter algorithm, and reduce-scatter over a binomial and a
/// flat tree), kept few so that the run lasts minutes, not hours.
pub fn candidates(op: Collective) -> &'static str {
    match op {
        Collective::Bcast => {
            "bcast:binomial,bcast:chain:seg=8K,bcast:chain:seg=32K,bcast:binary:seg=16K"
        }
        Collective::Reduce => {
            "reduce:binomial,reduce:chain:seg=8K,reduce:chain:seg=32K,reduce:binary:seg=16K"
        }
        Collective::Allreduce => {
            "allreduce:ring,allreduce:rabenseifner,allreduce:recursive-doubling"
        }
        Collective::Scatter => "scatter:flat,scatter:binomial",
        Collective::Gather => "gather:flat,gather:binomial",
        Collective::Allgather => "allgather:ring,allgather:recursive-doubling",
        Collective::Barrier => "barrier:dissemination,barrier:binomial",
        Collective::Alltoall => {
            "alltoall:pairwise,alltoall:bruck,alltoall:linear,alltoall:two-level"
        }
        Collective::Scan => "scan:recursive-doubling,scan:linear,scan:linear:seg=16K",
        Collective::Exscan => "exscan:recursive-doubling,exscan:linear,exscan:linear:seg=16K",
        Collective::ReduceScatter => {
            "reduce-scatter:ring,reduce-scatter:recursive-halving,reduce-scatter:pairwise,reduce-scatter:binomial,reduce-scatter:flat"
        }
        Collective::Gatherv => "gatherv:flat,gatherv:binomial",
        Collective::Scatterv => "scatterv:flat,scatterv:binomial",
        Collective::Allgatherv => {
            "allgatherv:ring,allgatherv:ring:seg=8K,allgatherv:ring:seg=16K,allgatherv:recursive-doubling"
        }
        Collective::Alltoallv => "alltoallv:pairwise,alltoallv:linear",
    }
}

/// Calls per repetition and repetitions (min, max) of a size group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effort {
    /// Calls per repetition.
    pub calls: usize,
    /// Repetitions at the least.
    pub min_reps: usize,
    /// Repetitions at the most.
    pub max_reps: usize,
}

impl Effort {
    /// The sizes below [`Plan::large`]: short calls, many of them.
    pub const SMALL: Effort = Effort {
        calls: 4,
        min_reps: 5,
        max_reps: 10,
    };
    /// The sizes from [`Plan::large`] on: each call is long.
    pub const LARGE: Effort = Effort {
        calls: 1,
        min_reps: 3,
        max_reps: 4,
    };
}

/// Which sizes of which collectives run, and how hard.
#[derive(Clone, Debug)]
pub struct Plan<'a> {
    /// The collectives.
    pub ops: &'a [Collective],
    /// Bytes per rank.
    pub sizes: &'a [usize],
    /// Sizes at which one call moves more than this in all are left out.
    pub max_total: usize,
    /// From this size on, [`Effort::LARGE`].
    pub large: usize,
    /// Ranks of the job.
    pub ranks: usize,
}

impl Plan<'_> {
    /// The sizes of `op` that run, split into (small, large).
    pub fn sizes(&self, op: Collective) -> (Vec<usize>, Vec<usize>) {
        let per_call = |b: usize| match op.regular() {
            Collective::Scatter
            | Collective::Gather
            | Collective::Allgather
            | Collective::Alltoall
            | Collective::ReduceScatter => b * self.ranks,
            _ => b,
        };
        self.sizes
            .iter()
            .copied()
            .filter(|&b| per_call(b) <= self.max_total)
            .partition(|&b| b < self.large)
    }

    /// Each collective's size groups that hold a size: (op, group name,
    /// sizes, effort), in the order they run.
    pub fn groups(&self) -> Vec<(Collective, &'static str, Vec<usize>, Effort)> {
        let mut out = Vec::new();
        for &op in self.ops {
            let (small, large) = self.sizes(op);
            for (group, sizes, effort) in [
                ("small", small, Effort::SMALL),
                ("large", large, Effort::LARGE),
            ] {
                if !sizes.is_empty() {
                    out.push((op, group, sizes, effort));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_leave_out_what_moves_too_much_and_split_at_large() {
        let ops = [Collective::Bcast, Collective::Gather];
        let sizes = [1024, 256 * 1024, 4 << 20];
        let plan = Plan {
            ops: &ops,
            sizes: &sizes,
            max_total: 16 << 20,
            large: 256 * 1024,
            ranks: 8,
        };
        assert_eq!(
            plan.sizes(Collective::Bcast),
            (vec![1024], vec![256 * 1024, 4 << 20])
        );
        assert_eq!(
            plan.sizes(Collective::Gather),
            (vec![1024], vec![256 * 1024]),
            "8 × 4M per call is over the 16M total"
        );
        let groups = plan.groups();
        assert_eq!(groups.len(), 4);
        assert_eq!(groups[1].1, "large");
        assert_eq!(groups[1].3, Effort::LARGE);
    }
}
