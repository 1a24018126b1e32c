//! The `Table` selector and its tuning file.
//!
//! A tuning file is TOML a person can read and diff:
//!
//! ```toml
//! schema = "autocoll.tuning/1"
//!
//! [[rule]]
//! op = "bcast"
//! ranks = "2..8"        # communicator sizes, both ends included
//! bytes = "0..64K"      # bytes per rank, both ends included (K, M, G suffixes)
//! impl = "bcast:binomial"
//! ```
//!
//! Rules of one collective must not overlap; the first rule that matches a
//! call wins (so order does not matter), and a call no rule matches gets the
//! built-in default. Every error names the file, the line and the reason.

use std::fmt::Write;
use std::ops::RangeInclusive;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::fixed::default_for;
use super::implementation::{format_bytes, Implementation};
use super::selector::{Group, Offspring, Selector};
use crate::error::{Error, Result};
use crate::ids::{parse_bytes, Collective};

/// The schema line every tuning file carries.
pub const SCHEMA: &str = "autocoll.tuning/1";

/// One line of the table: for `op` on `ranks` ranks with `bytes` per rank,
/// use `imp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The collective.
    pub op: Collective,
    /// Communicator sizes, inclusive.
    pub ranks: RangeInclusive<usize>,
    /// Bytes per rank, inclusive.
    pub bytes: RangeInclusive<usize>,
    /// The implementation to use.
    pub imp: Implementation,
}

/// Picks implementations from a table of rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    schema: Spanned<String>,
    #[serde(default)]
    rule: Vec<Spanned<RuleDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDoc {
    op: Spanned<String>,
    ranks: Spanned<String>,
    bytes: Spanned<String>,
    #[serde(rename = "impl")]
    imp: Spanned<String>,
}

impl Table {
    /// Reads a tuning file.
    pub fn load(path: &Path) -> Result<Table> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        Table::parse(&text, &path.display().to_string())
    }

    /// Parses a tuning file's text; `name` is used in errors.
    pub fn parse(text: &str, name: &str) -> Result<Table> {
        let at = |offset: usize, reason: String| Error::BadFile {
            path: name.to_string(),
            line: line_of(text, offset),
            reason,
        };
        let doc: FileDoc = toml::from_str(text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            at(offset, e.message().to_string())
        })?;
        if doc.schema.get_ref() != SCHEMA {
            let reason = format!(
                "unsupported schema `{}` (this autocoll reads {SCHEMA})",
                doc.schema.get_ref()
            );
            return Err(at(doc.schema.span().start, reason));
        }
        let mut table = Table::default();
        for spanned in &doc.rule {
            let r = spanned.get_ref();
            let field = |s: &Spanned<String>, what: String| at(s.span().start, what);
            let op: Collective = r.op.get_ref().parse().map_err(|e| field(&r.op, e))?;
            let ranks = range(r.ranks.get_ref(), |s| {
                s.parse().map_err(|_| format!("`{s}` is not a rank count"))
            })
            .map_err(|e| field(&r.ranks, format!("ranks: {e}")))?;
            let bytes = range(r.bytes.get_ref(), parse_bytes)
                .map_err(|e| field(&r.bytes, format!("bytes: {e}")))?;
            let imp: Implementation = r
                .imp
                .get_ref()
                .parse()
                .map_err(|e: Error| field(&r.imp, e.to_string()))?;
            if imp.op != op {
                return Err(field(
                    &r.imp,
                    format!("`{imp}` is not an implementation of {op}"),
                ));
            }
            let rule = Rule {
                op,
                ranks,
                bytes,
                imp,
            };
            if let Some(other) = table.rules.iter().find(|o| overlaps(o, &rule)) {
                let reason = format!(
                    "overlaps the earlier {} rule for ranks {} and bytes {}",
                    other.op,
                    show(&other.ranks, |n| n.to_string()),
                    show(&other.bytes, format_bytes)
                );
                return Err(at(spanned.span().start, reason));
            }
            table.rules.push(rule);
        }
        Ok(table)
    }

    /// The implementation the table names for a call, if a rule matches.
    pub fn lookup(&self, op: Collective, ranks: usize, bytes: usize) -> Option<&Implementation> {
        self.rules
            .iter()
            .find(|r| r.op == op && r.ranks.contains(&ranks) && r.bytes.contains(&bytes))
            .map(|r| &r.imp)
    }

    /// The table as a tuning file, with `comment` lines at the top.
    pub fn to_toml(&self, comment: &str) -> String {
        let mut out = String::new();
        for line in comment.lines() {
            let _ = writeln!(out, "# {line}");
        }
        let _ = writeln!(out, "schema = \"{SCHEMA}\"");
        for r in &self.rules {
            let _ = write!(
                out,
                "\n[[rule]]\nop = \"{}\"\nranks = \"{}\"\nbytes = \"{}\"\nimpl = \"{}\"\n",
                r.op,
                show(&r.ranks, |n| n.to_string()),
                show(&r.bytes, format_bytes),
                r.imp
            );
        }
        out
    }
}

impl Selector for Table {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> Result<Implementation> {
        let ranks = group.size();
        Ok(self
            .lookup(op, ranks, bytes)
            .cloned()
            .unwrap_or_else(|| default_for(op, ranks, bytes)))
    }

    /// The same table: its rules name the communicator sizes they hold at.
    fn offspring(&mut self, _ranks: &Offspring<'_>) -> Option<Box<dyn Selector>> {
        Some(Box::new(self.clone()))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

fn range(
    text: &str,
    parse: impl Fn(&str) -> std::result::Result<usize, String>,
) -> std::result::Result<RangeInclusive<usize>, String> {
    let (lo, hi) = text.split_once("..").unwrap_or((text, text));
    let (lo, hi) = (parse(lo.trim())?, parse(hi.trim())?);
    if lo > hi {
        return Err(format!("`{text}` is reversed"));
    }
    Ok(lo..=hi)
}

fn show(r: &RangeInclusive<usize>, f: impl Fn(usize) -> String) -> String {
    format!("{}..{}", f(*r.start()), f(*r.end()))
}

fn overlaps(a: &Rule, b: &Rule) -> bool {
    let meet = |x: &RangeInclusive<usize>, y: &RangeInclusive<usize>| {
        x.start() <= y.end() && y.start() <= x.end()
    };
    a.op == b.op && meet(&a.ranks, &b.ranks) && meet(&a.bytes, &b.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"schema = "autocoll.tuning/1"

[[rule]]
op = "bcast"
ranks = "2..8"
bytes = "0..64K"
impl = "bcast:binomial"

[[rule]]
op = "bcast"
ranks = "2..8"
bytes = "65537..1G"
impl = "bcast:chain:seg=16K"
"#;

    #[test]
    fn round_trips_and_looks_up() {
        let t = Table::parse(GOOD, "t.toml").unwrap();
        assert_eq!(
            t.lookup(Collective::Bcast, 4, 65536).unwrap().to_string(),
            "bcast:binomial"
        );
        assert_eq!(
            t.lookup(Collective::Bcast, 8, 1 << 20).unwrap().to_string(),
            "bcast:chain:seg=16K"
        );
        assert!(t.lookup(Collective::Bcast, 9, 10).is_none());
        assert!(t.lookup(Collective::Reduce, 4, 10).is_none());
        let again = Table::parse(&t.to_toml("made by a test"), "again.toml").unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn bad_files_name_file_line_and_reason() {
        let cases = [
            (
                GOOD.replace("autocoll.tuning/1", "autocoll.tuning/9"),
                1,
                "unsupported schema",
            ),
            (
                GOOD.replace("bcast:chain:seg=16K", "bcast:tree"),
                13,
                "unknown algorithm `tree`",
            ),
            (
                GOOD.replace("impl = \"bcast:binomial\"", "impl = \"reduce:binomial\""),
                7,
                "not an implementation of bcast",
            ),
            (
                GOOD.replace("65537..1G", "1K..1G"),
                9,
                "overlaps the earlier bcast rule",
            ),
            (
                GOOD.replace(
                    "\"2..8\"\nbytes = \"0..64K\"",
                    "\"8..2\"\nbytes = \"0..64K\"",
                ),
                5,
                "reversed",
            ),
            (
                GOOD.replace(
                    "op = \"bcast\"\nranks = \"2..8\"\nbytes = \"0",
                    "op = \"bcst\"\nranks = \"2..8\"\nbytes = \"0",
                ),
                4,
                "unknown collective",
            ),
            (GOOD.replace("0..64K", "0..64Q"), 6, "unknown size suffix"),
            (
                GOOD.replace(
                    "impl = \"bcast:binomial\"",
                    "impl = \"bcast:binomial\"\ncolour = 3",
                ),
                8,
                "unknown field `colour`",
            ),
            (GOOD.replace("[[rule]]\nop", "[[rule]\nop"), 3, ""),
        ];
        for (text, line, says) in cases {
            let err = Table::parse(&text, "t.toml").unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("t.toml:{line}: ")) && err.contains(says),
                "expected line {line} `{says}`, got `{err}`"
            );
        }
    }
}
