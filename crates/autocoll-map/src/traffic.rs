//! The application communication pattern as the estimator and the mappers
//! see it: per sending rank, its messages to each other rank by length.
//!
//! The paper models one communication phase, concurrent across ranks. A
//! pattern file counts a whole run, and the sum of its phases is what is
//! mapped: every phase of a run contributes in proportion to the bytes it
//! moves, which is how much of the run's time it can cost (the weighting
//! the paper says it would use, with the run's own counts as weights).

use std::collections::BTreeMap;
use std::path::Path;

use autocoll::pattern::{Entry, Pattern};

use crate::error::{Error, Result};

/// Messages of one length from one rank to another.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Message {
    /// The receiving rank.
    pub dst: usize,
    /// The length of one message, in bytes (the mean of its size class).
    pub bytes: f64,
    /// How many.
    pub count: u64,
}

/// Which traffic of a pattern file to map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The program's point-to-point messages (the default: collectives
    /// follow the topology by themselves, through `hier` trees, and their
    /// pairs depend on the algorithm chosen).
    P2p,
    /// Point-to-point and collective messages.
    All,
}

/// Messages per sending rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traffic {
    by_src: Vec<Vec<Message>>,
}

impl Traffic {
    /// No messages among `ranks`.
    pub fn new(ranks: usize) -> Traffic {
        Traffic {
            by_src: vec![Vec::new(); ranks],
        }
    }

    /// Adds `count` messages of `bytes` from `src` to `dst`; messages to
    /// oneself cross no link and are left out.
    pub fn add(&mut self, src: usize, dst: usize, bytes: f64, count: u64) {
        if src != dst && count > 0 {
            self.by_src[src].push(Message { dst, bytes, count });
        }
    }

    /// The same traffic in a job of `ranks` (the others silent); fewer
    /// ranks than the traffic names are refused.
    pub fn with_ranks(mut self, ranks: usize) -> std::result::Result<Traffic, String> {
        if ranks < self.ranks() {
            return Err(format!(
                "{ranks} ranks, but the pattern has messages of rank {}",
                self.ranks() - 1
            ));
        }
        self.by_src.resize(ranks, Vec::new());
        Ok(self)
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.by_src.len()
    }

    /// The messages `src` sends.
    pub fn sent_by(&self, src: usize) -> &[Message] {
        &self.by_src[src]
    }

    /// All bytes sent.
    pub fn total_bytes(&self) -> f64 {
        self.by_src
            .iter()
            .flatten()
            .map(|m| m.bytes * m.count as f64)
            .sum()
    }

    /// Bytes exchanged by each pair of ranks that communicates, both
    /// directions together, the lower rank first, in order.
    pub fn pairs(&self) -> Vec<(usize, usize, f64)> {
        let mut sum: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        for (src, messages) in self.by_src.iter().enumerate() {
            for m in messages {
                let key = (src.min(m.dst), src.max(m.dst));
                *sum.entry(key).or_default() += m.bytes * m.count as f64;
            }
        }
        sum.into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// The traffic of a pattern file.
    pub fn from_pattern(pattern: &Pattern, which: Which) -> Traffic {
        let mut t = Traffic::new(pattern.ranks);
        let mut add = |e: &Entry| t.add(e.src, e.dst, e.bytes as f64 / e.count as f64, e.count);
        pattern.p2p.iter().for_each(&mut add);
        if which == Which::All {
            pattern.collective.iter().for_each(&mut add);
        }
        t
    }

    /// Reads a pattern: an `autocoll.pattern/1` file (JSON), or CSV: a
    /// square matrix of bytes (row = sender, column = receiver; each entry
    /// one message), or lines `src,dst,count,bytes` under that header.
    pub fn read(path: &Path, which: Which) -> Result<Traffic> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading pattern {}", path.display()), e))?;
        let origin = path.display().to_string();
        match text.trim_start().starts_with('{') {
            true => {
                let p = Pattern::parse(&text, &origin).map_err(|e| Error::Format(e.to_string()))?;
                Ok(Traffic::from_pattern(&p, which))
            }
            false => Traffic::parse_csv(&text, &origin),
        }
    }

    /// Parses the CSV forms of [`Traffic::read`]; errors name `origin`
    /// and the line.
    pub fn parse_csv(text: &str, origin: &str) -> Result<Traffic> {
        let lines: Vec<(usize, Vec<&str>)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
            .filter(|(_, l)| !l.is_empty())
            .map(|(i, l)| (i, l.split(',').map(str::trim).collect()))
            .collect();
        let Some((_, first)) = lines.first() else {
            return Err(Error::Format(format!("{origin}: no traffic in the file")));
        };
        match first[..] == ["src", "dst", "count", "bytes"] {
            true => list(&lines[1..], origin),
            false => matrix(&lines, origin),
        }
    }
}

fn number(field: &str, what: &str, origin: &str, line: usize) -> Result<u64> {
    field.parse().map_err(|_| {
        Error::Format(format!(
            "{origin}:{line}: `{field}` is not a {what} (a whole number)"
        ))
    })
}

fn matrix(lines: &[(usize, Vec<&str>)], origin: &str) -> Result<Traffic> {
    let n = lines.len();
    let mut t = Traffic::new(n);
    for (src, (line, fields)) in lines.iter().enumerate() {
        if fields.len() != n {
            return Err(Error::Format(format!(
                "{origin}:{line}: {} fields, expected {n} (a square matrix of bytes, one row per rank)",
                fields.len()
            )));
        }
        for (dst, field) in fields.iter().enumerate() {
            let bytes = number(field, "byte count", origin, *line)?;
            if bytes > 0 {
                t.add(src, dst, bytes as f64, 1);
            }
        }
    }
    Ok(t)
}

fn list(lines: &[(usize, Vec<&str>)], origin: &str) -> Result<Traffic> {
    let mut rows = Vec::with_capacity(lines.len());
    for (line, fields) in lines {
        if fields.len() != 4 {
            return Err(Error::Format(format!(
                "{origin}:{line}: {} fields, expected 4 (src,dst,count,bytes)",
                fields.len()
            )));
        }
        let v: Vec<u64> = ["rank", "rank", "count", "byte count"]
            .iter()
            .zip(fields)
            .map(|(what, f)| number(f, what, origin, *line))
            .collect::<Result<_>>()?;
        if v[2] == 0 && v[3] > 0 {
            return Err(Error::Format(format!(
                "{origin}:{line}: {} bytes in no message",
                v[3]
            )));
        }
        rows.push((*line, v));
    }
    let ranks = rows
        .iter()
        .map(|(_, v)| v[0].max(v[1]) as usize + 1)
        .max()
        .unwrap_or(0);
    let mut t = Traffic::new(ranks);
    for (_, v) in rows {
        if v[2] > 0 {
            t.add(
                v[0] as usize,
                v[1] as usize,
                v[3] as f64 / v[2] as f64,
                v[2],
            );
        }
    }
    Ok(t)
}
