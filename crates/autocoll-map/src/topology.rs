//! The hardware communication topology: a tree of switch elements over
//! processing elements, and its file, `autocoll.topology/1` (TOML,
//! docs/formats.md).
//!
//! The paper's model (its Figure 2) gives every switch element down ports,
//! an up port and a maximum aggregate bandwidth, and every port an in and
//! an out bandwidth per message length with a maximum. Here the two ports
//! that face each other across one wire are one [`Link`] with two
//! directions: `up` (from the element towards its parent, the paper's
//! "out") and `down`. A switch element's processing elements each have a
//! link of the same kind, `pe_link` (for a host, its memory).
//!
//! Processing elements are numbered in the order of their elements in the
//! file, each element's in turn: the order in which `mpirun` fills the
//! slots of a hostfile listing the same hosts, so that rank i on
//! processing element i is the placement a user gets by default.

/// The `schema` of a topology file.
pub const SCHEMA: &str = "autocoll.topology/1";

/// Bandwidth (bytes per second) as a function of message length: points
/// at increasing lengths, straight lines between them on a logarithmic
/// length axis, flat beyond the ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    points: Vec<(u64, f64)>,
}

impl Table {
    /// The same bandwidth at every length.
    pub fn flat(rate: f64) -> Table {
        Table {
            points: vec![(1, rate)],
        }
    }

    /// A table of `(bytes, bytes per second)` points; lengths at least 1
    /// and increasing, rates positive and finite.
    pub fn new(points: Vec<(u64, f64)>) -> std::result::Result<Table, String> {
        if points.is_empty() {
            return Err("a bandwidth table needs at least one point".into());
        }
        for (i, &(bytes, rate)) in points.iter().enumerate() {
            if bytes == 0 {
                return Err("a message length in a bandwidth table is at least 1 byte".into());
            }
            if !(rate.is_finite() && rate > 0.0) {
                return Err(format!("the bandwidth at {bytes} bytes is not positive"));
            }
            if i > 0 && points[i - 1].0 >= bytes {
                return Err(format!(
                    "message lengths must increase ({} then {bytes})",
                    points[i - 1].0
                ));
            }
        }
        Ok(Table { points })
    }

    /// The points, by increasing length.
    pub fn points(&self) -> &[(u64, f64)] {
        &self.points
    }

    /// The bandwidth for messages of `bytes` (bytes per second).
    pub fn at(&self, bytes: f64) -> f64 {
        let p = &self.points;
        let first = p[0];
        let last = p[p.len() - 1];
        if bytes <= first.0 as f64 {
            return first.1;
        }
        if bytes >= last.0 as f64 {
            return last.1;
        }
        let i = p.partition_point(|&(b, _)| (b as f64) <= bytes);
        let (b0, r0) = p[i - 1];
        let (b1, r1) = p[i];
        let x0 = (b0 as f64).log2();
        let x1 = (b1 as f64).log2();
        r0 + (r1 - r0) * (bytes.log2() - x0) / (x1 - x0)
    }

    /// The highest bandwidth in the table.
    pub fn peak(&self) -> f64 {
        self.points.iter().map(|p| p.1).fold(0.0, f64::max)
    }
}

/// One wire between an element and its parent (or a processing element
/// and its switch element), in both directions.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Towards the parent.
    pub up: Table,
    /// Towards the child.
    pub down: Table,
    /// The most the link carries upwards, however many pairs share it.
    pub max_up: f64,
    /// The most it carries downwards.
    pub max_down: f64,
}

impl Link {
    /// A link of `rate` bytes per second both ways at every length.
    pub fn flat(rate: f64) -> Link {
        Link {
            up: Table::flat(rate),
            down: Table::flat(rate),
            max_up: rate,
            max_down: rate,
        }
    }
}

/// An element link crossed on a path ([`Topology::walk`]): element `e`'s
/// link to its parent, upwards or downwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// From element `e` towards its parent.
    Up(usize),
    /// From the parent down to element `e`.
    Down(usize),
}

/// A switch element: a network switch, a host (its memory), a socket.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// Its name, unique; a host's name is what rankfiles and hostfiles
    /// carry.
    pub name: String,
    /// The index of its parent; `None` for the top element only.
    pub parent: Option<usize>,
    /// The link to its parent (`None` for the top element only).
    pub link: Option<Link>,
    /// The most all its ports together carry (bytes per second), if
    /// bounded.
    pub max: Option<f64>,
    /// How many processing elements hang directly under it.
    pub pes: usize,
    /// Each processing element's link to it (required when `pes` > 0).
    pub pe_link: Option<Link>,
    /// The address its processing elements listen on, for hostfiles of
    /// `autocoll launch`.
    pub addr: Option<String>,
    /// The host its processing elements are on, for rankfiles and
    /// hostfiles, when that is not this element itself (a socket or a core
    /// inside a host: [`crate::hwloc::expand`]).
    pub host: Option<String>,
}

impl Element {
    /// The host its processing elements are on: `host`, or its own name.
    pub fn host_name(&self) -> &str {
        self.host.as_deref().unwrap_or(&self.name)
    }
}

/// A topology: elements (parents before children are not required; the
/// tree is checked) and the processing elements under them.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// The machine's name.
    pub name: String,
    elements: Vec<Element>,
    /// Each processing element's element and its slot there.
    pes: Vec<(usize, usize)>,
    /// Per element, the number of its first processing element.
    first_pe: Vec<usize>,
    /// Per element, its child elements in file order.
    children: Vec<Vec<usize>>,
    top: usize,
    depth: Vec<usize>,
}

impl Topology {
    /// A topology of `elements`, checked: one top element, parents that
    /// exist without cycles, a link to every parent, a `pe_link` wherever
    /// there are processing elements, at least one processing element,
    /// unique names that a hostfile can carry.
    pub fn new(name: &str, elements: Vec<Element>) -> std::result::Result<Topology, String> {
        check_names(&elements)?;
        check_one_top(&elements)?;
        let mut depth = Vec::with_capacity(elements.len());
        for (i, e) in elements.iter().enumerate() {
            depth.push(depth_of(&elements, i)?);
            check_links(e)?;
        }
        let pes: Vec<(usize, usize)> = elements
            .iter()
            .enumerate()
            .flat_map(|(i, e)| (0..e.pes).map(move |s| (i, s)))
            .collect();
        if pes.is_empty() {
            return Err("a topology needs at least one processing element (pes)".into());
        }
        let first_pe = elements
            .iter()
            .scan(0, |next, e| {
                let first = *next;
                *next += e.pes;
                Some(first)
            })
            .collect();
        let mut children = vec![Vec::new(); elements.len()];
        for (i, e) in elements.iter().enumerate() {
            if let Some(p) = e.parent {
                children[p].push(i);
            }
        }
        let top = depth
            .iter()
            .position(|&d| d == 0)
            .expect("one top, checked");
        Ok(Topology {
            name: name.into(),
            elements,
            pes,
            first_pe,
            children,
            top,
            depth,
        })
    }

    /// The top element.
    pub fn top(&self) -> usize {
        self.top
    }

    /// Element `e`'s child elements, in file order.
    pub fn children(&self, e: usize) -> &[usize] {
        &self.children[e]
    }

    /// The number of the processing element in `slot` of element `e`.
    pub fn pe_at(&self, e: usize, slot: usize) -> usize {
        self.first_pe[e] + slot
    }

    /// The elements, in file order.
    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// How many processing elements.
    pub fn pe_count(&self) -> usize {
        self.pes.len()
    }

    /// Processing element `pe`'s element and slot.
    pub fn pe(&self, pe: usize) -> (usize, usize) {
        self.pes[pe]
    }

    /// How far element `e` is below the top.
    pub fn depth(&self, e: usize) -> usize {
        self.depth[e]
    }

    /// The host processing element `pe` is on.
    pub fn host_of(&self, pe: usize) -> &str {
        self.elements[self.pes[pe].0].host_name()
    }

    /// Walks the path from processing element `a` to `b` through the
    /// element links it crosses (their own `pe_link`s left out): each to
    /// `hop`, the sender's side going up and the receiver's coming down,
    /// the deeper side first. Returns the element where the two sides
    /// meet.
    pub fn walk(&self, a: usize, b: usize, mut hop: impl FnMut(Hop)) -> usize {
        let (mut x, mut y) = (self.pes[a].0, self.pes[b].0);
        let parent = |e: usize| self.elements[e].parent.expect("below the top");
        while x != y {
            if self.depth[x] >= self.depth[y] {
                hop(Hop::Up(x));
                x = parent(x);
            } else {
                hop(Hop::Down(y));
                y = parent(y);
            }
        }
        x
    }

    /// Processing element `pe`'s host and its slot there (its place among
    /// the host's processing elements, in order).
    pub fn host_slot(&self, pe: usize) -> (&str, usize) {
        let host = self.host_of(pe);
        let slot = self.pes[..pe]
            .iter()
            .filter(|(e, _)| self.elements[*e].host_name() == host)
            .count();
        (host, slot)
    }

    /// The names of the elements above element `e`'s host, from the top
    /// down, joined by `/`: the `switch=` of a hostfile line.
    pub fn switch_path(&self, e: usize) -> String {
        let host = self.elements[e].host_name();
        let e = self
            .elements
            .iter()
            .position(|x| x.name == host)
            .unwrap_or(e);
        let mut names = Vec::new();
        let mut at = self.elements[e].parent;
        while let Some(p) = at {
            names.push(self.elements[p].name.as_str());
            at = self.elements[p].parent;
        }
        names.reverse();
        names.join("/")
    }
}

/// Element names that a hostfile can carry, none used twice.
fn check_names(elements: &[Element]) -> std::result::Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for e in elements {
        check_name(&e.name)?;
        if !seen.insert(e.name.as_str()) {
            return Err(format!("element `{}` is named twice", e.name));
        }
    }
    Ok(())
}

/// Exactly one element without a parent.
fn check_one_top(elements: &[Element]) -> std::result::Result<(), String> {
    let tops: Vec<&str> = elements
        .iter()
        .filter(|e| e.parent.is_none())
        .map(|e| e.name.as_str())
        .collect();
    if tops.len() != 1 {
        return Err(format!(
            "a topology has exactly one element without a parent, not {} ({})",
            tops.len(),
            tops.join(", ")
        ));
    }
    Ok(())
}

/// How far element `i` is below the top, its parents checked on the way
/// up: each exists and none is `i`'s own descendant.
fn depth_of(elements: &[Element], i: usize) -> std::result::Result<usize, String> {
    let e = &elements[i];
    let (mut at, mut d) = (e.parent, 0);
    while let Some(p) = at {
        if p >= elements.len() {
            return Err(format!("element `{}` has no parent {p}", e.name));
        }
        d += 1;
        if d > elements.len() {
            return Err(format!("element `{}` is its own ancestor", e.name));
        }
        at = elements[p].parent;
    }
    Ok(d)
}

/// An element's links where it needs them, and its `max` a bandwidth.
fn check_links(e: &Element) -> std::result::Result<(), String> {
    if e.parent.is_some() && e.link.is_none() {
        return Err(format!("element `{}` needs a link to its parent", e.name));
    }
    if e.pes > 0 && e.pe_link.is_none() {
        return Err(format!(
            "element `{}` has processing elements and needs a pe_link",
            e.name
        ));
    }
    if let Some(m) = e.max {
        check_rate(m).map_err(|w| format!("element `{}`: max {w}", e.name))?;
    }
    Ok(())
}

fn check_name(name: &str) -> std::result::Result<(), String> {
    let bad = |c: char| c.is_whitespace() || c == '#' || c == '/' || c == '=';
    match name.is_empty() || name.chars().any(bad) {
        true => Err(format!(
            "`{name}` is not an element name (no spaces, `#`, `/` or `=`, not empty)"
        )),
        false => Ok(()),
    }
}

fn check_rate(rate: f64) -> std::result::Result<(), String> {
    match rate.is_finite() && rate > 0.0 {
        true => Ok(()),
        false => Err(format!("{rate} is not a positive bandwidth")),
    }
}

/// Units of bandwidth text, in bytes per second: tc's decimal bit rates
/// and byte rates.
const UNITS: [(&str, f64); 10] = [
    ("bit", 1.0 / 8.0),
    ("kbit", 1e3 / 8.0),
    ("mbit", 1e6 / 8.0),
    ("gbit", 1e9 / 8.0),
    ("b/s", 1.0),
    ("kb/s", 1e3),
    ("mb/s", 1e6),
    ("gb/s", 1e9),
    ("mib/s", 1048576.0),
    ("gib/s", 1073741824.0),
];

/// `100mbit`, `2.5GB/s`, `800MiB/s`: a number and a unit.
pub fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let unit = unit.to_ascii_lowercase();
    let factor = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|u| u.1)
        .ok_or_else(|| {
            format!("`{text}`: unknown unit (kbit, mbit, gbit, KB/s, MB/s, GB/s, MiB/s, GiB/s)")
        })?;
    let n: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a bandwidth (a number and a unit)"))?;
    Ok(n * factor)
}

mod file;
