//! The measured curves written into the topology.

use super::plan::{Curve, Dir, Point, Port, Sets};
use crate::error::{Error, Result};
use crate::topology::{Element, Hop, Link, Table, Topology};

/// `t` with the measured tables and maxima of `plan`'s curves (`measured`
/// in the same order), and a note per link or switch that no curve could
/// measure.
pub fn apply(
    t: &Topology,
    plan: &[Curve],
    measured: &[Vec<Point>],
) -> Result<(Topology, Vec<String>)> {
    if plan.len() != measured.len() {
        return Err(Error::Mismatch(format!(
            "the probe measured {} curves of a plan of {}",
            measured.len(),
            plan.len()
        )));
    }
    let mut elements = t.elements().to_vec();
    // Tables first: a maximum is never below the bandwidth one pair gets.
    let measured_ports = set_tables(&mut elements, plan, measured)?;
    let mut notes = set_maxima(t, &mut elements, plan, measured)?;
    notes.extend(unmeasured(t, &measured_ports));
    let topology = Topology::new(&t.name, elements).map_err(Error::Mismatch)?;
    Ok((topology, notes))
}

/// Writes the table curves into the links they measured; returns those
/// links.
fn set_tables(
    elements: &mut [Element],
    plan: &[Curve],
    measured: &[Vec<Point>],
) -> Result<Vec<Port>> {
    let mut measured_ports = Vec::new();
    for (curve, points) in plan.iter().zip(measured) {
        let Sets::Tables(ports) = &curve.sets else {
            continue;
        };
        let table = table_of(curve, points)?;
        for &port in ports {
            let link = port_of(elements, port)?;
            link.up = table.clone();
            link.down = table.clone();
            link.max_up = sustained(points);
            link.max_down = sustained(points);
            measured_ports.push(port);
        }
    }
    Ok(measured_ports)
}

/// Raises link maxima and sets switch maxima from the curves that
/// measured them; returns a note per switch found not to limit.
fn set_maxima(
    t: &Topology,
    elements: &mut [Element],
    plan: &[Curve],
    measured: &[Vec<Point>],
) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for (curve, points) in plan.iter().zip(measured) {
        let peak = sustained(points);
        if peak <= 0.0 {
            continue;
        }
        match curve.sets {
            Sets::LinkMax(port, dir) => {
                let link = port_of(elements, port)?;
                let max = match dir {
                    Dir::Up => &mut link.max_up,
                    Dir::Down => &mut link.max_down,
                };
                *max = max.max(peak);
            }
            Sets::SwitchMax(e) => notes.extend(switch_max(t, elements, curve, e, peak)),
            _ => {}
        }
    }
    Ok(notes)
}

/// Sets switch `e`'s maximum to `peak`, what `curve`'s streams carried
/// through it together, when that is well below what they get alone;
/// otherwise leaves it unbounded and says so.
fn switch_max(
    t: &Topology,
    elements: &mut [Element],
    curve: &Curve,
    e: usize,
    peak: f64,
) -> Option<String> {
    let alone: f64 = curve
        .pairs
        .iter()
        .map(|&(a, b)| path_rate(t, elements, a, b))
        .sum();
    if peak < LIMITED * alone {
        elements[e].max = Some(peak);
        return None;
    }
    Some(format!(
        "{} carried {} streams at once at {:.0}% of what they get alone: no maximum set",
        elements[e].name,
        curve.pairs.len(),
        100.0 * peak / alone
    ))
}

/// A switch is a bottleneck when streams through it together get less
/// than this share of what each gets alone.
const LIMITED: f64 = 0.9;

/// What one stream from processing element `a` to `b` sustains alone: the
/// least of the measured maxima on its path.
fn path_rate(t: &Topology, elements: &[Element], a: usize, b: usize) -> f64 {
    let mut rate = f64::INFINITY;
    let mut take = |l: Option<&Link>, up: bool| {
        if let Some(l) = l {
            rate = rate.min(if up { l.max_up } else { l.max_down });
        }
    };
    take(elements[t.pe(a).0].pe_link.as_ref(), true);
    take(elements[t.pe(b).0].pe_link.as_ref(), false);
    t.walk(a, b, |hop| match hop {
        Hop::Up(e) => take(elements[e].link.as_ref(), true),
        Hop::Down(e) => take(elements[e].link.as_ref(), false),
    });
    rate
}

/// What a curve sustains: the higher median of its two longest lengths.
/// Not the peak: a token-bucket link (and a real switch's buffers) lets a
/// ping-pong of a few KiB through faster than its rate, which a long
/// transfer never sees.
fn sustained(points: &[Point]) -> f64 {
    points
        .iter()
        .rev()
        .take(2)
        .map(|p| p.median)
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max)
}

/// The table of a one-way curve's medians.
fn table_of(curve: &Curve, points: &[Point]) -> Result<Table> {
    let good: Vec<(u64, f64)> = points
        .iter()
        .filter(|p| p.median.is_finite() && p.median > 0.0)
        .map(|p| (p.bytes, p.median))
        .collect();
    Table::new(good).map_err(|why| Error::Mismatch(format!("{}: {why}", curve.label)))
}

fn port_of(elements: &mut [Element], port: Port) -> Result<&mut Link> {
    let (e, link) = match port {
        Port::Link(e) => (e, elements.get_mut(e).and_then(|x| x.link.as_mut())),
        Port::Pe(e) => (e, elements.get_mut(e).and_then(|x| x.pe_link.as_mut())),
    };
    link.ok_or_else(|| Error::Mismatch(format!("the probe's plan names a link element {e} lacks")))
}

/// The links no curve measured.
fn unmeasured(t: &Topology, done: &[Port]) -> Vec<String> {
    let mut notes = Vec::new();
    for (e, element) in t.elements().iter().enumerate() {
        if element.link.is_some() && !done.contains(&Port::Link(e)) {
            notes.push(format!(
                "{}'s link kept its table: no pair has it at the top of its path",
                element.name
            ));
        }
        if element.pes > 0 && !done.contains(&Port::Pe(e)) {
            notes.push(format!(
                "{}'s pe_link kept its table: it has one processing element",
                element.name
            ));
        }
    }
    notes
}
