//! The arguments of `autocoll tune`.

use std::path::PathBuf;

use autocoll::measure::race::Rule as RaceRule;
use autocoll::measure::Method;

use crate::args;
use crate::bench::{self, Transport};
use crate::failure::Failure;
use crate::launch::Placement;

/// Arguments of `autocoll tune`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the faster of two broadcasts per rank count and size, as a tuning file
  autocoll tune --op bcast --impl bcast:binomial,bcast:chain:seg=8K -n 2..4 --bytes 1K..64K --step 8 \\
      --out tuning.toml
  # the same after a Ctrl-C, measuring only what is missing; Open MPI's rules file too
  autocoll tune --op bcast --impl bcast:binomial,bcast:chain:seg=8K -n 2..4 --bytes 1K..64K --step 8 \\
      --out tuning.toml --resume --export-ompi ompi.rules")]
pub struct Args {
    /// Collectives to tune (comma list, or `all`).
    #[arg(long)]
    pub(super) op: String,
    /// Implementation ids (comma list) to choose among, or `all` for every
    /// family with segment sizes from 1K up to twice the message size (the
    /// default, without --tree-file).
    #[arg(long = "impl")]
    pub(super) imp: Option<String>,
    #[command(flatten)]
    pub(super) tree: args::TreeFileArg,
    /// Ranks: `4`, a list `2,4,8` or a range `2..16` (default 4, or the
    /// tree file's ranks).
    #[arg(short = 'n')]
    pub(super) ranks: Option<String>,
    /// Bytes per rank: a list (K, M suffixes) or a range `1K..1M` stepping
    /// by ×--step.
    #[arg(long, default_value = "1K..64K")]
    pub(super) bytes: String,
    /// Factor between the sizes of a --bytes range.
    #[arg(long, default_value_t = 4)]
    pub(super) step: usize,
    /// Root of rooted collectives (default 0, or the tree file's root).
    #[arg(long)]
    pub(super) root: Option<usize>,
    /// Method that ranks the implementations: `auto` (truth with a shared
    /// clock, else ol-i; the machines' fallback where it keeps too few
    /// calls), `truth`, `ol-i` or `barrier`.
    #[arg(long, default_value = "auto")]
    pub(super) method: String,
    #[command(flatten)]
    pub(super) stats: crate::args::Repeat,
    /// Where the ranks run.
    #[arg(long, value_enum, default_value_t = Transport::Local)]
    pub(super) transport: Transport,
    #[command(flatten)]
    pub(super) model: bench::ModelArg,
    #[command(flatten)]
    pub(super) placement: Placement,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, default_value_t = 30)]
    pub(super) timeout: u64,
    /// The tuning file to write (loadable by `Table`).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Also write an Open MPI dynamic rules file.
    #[arg(long)]
    pub(super) export_ompi: Option<PathBuf>,
    /// Open MPI rules file format: 1 (classic, Open MPI 4.1) or 2 (≥ 5.0.7).
    #[arg(long, default_value_t = 1)]
    pub(super) ompi_format: u32,
    /// Also write an MPICH collective-selection JSON file.
    #[arg(long)]
    pub(super) export_mpich: Option<PathBuf>,
    /// Draw the paper's Figures 3–6 (per op and size) as SVGs into this directory.
    #[arg(long)]
    pub(super) plot: Option<PathBuf>,
    /// Continue from the partial results of an interrupted sweep.
    #[arg(long)]
    pub(super) resume: bool,
    /// Measure every candidate in every round, --max-reps rounds, instead
    /// of racing them (still interleaved, in a fresh random order each
    /// round).
    #[arg(long)]
    pub(super) exhaustive: bool,
    #[command(flatten)]
    pub(super) racing: crate::args::Racing,
    /// Judge this sweep's winners by another sweep's progress file (an
    /// --exhaustive one's `<out>.partial.json`; given several times, one
    /// duel's jobs, pooled). See "Racing against measuring everything".
    #[arg(long)]
    pub(super) against: Vec<PathBuf>,
    /// With --against: write the points whose winners differ to this file,
    /// a tab-separated line each (collective, ranks, bytes, both winners,
    /// the method to duel them with), for `scripts/race-evidence --duel`.
    #[arg(long, requires = "against")]
    pub(super) differing: Option<PathBuf>,
    /// With --transport tcp: measure all points of a rank count in one
    /// job. By default each point gets a job of its own, so that what the
    /// points before it did (heap, sockets) does not rank its candidates.
    #[arg(long)]
    pub(super) one_job: bool,
    /// The one point a rank of a job per point measures (`OP:BYTES`),
    /// added by the launching process.
    #[arg(long, hide = true)]
    pub(super) point: Option<String>,
    /// With --transport tcp and a job per point: settle a final (or a race
    /// decided late) in up to this many jobs of its own, the median job
    /// deciding; 0: the race's own final decides (glossary: "settle").
    #[arg(long, default_value_t = 9)]
    pub(super) final_jobs: usize,
    /// With --transport tcp and a job per point: a point's race runs in
    /// jobs of this many rounds, each going on where the last stopped
    /// (0: the whole race in one job).
    #[arg(long, default_value_t = 5)]
    pub(super) rounds_per_job: usize,
    /// The two finalists a rank of a settling job measures (`A,B`), added
    /// by the launching process with --point and --final-method.
    #[arg(long, hide = true)]
    pub(super) final_of: Option<String>,
    /// The method that timed the finalists in their race.
    #[arg(long, hide = true)]
    pub(super) final_method: Option<Method>,
}

/// The rule the flags give: a race, or under `--exhaustive` every
/// candidate every round.
pub(super) fn rule_of(a: &Args) -> Result<RaceRule, Failure> {
    args::race_rule(&a.racing, &a.stats, a.exhaustive)
}
