//! The crate's errors.

use std::path::PathBuf;

/// What went wrong racing, judging or tabulating.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A progress file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A progress file is not JSON of the expected shape.
    #[error("{}:{line}: {source} (delete it to start the sweep afresh)", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line the parser stopped at.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A progress file of another schema (another version's).
    #[error("{}: unsupported schema `{found}` (this autocoll reads {expected})", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// The schema it names.
        found: String,
        /// The schema this version reads.
        expected: &'static str,
    },
    /// A race's tolerance outside [0, 1).
    #[error("{0} must lie in [0, 1): a share of the best's time")]
    Tolerance(f64),
    /// A settling job's pair does not name two candidates of its point.
    #[error("{0}: not two candidates of this point")]
    FinalOf(String),
    /// A row's collective or implementation id does not parse.
    #[error("{0}")]
    Id(String),
}
