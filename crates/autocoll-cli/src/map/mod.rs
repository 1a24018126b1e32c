//! `autocoll map`: which processing element each rank of a job should run
//! on, from the machine's topology and the program's recorded pattern
//! (crate `autocoll-map`), with the files that make `mpirun` and
//! `autocoll launch` place the job so.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use autocoll_map::search::Budget;
use autocoll_map::traffic::Which;
use autocoll_map::{Estimator, Mapping, Topology, Traffic};
use serde::Serialize;

use crate::failure::Failure;
use crate::out::say;

mod figures;
mod probe;
pub(crate) mod topology;

use topology::load_topology;

/// Arguments of `autocoll map`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(after_help = "\
Examples:
  # every method on the emulated two-subnet cluster, the chosen mapping as an Open MPI rankfile
  autocoll map --topology clusters/two-subnet.toml --pattern ring.json --rankfile ranks.txt
  mpirun --rankfile ranks.txt -n 16 ./app
  # the topology a cluster spec stands for, as a file to edit or measure into
  autocoll map --topology clusters/two-subnet.toml --write-topology twosub.topo.toml
  # one method, a hostfile for autocoll launch, every method's cost as JSON
  autocoll map --topology t.toml --pattern p.csv --method greedy --hostfile h.txt --json m.json
  # measure the links of an emulated cluster into a topology file (as root, cluster up)
  autocoll map probe --topology clusters/two-subnet.toml --out twosub.measured.toml --plot fig1.svg")]
pub struct Args {
    #[command(subcommand)]
    sub: Option<Sub>,
    /// The hardware topology: an `autocoll.topology/1` file, or a cluster
    /// spec (clusters/*.toml), which stands for its hosts, switches and
    /// rates (memory at 2GB/s).
    #[arg(long, required = true)]
    topology: Option<PathBuf>,
    /// The program's pattern: an `autocoll.pattern/1` file (from
    /// AUTOCOLL_PATTERN), a CSV matrix of bytes, or CSV lines
    /// src,dst,count,bytes under that header.
    #[arg(long)]
    pattern: Option<PathBuf>,
    /// Which traffic of a pattern file to map: p2p (the program's own
    /// messages) or all (with the collectives').
    #[arg(long, default_value = "p2p")]
    traffic: String,
    /// The job's ranks, when more than the pattern names (a list or
    /// matrix leaves silent ranks out).
    #[arg(short = 'n', long)]
    ranks: Option<usize>,
    /// linear, greedy, search, scotch (Debian's scotch_gmap), random or
    /// all (all: every method, scotch if installed; the chosen mapping is
    /// the lowest estimate among linear, greedy and search).
    #[arg(long, default_value = "all")]
    method: String,
    /// Random placements drawn for their spread.
    #[arg(long, default_value_t = 1000)]
    samples: usize,
    /// The search's budget in seconds …
    #[arg(long, default_value_t = 2.0)]
    search_time: f64,
    /// … and in evaluations of the estimator, whichever ends first.
    #[arg(long, default_value_t = 20_000)]
    search_evaluations: usize,
    /// Seed of the search and the random placements.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the chosen mapping as an Open MPI rankfile (mpirun --rankfile).
    #[arg(long)]
    rankfile: Option<PathBuf>,
    /// … as an MPICH machinefile (one host:1 line per rank).
    #[arg(long)]
    machinefile: Option<PathBuf>,
    /// … as a hostfile of autocoll launch (one line per rank).
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// Every method's estimate and mapping as JSON (`autocoll.map/1`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the topology as an `autocoll.topology/1` file.
    #[arg(long)]
    write_topology: Option<PathBuf>,
    /// Arrange every host's processing elements as hwloc sees a host:
    /// `hwloc` (this machine, `lstopo-no-graphics --of synthetic`) or a
    /// file holding such a line (saved on a compute node).
    #[arg(long, value_name = "hwloc|FILE")]
    host_inside: Option<String>,
}

/// What `map` does besides mapping.
#[derive(clap::Subcommand)]
enum Sub {
    /// Measure the topology's links and switches from inside a job of one
    /// rank per processing element, and write the tables into a topology
    /// file (the paper's Figure 1 as SVG).
    Probe(probe::Args),
    /// Draw the paper's Figures 7 and 9 from the mapping experiments'
    /// speedups (scripts/map-experiments writes speedups.csv).
    Figures(figures::Args),
}

/// One method's outcome.
#[derive(Serialize)]
struct Outcome {
    method: String,
    seconds: f64,
    vs_linear: Option<f64>,
    busiest: Option<String>,
    took_s: f64,
    /// Each rank's processing element.
    pes: Vec<usize>,
    /// Each rank's host.
    hosts: Vec<String>,
}

/// The spread of random placements.
#[derive(Serialize)]
struct SpreadJson {
    samples: usize,
    best: f64,
    median: f64,
    worst: f64,
}

/// `autocoll.map/1`.
#[derive(Serialize)]
struct Report {
    schema: &'static str,
    topology: String,
    processing_elements: usize,
    ranks: usize,
    bytes: f64,
    methods: Vec<Outcome>,
    random: Option<SpreadJson>,
    chosen: Option<String>,
    notes: Vec<String>,
}

/// Runs `autocoll map`.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let usage = Failure::Usage;
    match a.sub {
        Some(Sub::Probe(p)) => return probe::run(p),
        Some(Sub::Figures(f)) => return figures::run(f),
        None => {}
    }
    let topology = topology_of(&a)?;
    if let Some(path) = &a.write_topology {
        topology
            .write(path)
            .map_err(|e| Failure::Run(anyhow::anyhow!(e)))?;
        say!("wrote topology {}", path.display());
    }
    let Some(pattern) = &a.pattern else {
        return match a.write_topology {
            Some(_) => Ok(ExitCode::SUCCESS),
            None => Err(usage(
                "give --pattern FILE (or --write-topology FILE)".into(),
            )),
        };
    };
    let which = match a.traffic.as_str() {
        "p2p" => Which::P2p,
        "all" => Which::All,
        other => return Err(usage(format!("--traffic `{other}`: p2p or all"))),
    };
    let mut traffic = Traffic::read(pattern, which).map_err(|e| usage(e.to_string()))?;
    if let Some(n) = a.ranks {
        traffic = traffic.with_ranks(n).map_err(usage)?;
    }
    let methods = methods(&a.method).map_err(usage)?;
    if !(a.search_time.is_finite() && a.search_time >= 0.0) {
        return Err(usage(format!(
            "--search-time {} is not a time",
            a.search_time
        )));
    }
    let budget = Budget {
        evaluations: a.search_evaluations,
        time: Duration::from_secs_f64(a.search_time),
        seed: a.seed,
    };
    let report = map(&topology, &traffic, &methods, budget, &a).map_err(usage)?;
    print(&report);
    write_files(&a, &topology, &report).map_err(Failure::Run)?;
    Ok(ExitCode::SUCCESS)
}

/// `--topology`, with each host's inside from `--host-inside` where given.
fn topology_of(a: &Args) -> Result<Topology, Failure> {
    let usage = Failure::Usage;
    let path = a
        .topology
        .as_deref()
        .ok_or_else(|| usage("give --topology FILE".into()))?;
    let topology = load_topology(path).map_err(usage)?;
    let Some(inside) = &a.host_inside else {
        return Ok(topology);
    };
    let levels = match inside.as_str() {
        "hwloc" => autocoll_map::hwloc::this_machine().map_err(|e| usage(e.to_string()))?,
        file => {
            let text =
                std::fs::read_to_string(file).map_err(|e| usage(format!("reading {file}: {e}")))?;
            autocoll_map::hwloc::parse_synthetic(&text)
                .map_err(|e| usage(format!("{file}: {e}")))?
        }
    };
    autocoll_map::hwloc::expand(&topology, &levels).map_err(|e| usage(e.to_string()))
}

fn methods(text: &str) -> Result<Vec<&'static str>, String> {
    let all = ["linear", "greedy", "search", "scotch", "random"];
    match text {
        "all" => Ok(all.to_vec()),
        m => all
            .iter()
            .find(|x| **x == m)
            .map(|x| vec![*x])
            .ok_or_else(|| {
                format!("--method `{m}`: linear, greedy, search, scotch, random or all")
            }),
    }
}

/// Whether Debian's `scotch_gmap` can be run.
fn have_scotch() -> bool {
    std::process::Command::new("scotch_gmap")
        .arg("-V")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// Scotch's mapping, its files in a scratch directory removed after.
fn scotch_of(t: &Topology, traffic: &Traffic) -> Result<(Mapping, usize), String> {
    let dir = std::env::temp_dir().join(format!("autocoll-map-scotch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let out = autocoll_map::scotch(t, traffic, &dir).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn map(
    t: &Topology,
    traffic: &Traffic,
    methods: &[&str],
    budget: Budget,
    a: &Args,
) -> Result<Report, String> {
    let estimator = Estimator::new(t);
    let mut outcomes: Vec<Outcome> = Vec::new();
    let linear = autocoll_map::linear(traffic.ranks(), t).map_err(|e| e.to_string())?;
    let base = estimator.cost(traffic, &linear);
    let mut mapper = Mapper {
        t,
        traffic,
        budget,
        samples: a.samples,
        seed: a.seed,
        greedy: None,
        random: None,
        notes: Vec::new(),
    };
    for &m in methods {
        if m == "scotch" && methods.len() > 1 && !have_scotch() {
            let note = "scotch: skipped, scotch_gmap not found (Debian package `scotch`)";
            mapper.notes.push(note.into());
            continue;
        }
        let began = Instant::now();
        let mapping = match m {
            "linear" => linear.clone(),
            m => mapper.mapping(m)?,
        };
        let took_s = began.elapsed().as_secs_f64();
        let e = estimator.estimate(traffic, &mapping);
        outcomes.push(Outcome {
            method: m.to_string(),
            seconds: e.seconds,
            vs_linear: (base > 0.0).then(|| e.seconds / base),
            busiest: e.busiest,
            took_s,
            hosts: hosts(t, &mapping),
            pes: mapping.pes().to_vec(),
        });
    }
    let chosen = choose(&outcomes);
    Ok(Report {
        schema: "autocoll.map/1",
        topology: t.name.clone(),
        processing_elements: t.pe_count(),
        ranks: traffic.ranks(),
        bytes: traffic.total_bytes(),
        methods: outcomes,
        random: mapper.random,
        chosen,
        notes: mapper.notes,
    })
}

/// The mapping methods but linear, on one topology and pattern, with what
/// they leave besides their mapping.
struct Mapper<'a> {
    t: &'a Topology,
    traffic: &'a Traffic,
    budget: Budget,
    /// Random placements to draw.
    samples: usize,
    seed: u64,
    /// Greedy's mapping, once made: the search starts from it.
    greedy: Option<Mapping>,
    /// The spread of the random placements, once drawn.
    random: Option<SpreadJson>,
    notes: Vec<String>,
}

impl Mapper<'_> {
    /// Method `m`'s mapping: greedy, search, scotch, or else random's best.
    fn mapping(&mut self, m: &str) -> Result<Mapping, String> {
        let (t, traffic) = (self.t, self.traffic);
        Ok(match m {
            "greedy" => self.greedy()?,
            "search" => {
                let start = self.greedy()?;
                autocoll_map::search(t, traffic, &start, self.budget).map_err(|e| e.to_string())?
            }
            "scotch" => {
                let (mapping, moved) = scotch_of(t, traffic)?;
                if moved > 0 {
                    self.notes.push(format!(
                        "scotch: {moved} ranks moved off processing elements scotch_gmap gave twice"
                    ));
                }
                mapping
            }
            _ => {
                let s = autocoll_map::random(t, traffic, self.samples, self.seed)
                    .map_err(|e| e.to_string())?;
                self.random = Some(SpreadJson {
                    samples: s.samples,
                    best: s.best.0,
                    median: s.median,
                    worst: s.worst,
                });
                s.best.1
            }
        })
    }

    /// Greedy's mapping, made the first time it is asked for.
    fn greedy(&mut self) -> Result<Mapping, String> {
        if self.greedy.is_none() {
            let mapping = autocoll_map::greedy(self.t, self.traffic).map_err(|e| e.to_string())?;
            self.greedy = Some(mapping);
        }
        Ok(self.greedy.clone().expect("set above"))
    }
}

/// The lowest estimate among linear, greedy and search; within 0.1% of
/// each other the earlier of them (a mapping that gains nothing is not
/// worth a move). Scotch's is there to compare with, random's best is the
/// spread's; a run of one of them alone writes its mapping.
fn choose(outcomes: &[Outcome]) -> Option<String> {
    let mut best: Option<&Outcome> = None;
    let own = |o: &&Outcome| !["random", "scotch"].contains(&o.method.as_str());
    for o in outcomes.iter().filter(own) {
        if best.is_none_or(|b| o.seconds < b.seconds * 0.999) {
            best = Some(o);
        }
    }
    best.map(|o| o.method.clone())
}

fn hosts(t: &Topology, m: &Mapping) -> Vec<String> {
    m.pes().iter().map(|&p| t.host_of(p).to_string()).collect()
}

fn seconds(s: f64) -> String {
    match s {
        s if s >= 1.0 => format!("{s:.3} s"),
        s if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        s => format!("{:.3} µs", s * 1e6),
    }
}

fn print(r: &Report) {
    say!(
        "topology {}: {} processing elements; pattern: {} ranks, {:.0} bytes",
        r.topology,
        r.processing_elements,
        r.ranks,
        r.bytes
    );
    say!(
        "{:<8} {:>12} {:>10} {:>10}  busiest",
        "method",
        "estimated",
        "vs linear",
        "took"
    );
    for o in &r.methods {
        let ratio = o.vs_linear.map_or("-".into(), |v| format!("{v:.3}"));
        say!(
            "{:<8} {:>12} {:>10} {:>10}  {}",
            o.method,
            seconds(o.seconds),
            ratio,
            seconds(o.took_s),
            o.busiest.as_deref().unwrap_or("-")
        );
    }
    if let Some(s) = &r.random {
        say!(
            "random placements ({}): best {}, median {}, worst {}",
            s.samples,
            seconds(s.best),
            seconds(s.median),
            seconds(s.worst)
        );
    }
    for n in &r.notes {
        say!("{n}");
    }
    if let Some(c) = &r.chosen {
        say!("chosen: {c}");
    }
}

fn write_files(a: &Args, t: &Topology, r: &Report) -> anyhow::Result<()> {
    let chosen = r
        .chosen
        .as_ref()
        .and_then(|c| r.methods.iter().find(|o| &o.method == c))
        .or_else(|| r.methods.first());
    let mapping = match chosen {
        Some(o) => Mapping::new(o.pes.clone(), t.pe_count())?,
        None => return Ok(()),
    };
    let files: [(&Option<PathBuf>, String); 3] = [
        (&a.rankfile, mapping.rankfile(t)),
        (&a.machinefile, mapping.machinefile(t)),
        (&a.hostfile, mapping.hostfile(t)),
    ];
    for (path, text) in files {
        if let Some(p) = path {
            autocoll::files::write_atomic(p, text.as_bytes())?;
            say!("wrote {}", p.display());
        }
    }
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(r)? + "\n";
        autocoll::files::write_atomic(p, text.as_bytes())?;
        say!("wrote {}", p.display());
    }
    Ok(())
}
