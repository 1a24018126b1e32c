//! `bench --plot`: median time against message size (or against ranks when
//! one size was measured), one colour per implementation, one dash style
//! per method. Drawn with plotters' SVG backend, whose text is SVG `<text>`
//! and needs no font files.

use std::collections::{BTreeMap, BTreeSet};

use autocoll::measure::Method;
use autocoll::select::format_bytes;
use autocoll::Collective;
use autocoll_tune::row::Row;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;

pub(crate) use autocoll_analyze::plot::{legend, PALETTE};
pub(crate) use frame::{canvas, chart, line, swatch, Area};

mod frame;

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

/// One line per (implementation, method), plus the rank count when
/// several rank counts share the size axis (0 when they do not): its
/// points (x, median µs), in the rows' order.
type BenchLines = BTreeMap<(String, Method, usize), Vec<(f64, f64)>>;

/// The SVG text of the plot of `rows`.
pub fn svg(op: Collective, rows: &[Row]) -> Result<String, String> {
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let by_ranks = sizes.len() == 1;
    let lines = bench_lines(rows, by_ranks);
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
    let title = match by_ranks {
        true => format!("{op}, {} per rank", bytes_label(sizes[0])),
        false => format!("{op}"),
    };
    canvas((900, 600), |area| {
        let mut chart = chart(
            area,
            &title,
            (45, 70),
            (x_lo * 0.9..x_hi * 1.1).log_scale().with_key_points(keys),
            (y_lo * 0.8..y_hi * 1.25).log_scale(),
        )?;
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
        draw_bench_lines(&mut chart, lines)?;
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// The finished rows' lines, against ranks or against size.
fn bench_lines(rows: &[Row], by_ranks: bool) -> BenchLines {
    let mut lines = BenchLines::new();
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
    lines
}

/// Draws each of `lines`: one colour per implementation, in the order
/// they come, one dash style per method.
fn draw_bench_lines<'a, DB: DrawingBackend + 'a, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'a, DB, CT>,
    lines: BenchLines,
) -> Result<(), String> {
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
        line(chart, points, style, dashes(method), label)?;
    }
    Ok(())
}

/// A byte count for people: `256 B`, `64K`, `8M`.
pub(crate) fn bytes_label(n: usize) -> String {
    let text = format_bytes(n);
    match text.ends_with(|c: char| c.is_ascii_digit()) {
        true => format!("{text} B"),
        false => text,
    }
}

/// Smallest and largest of `values`, widened when they coincide.
pub(crate) fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
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

/// Per family, per rank count: the best median and the segment size it
/// had.
type Best = BTreeMap<String, BTreeMap<usize, (f64, usize)>>;

/// `tune --plot`: the paper's Figures 3–6 for each (op, size) measured, as
/// (file name, SVG): time against ranks for each algorithm family at its
/// best segment size (`{op}-{bytes}-time.svg`), and that best segment size
/// against ranks (`{op}-{bytes}-segment.svg`, unsegmented drawn as the
/// whole message).
pub fn tune_figures(rows: &[Row]) -> Result<Vec<(String, String)>, String> {
    let (all, segmented) = best_of(rows);
    let mut out = Vec::new();
    for ((op, bytes), families) in all {
        let size = format_bytes(bytes);
        let time = family_lines(families.iter(), |t, _| t * 1e6);
        let title = format!("{op}, {size} per rank: time at the best segment size");
        out.push((
            format!("{op}-{size}-time.svg"),
            lines_svg(&title, "median time (µs)", time, |y| format!("{y:.0}"))?,
        ));
        let segmented = families.iter().filter(|(f, _)| segmented.contains(*f));
        let segs = family_lines(segmented, |_, s| s as f64);
        if !segs.is_empty() {
            let title = format!("{op}, {size} per rank: best segment size");
            out.push((
                format!("{op}-{size}-segment.svg"),
                lines_svg(&title, "best segment (bytes)", segs, |y| {
                    format_bytes(y.round() as usize)
                })?,
            ));
        }
    }
    if out.is_empty() {
        return Err("no finished result to plot".into());
    }
    Ok(out)
}

/// The best of each family at each (op, size) and rank count, and the
/// families measured with a segment size.
fn best_of(rows: &[Row]) -> (BTreeMap<(String, usize), Best>, BTreeSet<String>) {
    let mut all: BTreeMap<(String, usize), Best> = BTreeMap::new();
    let mut segmented = BTreeSet::new();
    for r in rows.iter().filter(|r| r.median_s.is_finite()) {
        let Ok(imp) = r.imp.parse::<autocoll::Implementation>() else {
            continue;
        };
        let seg = imp.seg.unwrap_or(r.bytes).min(r.bytes.max(1));
        let has_seg = imp.seg.is_some();
        let family = autocoll::Implementation { seg: None, ..imp }.to_string();
        if has_seg {
            segmented.insert(family.clone());
        }
        let slot = all
            .entry((r.op.clone(), r.bytes))
            .or_default()
            .entry(family)
            .or_default()
            .entry(r.ranks)
            .or_insert((f64::INFINITY, seg));
        if r.median_s < slot.0 {
            *slot = (r.median_s, seg);
        }
    }
    (all, segmented)
}

/// A line per family against ranks, its y `y_of` (median, segment).
fn family_lines<'a>(
    families: impl Iterator<Item = (&'a String, &'a BTreeMap<usize, (f64, usize)>)>,
    y_of: fn(f64, usize) -> f64,
) -> BTreeMap<String, Vec<(f64, f64)>> {
    families
        .map(|(f, by)| {
            let points = by.iter().map(|(&p, &(t, s))| (p as f64, y_of(t, s)));
            (f.clone(), points.collect())
        })
        .collect()
}

/// Lines against ranks (linear x, log y), one colour per line.
fn lines_svg(
    title: &str,
    y_desc: &str,
    lines: BTreeMap<String, Vec<(f64, f64)>>,
    y_label: impl Fn(&f64) -> String,
) -> Result<String, String> {
    let (x_lo, x_hi) = bounds(lines.values().flatten().map(|p| p.0));
    let (y_lo, y_hi) = bounds(lines.values().flatten().map(|p| p.1));
    canvas((900, 600), |area| {
        let mut chart = chart(
            area,
            title,
            (45, 70),
            (x_lo - 0.5)..(x_hi + 0.5),
            (y_lo * 0.8..y_hi * 1.25).log_scale(),
        )?;
        chart
            .configure_mesh()
            .x_desc("ranks")
            .y_desc(y_desc)
            .y_label_formatter(&y_label)
            .draw()
            .map_err(|e| e.to_string())?;
        for (index, (name, points)) in lines.into_iter().enumerate() {
            let style = PALETTE[index % PALETTE.len()].stroke_width(2);
            line(&mut chart, points, style, None, name)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// A series of `adapt --plot`: its name, its per-call times (s), its
/// colour.
type CallSeries = (String, Vec<f64>, RGBColor);

/// `adapt --plot`: per-call time of every series (Figure 8a, left) and the
/// distribution of each series' times (Figure 8b, right, as the share of
/// calls at or below a time). The lottery is drawn in black.
pub fn adapt_svg(names: &[String], fixed: &[Vec<f64>], lottery: &[f64]) -> Result<String, String> {
    let mut series: Vec<CallSeries> = names
        .iter()
        .zip(fixed)
        .enumerate()
        .map(|(i, (n, xs))| (n.clone(), xs.clone(), PALETTE[i % PALETTE.len()]))
        .collect();
    series.push(("lottery".into(), lottery.to_vec(), BLACK));
    let all = series.iter().flat_map(|s| s.1.iter().map(|t| t * 1e6));
    let (y_lo, y_hi) = bounds(all);
    let times = (y_lo * 0.8, y_hi * 1.25);
    let calls = lottery.len().max(2) as f64;
    canvas((1400, 600), |area| {
        let (left, right) = area.split_horizontally(700);
        per_call(&left, &series, calls, times)?;
        distribution(&right, &series, times)
    })
}

/// Figure 8a on `area`: each series' time (µs, in `times`) at each call.
fn per_call(
    area: &Area,
    series: &[CallSeries],
    calls: f64,
    times: (f64, f64),
) -> Result<(), String> {
    let mut a = chart(
        area,
        "time per call",
        (45, 70),
        0.0..calls,
        (times.0..times.1).log_scale(),
    )?;
    a.configure_mesh()
        .x_desc("call")
        .y_desc("time (µs)")
        .draw()
        .map_err(|e| e.to_string())?;
    for (name, xs, colour) in series {
        let points = xs.iter().enumerate().map(|(i, t)| (i as f64, t * 1e6));
        a.draw_series(LineSeries::new(points, colour.stroke_width(1)))
            .map_err(|e| e.to_string())?
            .label(name.clone())
            .legend(swatch(colour.stroke_width(2), None));
    }
    legend(&mut a, SeriesLabelPosition::UpperRight)
}

/// Figure 8b on `area`: the share of each series' calls at or below a
/// time (µs, in `times`).
fn distribution(area: &Area, series: &[CallSeries], times: (f64, f64)) -> Result<(), String> {
    let mut b = chart(
        area,
        "distribution of call times",
        (45, 60),
        (times.0..times.1).log_scale(),
        0.0..1.0,
    )?;
    b.configure_mesh()
        .x_desc("time (µs)")
        .y_desc("share of calls ≤ time")
        .draw()
        .map_err(|e| e.to_string())?;
    for (_, xs, colour) in series {
        let mut sorted: Vec<f64> = xs.iter().map(|t| t * 1e6).collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let points = sorted
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, (i + 1) as f64 / n));
        b.draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `balance --plot`: each series' time inside the broadcast per call,
/// summed over the ranks (the paper's measure; the span is the loaded
/// rank's work whatever the table), as the running median of
/// [`BALANCE_SMOOTH`] calls (one call's time on a shared machine jumps
/// by several times); the identity table in black, a circle where a
/// balancer changed its table, a dashed line at the call the load moved
/// at.
pub fn balance_svg(r: &autocoll_experiments::balance::Report) -> Result<String, String> {
    let smooth: Vec<Vec<f64>> = r
        .series
        .iter()
        .map(|s| running_median(&s.inside_s, BALANCE_SMOOTH))
        .collect();
    let all = smooth.iter().flatten().map(|t| t * 1e6);
    let (y_lo, y_hi) = bounds(all);
    let (y_lo, y_hi) = (y_lo * 0.8, y_hi * 1.25);
    let calls = r.calls.max(2) as f64;
    let load = match &r.load {
        Some(l) => format!("{:.0} µs of work on rank {}", l.work_s * 1e6, l.rank),
        None => "no load".into(),
    };
    let title = format!("{} on {} ranks, {load}", r.imp, r.ranks);
    canvas((1000, 600), |area| {
        let mut chart = chart(area, &title, (45, 70), 0.0..calls, (y_lo..y_hi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("call")
            .y_desc(format!(
                "time inside, summed over ranks (µs, median of {BALANCE_SMOOTH} calls)"
            ))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (s, ys)) in r.series.iter().zip(&smooth).enumerate() {
            let colour = match i {
                0 => BLACK,
                i => PALETTE[(i - 1) % PALETTE.len()],
            };
            draw_balance_series(&mut chart, s, ys, colour)?;
        }
        if let Some(m) = &r.load_moves {
            let x = m.call as f64;
            let label = format!("the load moves to rank {}", m.rank);
            let style = BLACK.stroke_width(1);
            line(
                &mut chart,
                vec![(x, y_lo), (x, y_hi)],
                style,
                Some((8, 6)),
                label,
            )?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

/// Draws a series of `balance --plot`: its smoothed times `ys` (s) in
/// `colour`, with a circle at each call its table changed at.
fn draw_balance_series<'a, DB: DrawingBackend + 'a, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'a, DB, CT>,
    s: &autocoll_experiments::balance::report::Series,
    ys: &[f64],
    colour: RGBColor,
) -> Result<(), String> {
    let points = ys.iter().enumerate().map(|(k, t)| (k as f64, t * 1e6));
    let label = format!("{} ({} table changes)", s.name, s.changes);
    line(chart, points.collect(), colour.stroke_width(2), None, label)?;
    let marks = s
        .changes_at
        .iter()
        .map(|&k| Circle::new((k as f64, ys[k] * 1e6), 4, colour.filled()));
    chart.draw_series(marks).map_err(|e| e.to_string())?;
    Ok(())
}

/// The calls a point of `balance --plot` is the median of.
const BALANCE_SMOOTH: usize = 9;

/// The median of each window of `width` values centred on each value
/// (narrower at the ends).
fn running_median(xs: &[f64], width: usize) -> Vec<f64> {
    let half = width / 2;
    (0..xs.len())
        .map(|i| {
            let window = &xs[i.saturating_sub(half)..(i + half + 1).min(xs.len())];
            autocoll::measure::stats::median(window)
        })
        .collect()
}
