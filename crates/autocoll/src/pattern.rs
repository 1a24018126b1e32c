//! The program's communication pattern: who sends how many messages of
//! what size to whom, the input of rank mapping.
//!
//! Every rank counts its own sends in a [`Recorder`], keyed by the kind of
//! traffic ([`Kind`]), the destination and the message's size class
//! ([`class_of`]): a count and a byte total each, so recording costs a map
//! update per send and the counts stay small however long the program
//! runs. At the end the ranks send their recorders to rank 0
//! ([`Recorder::encode`], on [`GATHER_TAG`]), which merges them into one
//! [`Pattern`], with every rank's host, and writes it as JSON, format
//! `autocoll.pattern/1` (docs/formats.md).
//!
//! The counting is done by [`Recording`], a [`Transport`](crate::transport::Transport) that wraps
//! another: collectives and point-to-point messages alike pass through it.
//! Programs built on [`crate::init`] turn it on with `AUTOCOLL_PATTERN=FILE`
//! ([`from_env`]); any program with [`Communicator::record_pattern`](crate::comm::Communicator::record_pattern); the
//! MPI interposition library wraps its own transport and gathers itself.

pub(crate) mod counts;
mod file;
pub(crate) mod recording;
#[cfg(test)]
mod tests;
mod wire;

pub use crate::comm::patterns::from_env;
pub use counts::{class_of, Entry, Kind, Recorder, GATHER_TAG, MAX_CLASS, PROBE_TAG, SCHEMA};
pub use file::Pattern;
pub use recording::{Recording, ENV_PATTERN};
