//! The analysis's errors: the input's (trace files that are missing,
//! damaged or not of one run, a selection of calls that holds none) and
//! the output's (a timeline, a synthetic trace or a plot that could not be
//! written or drawn). Every message names the file or the option.

use std::path::PathBuf;

/// What went wrong, with the file or option it concerns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A trace directory or file could not be read.
    #[error("{context}: {source}")]
    Io {
        /// What was being read.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The trace reader refused a file (bad header, damaged record or checksum).
    #[error(transparent)]
    Read(#[from] autocoll::Error),
    /// The trace files are not one run's complete, undamaged set.
    #[error("{0}")]
    BadFiles(String),
    /// No call is left to analyse, in every file and within the calls chosen.
    #[error("{}: no call to analyse (in every file{})", .dir.display(), if *.within { ", within --calls" } else { "" })]
    NoCalls {
        /// The directory read.
        dir: PathBuf,
        /// True when the calls analysed were limited to a range.
        within: bool,
    },
    /// Two runs cannot be compared as asked.
    #[error("{0}")]
    Compare(String),
    /// A timeline's path names no file.
    #[error("--chrome `{}` names no file", .0.display())]
    NotAFile(PathBuf),
    /// An output file could not be written.
    #[error("{context}: {source}")]
    Write {
        /// What was being written.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An output file could not be saved (the library's atomic write).
    #[error("{0}")]
    Save(autocoll::Error),
    /// A plot could not be drawn.
    #[error("{what}: {reason}")]
    Plot {
        /// Which plot.
        what: &'static str,
        /// The drawing backend's message.
        reason: String,
    },
}

impl Error {
    /// True when the input is at fault (trace files, the calls or ranks
    /// asked for), false when writing or drawing an output failed.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            Error::Io { .. }
                | Error::Read(_)
                | Error::BadFiles(_)
                | Error::NoCalls { .. }
                | Error::Compare(_)
        )
    }

    /// Wraps an I/O error of reading with what was being read.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Wraps an I/O error of writing with what was being written.
    pub(crate) fn write(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Write {
            context: context.into(),
            source,
        }
    }
}

/// The analysis's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
