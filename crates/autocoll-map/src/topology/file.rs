//! Reading and writing `autocoll.topology/1`.

use std::collections::HashMap;

use serde::Deserialize;
use toml::{Spanned, Value};

use super::{parse_rate, Element, Link, Table, Topology, SCHEMA, UNITS};
use crate::error::{Error, Result};
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    schema: Spanned<String>,
    name: String,
    #[serde(default)]
    element: Vec<Spanned<ElementText>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ElementText {
    name: Spanned<String>,
    parent: Option<Spanned<String>>,
    link: Option<Spanned<Value>>,
    max: Option<Spanned<Value>>,
    #[serde(default)]
    pes: usize,
    pe_link: Option<Spanned<Value>>,
    addr: Option<String>,
    host: Option<String>,
}

/// The line of byte `offset` in `text`, from 1.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

pub(super) fn parse(text: &str, origin: &str) -> Result<Topology> {
    let at = |offset: usize, why: String| {
        Error::Format(format!("{origin}:{}: {why}", line_of(text, offset)))
    };
    let file: FileText = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        Error::Format(format!("{origin}:{line}: {}", e.message()))
    })?;
    if file.schema.get_ref() != SCHEMA {
        return Err(at(
            file.schema.span().start,
            format!("schema is `{}`, expected `{SCHEMA}`", file.schema.get_ref()),
        ));
    }
    let mut index = HashMap::new();
    for (i, e) in file.element.iter().enumerate() {
        let name = &e.get_ref().name;
        if index.insert(name.get_ref().clone(), i).is_some() {
            return Err(at(
                name.span().start,
                format!("element `{}` is named twice", name.get_ref()),
            ));
        }
    }
    let mut elements = Vec::with_capacity(file.element.len());
    for e in &file.element {
        elements.push(element(e, &index).map_err(|(offset, why)| at(offset, why))?);
    }
    Topology::new(&file.name, elements).map_err(|why| Error::Format(format!("{origin}: {why}")))
}

type Located<T> = std::result::Result<T, (usize, String)>;

fn element(text: &Spanned<ElementText>, index: &HashMap<String, usize>) -> Located<Element> {
    let e = text.get_ref();
    let name = e.name.get_ref();
    let parent = match &e.parent {
        None => None,
        Some(p) => Some(*index.get(p.get_ref()).ok_or_else(|| {
            (
                p.span().start,
                format!("element `{name}`: no element is named `{}`", p.get_ref()),
            )
        })?),
    };
    let up = e.link.as_ref().map(link).transpose()?;
    if parent.is_some() && up.is_none() {
        return Err((
            text.span().start,
            format!("element `{name}` needs a link to its parent"),
        ));
    }
    let pe_link = e.pe_link.as_ref().map(link).transpose()?;
    if e.pes > 0 && pe_link.is_none() {
        return Err((
            text.span().start,
            format!("element `{name}` has pes = {} and needs a pe_link", e.pes),
        ));
    }
    let max = match &e.max {
        None => None,
        Some(m) => Some(rate(m.get_ref()).map_err(|w| (m.span().start, format!("max: {w}")))?),
    };
    Ok(Element {
        name: name.clone(),
        parent,
        link: up,
        max,
        pes: e.pes,
        pe_link,
        addr: e.addr.clone(),
        host: e.host.clone(),
    })
}

/// A link: a rate (the same both ways at every length) or a table
/// `{ up = [[bytes, rate], …], down = […], max_up = rate, max_down = rate }`.
fn link(value: &Spanned<Value>) -> Located<Link> {
    let here = |why: String| (value.span().start, why);
    let Value::Table(t) = value.get_ref() else {
        return rate(value.get_ref()).map(Link::flat).map_err(here);
    };
    for key in t.keys() {
        if !["up", "down", "max_up", "max_down"].contains(&key.as_str()) {
            return Err(here(format!(
                "unknown key `{key}` in a link (up, down, max_up, max_down)"
            )));
        }
    }
    let table = |key: &str| -> Located<Table> {
        let v = t
            .get(key)
            .ok_or_else(|| here(format!("a link table needs `{key}`")))?;
        table(v).map_err(|w| here(format!("{key}: {w}")))
    };
    let (up, down) = (table("up")?, table("down")?);
    let max = |key: &str, of: &Table| -> Located<f64> {
        match t.get(key) {
            None => Ok(of.peak()),
            Some(v) => rate(v).map_err(|w| here(format!("{key}: {w}"))),
        }
    };
    Ok(Link {
        max_up: max("max_up", &up)?,
        max_down: max("max_down", &down)?,
        up,
        down,
    })
}

fn table(value: &Value) -> std::result::Result<Table, String> {
    let Value::Array(rows) = value else {
        return Err("expected a list of [bytes, rate] points".into());
    };
    let mut points = Vec::with_capacity(rows.len());
    for row in rows {
        let pair = match row {
            Value::Array(p) if p.len() == 2 => p,
            _ => return Err(format!("`{row}` is not a [bytes, rate] point")),
        };
        let bytes = match &pair[0] {
            Value::Integer(b) if *b >= 1 => *b as u64,
            other => return Err(format!("`{other}` is not a message length (bytes ≥ 1)")),
        };
        points.push((bytes, rate(&pair[1])?));
    }
    Table::new(points)
}

/// A bandwidth in bytes per second: a number, or text with a unit.
fn rate(value: &Value) -> std::result::Result<f64, String> {
    let r = match value {
        Value::Integer(i) => *i as f64,
        Value::Float(f) => *f,
        Value::String(s) => parse_rate(s)?,
        other => return Err(format!("`{other}` is not a bandwidth")),
    };
    match r.is_finite() && r > 0.0 {
        true => Ok(r),
        false => Err(format!("`{value}` is not a positive bandwidth")),
    }
}

/// The text of a bandwidth: in whole kbit, mbit or gbit when it is one
/// exactly, else a number of bytes per second (TOML keeps it exactly).
fn rate_text(r: f64) -> String {
    for unit in ["gbit", "mbit", "kbit"] {
        let factor = UNITS.iter().find(|u| u.0 == unit).unwrap().1;
        let n = r / factor;
        if n >= 1.0 && n.fract() == 0.0 && n * factor == r {
            return format!("\"{n}{unit}\"");
        }
    }
    format!("{r:?}")
}

fn table_text(t: &Table) -> String {
    let points: Vec<String> = t
        .points()
        .iter()
        .map(|(b, r)| format!("[{b}, {}]", rate_text(*r)))
        .collect();
    format!("[{}]", points.join(", "))
}

fn link_text(l: &Link) -> String {
    let flat = l.up.points().len() == 1
        && l.up == l.down
        && l.max_up == l.up.peak()
        && l.max_down == l.up.peak();
    match flat {
        true => rate_text(l.up.peak()),
        false => format!(
            "{{ up = {}, down = {}, max_up = {}, max_down = {} }}",
            table_text(&l.up),
            table_text(&l.down),
            rate_text(l.max_up),
            rate_text(l.max_down)
        ),
    }
}

fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

pub(super) fn write(t: &Topology) -> String {
    let mut out = format!(
        "# A hardware communication topology (docs/mapping.md).\nschema = \"{SCHEMA}\"\nname = {}\n",
        quoted(&t.name)
    );
    for e in t.elements() {
        out += &format!("\n[[element]]\nname = {}\n", quoted(&e.name));
        if let Some(p) = e.parent {
            out += &format!("parent = {}\n", quoted(&t.elements()[p].name));
        }
        if let Some(l) = &e.link {
            out += &format!("link = {}\n", link_text(l));
        }
        if let Some(m) = e.max {
            out += &format!("max = {}\n", rate_text(m));
        }
        if e.pes > 0 {
            out += &format!("pes = {}\n", e.pes);
        }
        if let Some(l) = &e.pe_link {
            out += &format!("pe_link = {}\n", link_text(l));
        }
        if let Some(a) = &e.addr {
            out += &format!("addr = {}\n", quoted(a));
        }
        if let Some(h) = &e.host {
            out += &format!("host = {}\n", quoted(h));
        }
    }
    out
}

impl Topology {
    /// Reads a topology file.
    pub fn read(path: &Path) -> Result<Topology> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading topology {}", path.display()), e))?;
        Topology::parse(&text, &path.display().to_string())
    }

    /// Parses a topology file's text; errors name `origin` and the line.
    pub fn parse(text: &str, origin: &str) -> Result<Topology> {
        parse(text, origin)
    }

    /// The file's text; [`Topology::parse`] reads back an equal topology.
    pub fn to_toml(&self) -> String {
        write(self)
    }

    /// Writes the file atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        autocoll::files::write_atomic(path, self.to_toml().as_bytes())
            .map_err(|e| Error::Format(format!("writing {}: {e}", path.display())))
    }
}
