//! A tree given as text: the parent rank of every rank, one a line (the
//! `--tree-file` of `autocoll bench`, `check`, `tune` and `adapt`).
//!
//! ```text
//! # ranks 0–7: two hosts of four, rank 4 leads the second
//! -      # rank 0 is the root
//! 0
//! 0
//! 0
//! 0      # rank 4 hangs under the root ...
//! 4      # ... and ranks 5–7 under rank 4
//! 4
//! 4
//! ```
//!
//! Line by line, the n-th entry is rank n's parent; `#` starts a comment
//! and blank lines are skipped. The root's parent is `-` or the root
//! itself. The text is read, not the file: reading is the caller's.

use crate::error::{Error, Result};
use crate::tree::shape::Shape;

/// A tree as the parent of every rank, checked to be one tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentList {
    root: usize,
    parents: Vec<Option<usize>>,
}

impl ParentList {
    /// Parses a tree file's `text`; errors name `source` and the line.
    /// Refuses an entry that is not a rank of the tree, a second root, no
    /// root, and parents that go round in a circle.
    pub fn parse(text: &str, source: &str) -> Result<ParentList> {
        let mut lines = Vec::new();
        let mut parents = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let entry = raw.split('#').next().unwrap_or("").trim();
            if entry.is_empty() {
                continue;
            }
            let rank = parents.len();
            let at = |reason: String| bad(source, i + 1, reason);
            parents.push(match entry {
                "-" => None,
                _ => match entry.parse::<usize>() {
                    Ok(p) if p == rank => None,
                    Ok(p) => Some(p),
                    Err(_) => {
                        return Err(at(format!(
                            "`{entry}` is not rank {rank}'s parent (a rank, or - for the root)"
                        )))
                    }
                },
            });
            lines.push(i + 1);
        }
        if parents.is_empty() {
            return Err(Error::Tree(format!("{source}: names no rank")));
        }
        let root = find_root(&parents, &lines, source)?;
        check_parents(&parents, &lines, source)?;
        Ok(ParentList { root, parents })
    }

    /// The tree's ranks.
    pub fn size(&self) -> usize {
        self.parents.len()
    }

    /// The root.
    pub fn root(&self) -> usize {
        self.root
    }

    /// `rank`'s parent; `None` for the root.
    pub fn parent(&self, rank: usize) -> Option<usize> {
        self.parents[rank]
    }

    /// The `user` shape that is this tree when rooted at [`Self::root`]:
    /// its parent list counts positions from the root, position v being
    /// rank (root + v) mod P (other roots turn the tree round with them).
    pub fn shape(&self) -> Shape {
        let p = self.size();
        let pos = |rank: usize| (rank + p - self.root) % p;
        let mut by_position = vec![0; p];
        for (rank, parent) in self.parents.iter().enumerate() {
            if let Some(up) = parent {
                by_position[pos(rank)] = pos(*up);
            }
        }
        Shape::User(by_position)
    }
}

fn bad(source: &str, line: usize, reason: String) -> Error {
    Error::BadFile {
        path: source.to_string(),
        line,
        reason,
    }
}

/// The one rank without a parent.
fn find_root(parents: &[Option<usize>], lines: &[usize], source: &str) -> Result<usize> {
    let mut roots = (0..parents.len()).filter(|&r| parents[r].is_none());
    let root = roots.next().ok_or_else(|| {
        Error::Tree(format!(
            "{source}: no rank is the root (give the root's parent as - or as itself)"
        ))
    })?;
    if let Some(second) = roots.next() {
        return Err(bad(
            source,
            lines[second],
            format!(
                "rank {second} is a second root (rank {root}, line {}, is the first)",
                lines[root]
            ),
        ));
    }
    Ok(root)
}

/// Every parent is a rank, and following parents from any rank ends at
/// the root.
fn check_parents(parents: &[Option<usize>], lines: &[usize], source: &str) -> Result<()> {
    let p = parents.len();
    for (rank, parent) in parents.iter().enumerate() {
        if let Some(up) = *parent {
            if up >= p {
                return Err(bad(
                    source,
                    lines[rank],
                    format!("rank {rank}'s parent {up} is not a rank of this {p}-rank tree"),
                ));
            }
        }
    }
    // 0: not seen, 1: on the walk under way, 2: reaches the root.
    let mut state = vec![0u8; p];
    for start in 0..p {
        let mut walk = Vec::new();
        let mut at = Some(start);
        while let Some(rank) = at.filter(|&r| state[r] != 2) {
            if state[rank] == 1 {
                let from = walk.iter().position(|&r| r == rank).unwrap_or(0);
                let circle: Vec<String> = walk[from..]
                    .iter()
                    .chain([&rank])
                    .map(usize::to_string)
                    .collect();
                return Err(bad(
                    source,
                    lines[rank],
                    format!(
                        "rank {rank}'s parents go round in a circle ({}) and never reach the root",
                        circle.join(" -> ")
                    ),
                ));
            }
            state[rank] = 1;
            walk.push(rank);
            at = parents[rank];
        }
        for r in walk {
            state[r] = 2;
        }
    }
    Ok(())
}
