//! The serialization plot (the paper's Figure 3b): per node, x = the
//! departure order, y = up latency + departure wait of the child that
//! departs at that position (mean over calls). The value at x = 0 is the
//! latency the node adds; the slope is its serialization (flatter is
//! better). Lines for the listed ranks with `--ranks`, else for the nodes
//! with the most children (up to eight).

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::plot::legend;
use crate::result::{GroupReport, NodeReport};
use crate::timemap::dotted_line;

/// The plot of a tree group's nodes (file name, SVG), or nothing when no
/// node sends to two children or more.
pub fn figure(g: &GroupReport, ranks: Option<&[usize]>) -> Result<Option<(String, String)>> {
    let mut nodes: Vec<&NodeReport> = g
        .nodes
        .iter()
        .filter(|n| n.serialization.len() >= 2)
        .filter(|n| ranks.is_none_or(|list| list.contains(&n.rank)))
        .collect();
    nodes.sort_by_key(|n| (std::cmp::Reverse(n.serialization.len()), n.rank));
    if ranks.is_none() {
        nodes.truncate(8);
    }
    if nodes.is_empty() {
        return Ok(None);
    }
    let lines: Vec<(usize, Vec<(f64, f64)>)> = nodes
        .iter()
        .map(|n| {
            let pts = n
                .serialization
                .iter()
                .enumerate()
                .map(|(k, s)| (k as f64, s.mean_s * 1e6))
                .collect();
            (n.rank, pts)
        })
        .collect();
    let size = autocoll::select::format_bytes(g.bytes as usize);
    let title = format!("{}, {size}: serialization at the nodes", g.imp);
    let text = draw(&title, lines).map_err(|reason| Error::Plot {
        what: "serialization plot",
        reason,
    })?;
    Ok(Some((format!("{}-serialization.svg", g.slug()), text)))
}

/// Draws each node's line (its rank, its points).
fn draw(title: &str, lines: Vec<(usize, Vec<(f64, f64)>)>) -> Result<String, String> {
    let x_hi = lines.iter().map(|l| l.1.len()).max().unwrap_or(1) as f64;
    let y_hi = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let y_lo = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::min);
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, (900, 600)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.2..x_hi - 0.8, y_lo.min(0.0)..(y_hi * 1.15).max(1e-3))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("departure order (0 = first)")
            .y_desc("up latency + departure wait (µs)")
            .x_labels(x_hi as usize + 1)
            .x_label_formatter(&|x| format!("{}", x.round()))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (rank, pts)) in lines.into_iter().enumerate() {
            dotted_line(&mut chart, pts, i, format!("node {rank}"))?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}
