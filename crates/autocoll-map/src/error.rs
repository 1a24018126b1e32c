//! The crate's errors.

use thiserror::Error;

/// What went wrong reading a file or mapping a job.
#[derive(Debug, Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the file's name.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A topology, pattern or matrix file is malformed; the message names
    /// the file and the line.
    #[error("{0}")]
    Format(String),
    /// The inputs do not fit together (more ranks than processing
    /// elements, a mapping of another job's size).
    #[error("{0}")]
    Mismatch(String),
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
