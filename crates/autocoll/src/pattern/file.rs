//! The pattern file, `autocoll.pattern/1`: JSON with one entry a line, so
//! that a person reads it, `diff` compares two, and an error's line number
//! points at the entry.
//!
//! Reading takes two passes over the text: the first reads the header
//! (and finds any syntax error), the second the hosts and the entries,
//! checked against the header's `ranks` as they are read. Checking inside
//! the parse, not after it, is what lets every error, a rank out of range
//! or a repeated entry too, carry the line and column serde_json is at.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::counts::{check_entry, Entry, Kind, Recorder, SCHEMA};
use crate::error::{Error, Result};

/// A job's communication pattern: every rank's sends, point-to-point and
/// collective apart. Entries are sorted by (src, dst, class), and no two
/// have the same three. Deserializing it directly checks nothing:
/// [`Pattern::parse`] and [`Pattern::read`] check all that.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The number of ranks of the job.
    pub ranks: usize,
    /// What recorded it: the transport's kind (`tcp`, `local`, `mpi`).
    pub source: String,
    /// Rank `i`'s host, as the job saw it; empty when not known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The program's point-to-point messages.
    pub p2p: Vec<Entry>,
    /// The messages of collective calls.
    pub collective: Vec<Entry>,
}

impl Pattern {
    /// The pattern of a job of `ranks` from its ranks' counts (any rank's
    /// may be missing); a part of another job's size, of a rank outside
    /// it, of a rank given twice, or counting a send outside it is refused.
    pub fn merge(
        source: &str,
        ranks: usize,
        parts: impl IntoIterator<Item = Recorder>,
    ) -> Result<Pattern> {
        let mut pattern = Pattern {
            schema: SCHEMA.into(),
            ranks,
            source: source.into(),
            hosts: Vec::new(),
            p2p: Vec::new(),
            collective: Vec::new(),
        };
        let mut seen = BTreeSet::new();
        for part in parts {
            if !seen.insert(part.rank()) {
                let why = format!("the counts of rank {} are given twice", part.rank());
                return Err(Error::Pattern(why));
            }
            pattern.add(&part)?;
        }
        for list in [&mut pattern.p2p, &mut pattern.collective] {
            list.sort_by_key(|e| (e.src, e.dst, e.class));
        }
        Ok(pattern)
    }

    /// Adds one rank's entries, unsorted.
    fn add(&mut self, part: &Recorder) -> Result<()> {
        let (rank, ranks) = (part.rank(), self.ranks);
        if part.ranks() != ranks || rank >= ranks {
            return Err(Error::Pattern(format!(
                "the counts of rank {rank} of {} ranks do not fit a job of {ranks}",
                part.ranks()
            )));
        }
        for (kind, list) in [
            (Kind::P2p, &mut self.p2p),
            (Kind::Collective, &mut self.collective),
        ] {
            for entry in part.entries(kind) {
                check_entry(ranks, &entry)
                    .map_err(|why| Error::Pattern(format!("the counts of rank {rank}: {why}")))?;
                list.push(entry);
            }
        }
        Ok(())
    }

    /// The pattern with the ranks' hosts, rank by rank; a list of another
    /// length than `ranks`, or with an empty name, is refused.
    pub fn with_hosts(mut self, hosts: Vec<String>) -> Result<Pattern> {
        self.set_hosts(hosts)?;
        Ok(self)
    }

    /// Sets the ranks' hosts as [`Self::with_hosts`] does, leaving the
    /// pattern as it was when they are refused: a caller still has the
    /// counts to write.
    pub fn set_hosts(&mut self, hosts: Vec<String>) -> Result<()> {
        check_hosts(self.ranks, &hosts).map_err(Error::Pattern)?;
        self.hosts = hosts;
        Ok(())
    }

    /// Writes the pattern to `path` as JSON, atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::files::write_atomic(path, self.to_json().as_bytes())
    }

    /// The file's text: the header's fields a line each (the hosts on one,
    /// when known), then the entries a line each.
    pub fn to_json(&self) -> String {
        format!(
            "{{\n  \"schema\": {},\n  \"ranks\": {},\n  \"source\": {},\n{}  \"p2p\": {},\n  \"collective\": {}\n}}\n",
            text_json(&self.schema),
            self.ranks,
            text_json(&self.source),
            hosts_json(&self.hosts),
            entries_json(&self.p2p),
            entries_json(&self.collective),
        )
    }

    /// Reads and checks the pattern file at `path`; errors name it.
    pub fn read(path: &Path) -> Result<Pattern> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading pattern {}", path.display()), e))?;
        Pattern::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a pattern file's text; `origin` names it in
    /// errors, which give the line and column: the schema, `ranks` (at
    /// least 1), the hosts when given (one a rank, none empty), every
    /// entry's ranks (below `ranks`), class (at most [`super::MAX_CLASS`]),
    /// count (at least 1) and bytes (what its count of its class can add up
    /// to), and no two entries of a list for one (src, dst, class). The
    /// entries come back sorted.
    pub fn parse(text: &str, origin: &str) -> Result<Pattern> {
        let bad = |e: serde_json::Error| bad_json(origin, &e);
        let head: Head = serde_json::from_str(text).map_err(bad)?;
        let mut body = serde_json::Deserializer::from_str(text);
        let (hosts, p2p, collective) = BodySeed { ranks: head.ranks }
            .deserialize(&mut body)
            .map_err(bad)?;
        Ok(Pattern {
            schema: head.schema,
            ranks: head.ranks,
            source: head.source,
            hosts,
            p2p,
            collective,
        })
    }
}

/// A string as JSON, quoted and escaped.
fn text_json(s: &str) -> String {
    serde_json::to_string(s).expect("a string is JSON")
}

/// The `hosts` line, or nothing when they are not known.
fn hosts_json(hosts: &[String]) -> String {
    if hosts.is_empty() {
        return String::new();
    }
    let names: Vec<String> = hosts.iter().map(|h| text_json(h)).collect();
    format!("  \"hosts\": [{}],\n", names.join(", "))
}

/// Why `hosts` cannot be the hosts of a job of `ranks`.
fn check_hosts(ranks: usize, hosts: &[String]) -> std::result::Result<(), String> {
    if hosts.len() != ranks {
        return Err(format!("hosts: {} names for {ranks} ranks", hosts.len()));
    }
    match hosts.iter().position(String::is_empty) {
        Some(rank) => Err(format!("hosts: the host of rank {rank} is empty")),
        None => Ok(()),
    }
}

/// A list of entries, one a line.
fn entries_json(entries: &[Entry]) -> String {
    if entries.is_empty() {
        return "[]".into();
    }
    let lines: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "    {}",
                serde_json::to_string(e).expect("numbers are JSON")
            )
        })
        .collect();
    format!("[\n{}\n  ]", lines.join(",\n"))
}

/// `origin:line: column C: what`, from serde_json's error.
fn bad_json(origin: &str, e: &serde_json::Error) -> Error {
    let full = e.to_string();
    // serde_json appends the position to its message; it is said once,
    // in the file:line form every reader of the project uses.
    let at = format!(" at line {} column {}", e.line(), e.column());
    let what = full.strip_suffix(&at).unwrap_or(&full);
    Error::BadFile {
        path: origin.into(),
        line: e.line().max(1),
        reason: format!("column {}: {what}", e.column()),
    }
}

/// The first pass: the header, checked; the entries are skipped.
#[derive(Deserialize)]
struct Head {
    #[serde(deserialize_with = "known_schema")]
    schema: String,
    #[serde(deserialize_with = "some_ranks")]
    ranks: usize,
    source: String,
}

fn known_schema<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    let schema = String::deserialize(d)?;
    match schema == SCHEMA {
        true => Ok(schema),
        false => Err(de::Error::custom(format!(
            "schema `{schema}` is not {SCHEMA}"
        ))),
    }
}

fn some_ranks<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    match usize::deserialize(d)? {
        0 => Err(de::Error::custom("ranks 0: a job has at least one rank")),
        n => Ok(n),
    }
}

/// The second pass: the hosts and the two lists of entries, checked
/// against `ranks`.
struct BodySeed {
    ranks: usize,
}

type Lists = (Vec<String>, Vec<Entry>, Vec<Entry>);

impl<'de> DeserializeSeed<'de> for BodySeed {
    type Value = Lists;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Lists, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BodySeed {
    type Value = Lists;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an {SCHEMA} object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Lists, A::Error> {
        let (mut hosts, mut p2p, mut collective) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            let (slot, list) = match key.as_str() {
                "hosts" if hosts.is_some() => return Err(de::Error::duplicate_field("hosts")),
                "hosts" => {
                    hosts = Some(map.next_value_seed(HostsSeed { ranks: self.ranks })?);
                    continue;
                }
                "p2p" => (&mut p2p, "p2p"),
                "collective" => (&mut collective, "collective"),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(de::Error::duplicate_field(list));
            }
            let ranks = self.ranks;
            *slot = Some(map.next_value_seed(EntriesSeed { ranks, list })?);
        }
        let p2p = p2p.ok_or_else(|| de::Error::missing_field("p2p"))?;
        let collective = collective.ok_or_else(|| de::Error::missing_field("collective"))?;
        Ok((hosts.unwrap_or_default(), p2p, collective))
    }
}

/// The hosts, checked inside the list so that an error is placed on its
/// line.
struct HostsSeed {
    ranks: usize,
}

impl<'de> DeserializeSeed<'de> for HostsSeed {
    type Value = Vec<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Vec<String>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for HostsSeed {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of {} host names", self.ranks)
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Vec<String>, A::Error> {
        let mut hosts = Vec::new();
        while let Some(host) = seq.next_element::<String>()? {
            hosts.push(host);
        }
        check_hosts(self.ranks, &hosts).map_err(de::Error::custom)?;
        Ok(hosts)
    }
}

/// One list of entries, none repeated; sorted.
struct EntriesSeed {
    ranks: usize,
    list: &'static str,
}

impl<'de> DeserializeSeed<'de> for EntriesSeed {
    type Value = Vec<Entry>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Vec<Entry>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EntriesSeed {
    type Value = Vec<Entry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of {} entries", self.list)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<Entry>, A::Error> {
        let mut entries = BTreeMap::new();
        for n in 1.. {
            let one = EntrySeed {
                ranks: self.ranks,
                at: format!("{} entry {n}", self.list),
                entries: &mut entries,
            };
            if seq.next_element_seed(one)?.is_none() {
                break;
            }
        }
        Ok(entries.into_values().collect())
    }
}

/// One entry, checked and added to the list's. The check runs inside the
/// entry's object (a map visitor) because serde_json places an error
/// where the innermost object or list it comes out of ends: here, the
/// entry's own line.
struct EntrySeed<'a> {
    ranks: usize,
    at: String,
    entries: &'a mut BTreeMap<(usize, usize, u32), Entry>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: an object", self.at)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        let e = Entry::deserialize(MapAccessDeserializer::new(map))?;
        let at = &self.at;
        check_entry(self.ranks, &e).map_err(|why| de::Error::custom(format!("{at}: {why}")))?;
        if self.entries.insert((e.src, e.dst, e.class), e).is_some() {
            return Err(de::Error::custom(format!(
                "{at}: src {} dst {} class {} is there already",
                e.src, e.dst, e.class
            )));
        }
        Ok(())
    }
}
