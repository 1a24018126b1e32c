//! The arguments of `autocoll bench` and their checks (some shared with
//! `tune`, `adapt` and `balance`).

use std::path::PathBuf;

use autocoll::measure::{Method, Options};
use autocoll::select::parse_bytes;
use autocoll::sim::Model;
use autocoll::Collective;

use crate::failure::Failure;
use crate::launch::Placement;
use crate::traced::TraceArg;
use crate::{args, baseline};

/// Arguments of `autocoll bench`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # two broadcast trees on 2 and 4 threads, 1K to 64K per rank, also as CSV
  autocoll bench --op bcast --impl bcast:chain,bcast:binomial -n 2,4 --bytes 1K..64K --step 8 --csv bcast.csv
  # a segmented chain against binomial on 4 processes over tcp, as JSON and an SVG plot
  autocoll bench --transport tcp --op bcast -n 4 --impl bcast:chain:seg=16K,bcast:binomial \\
      --bytes 64K..1M --step 4 --json bcast.json --plot bcast.svg")]
pub struct Args {
    /// The collective to time.
    #[arg(long)]
    pub(super) op: String,
    /// Implementation ids (comma list), or `all` for every family with
    /// segment sizes from 1K up to twice the message size (the default,
    /// without --tree-file).
    #[arg(long = "impl")]
    pub(super) imp: Option<String>,
    #[command(flatten)]
    pub(super) tree: args::TreeFileArg,
    /// Ranks: `4`, a list `2,4,8` or a range `2..16` (default 4). Under
    /// `--transport mpi` mpirun decides; a given `-n` must agree with it.
    #[arg(short = 'n')]
    pub(super) ranks: Option<String>,
    /// Bytes per rank: a list (K, M suffixes) or a range `1K..8M` stepping
    /// by ×--step; rounded down to whole elements (f64 for reductions).
    #[arg(long, default_value = "64K")]
    pub(super) bytes: String,
    /// Factor between the sizes of a --bytes range.
    #[arg(long, default_value_t = 2)]
    pub(super) step: usize,
    /// Root of rooted collectives (default 0, or the tree file's root).
    #[arg(long)]
    pub(super) root: Option<usize>,
    /// Methods (comma list): send-latency, rounds, barrier, ack, ol-i, truth.
    #[arg(long, default_value = "ol-i")]
    pub(super) method: String,
    /// Also run `truth` at every point and report each method's signed
    /// relative error against it (of the medians).
    #[arg(long)]
    pub(super) compare_truth: bool,
    /// Race each point's candidates as `tune` does (the clearly slower
    /// dropped; docs/tuning.md) and show only the winner; the JSON and CSV
    /// keep every candidate, marked. One method; not under mpi.
    #[arg(long)]
    pub(super) best: bool,
    #[command(flatten)]
    pub(super) racing: crate::args::Racing,
    #[command(flatten)]
    pub(super) stats: crate::args::Repeat,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    pub(super) transport: Transport,
    #[command(flatten)]
    pub(super) model: ModelArg,
    /// Also time the MPI library's own collective (`<op>:mpi`) at every
    /// size, with the same method, between autocoll's (--transport mpi).
    #[arg(long)]
    pub(super) baseline: bool,
    /// Make Open MPI's tuned component run its algorithm N for the
    /// baseline (`coll_tuned_<op>_algorithm`); rows `<op>:mpi:alg=N`.
    /// With 0 or left out, Open MPI chooses.
    #[arg(long, value_name = "N")]
    pub(super) baseline_alg: Option<u32>,
    /// With --baseline-alg: the forced algorithm's segment size
    /// (`coll_tuned_<op>_algorithm_segmentsize`; Open MPI's default is 0,
    /// unsegmented); rows `<op>:mpi:alg=N:seg=S`.
    #[arg(long, value_name = "BYTES")]
    pub(super) baseline_seg: Option<String>,
    /// Where the ranks of a tcp run start (passed to the launcher).
    #[command(flatten)]
    pub(super) placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 30)]
    pub(super) timeout: u64,
    /// Write every result, with its raw repetitions, as JSON.
    #[arg(long)]
    pub(super) json: Option<PathBuf>,
    /// Write the results (without raw repetitions) as CSV.
    #[arg(long)]
    pub(super) csv: Option<PathBuf>,
    /// Draw time against message size (or ranks, for one size) as SVG.
    #[arg(long)]
    pub(super) plot: Option<PathBuf>,
    #[command(flatten)]
    pub(super) trace: TraceArg,
}

/// Transports `bench` can run on.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Transport {
    /// Every rank a thread of this process.
    Local,
    /// Every rank a process, started by `autocoll launch`.
    Tcp,
    /// Every process `mpirun` started is a rank (build with `--features
    /// mpi`); rank 0 reports.
    Mpi,
    /// Every rank a thread of this process on virtual time: the machine
    /// of `--model` (docs/sim.md), at any number of ranks.
    Sim,
}

impl Transport {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Transport::Local => "local",
            Transport::Tcp => "tcp",
            Transport::Mpi => "mpi",
            Transport::Sim => "sim",
        }
    }
}

/// True in a process of an mpi run (every one is a rank).
pub(super) fn is_mpi_rank(a: &Args) -> bool {
    a.transport == Transport::Mpi
}

/// Refuses baseline options that cannot apply; returns the algorithm to
/// force, if any.
pub(super) fn check_baseline(
    a: &Args,
    op: Collective,
) -> Result<Option<baseline::Forced>, Failure> {
    if a.baseline && a.transport != Transport::Mpi {
        return Err(Failure::Usage(format!(
            "--baseline times the MPI library's collective: it needs --transport mpi (not {})",
            a.transport.name()
        )));
    }
    if a.baseline_alg.is_some() && !a.baseline {
        return Err(Failure::Usage(
            "--baseline-alg chooses the baseline's algorithm: give --baseline too".into(),
        ));
    }
    let alg = a.baseline_alg.filter(|&n| n > 0);
    let seg = match (&a.baseline_seg, alg) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(Failure::Usage(
                "--baseline-seg is the segment size of a forced algorithm: give --baseline-alg N (N ≥ 1) too".into(),
            ))
        }
        (Some(text), Some(_)) => Some(
            parse_bytes(text).map_err(|e| Failure::Usage(format!("--baseline-seg: {e}")))?,
        ),
    };
    let forced = alg.map(|alg| baseline::Forced { alg, seg });
    if let Some(f) = forced {
        baseline::mca_env(op, f)?;
    }
    let names_library = |i: &String| i.ends_with(":mpi") || i.contains(":mpi:");
    if let Some(imp) = &a.imp {
        if args::impls(imp).is_err() && args::split("--impl", imp)?.iter().any(names_library) {
            return Err(Failure::Usage(format!(
                "--impl {imp}: the MPI library's collective is not an autocoll implementation; time it with --baseline"
            )));
        }
    }
    Ok(forced)
}

/// Refuses option combinations that cannot run.
pub(super) fn check_options(a: &Args) -> Result<(), Failure> {
    check_sweep(a.transport, &a.placement, &a.stats.options())
}

/// `tune` and `adapt` run their ranks as threads or through the launcher;
/// under mpirun only `bench` and `check` run for now.
pub(crate) fn refuse_mpi(command: &str, transport: Transport) -> Result<(), Failure> {
    if transport == Transport::Mpi {
        return Err(Failure::Usage(format!(
            "{command} runs on --transport local or tcp; --transport mpi is for bench and check"
        )));
    }
    Ok(())
}

/// `adapt` and `balance` watch a running job's real time; virtual time
/// has nothing for them to adapt to.
pub(crate) fn refuse_sim(command: &str, transport: Transport) -> Result<(), Failure> {
    if transport == Transport::Sim {
        return Err(Failure::Usage(format!(
            "{command} runs on --transport local or tcp; --transport sim is for bench and tune"
        )));
    }
    Ok(())
}

/// The simulated machine of `--transport sim`.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct ModelArg {
    /// With --transport sim: the machine's model, a TOML file that
    /// `autocoll sim fit` writes (default: the emulated star8 cluster's).
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Option<PathBuf>,
}

impl ModelArg {
    /// The model under `--transport sim`; refuses `--model` elsewhere.
    pub(crate) fn load(&self, transport: Transport) -> Result<Option<Model>, Failure> {
        match (transport, &self.model) {
            (Transport::Sim, Some(path)) => Model::load(path)
                .map(Some)
                .map_err(|e| Failure::Usage(e.to_string())),
            (Transport::Sim, None) => Ok(Some(Model::default())),
            (_, Some(_)) => Err(Failure::Usage(
                "--model describes the simulated machine: use it with --transport sim".into(),
            )),
            (_, None) => Ok(None),
        }
    }
}

/// `--hostfile` and `--agent` only make sense for the launcher.
pub(crate) fn check_placement(transport: Transport, placement: &Placement) -> Result<(), Failure> {
    let placed = placement.hostfile.is_some() || placement.agent.is_some();
    if placed && transport != Transport::Tcp {
        return Err(Failure::Usage(
            "--hostfile and --agent go to the launcher: use them with --transport tcp".into(),
        ));
    }
    Ok(())
}

/// Refuses sweep settings that cannot run (shared with `tune`).
pub(crate) fn check_sweep(
    transport: Transport,
    placement: &Placement,
    a: &Options,
) -> Result<(), Failure> {
    check_placement(transport, placement)?;
    // Written so that NaN is refused too.
    if a.rse.is_nan() || a.rse <= 0.0 {
        return Err(Failure::Usage(format!(
            "--rse {} must be above 0 (e.g. 0.03)",
            a.rse
        )));
    }
    if a.calls == 0 || a.max_reps == 0 {
        return Err(Failure::Usage(
            "--calls and --max-reps must be at least 1".into(),
        ));
    }
    if a.min_reps > a.max_reps {
        return Err(Failure::Usage(format!(
            "--min-reps {} is above --max-reps {}",
            a.min_reps, a.max_reps
        )));
    }
    Ok(())
}

/// The methods asked for, with `truth` first when comparing against it.
pub(super) fn methods(text: &str, compare_truth: bool) -> Result<Vec<Method>, Failure> {
    let mut out: Vec<Method> = Vec::new();
    for item in args::split("--method", text)? {
        let m: Method = item
            .parse()
            .map_err(|e| Failure::Usage(format!("--method: {e}")))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if compare_truth {
        out.retain(|&m| m != Method::Truth);
        out.insert(0, Method::Truth);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse_and_truth_comes_first_when_compared() {
        let m = methods("ol-i,rounds,ol-i", true).ok().unwrap();
        assert_eq!(m, vec![Method::Truth, Method::OlI, Method::Rounds]);
        assert!(
            matches!(methods("ol-j", false), Err(Failure::Usage(e)) if e.contains("unknown method `ol-j`"))
        );
    }
}
