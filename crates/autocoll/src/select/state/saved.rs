//! A state file as a reader outside a run sees it (what the lottery and
//! the balancer learned, for every communicator shape), and forgetting the
//! balancer's tables in it while keeping what the lottery learned.

use std::path::Path;

use super::file::{read, update, Learned, Run, TableEntry};
use super::fingerprint::Fingerprint;
use crate::error::{Error, Result};
use crate::select::key::Key;

/// What one run entry of a state file holds: a communicator shape's
/// pools and balancer tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    /// The run's fingerprint: hosts, ranks per host, transport, version,
    /// objective.
    pub fingerprint: Fingerprint,
    /// What the lottery learned of each pool, in file order.
    pub pools: Vec<(Key, Learned)>,
    /// The virtual-rank tables the balancer learned.
    pub tables: Vec<TableEntry>,
}

impl From<Run> for Saved {
    fn from(run: Run) -> Self {
        Saved {
            fingerprint: run.fingerprint,
            pools: run.pools.into_iter().map(|e| (e.key, e.learned)).collect(),
            tables: run.tables,
        }
    }
}

/// Every run entry of the state file at `path`, in file order; none when
/// the file does not exist. A file that does not parse, or is of another
/// schema, is an error naming it (a run only warns and starts afresh).
pub fn read_saved(path: &Path) -> Result<Vec<Saved>> {
    let file = read(path).map_err(|why| unreadable(path, &why))?;
    Ok(file.runs.into_iter().map(Saved::from).collect())
}

/// Removes every balancer table from the state file at `path`, keeping
/// what the lottery learned, under the lock every save takes; returns how
/// many it removed (0 when there is no file, which it does not create).
/// An unreadable file is an error and is left as it is.
pub fn forget_tables(path: &Path) -> Result<usize> {
    let exists = path
        .try_exists()
        .map_err(|e| Error::io(format!("lottery state {}", path.display()), e))?;
    if !exists {
        return Ok(0);
    }
    update(
        path,
        |why| Err(unreadable(path, why)),
        |file| {
            file.runs
                .iter_mut()
                .map(|run| std::mem::take(&mut run.tables).len())
                .sum()
        },
    )
}

fn unreadable(path: &Path, why: &str) -> Error {
    Error::Config(format!(
        "lottery state {} is unreadable: {why}",
        path.display()
    ))
}
