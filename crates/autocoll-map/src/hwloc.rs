//! The inside of a host from hwloc: `lstopo --of synthetic` (Debian's
//! hwloc 2.9) describes a machine as levels of equal arity,
//! `Package:2 [NUMANode] L3Cache:1 Core:4 PU:2`; [`expand`] puts that
//! tree under every host of a topology in place of its flat processing
//! elements.
//!
//! Levels of arity 1 add nothing to a placement and are left out; memory
//! objects (in brackets) and attributes (in parentheses) are skipped. The
//! links inside get the host's `pe_link`: hwloc says how the cores are
//! arranged, not how fast they talk, so the estimate inside a host stays
//! what it was and the shape is what the greedy mapper gains (ranks that
//! talk most share the lowest element).

use std::process::Command;

use crate::error::{Error, Result};
use crate::topology::{Element, Topology};

/// One level of a host's inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// hwloc's type: `Package`, `L3Cache`, `Core`, `PU`, …
    pub kind: String,
    /// How many of it each element of the level above holds.
    pub arity: usize,
}

/// Parses `lstopo --of synthetic` output (comment lines `#` skipped).
pub fn parse_synthetic(text: &str) -> std::result::Result<Vec<Level>, String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or("no synthetic description (a line like `Package:1 Core:2 PU:2`)")?;
    let mut levels = Vec::new();
    let (mut depth, mut word) = (0i32, String::new());
    for c in line.chars().chain(std::iter::once(' ')) {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            c if c.is_whitespace() && depth == 0 && word.is_empty() => {}
            c if c.is_whitespace() && depth == 0 => {
                levels.push(level(&word)?);
                word.clear();
            }
            c if depth == 0 => word.push(c),
            _ => {}
        }
    }
    if levels.is_empty() {
        return Err(format!("`{line}` names no level"));
    }
    Ok(levels)
}

fn level(word: &str) -> std::result::Result<Level, String> {
    let (kind, n) = word
        .split_once(':')
        .ok_or_else(|| format!("`{word}` is not TYPE:COUNT"))?;
    let arity = n
        .parse()
        .ok()
        .filter(|&a| a >= 1)
        .ok_or_else(|| format!("`{word}`: the count is not a whole number ≥ 1"))?;
    Ok(Level {
        kind: kind.to_string(),
        arity,
    })
}

/// This machine's levels, from `lstopo-no-graphics --no-io --of synthetic`.
pub fn this_machine() -> Result<Vec<Level>> {
    let out = Command::new("lstopo-no-graphics")
        .args(["--no-io", "--of", "synthetic"])
        .output()
        .map_err(|e| Error::io("running lstopo-no-graphics (Debian package hwloc-nox)", e))?;
    if !out.status.success() {
        return Err(Error::Mismatch(format!(
            "lstopo-no-graphics failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse_synthetic(&String::from_utf8_lossy(&out.stdout)).map_err(Error::Format)
}

/// `t` with every host's processing elements arranged as `levels` (the
/// levels of arity above 1; their product must be the host's number of
/// processing elements).
pub fn expand(t: &Topology, levels: &[Level]) -> Result<Topology> {
    let inner: Vec<&Level> = levels.iter().filter(|l| l.arity > 1).collect();
    let per_host: usize = inner.iter().map(|l| l.arity).product();
    let mut elements: Vec<Element> = t.elements().to_vec();
    for e in 0..t.elements().len() {
        let host = t.elements()[e].clone();
        if host.pes == 0 || inner.len() < 2 {
            continue;
        }
        if host.pes != per_host {
            return Err(Error::Mismatch(format!(
                "host `{}` has {} processing elements, hwloc's levels hold {per_host} ({})",
                host.name,
                host.pes,
                describe(levels)
            )));
        }
        elements[e].pes = 0;
        elements[e].pe_link = None;
        let mut parents = vec![e];
        for (depth, l) in inner.iter().enumerate() {
            let last = depth + 1 == inner.len();
            if last {
                for &p in &parents {
                    elements[p].pes = l.arity;
                    elements[p].pe_link = host.pe_link.clone();
                }
                break;
            }
            let mut next = Vec::new();
            for &p in &parents {
                for i in 0..l.arity {
                    next.push(elements.len());
                    elements.push(Element {
                        name: format!("{}.{}{}", elements[p].name, l.kind, i),
                        parent: Some(p),
                        link: host.pe_link.clone(),
                        max: None,
                        pes: 0,
                        pe_link: None,
                        addr: host.addr.clone(),
                        host: Some(host.host_name().to_string()),
                    });
                }
            }
            parents = next;
        }
    }
    Topology::new(&t.name, elements).map_err(Error::Mismatch)
}

fn describe(levels: &[Level]) -> String {
    levels
        .iter()
        .map(|l| format!("{}:{}", l.kind, l.arity))
        .collect::<Vec<_>>()
        .join(" ")
}
