//! `autocoll sim`: fits the sim transport's model to `bench` runs on a
//! real or emulated cluster, and compares the sim's predictions with what
//! that cluster measured (docs/sim.md).
//!
//! The fit reads 2-rank rows: one message per call, so a row's median is
//! `L + 2o + bytes·G`: the slope through the large sizes gives `G`, and
//! the smallest size then `L + 2o`. One message cannot tell `L`
//! from `o`; the fit gives each `o` a quarter of the intercept and `L`
//! the half left, and says so. Rows of `allreduce:recursive-doubling`
//! are exchanges (a message each way at once): how much longer they take
//! than one way, per byte, is the model's `both_ways`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use autocoll::sim::Model;

use crate::bench::{parse_json, Row};
use crate::failure::Failure;
use crate::out::say;

/// Fit or check the model of the simulated transport.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// Fit a model to 2-rank `bench --json` results (sizes from a few
    /// bytes to the bandwidth's regime; with `allreduce:recursive-doubling`
    /// rows, exchanges both ways at once) and write it as TOML.
    Fit {
        /// bench JSON files; their 2-rank rows are used.
        #[arg(required = true)]
        json: Vec<PathBuf>,
        /// Ranks on each host of the modelled cluster.
        #[arg(long, default_value_t = 1)]
        ranks_per_host: usize,
        /// Hosts on each switch (0: one switch).
        #[arg(long, default_value_t = 0)]
        hosts_per_switch: usize,
        /// The top links' cost per byte relative to a host link's.
        #[arg(long, default_value_t = 1.0)]
        switch_ratio: f64,
        /// Where to write the model.
        #[arg(long)]
        out: PathBuf,
    },
    /// Compare what a cluster measured with what the sim predicted: each
    /// point's error and whether the implementations rank alike. With
    /// several measured runs, a point is their median and the error's
    /// range over the runs is shown.
    Compare {
        /// bench JSON measured on the cluster (one or more runs).
        #[arg(required = true)]
        measured: Vec<PathBuf>,
        /// bench JSON of the same sweep on `--transport sim`.
        #[arg(long)]
        predicted: PathBuf,
    },
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    match a.what {
        What::Fit {
            json,
            ranks_per_host,
            hosts_per_switch,
            switch_ratio,
            out,
        } => {
            let rows = FitRows::read(&json)?;
            let (intercept, slope, n) = line(&rows.apart).map_err(Failure::Usage)?;
            let mut model = Model {
                latency_ns: intercept / 2.0,
                overhead_ns: intercept / 4.0,
                host_ns_per_byte: slope,
                switch_ns_per_byte: slope * switch_ratio,
                ranks_per_host,
                hosts_per_switch,
                ..Model::default()
            };
            say!(
                "fitted to {n} two-rank points on two hosts: L + 2o = {:.1} µs (L {:.1}, o {:.1}: one message cannot tell them apart), {:.2} ns a byte ({:.1} Mbit/s)",
                intercept * 1e-3,
                model.latency_ns * 1e-3,
                model.overhead_ns * 1e-3,
                slope,
                8e3 / slope,
            );
            fit_one_host(&mut model, &rows.together);
            fit_both_ways(&mut model, &rows.both, intercept, slope);
            model.check().map_err(Failure::Usage)?;
            write_model(&model, &out)?;
            say!("written to {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        What::Compare {
            measured,
            predicted,
        } => compare(&measured, &predicted),
    }
}

/// The 2-rank rows a fit reads, by what they measure.
struct FitRows {
    /// One message between two hosts.
    apart: Vec<Row>,
    /// One message within a host.
    together: Vec<Row>,
    /// Exchanges between two hosts.
    both: Vec<Row>,
}

impl FitRows {
    /// The rows of the bench JSON files `json`, sorted.
    fn read(json: &[PathBuf]) -> Result<FitRows, Failure> {
        let (mut apart, mut together, mut both) = (Vec::new(), Vec::new(), Vec::new());
        for path in json {
            let (hosts, rows) = read_run(path)?;
            let one_host = hosts.len() == 2 && hosts[0] == hosts[1];
            for row in rows {
                match (row.imp == EXCHANGE, one_host) {
                    (true, false) => both.push(row),
                    // An exchange within a host has no link either way.
                    (true, true) => {}
                    (false, true) => together.push(row),
                    (false, false) => apart.push(row),
                }
            }
        }
        Ok(FitRows {
            apart,
            together,
            both,
        })
    }
}

/// Fits the model's ranks of one host to the runs on one host, or says
/// it keeps the defaults.
fn fit_one_host(model: &mut Model, together: &[Row]) {
    match line(together) {
        Ok((intercept, slope, n)) => {
            // Both ranks' overheads are in the line too.
            model.local_latency_ns = (intercept - 2.0 * model.overhead_ns).max(0.0);
            model.local_ns_per_byte = slope.max(0.0);
            say!(
                "fitted to {n} two-rank points on one host: latency {:.1} µs, {:.3} ns a byte",
                model.local_latency_ns * 1e-3,
                model.local_ns_per_byte
            );
        }
        Err(_) => say!(
            "no two-rank run on one host: ranks of one host keep the default {:.1} µs and {:.3} ns a byte",
            model.local_latency_ns * 1e-3,
            model.local_ns_per_byte
        ),
    }
}

/// Fits the model's `both_ways` to the exchanges against the one-way
/// line (`intercept`, `slope`), or says it keeps the default.
fn fit_both_ways(model: &mut Model, both: &[Row], intercept: f64, slope: f64) {
    match both_ways(both, intercept, slope) {
        Some((share, n)) => {
            model.both_ways = share;
            say!(
                "fitted to {n} exchanges on two hosts: a link carrying data while the other way does is {:.1}% slower",
                share * 100.0
            );
        }
        None => say!(
            "no exchange ({EXCHANGE}, 2 ranks on two hosts, 16 KiB or more): both ways keep the default {:.1}%",
            model.both_ways * 100.0
        ),
    }
}

/// `sim compare`: the runs `measured` against the sim's `predicted`.
fn compare(measured: &[PathBuf], predicted: &Path) -> Result<ExitCode, Failure> {
    let mut runs = Vec::new();
    for path in measured {
        runs.push(read_rows(path)?);
    }
    let points = pair(&runs, &read_rows(predicted)?);
    if points.is_empty() {
        return Err(Failure::Usage(format!(
            "{} has no point (implementation, ranks, bytes) in common with the measured runs",
            predicted.display()
        )));
    }
    print_comparison(&points);
    Ok(ExitCode::SUCCESS)
}

/// The rows of a bench JSON file.
fn read_rows(path: &Path) -> Result<Vec<Row>, Failure> {
    Ok(read_run(path)?.1)
}

/// The hosts of a bench JSON file's ranks, and its rows.
fn read_run(path: &Path) -> Result<(Vec<String>, Vec<Row>), Failure> {
    let text = std::fs::read(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Failure::Run)?;
    parse_json(&text, path).map_err(Failure::Usage)
}

/// The 2-rank rows' line in ns: the least-squares slope through the
/// sizes of 16 KiB and more (smaller messages pass links' token buckets
/// at once, below their rate), and the intercept that puts the line
/// through the smallest size, never below 0; with the number of points.
fn line(rows: &[Row]) -> Result<(f64, f64, usize), String> {
    let mut points: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.ranks == 2 && r.median_s.is_finite())
        .map(|r| (r.bytes as f64, r.median_s * 1e9))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let large: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.0 >= LARGE).collect();
    let slope = slope(&large).or_else(|| slope(&points)).ok_or_else(|| {
        format!(
            "the fit needs 2-rank results at two sizes or more; found {} point(s)",
            points.len()
        )
    })?;
    // The median of the smallest size's runs.
    let x = points[0].0;
    let at_x: Vec<f64> = points.iter().filter(|p| p.0 == x).map(|p| p.1).collect();
    let y = at_x[at_x.len() / 2];
    Ok(((y - slope * x).max(0.0), slope, points.len()))
}

/// Where the bandwidth's regime starts.
const LARGE: f64 = 16384.0;

/// The implementation whose 2-rank calls are one exchange: each rank
/// sends its whole buffer to the other at once.
const EXCHANGE: &str = "allreduce:recursive-doubling";

/// How much longer than one way (`intercept + slope·bytes`) the 2-rank
/// exchanges `rows` took, per byte of one way: the median over their
/// sizes of 16 KiB and more, never below 0; with the number of rows.
/// The sum each rank computes is in it (at 1 MiB a few hundred µs of
/// the 90 ms a 100 Mbit/s link takes).
fn both_ways(rows: &[Row], intercept: f64, slope: f64) -> Option<(f64, usize)> {
    let mut shares: Vec<f64> = rows
        .iter()
        .filter(|r| r.ranks == 2 && r.bytes as f64 >= LARGE && r.median_s.is_finite())
        .map(|r| {
            let one_way = intercept + slope * r.bytes as f64;
            (r.median_s * 1e9 - one_way) / (slope * r.bytes as f64)
        })
        .collect();
    if shares.is_empty() || slope <= 0.0 {
        return None;
    }
    shares.sort_by(f64::total_cmp);
    Some((shares[shares.len() / 2].max(0.0), shares.len()))
}

/// The least-squares slope through `points`, when they span two sizes.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

/// Writes `model` through a temporary file, so that a failed write leaves
/// no half a model.
fn write_model(model: &Model, out: &Path) -> Result<(), Failure> {
    let text = format!(
        "# autocoll sim model (autocoll sim fit); times in ns, per byte in ns a byte\n{}",
        model.to_toml()
    );
    autocoll::files::write_atomic(out, text.as_bytes())
        .with_context(|| format!("writing {}", out.display()))
        .map_err(Failure::Run)
}

/// One point the prediction and the measured runs have: (implementation,
/// ranks, bytes), the median over runs of the measured medians, the
/// least and greatest of them, and the predicted median, in s.
struct Point {
    imp: String,
    ranks: usize,
    bytes: usize,
    measured: f64,
    range: (f64, f64),
    predicted: f64,
}

impl Point {
    fn error(&self) -> f64 {
        self.predicted / self.measured - 1.0
    }
}

/// The points of `predicted` that some measured run has, in the first
/// run's order.
fn pair(runs: &[Vec<Row>], predicted: &[Row]) -> Vec<Point> {
    let same = |a: &Row, b: &Row| a.imp == b.imp && a.ranks == b.ranks && a.bytes == b.bytes;
    let mut points = Vec::new();
    for m in runs.iter().flatten() {
        if points
            .iter()
            .any(|p: &Point| p.imp == m.imp && p.ranks == m.ranks && p.bytes == m.bytes)
        {
            continue;
        }
        let Some(p) = predicted
            .iter()
            .find(|p| same(p, m) && p.median_s.is_finite())
        else {
            continue;
        };
        let mut all: Vec<f64> = runs
            .iter()
            .flatten()
            .filter(|r| same(r, m) && r.median_s.is_finite())
            .map(|r| r.median_s)
            .collect();
        if all.is_empty() {
            continue;
        }
        all.sort_by(f64::total_cmp);
        points.push(Point {
            imp: m.imp.clone(),
            ranks: m.ranks,
            bytes: m.bytes,
            measured: all[all.len() / 2],
            range: (all[0], all[all.len() - 1]),
            predicted: p.median_s,
        });
    }
    points
}

/// The pairs of implementations at one (ranks, bytes) that the two
/// orders put the same way, and all pairs.
fn concordant(points: &[&Point]) -> (usize, usize) {
    let mut same = 0;
    let mut all = 0;
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            all += 1;
            if (a.measured < b.measured) == (a.predicted < b.predicted) {
                same += 1;
            }
        }
    }
    (same, all)
}

fn print_comparison(points: &[Point]) {
    say!(
        "{:<24} {:>5} {:>6} {:>12} {:>12} {:>8}  {}",
        "impl",
        "ranks",
        "bytes",
        "measured µs",
        "predicted µs",
        "error",
        "error over the runs"
    );
    for p in points {
        let err = |m: f64| (p.predicted / m - 1.0) * 100.0;
        say!(
            "{:<24} {:>5} {:>6} {:>12.1} {:>12.1} {:>+7.1}%  {:+.1}% .. {:+.1}%",
            p.imp,
            p.ranks,
            autocoll::select::format_bytes(p.bytes),
            p.measured * 1e6,
            p.predicted * 1e6,
            p.error() * 100.0,
            err(p.range.1),
            err(p.range.0)
        );
    }
    let within = points.iter().filter(|p| p.error().abs() <= 0.15).count();
    say!(
        "within 15%: {within} of {} points; median |error| {:.1}%",
        points.len(),
        median_abs_error(points) * 100.0
    );
    let mut groups: Vec<(usize, usize)> = points.iter().map(|p| (p.ranks, p.bytes)).collect();
    groups.sort();
    groups.dedup();
    for (ranks, bytes) in groups {
        let here: Vec<&Point> = points
            .iter()
            .filter(|p| p.ranks == ranks && p.bytes == bytes)
            .collect();
        let (same, all) = concordant(&here);
        let best = |key: fn(&Point) -> f64| {
            here.iter()
                .min_by(|a, b| key(a).total_cmp(&key(b)))
                .map(|p| p.imp.clone())
                .unwrap_or_default()
        };
        let (winner, predicted) = (best(|p| p.measured), best(|p| p.predicted));
        say!(
            "{ranks} ranks, {}: {same} of {all} pairs ordered alike; winner {winner}{}",
            autocoll::select::format_bytes(bytes),
            match winner == predicted {
                true => ", predicted".to_string(),
                false => format!(", predicted {predicted}"),
            }
        );
    }
}

fn median_abs_error(points: &[Point]) -> f64 {
    let mut e: Vec<f64> = points.iter().map(|p| p.error().abs()).collect();
    e.sort_by(f64::total_cmp);
    e[e.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ranks: usize, bytes: usize, median_s: f64) -> Row {
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "op": "bcast", "impl": "bcast:flat", "ranks": ranks, "bytes": bytes,
            "root": 0, "method": "truth", "reps": 5, "discarded": 0,
            "mean_s": median_s, "median_s": median_s, "min_s": median_s,
            "max_s": median_s, "stddev_s": 0.0, "ci95_lo_s": median_s,
            "ci95_hi_s": median_s, "raw_s": []
        }))
        .unwrap();
        r.median_s = median_s;
        r
    }

    #[test]
    fn the_fit_finds_the_line_of_two_rank_points() {
        // 30 µs + 80 ns a byte from 16 KiB up; 1 KiB passes at 40 µs
        // (a token bucket); an 8-rank row must be left out.
        let rows: Vec<Row> = [1usize, 16384, 65536, 262144]
            .iter()
            .map(|&b| row(2, b, (30e3 + 80.0 * b as f64) * 1e-9))
            .chain([row(2, 1024, 40e-6), row(8, 1024, 1.0)])
            .collect();
        let (intercept, slope, n) = line(&rows).unwrap();
        assert_eq!(n, 5);
        assert!((intercept - 30e3).abs() < 1.0, "{intercept}");
        assert!((slope - 80.0).abs() < 1e-6, "{slope}");
        assert!(line(&rows[..1]).unwrap_err().contains("found 1 point"));
    }

    #[test]
    fn exchanges_fit_how_much_slower_a_link_is_both_ways() {
        // One way 30 µs + 80 ns a byte; exchanges 6%, 8% and 7% more per
        // byte; a 1 KiB exchange (below the bandwidth's regime) and a
        // 4-rank row are left out.
        let exchange = |ranks, bytes: usize, share: f64| {
            let mut r = row(
                ranks,
                bytes,
                (30e3 + 80.0 * (1.0 + share) * bytes as f64) * 1e-9,
            );
            r.imp = EXCHANGE.into();
            r
        };
        let rows = [
            exchange(2, 16384, 0.06),
            exchange(2, 65536, 0.08),
            exchange(2, 1 << 20, 0.07),
            exchange(2, 1024, 0.5),
            exchange(4, 1 << 20, 0.5),
        ];
        let (share, n) = both_ways(&rows, 30e3, 80.0).unwrap();
        assert_eq!(n, 3);
        assert!((share - 0.07).abs() < 1e-9, "{share}");
        assert_eq!(both_ways(&rows[3..], 30e3, 80.0), None);
        // An exchange no slower than one way is not made faster.
        assert_eq!(
            both_ways(&[exchange(2, 65536, -0.05)], 30e3, 80.0),
            Some((0.0, 1))
        );
    }

    #[test]
    fn a_point_measured_in_several_runs_is_their_median() {
        let runs = vec![
            vec![row(8, 1024, 3.0)],
            vec![row(8, 1024, 1.0), row(8, 2048, 5.0)],
            vec![row(8, 1024, 2.0)],
        ];
        let predicted = [row(8, 1024, 2.2), row(8, 4096, 1.0)];
        let points = pair(&runs, &predicted);
        assert_eq!(points.len(), 1);
        assert_eq!((points[0].measured, points[0].range), (2.0, (1.0, 3.0)));
        assert!((points[0].error() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn pairs_ordered_alike_are_counted() {
        let p = |imp: &str, measured, predicted| Point {
            imp: imp.into(),
            ranks: 8,
            bytes: 1,
            measured,
            range: (measured, measured),
            predicted,
        };
        let points = [p("a", 1.0, 1.1), p("b", 2.0, 1.9), p("c", 3.0, 1.0)];
        let refs: Vec<&Point> = points.iter().collect();
        // a<b alike; a<c measured but c<a predicted; b<c measured, c<b predicted.
        assert_eq!(concordant(&refs), (1, 3));
    }
}
