//! `autocoll map figures`: the paper's Figures 7 and 9 from the mapping
//! experiments' speedups (`scripts/map-experiments` writes them as
//! `speedups.csv`: `engine,kernel,mapping,actual,estimated,chosen`).

use std::path::PathBuf;
use std::process::ExitCode;

use plotters::prelude::*;

use crate::failure::Failure;
use crate::out::say;
use crate::plot::{canvas, chart, legend, PALETTE};

/// Arguments of `autocoll map figures`.
#[derive(clap::Args)]
pub struct Args {
    /// The experiments' speedups (CSV, as scripts/map-experiments writes).
    #[arg(long)]
    results: PathBuf,
    /// The directory to write figure7.svg and figure9.svg into.
    #[arg(long)]
    out: PathBuf,
}

/// One configuration: a mapping of a kernel under an engine.
#[derive(Debug)]
struct Row {
    engine: String,
    kernel: String,
    mapping: String,
    actual: f64,
    estimated: f64,
    chosen: bool,
}

/// Runs `autocoll map figures`.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let text = std::fs::read_to_string(&a.results)
        .map_err(|e| Failure::Usage(format!("reading {}: {e}", a.results.display())))?;
    let rows = parse(&text, &a.results.display().to_string()).map_err(Failure::Usage)?;
    let write = |name: &str, svg: Result<String, String>| -> Result<(), Failure> {
        let path = a.out.join(name);
        let svg = svg.map_err(|e| Failure::Run(anyhow::anyhow!("{name}: {e}")))?;
        autocoll::files::write_atomic(&path, svg.as_bytes()).map_err(|e| Failure::Run(e.into()))?;
        say!("wrote {}", path.display());
        Ok(())
    };
    write("figure7.svg", figure7(&rows))?;
    write("figure9.svg", figure9(&rows))?;
    Ok(ExitCode::SUCCESS)
}

fn parse(text: &str, origin: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let at = |why: &str| format!("{origin}:{}: {why}", i + 1);
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let [engine, kernel, mapping, actual, estimated, chosen] = f[..] else {
            return Err(at("expected engine,kernel,mapping,actual,estimated,chosen"));
        };
        let number = |s: &str| {
            s.parse::<f64>()
                .map_err(|_| at(&format!("`{s}` is not a number")))
        };
        rows.push(Row {
            engine: engine.into(),
            kernel: kernel.into(),
            mapping: mapping.into(),
            actual: number(actual)?,
            estimated: number(estimated)?,
            chosen: chosen == "1",
        });
    }
    if rows.is_empty() {
        return Err(format!("{origin}: no configuration"));
    }
    Ok(rows)
}

/// The distinct values of `field` over `rows`, in their first order.
fn distinct<'a>(rows: impl IntoIterator<Item = &'a Row>, field: fn(&Row) -> &str) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        if !out.contains(&field(r)) {
            out.push(field(r));
        }
    }
    out
}

fn engines(rows: &[Row]) -> Vec<&str> {
    distinct(rows, |r| &r.engine)
}

/// Figure 7: estimated against actual speedup over linear (percent), a
/// point per configuration, one colour per engine; the sign is predicted
/// where a point lies in the first or third quadrant.
fn figure7(rows: &[Row]) -> Result<String, String> {
    let points: Vec<&Row> = rows.iter().filter(|r| r.mapping != "linear").collect();
    let span = points
        .iter()
        .flat_map(|r| [r.actual.abs(), r.estimated.abs()])
        .fold(0.1f64, f64::max)
        * 100.0
        * 1.1;
    canvas((700, 700), |area| {
        let mut chart = chart(
            area,
            "estimated against actual speedup over linear",
            (45, 60),
            -span..span,
            -span..span,
        )?;
        chart
            .configure_mesh()
            .x_desc("estimated speedup (%)")
            .y_desc("actual speedup (%)")
            .draw()
            .map_err(|e| e.to_string())?;
        for axis in [
            vec![(-span, 0.0), (span, 0.0)],
            vec![(0.0, -span), (0.0, span)],
        ] {
            chart
                .draw_series(LineSeries::new(axis, BLACK.stroke_width(1)))
                .map_err(|e| e.to_string())?;
        }
        for (i, engine) in engines(rows).into_iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let mine = points.iter().filter(|r| r.engine == engine);
            chart
                .draw_series(mine.map(|r| {
                    Circle::new((100.0 * r.estimated, 100.0 * r.actual), 5, colour.filled())
                }))
                .map_err(|e| e.to_string())?
                .label(engine)
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, colour.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// Figure 9: the chosen mapping's actual speedup over linear, a bar per
/// kernel and engine.
fn figure9(rows: &[Row]) -> Result<String, String> {
    let chosen: Vec<&Row> = rows.iter().filter(|r| r.chosen).collect();
    let kernels = distinct(chosen.iter().copied(), |r| &r.kernel);
    let engines = engines(rows);
    let hi = chosen.iter().map(|r| 100.0 * r.actual).fold(10.0, f64::max) * 1.15;
    let lo = chosen.iter().map(|r| 100.0 * r.actual).fold(0.0, f64::min) * 1.15 - 0.1 * hi;
    let slots = (kernels.len() * (engines.len() + 1)) as f64;
    canvas((900, 500), |area| {
        let mut chart = chart(
            area,
            "the chosen mapping's actual speedup over linear",
            (35, 60),
            0.0..slots,
            lo..hi,
        )?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("actual speedup (%)")
            .draw()
            .map_err(|e| e.to_string())?;
        let group = engines.len() + 1;
        for (i, engine) in engines.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let bars = chosen
                .iter()
                .filter(|r| r.engine == *engine)
                .filter_map(|r| {
                    let k = kernels.iter().position(|k| *k == r.kernel)?;
                    let x = (k * group + i) as f64 + 0.5;
                    Some(Rectangle::new(
                        [(x, 0.0), (x + 1.0, 100.0 * r.actual)],
                        colour.filled(),
                    ))
                });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(*engine)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], colour.filled())
                });
        }
        // Each kernel's name under its group of bars.
        let names = kernels.iter().enumerate().map(|(k, name)| {
            let x = k as f64 * group as f64 + 0.5 + engines.len() as f64 / 2.0;
            Text::new(
                name.to_string(),
                (x, lo),
                ("sans-serif", 15).into_font().color(&BLACK),
            )
        });
        chart.draw_series(names).map_err(|e| e.to_string())?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedups_are_read_and_bad_lines_are_named() {
        let good =
            "engine,kernel,mapping,actual,estimated,chosen\nlaunch,ladder,greedy,0.6,0.65,1\n";
        let rows = parse(good, "s.csv").unwrap();
        assert_eq!((rows[0].kernel.as_str(), rows[0].chosen), ("ladder", true));
        let bad = "engine,kernel,mapping,actual,estimated,chosen\nlaunch,ladder,greedy,x,0.65,1\n";
        assert_eq!(
            parse(bad, "s.csv").unwrap_err(),
            "s.csv:2: `x` is not a number"
        );
        assert!(figure7(&rows).unwrap().starts_with("<svg"));
        assert!(figure9(&rows).unwrap().contains("ladder"));
    }
}
