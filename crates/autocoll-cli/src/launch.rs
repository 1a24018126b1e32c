//! `autocoll launch`: start a program as the ranks of a `tcp` job.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use autocoll::binding::BindTo;
use autocoll::launch::{self, HostLine, Job, Stream};

use crate::failure::Failure;
use crate::learn::manifest::Host;
use crate::learn::{self, LearnArgs, Session};

/// Where and how the ranks of a job start; shared with `check`.
#[derive(clap::Args, Clone)]
pub struct Placement {
    /// Hosts in Open MPI's form, one per line: `host slots=N [addr=IP]`.
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// Command that runs a program on a host, `{host}` standing for it,
    /// e.g. `ip netns exec {host}` or `ssh {host}`. Needs --hostfile.
    #[arg(long)]
    pub agent: Option<String>,
    /// Ranks bound to one core, round robin: `auto`, on a machine with more
    /// ranks than cores (sharing one decides which tree is faster); `core`,
    /// all; `none`; or a list `0,1,1,0`, a machine's k-th rank on its k mod 4th.
    #[arg(long, default_value = "auto", value_name = "auto|core|none|LIST")]
    pub bind_to: BindTo,
}

/// Arguments of `autocoll launch`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the sor example (cargo build -p autocoll --example sor) as 4 processes here
  autocoll launch -n 4 -- target/debug/examples/sor
  # 8 ranks on the hosts of an emulated cluster (after `autocoll cluster up clusters/star8-100m.toml`)
  autocoll launch -n 8 --hostfile target/cluster/star8/hostfile.autocoll \\
      --agent target/cluster/star8/agent -- target/debug/examples/sor
  # learning across runs, on the cluster's real rates (docs/learning.md)
  autocoll launch --learn L --topology clusters/star8-100m.toml -n 8 \\
      --hostfile target/cluster/star8/hostfile.autocoll --agent target/cluster/star8/agent -- ./sor")]
pub struct Args {
    /// Ranks.
    #[arg(short = 'n')]
    ranks: usize,
    #[command(flatten)]
    placement: Placement,
    /// Seconds a rank waits for its peers (set-up and every receive).
    #[arg(long)]
    timeout: Option<f64>,
    #[command(flatten)]
    learn: LearnArgs,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// Builds the job of `ranks` copies of `program` placed as asked.
pub fn job(
    ranks: usize,
    placement: &Placement,
    timeout: Option<f64>,
    program: OsString,
    args: Vec<OsString>,
) -> Result<Job, Failure> {
    let hosts = match &placement.hostfile {
        Some(path) => Some(launch::read_hostfile(path).map_err(|e| Failure::Usage(e.to_string()))?),
        None => None,
    };
    let mut job = job_on(
        ranks,
        hosts,
        placement.agent.clone(),
        timeout,
        program,
        args,
    )?;
    job.bind_to = placement.bind_to.clone();
    Ok(job)
}

/// [`job`] on hosts already read (`None`: all ranks here).
fn job_on(
    ranks: usize,
    hosts: Option<Vec<HostLine>>,
    agent: Option<String>,
    timeout: Option<f64>,
    program: OsString,
    args: Vec<OsString>,
) -> Result<Job, Failure> {
    if agent.is_some() && hosts.is_none() {
        return Err(Failure::Usage("--agent needs --hostfile".into()));
    }
    let timeout = match timeout {
        Some(secs) => Some(
            Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    Failure::Usage(format!("--timeout {secs} is not a positive time"))
                })?,
        ),
        None => None,
    };
    Ok(Job {
        ranks,
        hosts,
        agent,
        program,
        args,
        timeout,
        bind_to: BindTo::Auto,
        env: Vec::new(),
    })
}

/// Receives each report line rank 0 prints (without its marker).
pub type Report = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// True in a process that the launcher started as a rank.
pub fn is_rank() -> bool {
    std::env::var_os("AUTOCOLL_RANK").is_some()
}

/// Joins the tcp job this process was started into as a rank, with
/// `timeout` for every wait on a peer.
pub fn join(timeout: Duration) -> Result<autocoll::Communicator, Failure> {
    let mut comm = autocoll::init()
        .context("joining the tcp job")
        .map_err(Failure::Run)?;
    comm.set_timeout(timeout);
    Ok(comm)
}

/// Where this tcp job's ranks run (`found`, every rank's machine and
/// core), to be said beside a crowding warning or when some are bound;
/// `None` in other jobs.
pub fn binding_note(found: &autocoll::measure::Machines) -> Option<String> {
    let (how, _) = autocoll::binding::current()?;
    let b = autocoll::binding::Binding {
        cores: found.bound.clone(),
    };
    match (b.any(), found.crowded()) {
        (true, _) => Some(match how {
            BindTo::List(_) => format!("ranks bound to the cores --bind-to {how} lists: {b}"),
            how => format!("ranks bound to cores round robin (--bind-to {how}): {b}"),
        }),
        (false, true) => Some(format!(
            "ranks left where the scheduler puts them (--bind-to {how}): which ranks share \
             a core decides which tree is faster, and each job may place them anew"
        )),
        (false, false) => None,
    }
}

/// Runs this very command again as the `p` ranks of a tcp job (each copy
/// sees [`is_rank`]). Every line rank 0 prints that starts with `marker`
/// goes, without the marker, to `report`; all other output is forwarded
/// with rank prefixes. Fails when a rank fails.
pub fn relaunch_self(
    p: usize,
    placement: &Placement,
    timeout_secs: u64,
    marker: &'static [u8],
    report: Report,
) -> Result<(), Failure> {
    relaunch_self_with(p, placement, timeout_secs, &[], marker, report)
}

/// [`relaunch_self`] with `extra` arguments after this command's own.
pub fn relaunch_self_with(
    p: usize,
    placement: &Placement,
    timeout_secs: u64,
    extra: &[OsString],
    marker: &'static [u8],
    report: Report,
) -> Result<(), Failure> {
    let (program, mut args) = this_command()?;
    args.extend_from_slice(extra);
    let job = job(p, placement, Some(timeout_secs as f64), program, args)?;
    run_relaunched(job, marker, report)
}

/// [`relaunch_self`] on hosts the caller made (`None`: all ranks here).
pub fn relaunch_self_on(
    p: usize,
    hosts: Option<Vec<HostLine>>,
    agent: Option<String>,
    timeout_secs: u64,
    marker: &'static [u8],
    report: Report,
) -> Result<(), Failure> {
    let (program, args) = this_command()?;
    let job = job_on(p, hosts, agent, Some(timeout_secs as f64), program, args)?;
    run_relaunched(job, marker, report)
}

/// This very program and its arguments.
fn this_command() -> Result<(OsString, Vec<OsString>), Failure> {
    let program = std::env::current_exe()
        .context("finding this program to launch it")
        .map_err(Failure::Run)?;
    Ok((program.into(), std::env::args_os().skip(1).collect()))
}

/// Runs a job of this program's copies, rank 0's report lines to `report`.
fn run_relaunched(job: Job, marker: &'static [u8], report: Report) -> Result<(), Failure> {
    let p = job.ranks;
    let forward = launch::prefixed();
    let sink: launch::Sink = Arc::new(move |rank, stream, line| match line.strip_prefix(marker) {
        Some(rest) if rank == 0 && stream == Stream::Stdout => report(rest),
        _ => forward(rank, stream, line),
    });
    let outcome = job.run(sink).map_err(|e| Failure::Run(anyhow!("{e}")))?;
    match outcome.failed {
        Some(rank) => Err(Failure::Run(anyhow!(
            "rank {rank} of the {p}-rank tcp job failed with status {}",
            outcome.code
        ))),
        None => Ok(()),
    }
}

/// Collects what rank 0 reports through [`relaunch_self`].
pub fn collector() -> (Arc<Mutex<Vec<Vec<u8>>>>, Report) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let keep = lines.clone();
    let report = Arc::new(move |line: &[u8]| {
        keep.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.to_vec())
    });
    (lines, report)
}

/// `autocoll launch`: the job's exit code becomes the command's.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    if a.ranks == 0 {
        return Err(Failure::Usage("-n: a job needs at least 1 rank".into()));
    }
    let mut command = a.command.into_iter();
    let program = command.next().expect("clap requires a program");
    let mut job = job(a.ranks, &a.placement, a.timeout, program, command.collect())?;
    let session = match a.learn.learn.is_some() {
        true => Some(learning(&a.learn, &mut job)?),
        false => None,
    };
    let outcome = job
        .run(launch::prefixed())
        .map_err(|e| Failure::Run(anyhow::anyhow!("{e}")))?;
    if let Some(rank) = outcome.failed {
        eprintln!(
            "autocoll launch: rank {rank} failed with status {}",
            outcome.code
        );
    }
    if let Some(session) = session {
        session.end(outcome.code)?;
    }
    Ok(ExitCode::from(outcome.code.clamp(0, 255) as u8))
}

/// Opens `--learn`'s directory for `job`, and puts what it learned into
/// the job: the state and pattern files, the balancer, the placement.
fn learning(a: &LearnArgs, job: &mut Job) -> Result<Session, Failure> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let program = on_path(Path::new(&job.program), &cwd).ok_or_else(|| {
        Failure::Usage(format!(
            "--learn: the program {} is not a file here or on PATH",
            Path::new(&job.program).display()
        ))
    })?;
    let hosts = job.hosts.as_ref().map(|lines| {
        lines
            .iter()
            .map(|h| Host {
                name: h.host.clone(),
                slots: h.slots,
                addr: h.addr.map(|a| a.to_string()),
                switch: h.switch.clone(),
            })
            .collect()
    });
    let learned = learn::decide::Job {
        engine: "tcp".into(),
        program: learn::program(&program)?,
        ranks: Some(job.ranks),
        hosts,
    };
    let session = Session::begin(a, learned, &cwd)?;
    for (name, value) in session.vars() {
        job.env
            .push((name.into(), value.to_string_lossy().into_owned()));
    }
    if std::env::var_os(autocoll::balance::ENV_BALANCE).is_none() {
        job.env
            .push((autocoll::balance::ENV_BALANCE.into(), "on".into()));
    }
    if let Some(file) = &session.placement {
        job.hosts = Some(launch::read_hostfile(file).map_err(|e| Failure::Run(anyhow!("{e}")))?);
    }
    Ok(session)
}

/// `program` as a file: from `cwd` when it has a slash, else on PATH.
fn on_path(program: &Path, cwd: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return Some(cwd.join(program)).filter(|p| p.is_file());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
