//! `autocoll analyze --bench-synthetic CALLSxRANKS`: the analysis's
//! scale measurement on a synthetic trace (`autocoll_analyze::synthetic`),
//! its time and peak memory.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context};
use autocoll_analyze::{analyse, synthetic, Options};

use crate::failure::Failure;
use crate::out::say;

/// `CALLSxRANKS`.
fn parse(text: &str) -> Result<(u64, usize), Failure> {
    let bad = || {
        Failure::Usage(format!(
            "--bench-synthetic `{text}`: expected CALLSxRANKS, e.g. 100000x16"
        ))
    };
    let (c, r) = text.split_once('x').ok_or_else(bad)?;
    let (c, r): (u64, usize) = (c.parse().map_err(|_| bad())?, r.parse().map_err(|_| bad())?);
    if c == 0 || !(2..=u16::MAX as usize).contains(&r) {
        return Err(bad());
    }
    Ok((c, r))
}

/// The peak resident memory of this process, KiB (Linux's VmHWM).
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `--bench-synthetic`: writes the files in a child process (so that the
/// writing's memory is not counted), then analyses them here and prints
/// the time and the peak memory.
pub fn run(text: &str, write_only: Option<&Path>) -> Result<ExitCode, Failure> {
    let (calls, ranks) = parse(text)?;
    let spec = synthetic::bench_spec(ranks);
    if let Some(dir) = write_only {
        synthetic::write(dir, &spec, calls)?;
        return Ok(ExitCode::SUCCESS);
    }
    let dir = std::env::temp_dir().join(format!("autocoll-analyze-bench-{}", std::process::id()));
    let exe = std::env::current_exe()
        .context("finding this program")
        .map_err(Failure::Run)?;
    let started = Instant::now();
    let status = std::process::Command::new(exe)
        .args(["analyze", "--bench-synthetic", text, "--write-synthetic"])
        .arg(&dir)
        .status()
        .context("starting the writer of the synthetic trace")
        .map_err(Failure::Run)?;
    if !status.success() {
        return Err(Failure::Run(anyhow!(
            "writing the synthetic trace failed ({status})"
        )));
    }
    let written = started.elapsed().as_secs_f64();
    let trace_bytes: u64 = (0..ranks)
        .filter_map(|r| std::fs::metadata(synthetic::rank_file(&dir, r)).ok())
        .map(|m| m.len())
        .sum();
    let before = peak_kib();
    let started = Instant::now();
    let result = analyse(&dir, &Options::default(), None);
    let took = started.elapsed().as_secs_f64();
    let peak = peak_kib();
    let _ = std::fs::remove_dir_all(&dir);
    let report = result?;
    let events: u64 = report.files.iter().map(|f| f.events).sum();
    let mib = |k: Option<u64>| k.map_or("?".into(), |k| format!("{:.1}", k as f64 / 1024.0));
    say!(
        "synthetic trace: {calls} calls × {ranks} ranks of {}, {events} events, {:.1} MiB in {ranks} files (written in {written:.1} s)",
        spec.imp,
        trace_bytes as f64 / (1 << 20) as f64
    );
    say!(
        "analysis: {took:.2} s ({:.0} calls/s, {:.1} M events/s); peak memory {} MiB (VmHWM; {} MiB before reading)",
        calls as f64 / took,
        events as f64 / took / 1e6,
        mib(peak),
        mib(before)
    );
    if let Some(i) = report
        .groups
        .first()
        .and_then(|g| g.load_imbalance.as_ref())
    {
        say!("found: {}", i.sentence);
    }
    Ok(ExitCode::SUCCESS)
}
