//! The timemap (the paper's Figure 2): y = the stages along a rank's path
//! from its entry to the root and back, x = mean time, the down path left
//! of 0 (0 is the root's turn) and the up path right of it; one line per
//! class (its representative's path) or per rank with `--ranks`.
//!
//! Paths of different lengths share the axis scaled to one y0 and ymax
//! (as the paper's Figure 3a does), and to one middle: every line's turn
//! is at mid-height, its down stages spread evenly below it and its up
//! stages above (over the whole height when no line has the other
//! direction). With one line the y labels name its stages; with several,
//! the parts of the path.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{Error, Result};
use crate::plot::{legend, PALETTE};
use crate::result::{GroupReport, PathReport};

/// One line: its legend, and its stages (name, kind, mean µs, is down).
pub(crate) struct Line {
    /// Its legend.
    pub label: String,
    /// Its stages in path order.
    pub stages: Vec<(String, &'static str, f64, bool)>,
}

/// The line of one path.
pub(crate) fn line(label: String, path: &PathReport) -> Line {
    Line {
        label,
        stages: path
            .stages
            .iter()
            .map(|s| {
                let down = matches!(s.kind, "arrival wait" | "down latency");
                (s.stage.clone(), s.kind, s.time.mean_s * 1e6, down)
            })
            .collect(),
    }
}

/// The timemap of a tree group (file name, SVG), or nothing when the
/// group has no paths (not a tree, or unaligned clocks).
pub fn figure(g: &GroupReport, ranks: Option<&[usize]>) -> Result<Option<(String, String)>> {
    let path_of = |r: usize| g.paths.iter().find(|p| p.rank == r);
    let lines: Vec<Line> = match ranks {
        Some(list) => list
            .iter()
            .filter_map(|&r| Some(line(format!("rank {r}"), path_of(r)?)))
            .collect(),
        None => g
            .classes
            .iter()
            .filter_map(|c| {
                let label = format!(
                    "class {}: rank {} ({} ranks)",
                    c.name,
                    c.representative,
                    c.ranks.len()
                );
                Some(line(label, path_of(c.representative)?))
            })
            .collect(),
    };
    if lines.is_empty() {
        return Ok(None);
    }
    let size = autocoll::select::format_bytes(g.bytes as usize);
    let title = format!(
        "{}, {size}: timemap (mean per stage, 0 = the root's turn)",
        g.imp
    );
    let svg = draw(&title, &lines).map_err(|reason| Error::Plot {
        what: "timemap",
        reason,
    })?;
    Ok(Some((format!("{}-timemap.svg", g.slug()), svg)))
}

/// The heights of a line's points: its entry, then each stage's end.
fn heights(l: &Line, halves: bool) -> Vec<f64> {
    let down = l.stages.iter().filter(|s| s.3).count();
    let up = l.stages.len() - down;
    let (d_top, u_base) = if halves { (0.5, 0.5) } else { (1.0, 0.0) };
    let mut out = vec![0.0];
    out.extend((1..=down).map(|k| d_top * k as f64 / down as f64));
    out.extend((1..=up).map(|k| u_base + (1.0 - u_base) * k as f64 / up as f64));
    out
}

/// The y labels (height, text).
fn y_labels(lines: &[Line], halves: bool) -> Vec<(f64, String)> {
    if let [one] = lines {
        let h = heights(one, halves);
        let mut out = vec![(0.0, "entry".to_string())];
        out.extend(
            one.stages
                .iter()
                .zip(&h[1..])
                .map(|(s, &y)| (y, s.0.clone())),
        );
        return out;
    }
    match halves {
        true => vec![
            (0.0, "entry".into()),
            (0.25, "down path".into()),
            (0.5, "the root's turn".into()),
            (0.75, "up path".into()),
            (1.0, "leave".into()),
        ],
        false => vec![
            (0.0, "start".into()),
            (0.5, "path".into()),
            (1.0, "end".into()),
        ],
    }
}

/// Draws `lines` end to end, each stage's end at y = k/n of its path.
pub(crate) fn draw(title: &str, lines: &[Line]) -> Result<String, String> {
    let has = |down: bool| lines.iter().any(|l| l.stages.iter().any(|s| s.3 == down));
    let halves = has(true) && has(false);
    let points: Vec<Vec<(f64, f64)>> = lines
        .iter()
        .map(|l| {
            let mut x = -l.stages.iter().filter(|s| s.3).map(|s| s.2).sum::<f64>();
            let mut xs = vec![x];
            for s in &l.stages {
                x += s.2;
                xs.push(x);
            }
            xs.into_iter().zip(heights(l, halves)).collect()
        })
        .collect();
    let xs = points.iter().flatten().map(|p| p.0);
    let (lo, hi) = xs.fold((0.0f64, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let pad = ((hi - lo) * 0.05).max(1e-3);
    let labels = y_labels(lines, halves);
    let rows = lines
        .iter()
        .map(|l| l.stages.len())
        .max()
        .unwrap_or(1)
        .max(8) as u32;
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, (1000, 160 + 26 * rows)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(190)
            .build_cartesian_2d(lo - pad..hi + pad, -0.02f64..1.02f64)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("mean time (µs); down path < 0 < up path")
            .draw()
            .map_err(|e| e.to_string())?;
        y_axis(&area, &mut chart, &labels, (lo - pad, hi + pad))?;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, -0.02), (0.0, 1.02)],
                BLACK.mix(0.4),
            ))
            .map_err(|e| e.to_string())?;
        for (i, (l, pts)) in lines.iter().zip(points).enumerate() {
            dotted_line(&mut chart, pts, i, l.label.clone())?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

/// The labels beside the axis, at the stages' heights, each with a faint
/// line across `x`: plotters chooses its own tick values, which would not
/// fall on them.
fn y_axis<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    labels: &[(f64, String)],
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    let style =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (y, label) in labels {
        let y = *y;
        chart
            .draw_series(LineSeries::new(vec![(lo, y), (hi, y)], BLACK.mix(0.08)))
            .map_err(|e| e.to_string())?;
        let (px, py) = chart.backend_coord(&(lo, y));
        area.draw(&Text::new(label.clone(), (px - 6, py), style.clone()))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A line through `pts` with a dot at each, in the `i`-th colour, and its
/// legend entry.
pub(crate) fn dotted_line<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    pts: Vec<(f64, f64)>,
    i: usize,
    label: String,
) -> Result<(), String> {
    let colour = PALETTE[i % PALETTE.len()];
    chart
        .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
        .map_err(|e| e.to_string())?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(2)));
    chart
        .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, colour.filled())))
        .map_err(|e| e.to_string())?;
    Ok(())
}
