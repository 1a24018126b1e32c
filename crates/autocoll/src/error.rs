//! The library's error type: every failure is a value that says what and where.
//!
//! One [`Error`] for the whole library, so that a caller matches on the
//! kind of failure (a lost peer, mismatched calls, a bad file) rather than
//! on text. Each variant carries what a person needs to act on it: the
//! ranks involved, the call that was waiting ([`crate::ids::CallSig`]),
//! the file and line. Bad input from a user, a file or a socket ends here,
//! not in a panic; the `autocoll` command prints it and exits non-zero.

use std::time::Duration;

use crate::ids::CallSig;

/// Everything that can go wrong in autocoll.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An implementation id or one of its parameters could not be parsed.
    #[error("bad implementation id `{input}`: {reason}")]
    ParseImpl {
        /// The text that was given.
        input: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The implementation exists but is not one of the given operation.
    #[error("implementation `{imp}` cannot run {op}")]
    WrongOp {
        /// The implementation's text id.
        imp: String,
        /// The operation that was called.
        op: String,
    },
    /// A tree could not be built for these arguments.
    #[error("cannot build tree: {0}")]
    Tree(String),
    /// The hosts and switches reported for the ranks do not make a layout.
    #[error("layout of the ranks: {0}")]
    Layout(String),
    /// A rank number outside the communicator.
    #[error("rank {rank} is out of range for a communicator of {size} ranks")]
    RankOutOfRange {
        /// The rank that was given.
        rank: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A user buffer has the wrong length for the call.
    #[error("{what} holds {got} elements, the call needs {expected}")]
    BufferSize {
        /// Which buffer.
        what: &'static str,
        /// Elements it must hold.
        expected: usize,
        /// Elements it holds.
        got: usize,
    },
    /// The reduction operation is not defined for this element type.
    #[error("reduction {op} is not defined for {ty}")]
    OpType {
        /// The operation's name.
        op: &'static str,
        /// The element type's name.
        ty: &'static str,
    },
    /// No message arrived from a peer within the transport's timeout.
    #[error("rank {rank}: no message from rank {peer} within {waited:?} (in {call}); is rank {peer} alive?")]
    Timeout {
        /// The waiting rank.
        rank: usize,
        /// The rank that was expected to send.
        peer: usize,
        /// How long the rank waited.
        waited: Duration,
        /// The call that was waiting.
        call: CallSig,
    },
    /// Sends of a call were still not taken by their receivers when the
    /// timeout passed (transports that complete sends at the end of a call).
    #[error("rank {rank}: {pending} sends still not taken by their receivers after {waited:?}; are the peers alive?")]
    SendsIncomplete {
        /// The sending rank.
        rank: usize,
        /// Sends not complete.
        pending: usize,
        /// How long the rank waited.
        waited: Duration,
    },
    /// A peer closed its connection or its rank ended.
    #[error("rank {rank}: rank {peer} is gone ({reason})")]
    PeerGone {
        /// The rank that noticed.
        rank: usize,
        /// The rank that went away.
        peer: usize,
        /// What was observed.
        reason: String,
    },
    /// Ranks entered different collectives at the same point of the program.
    #[error(
        "mismatched collective calls: rank {rank} is in {local}, rank {peer} sent for {remote}"
    )]
    Mismatch {
        /// The rank that noticed.
        rank: usize,
        /// This rank's call.
        local: CallSig,
        /// The peer that disagrees.
        peer: usize,
        /// The peer's call.
        remote: CallSig,
    },
    /// A message arrived with a length other than the algorithm expects.
    #[error(
        "rank {rank}: message from rank {peer} has {got} bytes, expected {expected} (in {call})"
    )]
    MessageSize {
        /// The receiving rank.
        rank: usize,
        /// The sender.
        peer: usize,
        /// Bytes expected.
        expected: usize,
        /// Bytes received.
        got: usize,
        /// The call.
        call: CallSig,
    },
    /// A peer broke the wire protocol.
    #[error("protocol error from {peer}: {reason}")]
    Protocol {
        /// Who sent the bad bytes (a rank, or an address before the handshake).
        peer: String,
        /// What was wrong.
        reason: String,
    },
    /// A file the library reads (tuning table, state) is malformed.
    #[error("{path}:{line}: {reason}")]
    BadFile {
        /// The file.
        path: String,
        /// The line (from 1) where the problem is.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A message longer than the largest frame the transport may carry.
    #[error(
        "a message of {bytes} bytes is above the largest frame of {max} bytes (AUTOCOLL_MAX_FRAME)"
    )]
    MessageTooLarge {
        /// The message's length.
        bytes: u64,
        /// The configured maximum.
        max: u64,
    },
    /// A trace file is not one, was cut short, or is damaged.
    #[error("{path}: at byte {offset}: {reason}")]
    BadTrace {
        /// The file.
        path: String,
        /// Where in it the problem was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A communication pattern's parts do not fit together, or a rank's
    /// counts (sent to rank 0 at the end of a job) are cut short or damaged.
    #[error("pattern: {0}")]
    Pattern(String),
    /// A communicator cannot be split or duplicated: this rank has used up
    /// its context ids, or the ranks' contributions do not fit together.
    #[error("split: {0}")]
    Split(String),
    /// The environment or configuration given to the library is unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// An operating-system I/O failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An MPI call returned an error code (under an error handler that
    /// returns instead of aborting).
    #[error("{call} failed with MPI error code {code}")]
    Mpi {
        /// The MPI function.
        call: &'static str,
        /// What it returned.
        code: i32,
    },
}

impl Error {
    /// Wraps an I/O error with a line that says what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
