//! `autocoll analyze DIR`: what happened inside the collectives of a
//! traced run (Bongo, Anshus and Bjørndalen's analysis of a collective's
//! spanning tree, Scalasca's wait states, Faraj et al.'s arrival
//! patterns, and each call's critical path), for every collective and
//! algorithm.
//!
//! The rank files are read in lockstep, one call (every rank's record of
//! it) at a time (`read`), brought onto one clock (`clocks`, `call`) and
//! counted into running statistics per (implementation, bytes, root)
//! group (`group`): memory grows with groups, ranks and links, not with
//! calls. Each kind of analysis has its file: `nodes` (per tree node),
//! `paths` (a rank's path to the root and back), `links`, `waits`
//! (Scalasca's wait states and the arrival pattern), `critical`,
//! `classes`, `imbalance`, `breakdown`; `result` assembles the
//! `autocoll.analysis/1` document that the outputs are drawn from:
//! `report` (the terminal), `chrome` (a Perfetto timeline), `timemap`,
//! `serialization` and `compare` (SVG). `synthetic` makes traces without
//! a recorder, for the tests and the scale measurement.

mod breakdown;
mod call;
mod chrome;
mod classes;
mod clocks;
mod compare;
mod critical;
mod group;
mod imbalance;
mod links;
mod nodes;
mod paths;
mod read;
#[cfg(test)]
mod recorded_tests;
mod report;
mod result;
mod serialization;
mod stats;
mod synthetic;
#[cfg(test)]
mod tests;
mod timemap;
mod waits;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};

use crate::Failure;
use call::View;
use chrome::Chrome;
use clocks::Clocks;
use group::Analysis;
use read::TraceSet;
use result::Report;

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

/// What the analysis of one directory needs besides its files.
pub struct Options {
    /// The calls analysed, by number.
    pub calls: Range<u64>,
    /// See `--class-tolerance`.
    pub tolerance: f64,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    if let Some(spec) = &a.bench_synthetic {
        return synthetic::bench(spec, a.write_synthetic.as_deref());
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
    let mut chrome = a
        .chrome
        .as_deref()
        .map(Chrome::create)
        .transpose()
        .map_err(Failure::Run)?;
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
        Some(o) => compare::compare(&report, o, a.rank).map_err(Failure::Usage)?,
        None => Vec::new(),
    };
    compare::print(&comparisons);
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

/// Reads and analyses one run's directory, feeding `chrome` as it goes.
/// Bad trace files are the user's input: exit 2, naming the file.
pub fn analyse(
    dir: &Path,
    options: &Options,
    mut chrome: Option<&mut Chrome>,
) -> Result<Report, Failure> {
    let usage = |e: anyhow::Error| Failure::Usage(format!("{e:#}"));
    let mut set = TraceSet::open(dir).map_err(usage)?;
    let clocks = Clocks::new(set.headers());
    let headers = set.headers().to_vec();
    let mut analysis = Analysis::default();
    while let Some(calls) = set.next().map_err(usage)? {
        if !options.calls.contains(&calls.seq) {
            continue;
        }
        let view = View::new(&calls.calls, &headers, &clocks);
        analysis.add(&view);
        if let Some(c) = chrome.as_deref_mut() {
            c.add(&view, &headers).map_err(Failure::Run)?;
        }
    }
    if analysis.calls == 0 {
        return Err(Failure::Usage(format!(
            "{}: no call to analyse (in every file{})",
            dir.display(),
            if options.calls == (0..u64::MAX) {
                String::new()
            } else {
                ", within --calls".into()
            }
        )));
    }
    Ok(result::report(&set, &clocks, analysis, options.tolerance))
}

fn write_outputs(
    a: &Args,
    report: &Report,
    comparisons: &[compare::Comparison],
    ranks: Option<&[usize]>,
    chrome: Option<Chrome>,
) -> Result<(), Failure> {
    let run = |e: anyhow::Error| Failure::Run(e);
    if let Some(path) = &a.json {
        let mut text = serde_json::to_string_pretty(report).expect("the report serialises");
        text.push('\n');
        autocoll::files::write_atomic(path, text.as_bytes())
            .context("writing --json")
            .map_err(run)?;
    }
    if let Some(c) = chrome {
        let path = c.finish().map_err(run)?;
        eprintln!("autocoll analyze: timeline written to {}", path.display());
    }
    if let Some(dir) = &a.plots {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating --plots {}", dir.display()))
            .map_err(run)?;
        let mut figures = Vec::new();
        for g in &report.groups {
            figures.extend(timemap::figure(g, ranks).map_err(|e| run(anyhow!("timemap: {e}")))?);
            figures.extend(
                serialization::figure(g, ranks)
                    .map_err(|e| run(anyhow!("serialization plot: {e}")))?,
            );
        }
        for c in comparisons {
            figures.extend(compare::figure(c).map_err(|e| run(anyhow!("comparison plot: {e}")))?);
        }
        for (name, svg) in &figures {
            let path = dir.join(name);
            autocoll::files::write_atomic(&path, svg.as_bytes())
                .context("writing --plots")
                .map_err(run)?;
        }
        eprintln!(
            "autocoll analyze: {} plots written to {}",
            figures.len(),
            dir.display()
        );
    }
    Ok(())
}

/// A group's name in file names: `allreduce-binomial-seg16K_8B`.
pub fn slug(imp: &str, bytes: u64, root: usize) -> String {
    let imp: String = imp
        .chars()
        .map(|c| match c {
            ':' => '-',
            '=' | '.' => '_',
            c => c,
        })
        .collect();
    let size = autocoll::select::format_bytes(bytes as usize);
    let size = if size.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{size}B")
    } else {
        size
    };
    match root {
        0 => format!("{imp}_{size}"),
        r => format!("{imp}_{size}_root{r}"),
    }
}
