//! `autocoll analyze DIR`: what happened inside the collectives of a
//! traced run, from the `autocoll-analyze` crate. This file parses the
//! arguments, runs the analysis, prints the report (`report`) and writes
//! the files asked for; `bench` is the hidden scale measurement.

mod bench;
mod report;

use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use autocoll_analyze::compare::{self, Comparison};
use autocoll_analyze::{analyse, serialization, timemap, Chrome, Options, Report};

use crate::failure::Failure;

/// Arguments of `autocoll analyze`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the report of a traced run
  autocoll analyze traces/
  # everything: JSON, a Perfetto timeline, the timemap and serialization plots
  autocoll analyze traces/ --json analysis.json --chrome timeline.json --plots plots/
  # the same rank in two configurations (the paper's Figure 3a) and the speedup
  autocoll analyze traces-binomial/ --compare traces-hier/ --plots plots/")]
pub struct Args {
    /// The directory of a run's trace files (rank-NNNNN.trace).
    #[arg(required_unless_present = "bench_synthetic")]
    dir: Option<PathBuf>,
    /// Write the analysis as JSON (schema autocoll.analysis/1).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write a Chrome trace-event timeline (Perfetto, chrome://tracing).
    #[arg(long, value_name = "FILE")]
    chrome: Option<PathBuf>,
    /// Write SVG plots into DIR: the timemap and the serialization plot
    /// of every tree group, and with --compare the comparison.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Compare with another run: per-stage differences of one rank's path
    /// and the overall speedup, for every (collective, bytes) in both.
    #[arg(long, value_name = "OTHER_DIR")]
    compare: Option<PathBuf>,
    /// The rank --compare follows (default: the representative of this
    /// run's slowest class).
    #[arg(long)]
    rank: Option<usize>,
    /// Rows (and timemap lines) per rank rather than per class: all ranks,
    /// or a comma list.
    #[arg(long, num_args = 0..=1, default_missing_value = "all", value_name = "LIST")]
    ranks: Option<String>,
    /// Analyse only the calls numbered A..B (B excluded; either may be
    /// left out).
    #[arg(long, value_name = "A..B")]
    calls: Option<String>,
    /// Ranks are in one class when no stage's mean differs by more than
    /// this share of the mean call time.
    #[arg(long, default_value_t = 0.1)]
    class_tolerance: f64,
    /// Measure the analysis on synthetic traces: CALLSxRANKS (e.g.
    /// 100000x16); prints the time and the peak memory.
    #[arg(long, hide = true, value_name = "CALLSxRANKS")]
    bench_synthetic: Option<String>,
    /// With --bench-synthetic: only write the synthetic files into DIR.
    #[arg(long, hide = true, value_name = "DIR", requires = "bench_synthetic")]
    write_synthetic: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    if let Some(spec) = &a.bench_synthetic {
        return bench::run(spec, a.write_synthetic.as_deref());
    }
    let dir = a.dir.as_deref().expect("clap requires DIR");
    let options = Options {
        calls: calls_of(a.calls.as_deref())?,
        tolerance: a.class_tolerance,
    };
    if !(a.class_tolerance >= 0.0 && a.class_tolerance.is_finite()) {
        return Err(Failure::Usage(format!(
            "--class-tolerance {} must be a share ≥ 0",
            a.class_tolerance
        )));
    }
    let mut chrome = a.chrome.as_deref().map(Chrome::create).transpose()?;
    let report = analyse(dir, &options, chrome.as_mut())?;
    let ranks = report::ranks_of(a.ranks.as_deref(), report.ranks)?;
    for w in &report.warnings {
        eprintln!("autocoll analyze: warning: {w}");
    }
    let other = match &a.compare {
        Some(other) => {
            let o = analyse(other, &options, None)?;
            for w in &o.warnings {
                eprintln!("autocoll analyze: warning: {}: {w}", other.display());
            }
            Some(o)
        }
        None => None,
    };
    report::print(&report, ranks.as_deref());
    let comparisons = match &other {
        Some(o) => compare::compare(&report, o, a.rank)?,
        None => Vec::new(),
    };
    report::print_comparisons(&comparisons);
    write_outputs(&a, &report, &comparisons, ranks.as_deref(), chrome)?;
    Ok(ExitCode::SUCCESS)
}

/// `A..B`, `A..`, `..B` or nothing (every call).
fn calls_of(text: Option<&str>) -> Result<Range<u64>, Failure> {
    let Some(text) = text else {
        return Ok(0..u64::MAX);
    };
    let bad = || {
        Failure::Usage(format!(
            "--calls `{text}`: expected A..B (call numbers, B excluded)"
        ))
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let num = |s: &str, default: u64| match s {
        "" => Ok(default),
        s => s.parse::<u64>().map_err(|_| bad()),
    };
    let range = num(a, 0)?..num(b, u64::MAX)?;
    if range.is_empty() {
        return Err(bad());
    }
    Ok(range)
}

fn write_outputs(
    a: &Args,
    report: &Report,
    comparisons: &[Comparison],
    ranks: Option<&[usize]>,
    chrome: Option<Chrome>,
) -> Result<(), Failure> {
    if let Some(path) = &a.json {
        let mut text = serde_json::to_string_pretty(report).expect("the report serialises");
        text.push('\n');
        autocoll::files::write_atomic(path, text.as_bytes()).context("writing --json")?;
    }
    if let Some(c) = chrome {
        let timeline = c.finish()?;
        if timeline.heavy() {
            eprintln!(
                "autocoll analyze: {} holds {} MB: Perfetto's UI struggles beyond a few hundred; pick calls with --calls A..B",
                timeline.path.display(),
                timeline.bytes >> 20
            );
        }
        eprintln!(
            "autocoll analyze: timeline written to {}",
            timeline.path.display()
        );
    }
    if let Some(dir) = &a.plots {
        write_plots(dir, report, comparisons, ranks)?;
    }
    Ok(())
}

/// Every plot of `report` and `comparisons`, into `dir`.
fn write_plots(
    dir: &std::path::Path,
    report: &Report,
    comparisons: &[Comparison],
    ranks: Option<&[usize]>,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating --plots {}", dir.display()))?;
    let mut figures = Vec::new();
    for g in &report.groups {
        figures.extend(timemap::figure(g, ranks)?);
        figures.extend(serialization::figure(g, ranks)?);
    }
    for c in comparisons {
        figures.extend(compare::figure(c)?);
    }
    for (name, svg) in &figures {
        autocoll::files::write_atomic(&dir.join(name), svg.as_bytes())
            .context("writing --plots")?;
    }
    eprintln!(
        "autocoll analyze: {} plots written to {}",
        figures.len(),
        dir.display()
    );
    Ok(())
}
