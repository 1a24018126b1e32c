//! `bench --plot`: median time against message size (or against ranks when
//! one size was measured), one colour per implementation, one dash style
//! per method. Drawn with plotters' SVG backend, whose text is SVG `<text>`
//! and needs no font files.

use std::collections::BTreeMap;

use autocoll::measure::Method;
use autocoll::select::format_bytes;
use autocoll::Collective;
use plotters::coord::combinators::BindKeyPoints;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::bench::Row;

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Dash and gap lengths (pixels) of a method's line; `None` is solid.
fn dashes(m: Method) -> Option<(i32, i32)> {
    match m {
        Method::Truth => None,
        Method::OlI => Some((10, 4)),
        Method::Rounds => Some((2, 4)),
        Method::Barrier => Some((14, 4)),
        Method::Ack => Some((4, 10)),
        Method::SendLatency => Some((2, 8)),
    }
}

/// The SVG text of the plot of `rows`.
pub fn svg(op: Collective, rows: &[Row]) -> Result<String, String> {
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let by_ranks = sizes.len() == 1;
    // One line per (implementation, method), plus the rank count when
    // several rank counts share the size axis.
    let mut lines: BTreeMap<(String, Method, usize), Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.median_s.is_finite()) {
        let (x, tag) = if by_ranks {
            (r.ranks as f64, 0)
        } else {
            (r.bytes.max(1) as f64, r.ranks)
        };
        lines
            .entry((r.imp.clone(), r.method, tag))
            .or_default()
            .push((x, r.median_s * 1e6));
    }
    if lines.is_empty() {
        return Err("no finished result to plot".into());
    }
    let xs = lines.values().flatten().map(|p| p.0);
    let ys = lines.values().flatten().map(|p| p.1);
    // Ticks at the measured x values: a log axis alone labels only powers
    // of ten, which leaves rank counts and most sizes unlabelled.
    let mut keys: Vec<f64> = xs.clone().collect();
    keys.sort_by(f64::total_cmp);
    keys.dedup();
    let (x_lo, x_hi) = bounds(xs);
    let (y_lo, y_hi) = bounds(ys);
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, (900, 600)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        let title = match by_ranks {
            true => format!("{op}, {} per rank", bytes_label(sizes[0])),
            false => format!("{op}"),
        };
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (x_lo * 0.9..x_hi * 1.1).log_scale().with_key_points(keys),
                (y_lo * 0.8..y_hi * 1.25).log_scale(),
            )
            .map_err(|e| e.to_string())?;
        let x_desc = if by_ranks { "ranks" } else { "bytes per rank" };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("median time (µs)")
            .y_labels(12)
            .x_label_formatter(&|x| {
                if by_ranks {
                    format!("{}", x.round())
                } else {
                    bytes_label(x.round() as usize)
                }
            })
            .draw()
            .map_err(|e| e.to_string())?;
        let mut colours: Vec<String> = Vec::new();
        for ((imp, method, ranks), mut points) in lines {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let index = colours.iter().position(|c| *c == imp).unwrap_or_else(|| {
                colours.push(imp.clone());
                colours.len() - 1
            });
            let style = PALETTE[index % PALETTE.len()].stroke_width(2);
            let label = match ranks {
                0 => format!("{imp} {method}"),
                p => format!("{imp} n={p} {method}"),
            };
            let dash = dashes(method);
            let series = match dash {
                None => chart.draw_series(LineSeries::new(points, style)),
                Some((d, g)) => chart.draw_series(DashedLineSeries::new(points, d, g, style)),
            }
            .map_err(|e| e.to_string())?;
            series.label(label).legend(move |(x, y)| match dash {
                None => PathElement::new(vec![(x, y), (x + 24, y)], style).into_dyn(),
                Some((d, g)) => {
                    DashedPathElement::new(vec![(x, y), (x + 24, y)], d / 2, g / 2, style)
                        .into_dyn()
                }
            });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

/// A byte count for people: `256 B`, `64K`, `8M`.
fn bytes_label(n: usize) -> String {
    let text = format_bytes(n);
    match text.ends_with(|c: char| c.is_ascii_digit()) {
        true => format!("{text} B"),
        false => text,
    }
}

/// Smallest and largest of `values`, widened when they coincide.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let lo = lo.max(1e-3);
    if hi <= lo {
        (lo / 2.0, lo * 2.0)
    } else {
        (lo, hi)
    }
}
