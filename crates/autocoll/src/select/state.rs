//! The lottery's memory across runs: a JSON file holding, per
//! communicator shape (the placement of its ranks over hosts, the
//! transport, autocoll's version, the objective), the statistics and
//! budget of every pool, and the virtual-rank tables the balancer learned
//! (files older than the balancer have none, and load as before).
//!
//! A shape, not a set of hosts: communicators of one size whose ranks lie
//! over hosts alike (rank i on the same host as rank j in both) share what
//! they learn, whichever hosts those are, so the row communicators of a
//! grid and the next night's run on other nodes start from it. Host names
//! are kept in the file for the reader, and not compared. Within a run,
//! [`Shared`] carries it from one communicator of a shape to the next.
//!
//! Saving takes an exclusive lock on `<file>.lock`, reads what is there now,
//! merges this run's pools into it and replaces the file atomically. The
//! merge keeps, per candidate, this run's statistics where this run
//! measured it (its average moved), and the file's (perhaps newer, from
//! another program) everywhere else; pools and fingerprints this run did
//! not touch are kept. A corrupt, truncated or foreign file is reported as
//! a warning and treated as empty, so it never stops a program; before the
//! first save replaces it, it is kept beside as `<file>.corrupt`, so what
//! it held is not lost. [`read_saved`] reads a file whole, for a reader
//! that has no communicator, and [`forget_tables`] forgets the balancer's
//! tables in it.

mod file;
mod fingerprint;
mod saved;
mod shared;
mod store;
#[cfg(test)]
mod tests;

pub use file::{Learned, TableEntry};
pub use fingerprint::{CommShape, Fingerprint};
pub use saved::{forget_tables, read_saved, Saved};
pub use shared::Shared;
pub use store::Store;
