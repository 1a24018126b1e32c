//! `autocoll map probe`: measures a topology's links and switches from
//! inside a tcp job of one rank per processing element (placed linearly,
//! by a hostfile made from the topology) and writes the measured tables
//! into a topology file. The plan, the measurement and the writing are
//! `autocoll_map::probe`'s; this is the launching, the report and the
//! figure.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use autocoll::select::parse_bytes;
use autocoll_map::probe::{self, Curve, Mode, Point, Sets};
use autocoll_map::Topology;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use autocoll::launch::{parse_hostfile, HostLine};

use crate::failure::Failure;
use crate::launch;
use crate::out::say;
use crate::plot::{bounds, bytes_label, canvas, chart, legend, line, PALETTE};

/// Rank 0 hands its reports to the launching process on lines starting so.
const REPORT_LINE: &[u8] = b"@autocoll-probe ";

/// Arguments of `autocoll map probe`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the emulated two-subnet cluster (as root, after `autocoll cluster up clusters/two-subnet.toml`)
  autocoll map probe --topology clusters/two-subnet.toml --out twosub.measured.toml \\
      --json probe.json --plot figure1.svg
  # real hosts: a topology file naming them, ranks started over ssh
  autocoll map probe --topology cluster.topo.toml --agent 'ssh {host}' --out cluster.measured.toml")]
pub struct Args {
    /// The topology to measure: an `autocoll.topology/1` file or a cluster
    /// spec (clusters/*.toml). One rank runs on each of its processing
    /// elements.
    #[arg(long)]
    topology: PathBuf,
    /// Command that runs a rank on a host, `{host}` standing for it (`ssh
    /// {host}`). For a cluster spec, the default is the agent of the
    /// cluster brought up under --cluster-dir.
    #[arg(long)]
    agent: Option<String>,
    /// Where `autocoll cluster up` keeps its clusters.
    #[arg(long, default_value = "target/cluster")]
    cluster_dir: PathBuf,
    /// Write the measured topology (`autocoll.topology/1`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write every curve's points as JSON (`autocoll.probe/1`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw bandwidth against message length, one line per level and way
    /// (the paper's Figure 1), as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Message lengths of the bandwidth tables (comma list, K and M
    /// suffixes).
    #[arg(long, default_value = "1,64,1K,4K,16K,64K,256K,1M")]
    lengths: String,
    /// Message lengths of the streams that find the links' maxima.
    #[arg(long, default_value = "64K,1M")]
    stream_lengths: String,
    /// Timed repetitions per length (after one untimed).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Most pairs streaming across one link at once.
    #[arg(long, default_value_t = 4)]
    max_pairs: usize,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// What rank 0 reports.
#[derive(Serialize, Deserialize)]
enum Report {
    /// Curves measured so far.
    Progress(usize),
    /// Every curve's points.
    Points(Vec<Vec<Point>>),
}

/// `autocoll.probe/1`.
#[derive(Serialize)]
struct ProbeJson<'a> {
    schema: &'static str,
    topology: &'a str,
    reps: usize,
    curves: Vec<CurveJson<'a>>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct CurveJson<'a> {
    #[serde(flatten)]
    curve: &'a Curve,
    /// The pairs by host and slot, as `h0/1`.
    pairs_on: Vec<(String, String)>,
    /// What the curve set, in words.
    set: String,
    points: &'a [Point],
}

/// Runs `autocoll map probe`, as the launching process or as a rank.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let usage = Failure::Usage;
    let topology = super::topology::load_topology(&a.topology).map_err(usage)?;
    let options = probe::Options {
        lengths: lengths("--lengths", &a.lengths).map_err(usage)?,
        stream_lengths: lengths("--stream-lengths", &a.stream_lengths).map_err(usage)?,
        max_pairs: a.max_pairs,
    };
    if a.reps == 0 {
        return Err(usage("--reps: at least 1".into()));
    }
    let plan = probe::plan(&topology, &options);
    if launch::is_rank() {
        return as_rank(&a, &topology, &plan);
    }
    let (lines, agent) = placement(&a, &topology).map_err(usage)?;
    say!(
        "probing {}: {} curves, {} ranks on {} hosts",
        topology.name,
        plan.len(),
        topology.pe_count(),
        hosts(&topology).len()
    );
    let measured = launch_probe(&a, &topology, &plan, lines, agent)?;
    let (result, notes) =
        probe::apply(&topology, &plan, &measured).map_err(|e| Failure::Run(e.into()))?;
    print(&topology, &plan, &measured, &notes);
    write_files(&a, &topology, &result, &plan, &measured, &notes).map_err(Failure::Run)?;
    Ok(ExitCode::SUCCESS)
}

/// A comma list of message lengths, increasing.
fn lengths(what: &str, text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim) {
        let n = parse_bytes(word).map_err(|e| format!("{what} `{text}`: {e}"))? as u64;
        if n == 0 || out.last().is_some_and(|&last| last >= n) {
            return Err(format!(
                "{what} `{text}`: lengths are at least 1 byte and increase"
            ));
        }
        out.push(n);
    }
    Ok(out)
}

/// The distinct hosts of `t`'s processing elements.
fn hosts(t: &Topology) -> Vec<&str> {
    let mut hosts: Vec<&str> = (0..t.pe_count()).map(|pe| t.host_of(pe)).collect();
    hosts.dedup();
    hosts
}

/// Where the ranks start: one per processing element, in order, on the
/// hosts of a hostfile made from the topology, through the agent (`None`,
/// `None`: all here).
fn placement(a: &Args, t: &Topology) -> Result<(Option<Vec<HostLine>>, Option<String>), String> {
    let agent = match &a.agent {
        Some(agent) => Some(agent.clone()),
        None => {
            let cluster = a.cluster_dir.join(&t.name).join("agent");
            cluster.exists().then(|| cluster.display().to_string())
        }
    };
    if agent.is_none() {
        if hosts(t).len() > 1 {
            return Err(format!(
                "the topology `{}` has {} hosts: give --agent (e.g. 'ssh {{host}}'), or bring the emulated cluster up (autocoll cluster up)",
                t.name,
                hosts(t).len()
            ));
        }
        return Ok((None, None));
    }
    let mapping = autocoll_map::linear(t.pe_count(), t).map_err(|e| e.to_string())?;
    let hosts = parse_hostfile(&mapping.hostfile(t), &format!("the hosts of {}", t.name))
        .map_err(|e| e.to_string())?;
    Ok((Some(hosts), agent))
}

/// Starts the job and collects rank 0's points.
fn launch_probe(
    a: &Args,
    t: &Topology,
    plan: &[Curve],
    hosts: Option<Vec<HostLine>>,
    agent: Option<String>,
) -> Result<Vec<Vec<Point>>, Failure> {
    let bar = crate::bench::progress(plan.len() as u64);
    let points = Arc::new(Mutex::new(None));
    let keep = points.clone();
    let shown = bar.clone();
    let report = Arc::new(
        move |line: &[u8]| match serde_json::from_slice::<Report>(line) {
            Ok(Report::Progress(n)) => shown.set_position(n as u64),
            Ok(Report::Points(p)) => *keep.lock().unwrap_or_else(|e| e.into_inner()) = Some(p),
            Err(e) => eprintln!("autocoll: unreadable report from rank 0: {e}"),
        },
    );
    launch::relaunch_self_on(t.pe_count(), hosts, agent, a.timeout, REPORT_LINE, report)?;
    bar.finish_and_clear();
    let found = points.lock().unwrap_or_else(|e| e.into_inner()).take();
    found.ok_or_else(|| Failure::Run(anyhow::anyhow!("rank 0 of the probe reported no points")))
}

/// One rank of the probe.
fn as_rank(a: &Args, t: &Topology, plan: &[Curve]) -> Result<ExitCode, Failure> {
    let mut comm = launch::join(Duration::from_secs(a.timeout))?;
    if comm.size() != t.pe_count() {
        return Err(Failure::Usage(format!(
            "the probe runs one rank per processing element: {} ranks, {} processing elements",
            comm.size(),
            t.pe_count()
        )));
    }
    let first = comm.rank() == 0;
    let mut progress = |n: usize| {
        if first {
            tell(&Report::Progress(n));
        }
    };
    let points = probe::run(&mut comm, plan, a.reps, &mut progress)
        .context("measuring")
        .map_err(Failure::Run)?;
    if first {
        tell(&Report::Points(points));
    }
    Ok(ExitCode::SUCCESS)
}

fn tell(report: &Report) {
    let json = serde_json::to_string(report).expect("JSON of plain data");
    say!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
}

/// Mbit/s of a rate in bytes per second.
fn mbit(rate: f64) -> f64 {
    rate * 8.0 / 1e6
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::OneWay => "one way",
        Mode::BothWays => "both ways",
        Mode::Stream => "stream",
    }
}

/// What a curve set, in words.
fn set_text(t: &Topology, sets: &Sets) -> String {
    let name = |e: usize| t.elements()[e].name.as_str();
    let port = |p: &probe::Port| match *p {
        probe::Port::Link(e) => format!("{} link", name(e)),
        probe::Port::Pe(e) => format!("{} pe_link", name(e)),
    };
    match sets {
        Sets::Tables(ports) => ports.iter().map(port).collect::<Vec<_>>().join(", "),
        Sets::SwitchMax(e) => format!("{} max", name(*e)),
        Sets::LinkMax(p, probe::Dir::Up) => format!("{} max_up", port(p)),
        Sets::LinkMax(p, probe::Dir::Down) => format!("{} max_down", port(p)),
        Sets::Report => "-".into(),
    }
}

fn print(t: &Topology, plan: &[Curve], measured: &[Vec<Point>], notes: &[String]) {
    say!(
        "{:<34} {:<9} {:>11} {:>11} {:>11}  sets",
        "curve (Mbit/s, median of reps)",
        "way",
        "smallest",
        "64K",
        "largest"
    );
    for (c, points) in plan.iter().zip(measured) {
        let at = |p: Option<&Point>| p.map_or("-".into(), |p| format!("{:.1}", mbit(p.median)));
        say!(
            "{:<34} {:<9} {:>11} {:>11} {:>11}  {}",
            c.label,
            mode_name(c.mode),
            at(points.first()),
            at(points.iter().find(|p| p.bytes == 65536)),
            at(points.last()),
            set_text(t, &c.sets)
        );
    }
    for n in notes {
        say!("{n}");
    }
}

fn write_files(
    a: &Args,
    t: &Topology,
    result: &Topology,
    plan: &[Curve],
    measured: &[Vec<Point>],
    notes: &[String],
) -> anyhow::Result<()> {
    if let Some(p) = &a.out {
        result.write(p)?;
        say!("wrote {}", p.display());
    }
    if let Some(p) = &a.json {
        let on = |pe: usize| {
            let (host, slot) = t.host_slot(pe);
            format!("{host}/{slot}")
        };
        let curves = plan
            .iter()
            .zip(measured)
            .map(|(c, points)| CurveJson {
                curve: c,
                pairs_on: c.pairs.iter().map(|&(x, y)| (on(x), on(y))).collect(),
                set: set_text(t, &c.sets),
                points,
            })
            .collect();
        let json = ProbeJson {
            schema: "autocoll.probe/1",
            topology: &t.name,
            reps: a.reps,
            curves,
            notes,
        };
        let text = serde_json::to_string_pretty(&json)? + "\n";
        autocoll::files::write_atomic(p, text.as_bytes())?;
        say!("wrote {}", p.display());
    }
    if let Some(p) = &a.plot {
        let svg = figure(&t.name, plan, measured).map_err(anyhow::Error::msg)?;
        autocoll::files::write_atomic(p, svg.as_bytes())
            .with_context(|| p.display().to_string())?;
        say!("wrote {}", p.display());
    }
    Ok(())
}

/// The paper's Figure 1: bandwidth against message length, the first
/// curve of every level in each way (streams, at two lengths, left out).
fn figure(name: &str, plan: &[Curve], measured: &[Vec<Point>]) -> Result<String, String> {
    let lines = figure_lines(plan, measured);
    if lines.is_empty() {
        return Err("no curve to plot".into());
    }
    let (x_lo, x_hi) = bounds(lines.iter().flat_map(|l| l.1.iter().map(|p| p.0)));
    let mut keys: Vec<f64> = lines.iter().flat_map(|l| l.1.iter().map(|p| p.0)).collect();
    keys.sort_by(f64::total_cmp);
    keys.dedup();
    let (y_lo, y_hi) = bounds(lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)));
    canvas((900, 600), |area| {
        let mut chart = chart(
            area,
            &format!("{name}: bandwidth against message length"),
            (45, 70),
            (x_lo * 0.8..x_hi * 1.25).log_scale().with_key_points(keys),
            (y_lo * 0.8..y_hi * 1.25).log_scale(),
        )?;
        chart
            .configure_mesh()
            .x_desc("message length")
            .y_desc("bandwidth (Mbit/s), summed over pairs")
            .x_label_formatter(&|x| bytes_label(x.round() as usize))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (label, xy)) in lines.into_iter().enumerate() {
            let style = PALETTE[i % PALETTE.len()].stroke_width(2);
            line(&mut chart, xy, style, None, label)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// The figure's lines: the first curve of every level in each way but
/// streams, as (label, (bytes, Mbit/s) of its measured points).
fn figure_lines(plan: &[Curve], measured: &[Vec<Point>]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut lines = Vec::new();
    let mut seen = Vec::new();
    for (c, points) in plan.iter().zip(measured) {
        if c.mode == Mode::Stream || seen.contains(&(&c.level, c.mode)) {
            continue;
        }
        seen.push((&c.level, c.mode));
        let xy: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.median.is_finite() && p.median > 0.0)
            .map(|p| (p.bytes as f64, mbit(p.median)))
            .collect();
        if !xy.is_empty() {
            lines.push((format!("{}, {}", c.level, mode_name(c.mode)), xy));
        }
    }
    lines
}
