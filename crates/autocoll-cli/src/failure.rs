//! How a subcommand fails: the user's mistake (exit 2) or the run's (exit 1).

/// A failure the user caused (exit 2) or a run that failed (exit 1).
pub enum Failure {
    /// Bad arguments or input: one line, exit code 2.
    Usage(String),
    /// The run itself failed: exit code 1.
    Run(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Run(e)
    }
}

/// An experiment's errors: the run failed.
impl From<autocoll_experiments::Error> for Failure {
    fn from(e: autocoll_experiments::Error) -> Self {
        Failure::Run(anyhow::Error::new(e))
    }
}

/// The trace analysis's errors: bad input exits 2, a failed output 1.
impl From<autocoll_analyze::Error> for Failure {
    fn from(e: autocoll_analyze::Error) -> Self {
        if e.is_input() {
            Failure::Usage(e.to_string())
        } else {
            Failure::Run(anyhow::anyhow!("{e}"))
        }
    }
}
