//! autocoll-mpi: autocoll's collectives for unmodified MPI programs.
//!
//! Design in brief. Preloaded (`LD_PRELOAD`, or `autocoll mpirun`), the
//! library defines `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`,
//! `MPI_Scatter`, `MPI_Gather`, `MPI_Allgather`, `MPI_Alltoall`,
//! `MPI_Scan`, `MPI_Exscan`, `MPI_Reduce_scatter_block`,
//! `MPI_Reduce_scatter` (when every rank receives the same count) and
//! `MPI_Barrier` and their Fortran names,
//! and reaches the MPI library only through `PMPI_*`. A call is checked
//! first (`coll::plan`): anything the library does not handle goes to
//! `PMPI_<Op>` unchanged and is counted. The others run on
//! an autocoll [`Communicator`](autocoll::Communicator) over a private
//! duplicate of the program's communicator (`state`), whose selector
//! picks per call among autocoll's implementations and the MPI library's
//! own (`<op>:mpi`). No panic crosses into C (`boundary`); an MPI error
//! reaches the program's error handler as MPI's own would. With
//! `AUTOCOLL_PATTERN`, the point-to-point calls are wrapped too and the
//! program's pattern is written at `MPI_Finalize`. docs/mpi-library.md has
//! the whole story.
//!
//! Without the `mpi` feature only the pure parts build: the settings
//! ([`config`]) and the counts of the summary ([`stats`]).
#![deny(missing_docs)]

pub mod config;
pub mod stats;

/// The library's own allocations, messages in flight above all, come from
/// mimalloc, apart from the program's `malloc`: glibc serves a block of a
/// MiB with a fresh `mmap` (a page fault per 4 KiB, every call) or from
/// its heap depending on what the process freed before, and the
/// program's allocator settings are not the library's to change.
#[cfg(feature = "mpi")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "mpi")]
pub mod args;
#[cfg(feature = "mpi")]
pub mod boundary;
#[cfg(feature = "mpi")]
mod buffers;
#[cfg(feature = "mpi")]
pub mod coll;
#[cfg(feature = "mpi")]
mod entry;
#[cfg(feature = "mpi")]
mod fortran;
#[cfg(feature = "mpi")]
mod lifecycle;
#[cfg(feature = "mpi")]
mod p2p;
#[cfg(feature = "mpi")]
pub mod pattern;
#[cfg(feature = "mpi")]
pub mod state;
#[cfg(feature = "mpi")]
mod sys;
#[cfg(feature = "mpi")]
mod varied;
