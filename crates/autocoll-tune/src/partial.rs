//! A sweep's progress file (`<out>.partial.json`): every finished
//! point's rows and the unfinished race under way, so that an interrupted
//! sweep goes on where it stopped, and so that another sweep can be
//! judged by it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::race::Saved;
use crate::row::Row;

/// Schema of the progress file.
pub const SCHEMA: &str = "autocoll.tune-partial/1";

/// The progress of a sweep, saved after every point and every round of a
/// race.
#[derive(Default, Serialize, Deserialize)]
pub struct Partial {
    /// [`SCHEMA`].
    pub schema: String,
    /// Every finished point's rows.
    pub rows: Vec<Row>,
    /// Unfinished races (at most the one under way).
    #[serde(default)]
    pub races: Vec<Saved>,
    /// Seconds spent measuring, by this sweep and those it resumed.
    #[serde(default)]
    pub elapsed_s: f64,
}

impl Partial {
    /// Drops the saved race of `op` on `ranks` ranks at `bytes`, if any.
    pub fn forget_race(&mut self, op: &str, ranks: usize, bytes: usize) {
        self.races
            .retain(|r| (r.op.as_str(), r.ranks, r.bytes) != (op, ranks, bytes));
    }
}

/// `FILE.toml` → `FILE.toml.partial.json`.
pub fn path_beside(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".partial.json");
    PathBuf::from(name)
}

/// The progress file at `path`; an empty one if there is none.
pub fn load(path: &Path) -> Result<Partial, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Partial::default()),
        Err(source) => {
            return Err(Error::Read {
                path: path.to_owned(),
                source,
            })
        }
    };
    let doc: Partial = serde_json::from_str(&text).map_err(|source| Error::Parse {
        path: path.to_owned(),
        line: source.line(),
        source,
    })?;
    if doc.schema != SCHEMA {
        return Err(Error::Schema {
            path: path.to_owned(),
            found: doc.schema,
            expected: SCHEMA,
        });
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_file_sits_beside_the_table() {
        assert_eq!(
            path_beside(Path::new("out/t.toml")),
            PathBuf::from("out/t.toml.partial.json")
        );
    }
}
