//! The results as rows ([`autocoll_tune::Row`]): one per method at a
//! point, printed as a table line as each point finishes and written at
//! the end as JSON (`autocoll.bench/1`, with the raw repetitions), CSV
//! and an SVG plot. `tune`, `compare` and the plots read the same rows.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use autocoll::select::format_bytes;
use autocoll::Collective;
use autocoll_tune::row::Row;
use serde_json::json;

use super::args::Args;
use crate::failure::Failure;
use crate::plot;

pub(super) fn table_header() -> String {
    format!(
        "{:<34} {:>5} {:>8} {:<12} {:>11} {:>11} {:>23} {:>5} {:>6} {:>24}  {}",
        "impl",
        "ranks",
        "bytes",
        "method",
        "median µs",
        "mean µs",
        "95% CI of median µs",
        "reps",
        "disc",
        "vs truth",
        "flags"
    )
}

pub(super) fn table_line(r: &Row) -> String {
    let us = |s: f64| format!("{:.2}", s * 1e6);
    let pct = |e: f64| format!("{:+.1}%", e * 100.0);
    let err = match (r.error_vs_truth, r.error_ci95) {
        (Some(e), Some([lo, hi])) => format!("{} [{}, {}]", pct(e), pct(lo), pct(hi)),
        (Some(e), None) => pct(e),
        _ => String::new(),
    };
    let line = format!(
        "{:<34} {:>5} {:>8} {:<12} {:>11} {:>11} {:>23} {:>5} {:>6} {:>24}  {}",
        r.imp,
        r.ranks,
        format_bytes(r.bytes),
        r.method.name(),
        us(r.median_s),
        us(r.mean_s),
        format!("{} .. {}", us(r.ci95_lo_s), us(r.ci95_hi_s)),
        r.reps,
        r.discarded,
        err,
        r.flag_text()
    );
    line.trim_end().to_string()
}

/// Writes `--json`, `--csv` and `--plot`, those asked for.
fn write_outputs(
    a: &Args,
    op: Collective,
    rows: &[Row],
    hosts: Vec<String>,
) -> Result<(), Failure> {
    let write = |path: &PathBuf, data: &[u8], what: &str| {
        autocoll::files::write_atomic(path, data)
            .with_context(|| format!("writing {what}"))
            .map_err(Failure::Run)
    };
    if let Some(path) = &a.json {
        let doc = json!({
            "schema": "autocoll.bench/1",
            "transport": a.transport.name(),
            "hosts": hosts,
            "results": rows,
        });
        let text = serde_json::to_vec_pretty(&doc).expect("JSON of plain data");
        write(path, &text, "--json")?;
    }
    if let Some(path) = &a.csv {
        write(path, csv(rows).as_bytes(), "--csv")?;
    }
    if let Some(path) = &a.plot {
        let svg = plot::svg(op, rows).map_err(|e| Failure::Run(anyhow::anyhow!("plot: {e}")))?;
        write(path, svg.as_bytes(), "--plot")?;
    }
    Ok(())
}

/// Writes the outputs of the results that finished, then reports the run.
pub(super) fn finish(
    a: &Args,
    op: Collective,
    rows: &[Row],
    hosts: Vec<String>,
    outcome: anyhow::Result<()>,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    if stop.load(Ordering::Relaxed) {
        eprintln!(
            "autocoll: interrupted; writing the {} results that finished",
            rows.len()
        );
    }
    write_outputs(a, op, rows, hosts)?;
    outcome.map_err(Failure::Run)?;
    Ok(if stop.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The hosts and the rows of a `--json` document (`text`, read from
/// `path`); the error names the file and what is wrong in it.
pub(crate) fn parse_json(text: &[u8], path: &Path) -> Result<(Vec<String>, Vec<Row>), String> {
    let doc: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let field =
        |name: &str, e: serde_json::Error| format!("{}: field `{name}`: {e}", path.display());
    let hosts = serde_json::from_value(doc["hosts"].clone()).map_err(|e| field("hosts", e))?;
    let rows = serde_json::from_value(doc["results"].clone()).map_err(|e| field("results", e))?;
    Ok((hosts, rows))
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::from(
        "op,impl,ranks,bytes,root,method,reps,discarded,mean_s,median_s,min_s,max_s,stddev_s,ci95_lo_s,ci95_hi_s,error_vs_truth,error_ci95_lo,error_ci95_hi,flags\n",
    );
    let num = |x: f64| {
        if x.is_finite() {
            x.to_string()
        } else {
            String::new()
        }
    };
    for r in rows {
        let fields = [
            r.op.clone(),
            r.imp.clone(),
            r.ranks.to_string(),
            r.bytes.to_string(),
            r.root.to_string(),
            r.method.name().to_string(),
            r.reps.to_string(),
            r.discarded.to_string(),
            num(r.mean_s),
            num(r.median_s),
            num(r.min_s),
            num(r.max_s),
            num(r.stddev_s),
            num(r.ci95_lo_s),
            num(r.ci95_hi_s),
            r.error_vs_truth.map(num).unwrap_or_default(),
            r.error_ci95.map(|[lo, _]| num(lo)).unwrap_or_default(),
            r.error_ci95.map(|[_, hi]| num(hi)).unwrap_or_default(),
            r.flag_text(),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}
