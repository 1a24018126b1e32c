//! `autocoll compare [SPEC]`: autocoll against the MPI library on an
//! emulated cluster, in one command.
//!
//! It brings the cluster up, runs `autocoll bench --transport mpi
//! --baseline` under the MPI library this program links (Open MPI's
//! mpirun, or MPICH's mpiexec) across the cluster's namespaces for
//! each collective (the library's default and autocoll's candidates, timed
//! with `truth`, interleaved per size), runs the same candidates over the
//! tcp transport through `autocoll launch --hostfile`, brings the cluster
//! down (also after a failure or Ctrl-C), and writes `report.md`,
//! `report.json` and one SVG per collective. The benches' own JSON stays
//! in `<out>/raw/`, from which `--report-only` rebuilds the report.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use autocoll::select::{format_bytes, parse_bytes};
use autocoll::Collective;

use autocoll_experiments::compare::report::{self, Line, Setup};
use autocoll_experiments::compare::{candidates, Effort, Plan};
use autocoll_tune::Row;

use crate::cluster::{self, spec::Spec};
use crate::failure::Failure;
use crate::mpirun::Mpi;
use crate::{args, plot};

/// Arguments of `autocoll compare`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # bcast and allreduce against Open MPI's on the 8-host star (as root, built with --features mpi)
  autocoll compare clusters/star8-100m.toml --op bcast,allreduce --bytes 1K..1M
  # the same against MPICH's (this program built against MPICH: scripts/compare-mpi --mpi mpich)
  scripts/compare-mpi --mpi mpich --op alltoall --bytes 1K..1M
  # the report of the last run in target/compare again, without running anything
  autocoll compare --report-only")]
pub struct Args {
    /// The cluster's spec.
    #[arg(default_value = "clusters/star8-100m.toml")]
    spec: PathBuf,
    /// Where the report goes (and the cluster's files, in `cluster/`).
    #[arg(long, default_value = "target/compare")]
    out: PathBuf,
    /// Collectives to compare (comma list).
    #[arg(
        long,
        default_value = "bcast,reduce,allreduce,scatter,gather,allgather"
    )]
    op: String,
    /// Bytes per rank: a range stepping by ×--step, or a list.
    #[arg(long, default_value = "1K..8M")]
    bytes: String,
    /// Factor between the sizes of a --bytes range.
    #[arg(long, default_value_t = 4)]
    step: usize,
    /// Leave out sizes at which one call moves more than this in all
    /// (P × bytes per rank for scatter, gather, allgather, alltoall,
    /// reduce-scatter and the v-forms): at 100 Mbit/s a 4M-per-rank scatter on 8 ranks
    /// takes 2.3 s a call.
    #[arg(long, default_value = "16M")]
    max_total: String,
    /// From this size on, fewer calls and repetitions (each call is long).
    #[arg(long, default_value = "256K")]
    large: String,
    /// The measuring method of every point: `truth` (accurate; below a few
    /// KiB on crowded cores a point may keep no call) or `barrier` (an
    /// upper bound by one barrier, alike for both sides; always keeps them).
    #[arg(long, default_value = "truth")]
    method: String,
    /// Skip the tcp column.
    #[arg(long)]
    no_tcp: bool,
    /// Rebuild the report from the benches' JSON of an earlier run in
    /// --out: no cluster, no runs.
    #[arg(long)]
    report_only: bool,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
}

/// Where the ranks run for one column of the report.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Mpi,
    Tcp,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Mpi => "mpi",
            Transport::Tcp => "tcp",
        }
    }
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let spec = Spec::load(&a.spec).map_err(|e| Failure::Usage(format!("{e:#}")))?;
    let ops = args::ops(&a.op)?;
    let sizes = args::bytes(&a.bytes, a.step)?;
    let max_total =
        parse_bytes(&a.max_total).map_err(|e| Failure::Usage(format!("--max-total: {e}")))?;
    let large = parse_bytes(&a.large).map_err(|e| Failure::Usage(format!("--large: {e}")))?;
    let method: autocoll::measure::Method = a
        .method
        .parse()
        .map_err(|e| Failure::Usage(format!("--method: {e}")))?;
    let out =
        std::path::absolute(&a.out).with_context(|| format!("resolving {}", a.out.display()))?;
    let raw = out.join("raw");
    let mpi = match a.report_only {
        true => recorded_library(&raw),
        false => linked_library(),
    };
    let setup = setup(&a.spec, &spec, method, mpi);
    if !a.report_only {
        let mpi = preflight(mpi)?;
        // Results of an earlier run must not mix into this run's report.
        if raw.exists() {
            std::fs::remove_dir_all(&raw)
                .with_context(|| format!("removing the earlier results in {}", raw.display()))?;
        }
        std::fs::create_dir_all(&raw).with_context(|| format!("creating {}", raw.display()))?;
        autocoll::files::write_atomic(&raw.join(LIBRARY_FILE), mpi.flag().as_bytes())
            .context("recording which MPI the run is against")?;
        let plan = Plan {
            ops: &ops,
            sizes: &sizes,
            max_total,
            large,
            ranks: setup.ranks,
        };
        let stop = Arc::new(AtomicBool::new(false));
        install_ctrl_c(stop.clone());
        let outcome = run_on_cluster(&a, &spec, mpi, &out, &raw, &plan, &stop);
        if stop.load(Ordering::Relaxed) {
            eprintln!("autocoll compare: interrupted; reporting what finished");
        }
        if let Err(e) = outcome {
            // The report of what finished is still worth writing.
            eprintln!("autocoll compare: {e:#}");
            write_report(&a, &setup, &ops, &raw, &out)?;
            return Err(Failure::Run(e));
        }
    }
    write_report(&a, &setup, &ops, &raw, &out)?;
    Ok(ExitCode::SUCCESS)
}

/// The file in `raw/` that names the MPI library of the run.
const LIBRARY_FILE: &str = "library";

/// The MPI library this program runs its mpi transport on: the one whose
/// shared object is mapped into this process (its own file's bytes would
/// not do: it names both libraries in its messages).
fn linked_library() -> Option<Mpi> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    mapped_library(&maps)
}

/// The MPI library among the files of a `/proc/PID/maps` text.
fn mapped_library(maps: &str) -> Option<Mpi> {
    let names = maps
        .lines()
        .filter_map(|line| line.rsplit('/').next().filter(|_| line.contains('/')));
    for name in names {
        if name.starts_with("libmpich") {
            return Some(Mpi::Mpich);
        }
        if name.starts_with("libmpi.so") {
            return Some(Mpi::Openmpi);
        }
    }
    None
}

/// The MPI library an earlier run in `raw` was against (Open MPI for runs
/// that did not record it: they could only be).
fn recorded_library(raw: &Path) -> Option<Mpi> {
    match std::fs::read_to_string(raw.join(LIBRARY_FILE)) {
        Ok(name) if name.trim() == Mpi::Mpich.flag() => Some(Mpi::Mpich),
        _ => Some(Mpi::Openmpi),
    }
}

/// What the report says about the run, from the spec.
fn setup(path: &Path, spec: &Spec, method: autocoll::measure::Method, mpi: Option<Mpi>) -> Setup {
    let slowest = spec.hosts.iter().map(|h| h.rate.0).min().unwrap_or(1);
    Setup {
        cluster: spec.name.clone(),
        spec: path.display().to_string(),
        ranks: spec.hosts.iter().map(|h| h.slots as usize).sum(),
        rate_bytes_per_s: slowest as f64 / 8.0,
        method,
        library: mpi.unwrap_or(Mpi::Openmpi).name().into(),
    }
}

/// Refuses to start what cannot finish: the cluster needs root, the mpi
/// column this program built with MPI and that MPI's launcher.
fn preflight(mpi: Option<Mpi>) -> Result<Mpi, Failure> {
    if !rustix::process::geteuid().is_root() {
        return Err(Failure::Usage(
            "compare brings up an emulated cluster (namespaces, bridges, qdiscs): run it as root"
                .into(),
        ));
    }
    let Some(mpi) = mpi.filter(|_| cfg!(feature = "mpi")) else {
        return Err(Failure::Usage(
            "compare runs the benchmark under MPI: rebuild with `cargo build --release --features mpi` (Open MPI) or run `scripts/compare-mpi --mpi mpich`".into(),
        ));
    };
    let launcher = Command::new(mpi.launcher()).arg("--version").output();
    if !launcher.is_ok_and(|o| o.status.success()) {
        return Err(Failure::Usage(format!(
            "compare needs {}'s {} on PATH (Debian: {})",
            mpi.name(),
            mpi.launcher(),
            match mpi {
                Mpi::Openmpi => "openmpi-bin",
                Mpi::Mpich => "mpich",
            }
        )));
    }
    Ok(mpi)
}

/// The cluster, brought down when dropped: after the runs, a failure or
/// an interrupt alike.
struct Up<'a> {
    spec: &'a Spec,
    dir: PathBuf,
}

impl Drop for Up<'_> {
    fn drop(&mut self) {
        if let Err(e) = cluster::down(self.spec, &self.dir) {
            eprintln!(
                "autocoll compare: bringing cluster {} down failed: {e:#}; run `autocoll cluster down` by hand",
                self.spec.name
            );
        }
    }
}

fn run_on_cluster(
    a: &Args,
    spec: &Spec,
    mpi: Mpi,
    out: &Path,
    raw: &Path,
    plan: &Plan,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let cluster = Up {
        spec,
        dir: out.join("cluster").join(&spec.name),
    };
    cluster::up(spec, &cluster.dir).context("bringing the cluster up")?;
    let mut transports = vec![Transport::Mpi];
    if !a.no_tcp {
        transports.push(Transport::Tcp);
    }
    for (op, group, sizes, effort) in plan.groups() {
        for &t in &transports {
            if stop.load(Ordering::Relaxed) {
                return Err(anyhow!("interrupted"));
            }
            let json = raw.join(format!("{}-{op}-{group}.json", t.name()));
            let mut cmd = bench_command(&cluster.dir, mpi, t, plan.ranks);
            cmd.args(bench_args(op, &sizes, &effort, a))
                .arg("--json")
                .arg(&json);
            eprintln!(
                "autocoll compare: {op} at {} over {}",
                sizes
                    .iter()
                    .map(|&b| format_bytes(b))
                    .collect::<Vec<_>>()
                    .join(","),
                t.name()
            );
            run_bench(&mut cmd, stop).with_context(|| format!("{op} over {}", t.name()))?;
        }
    }
    Ok(())
}

/// The command that starts the ranks of one bench: the MPI's launcher
/// across the namespaces (the cluster's wrapper of it), or this program's
/// tcp launcher with the cluster's agent.
fn bench_command(dir: &Path, mpi: Mpi, t: Transport, ranks: usize) -> Command {
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("autocoll"));
    match t {
        Transport::Mpi => {
            let wrapper = match mpi {
                Mpi::Openmpi => "mpirun",
                Mpi::Mpich => "mpiexec",
            };
            let mut cmd = Command::new(dir.join(wrapper));
            cmd.args(["-n", &ranks.to_string()]).arg(me).args([
                "bench",
                "--transport",
                "mpi",
                "--baseline",
            ]);
            cmd
        }
        Transport::Tcp => {
            let mut cmd = Command::new(me);
            cmd.args(["bench", "--transport", "tcp", "-n", &ranks.to_string()])
                .arg("--hostfile")
                .arg(dir.join("hostfile.autocoll"))
                .arg("--agent")
                .arg(dir.join("agent"));
            cmd
        }
    }
}

/// Runs one bench; a failed one runs up to twice more, since Open MPI
/// 4.1's daemons now and then fail to start across the namespaces (they
/// share one hostname and /tmp, and collide on session directories),
/// which has nothing to do with the benchmark.
fn run_bench(cmd: &mut Command, stop: &AtomicBool) -> anyhow::Result<()> {
    let mut status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    for _ in 0..2 {
        if status.success() || stop.load(Ordering::Relaxed) {
            break;
        }
        eprintln!("autocoll compare: the run failed ({status}); trying it again");
        status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    }
    match status.success() {
        true => Ok(()),
        false => Err(anyhow!("failed ({status}): {cmd:?}")),
    }
}

fn bench_args(op: Collective, sizes: &[usize], effort: &Effort, a: &Args) -> Vec<String> {
    let list: Vec<String> = sizes.iter().map(|b| b.to_string()).collect();
    vec![
        "--op".into(),
        op.to_string(),
        "--impl".into(),
        candidates(op).into(),
        "--bytes".into(),
        list.join(","),
        "--method".into(),
        a.method.clone(),
        "--calls".into(),
        effort.calls.to_string(),
        "--min-reps".into(),
        effort.min_reps.to_string(),
        "--max-reps".into(),
        effort.max_reps.to_string(),
        "--warmup".into(),
        "1".into(),
        "--timeout".into(),
        a.timeout.to_string(),
    ]
}

/// The rows of every bench JSON of `transport` for `op` in `raw`.
fn read_rows(raw: &Path, transport: &str, op: Collective) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for group in ["small", "large"] {
        let path = raw.join(format!("{transport}-{op}-{group}.json"));
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let (_, found) = crate::bench::parse_json(&text, &path).map_err(|e| anyhow!(e))?;
        rows.extend(found);
    }
    Ok(rows)
}

fn write_report(
    a: &Args,
    setup: &Setup,
    ops: &[Collective],
    raw: &Path,
    out: &Path,
) -> Result<(), Failure> {
    let mut lines: Vec<Line> = Vec::new();
    for &op in ops {
        let mpi = read_rows(raw, "mpi", op)?;
        let tcp = read_rows(raw, "tcp", op)?;
        let found = report::lines(setup, &mpi, &tcp);
        if found.is_empty() {
            eprintln!("autocoll compare: no {op} results in {}", raw.display());
            continue;
        }
        let svg = plot::svg(op, &report::plot_rows(op, &mpi, &found))
            .map_err(|e| anyhow!("plotting {op}: {e}"))?;
        write(&out.join(format!("{op}.svg")), svg.as_bytes())?;
        lines.extend(found);
    }
    let command = rerun_command(a, setup);
    let md = report::markdown(setup, &lines, &command);
    write(&out.join("report.md"), md.as_bytes())?;
    let json = serde_json::to_vec_pretty(&report::json(setup, &lines)).expect("JSON of plain data");
    write(&out.join("report.json"), &json)?;
    crate::out::write(format_args!("{md}"));
    eprintln!(
        "autocoll compare: wrote {}",
        out.join("report.md").display()
    );
    Ok(())
}

fn write(path: &Path, data: &[u8]) -> Result<(), Failure> {
    autocoll::files::write_atomic(path, data)
        .with_context(|| format!("writing {}", path.display()))
        .map_err(Failure::Run)
}

fn rerun_command(a: &Args, setup: &Setup) -> String {
    let mut command = String::from("scripts/compare-mpi");
    let spec = a.spec.display().to_string();
    if spec != "clusters/star8-100m.toml" {
        command = format!("{command} {spec}");
    }
    if setup.library == Mpi::Mpich.name() {
        command.push_str(" --mpi mpich");
    }
    command
}

fn install_ctrl_c(stop: Arc<AtomicBool>) {
    // The benches, in this terminal's process group, get the same Ctrl-C
    // and stop; this process then reports and brings the cluster down.
    let result = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed));
    if let Err(e) = result {
        eprintln!("autocoll compare: Ctrl-C will not stop the run cleanly: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mpi_library_is_the_one_mapped_into_the_process() {
        let line = |path: &str| format!("7f00-7f10 r-xp 00000000 fe:01 42 {path}\n");
        let ompi = line("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4")
            + &line("/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(mapped_library(&ompi), Some(Mpi::Openmpi));
        let mpich = line("/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.0");
        assert_eq!(mapped_library(&mpich), Some(Mpi::Mpich));
        let neither =
            line("/work/target/release/autocoll-libmpich-notes") + "7f00-7f10 rw-p 0 0 0 [heap]\n";
        assert_eq!(mapped_library(&neither), None);
    }
}
