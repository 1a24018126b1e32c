//! Rank placement (Sweeney et al., "Optimizing communication in MPI
//! programs for an execution environment"): which processing element each
//! rank of a job runs on.
//!
//! Three inputs and one question. The [`Topology`] is the machine as a tree
//! of switch elements (a network switch, a host's memory) over processing
//! elements (cores), every link with a bandwidth per message length and a
//! maximum, every switch with an optional aggregate maximum. The
//! [`Traffic`] is the program's pattern: messages per ordered pair of
//! ranks, by size. A [`Mapping`] gives each rank a processing element.
//! The [`estimate()`] of a mapping is the paper's Figure 4: every rank's
//! messages are charged to the links and switches on their paths, ranks
//! in turn, a link's later ranks overlapping the earlier ones up to its
//! maximum bandwidth; the cost is the busiest resource's time.
//!
//! The mappers: [`linear()`] (rank i on processing element i, what `mpirun`
//! does), [`greedy()`] (the paper's Figure 3, generalised to trees of unequal
//! arity and depth), [`search()`] (estimator-guided swaps from the greedy
//! mapping, the paper's future work) and [`random()`] (the spread of random
//! placements), and [`scotch()`], which runs Debian's `scotch_gmap` on the
//! same inputs so that its mapping is scored by the same estimator.
//! Everything but Scotch is deterministic and does no I/O beyond reading
//! and writing the files it is given.
//!
//! The [`probe`] measures a topology's tables and maxima from inside a job
//! (ping-pongs, exchanges and streams between chosen pairs of ranks); its
//! plan and the writing of its results are pure, the measurement runs on
//! an autocoll [`autocoll::Communicator`].

#![deny(missing_docs)]

mod error;
pub mod estimate;
pub mod greedy;
pub mod hwloc;
pub mod mapping;
pub mod probe;
pub mod scotch;
pub mod search;
pub mod topology;
pub mod traffic;

pub use error::{Error, Result};
pub use estimate::{estimate, Estimator};
pub use greedy::greedy;
pub use mapping::{linear, Mapping};
pub use scotch::scotch;
pub use search::{random, search, Budget, Spread};
pub use topology::{Element, Link, Table, Topology};
pub use traffic::Traffic;

#[cfg(test)]
mod tests;
