//! `autocoll lib-path` and `autocoll mpirun`: the MPI interposition library
//! (crates/autocoll-mpi: `libautocoll_mpi.so` for Open MPI,
//! `libautocoll_mpi_mpich.so` for MPICH) found, checked, and preloaded
//! into an unmodified MPI program under its MPI's launcher (Open MPI's
//! mpirun, MPICH's mpiexec), the one the program links.
//!
//! The pure parts — the settings as `AUTOCOLL_*` values, mpirun's argument
//! vector, the refusals — are functions of their inputs, tested in
//! `tests.rs`; only [`run`] and [`run_path`] look at the environment, the
//! files and mpirun.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{anyhow, Context};
use autocoll::select::Table;
use autocoll::Implementation;

use crate::failure::Failure;
use crate::learn::{self, launcher, LearnArgs, Session};
use crate::out::say;

pub mod flavour;
pub use flavour::Mpi;

/// The bytes every build of the interposition library holds: the name of
/// the `MPI_Bcast` it exports, in its dynamic symbol table.
const MARK: &[u8] = b"\0MPI_Bcast\0";

/// `--lib` and `--mpi`, shared by `lib-path` and `mpirun`.
#[derive(clap::Args)]
pub struct LibArg {
    /// The interposition library [default: $AUTOCOLL_MPI_LIB (Open MPI's)
    /// or $AUTOCOLL_MPICH_LIB (MPICH's), else libautocoll_mpi.so or
    /// libautocoll_mpi_mpich.so beside this autocoll executable or in
    /// ../lib/autocoll/ from it].
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
    /// The MPI the program is built with [default: lib-path: openmpi;
    /// mpirun: the one the program links, else the launcher's].
    #[arg(long, value_enum)]
    mpi: Option<Mpi>,
}

/// Arguments of `autocoll lib-path`.
#[derive(clap::Args)]
#[command(after_help = "\
The library is looked for as --lib names it, else as $AUTOCOLL_MPI_LIB
(Open MPI's) or $AUTOCOLL_MPICH_LIB (MPICH's) does, else beside this
autocoll executable (target/release/ or target/debug/), else in
../lib/autocoll/ from it (where scripts/install puts it). Build Open MPI's
with `cargo build --release -p autocoll-mpi --features mpi`, MPICH's with
scripts/build-mpich-lib, or install them all with scripts/install.

Examples:
  # preload it by hand
  mpirun -x LD_PRELOAD=$(autocoll lib-path) -n 4 ./my_mpi_program
  # the same under MPICH
  mpiexec.mpich -genv LD_PRELOAD $(autocoll lib-path --mpi mpich) -n 4 ./my_mpich_program")]
pub struct PathArgs {
    #[command(flatten)]
    lib: LibArg,
}

/// Arguments of `autocoll mpirun`.
#[derive(clap::Args)]
#[command(after_help = "\
Runs `MPIRUN -x LD_PRELOAD=<lib> -x AUTOCOLL_...=<value> MPIRUN-ARGS...`
(and --allow-run-as-root as root) under Open MPI, `MPIEXEC -genv
LD_PRELOAD <lib> -genv AUTOCOLL_... <value> MPIEXEC-ARGS...` under MPICH:
the program's MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Scatter,
MPI_Gather, MPI_Allgather, MPI_Alltoall, MPI_Scan, MPI_Exscan,
MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Gatherv, MPI_Scatterv,
MPI_Allgatherv, MPI_Alltoallv and MPI_Barrier run autocoll's collectives. The MPI is the one the program links (the first
ELF file among MPIRUN-ARGS), else --mpi's, else the launcher's; the
launcher is --mpirun, else mpirun (Open MPI) or mpiexec.mpich (MPICH).
Exits with the launcher's status.
The library: --lib, else $AUTOCOLL_MPI_LIB or $AUTOCOLL_MPICH_LIB, else
beside this autocoll or in ../lib/autocoll/ from it (scripts/install
puts them there).
docs/mpi-library.md has the whole story.

Examples:
  # 4 ranks, the lottery choosing per call, a summary at MPI_Finalize
  autocoll mpirun --verbose -- -n 4 ./my_mpi_program
  # one implementation for bcast and allreduce, the others Open MPI's own
  autocoll mpirun --select fixed:bcast:chain:seg=8K,allreduce:ring -- -n 8 ./app in.dat
  # a tuning file from `autocoll tune`, with stage traces
  autocoll mpirun --select table:tuning.toml --trace traces -- -n 8 ./app
  # the lottery, starting each size on the tuning file's pick, remembering
  autocoll mpirun --select lottery:tuning.toml --state state.json -- -n 8 ./app
  # a program built with MPICH's mpicc: MPICH's library and mpiexec
  autocoll mpirun --verbose -- -n 4 ./my_mpich_program
  # every run starts from what the runs before learned: collectives,
  # broadcast order, placement (autocoll learn show DIR; docs/learning.md)
  autocoll mpirun --learn ~/.autocoll/app -- -n 64 --hostfile hosts ./app")]
pub struct Args {
    /// How each call's implementation is chosen (AUTOCOLL_SELECT): lottery,
    /// lottery:FILE (a tuning file's picks first, then adapting), native,
    /// table:FILE or fixed:IMPL[,IMPL...] [library's default: lottery].
    #[arg(long, value_name = "S")]
    select: Option<String>,
    /// The lottery's memory across runs (AUTOCOLL_STATE).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// The machine's model from `autocoll sim fit`, for the lottery's
    /// predictions of what a candidate could win (AUTOCOLL_MODEL).
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Write stage traces into this directory (AUTOCOLL_TRACE).
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// The broadcast balancer (AUTOCOLL_BALANCE): swap, sort, or
    /// key=value pairs (docs/balance.md).
    #[arg(long, value_name = "B")]
    balance: Option<String>,
    /// Record the program's communication pattern into this file
    /// (AUTOCOLL_PATTERN).
    #[arg(long, value_name = "FILE")]
    pattern: Option<PathBuf>,
    /// A summary of the calls at MPI_Finalize on rank 0 (AUTOCOLL_VERBOSE=1),
    /// and mpirun's command line before it starts.
    #[arg(long)]
    verbose: bool,
    #[command(flatten)]
    lib: LibArg,
    #[command(flatten)]
    learn: LearnArgs,
    /// The launcher [default: mpirun for Open MPI, mpiexec.mpich for
    /// MPICH].
    #[arg(long, value_name = "PATH")]
    mpirun: Option<PathBuf>,
    /// mpirun's arguments, the program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "MPIRUN-ARGS")]
    rest: Vec<OsString>,
}

/// `path` made absolute against `cwd` (ranks may start in another
/// directory), its `.` components dropped.
fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    cwd.join(path).components().collect()
}

/// `--select`'s value as the library will read it, or why the library
/// would refuse it: `lottery`, `native`, `table:FILE` or `lottery:FILE`
/// (the file read as a tuning file, its path made absolute) or
/// `fixed:IMPL[,IMPL...]` (as crates/autocoll-mpi/src/config.rs parses
/// them).
pub fn select(text: &str, cwd: &Path) -> Result<OsString, String> {
    let text = text.trim();
    for prefix in ["table:", "lottery:"] {
        let Some(file) = text.strip_prefix(prefix) else {
            continue;
        };
        let file = absolute(cwd, Path::new(file));
        Table::load(&file).map_err(|e| format!("{e}"))?;
        let mut value = OsString::from(prefix);
        value.push(file);
        return Ok(value);
    }
    if let Some(list) = text.strip_prefix("fixed:") {
        let mut ops = Vec::new();
        for id in list.split(',').map(str::trim) {
            let imp: Implementation = id.parse().map_err(|e| format!("{e}"))?;
            if ops.contains(&imp.op) {
                return Err(format!("two implementations for {}", imp.op));
            }
            ops.push(imp.op);
        }
        return Ok(text.into());
    }
    match text {
        "lottery" | "native" => Ok(text.into()),
        _ => {
            Err("expected lottery, lottery:FILE, native, table:FILE or fixed:IMPL[,IMPL...]".into())
        }
    }
}

/// The `AUTOCOLL_*` variables the options set, in a fixed order, checked,
/// with paths absolute against `cwd`.
fn settings(a: &Args, cwd: &Path) -> Result<Vec<(&'static str, OsString)>, Failure> {
    let mut vars = Vec::new();
    if let Some(text) = &a.select {
        let value =
            select(text, cwd).map_err(|why| Failure::Usage(format!("--select {text}: {why}")))?;
        vars.push(("AUTOCOLL_SELECT", value));
    }
    if let Some(path) = &a.state {
        vars.push(("AUTOCOLL_STATE", absolute(cwd, path).into()));
    }
    if let Some(path) = &a.model {
        let file = absolute(cwd, path);
        autocoll::comm::sim::Model::load(&file)
            .map_err(|why| Failure::Usage(format!("--model {}: {why}", path.display())))?;
        vars.push(("AUTOCOLL_MODEL", file.into()));
    }
    if let Some(path) = &a.trace {
        vars.push(("AUTOCOLL_TRACE", absolute(cwd, path).into()));
    }
    if let Some(text) = &a.balance {
        autocoll::balance::Params::parse(text)
            .map_err(|why| Failure::Usage(format!("--balance {text}: {why}")))?;
        vars.push(("AUTOCOLL_BALANCE", text.trim().into()));
    }
    if let Some(path) = &a.pattern {
        vars.push(("AUTOCOLL_PATTERN", absolute(cwd, path).into()));
    }
    if a.learn.learn.is_some() {
        if a.state.is_some() || a.pattern.is_some() {
            return Err(Failure::Usage(
                "--learn keeps the state and the pattern in its directory: leave out --state and --pattern".into(),
            ));
        }
        if a.balance.is_none() {
            vars.push(("AUTOCOLL_BALANCE", "on".into()));
        }
    }
    if a.verbose {
        vars.push(("AUTOCOLL_VERBOSE", "1".into()));
    }
    Ok(vars)
}

/// The launcher's arguments (without the launcher itself): under Open
/// MPI `--allow-run-as-root` when `root` and `rest` has none; then
/// `LD_PRELOAD=<lib>` (before the `preload` already set, so that it is
/// kept) and each variable, as `-x NAME=value` (Open MPI) or `-genv NAME
/// value` (MPICH); then `rest` unchanged.
pub fn command_line(
    mpi: Mpi,
    lib: &Path,
    vars: &[(&str, OsString)],
    root: bool,
    preload: Option<&OsStr>,
    rest: &[OsString],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let allow = "--allow-run-as-root";
    if mpi == Mpi::Openmpi && root && !rest.iter().any(|a| a == allow) {
        out.push(allow.into());
    }
    let mut value = OsString::from(lib);
    if let Some(old) = preload.filter(|p| !p.is_empty()) {
        value.push(":");
        value.push(old);
    }
    for (name, value) in
        std::iter::once(("LD_PRELOAD", &value)).chain(vars.iter().map(|(n, v)| (*n, v)))
    {
        out.extend(mpi.set(name, value));
    }
    out.extend(rest.iter().cloned());
    out
}

/// Refuses a launcher whose `--version` output is not `mpi`'s.
pub fn launcher_of(mpi: Mpi, launcher: &Path, version: &str) -> Result<(), String> {
    let theirs = Mpi::of_launcher(version);
    if theirs == Some(mpi) {
        return Ok(());
    }
    let said = version.lines().map(str::trim).find(|l| !l.is_empty());
    let said = said.map_or("nothing".to_string(), |l| format!("`{l}`"));
    let whose = theirs.map_or(String::new(), |t| format!(" (that is {}'s)", t.name()));
    Err(format!(
        "{} is not {}'s launcher: its --version says {said}{whose}. The \
         interposition library is built for one MPI (handles are pointers \
         in Open MPI, integers in MPICH), and the program's MPI decides \
         which: name {}'s launcher with --mpirun PATH, or the program's MPI \
         with --mpi",
        launcher.display(),
        mpi.name(),
        mpi.name(),
    ))
}

/// Refuses a file that is not the interposition library for `mpi`.
pub fn interposition(mpi: Mpi, path: &Path, bytes: &[u8]) -> Result<(), String> {
    if !bytes.windows(MARK.len()).any(|w| w == MARK) {
        return Err(format!(
            "{} is not autocoll's MPI interposition library: it defines no \
             MPI_Bcast (is it another file, or built without the `mpi` feature?); \
             build it with `{}`",
            path.display(),
            mpi.build()
        ));
    }
    match Mpi::of_binary(bytes) {
        Some(built) if built != mpi => Err(format!(
            "{} is the interposition library for {}, and the program's MPI \
             is {}: build {}'s with `{}`",
            path.display(),
            built.name(),
            mpi.name(),
            mpi.name(),
            mpi.build()
        )),
        _ => Ok(()),
    }
}

/// Where `mpi`'s library is: `flag` (`--lib`), else `env` (its
/// variable's value), else its file name in one of `beside` (the
/// directories of the running executable); absolute against `cwd`. Only
/// existence is checked here.
pub fn locate(
    mpi: Mpi,
    flag: Option<&Path>,
    env: Option<&OsStr>,
    beside: &[PathBuf],
    cwd: &Path,
) -> Result<PathBuf, String> {
    let named = match (flag, env.filter(|e| !e.is_empty())) {
        (Some(path), _) => Some(("--lib", path)),
        (None, Some(env)) => Some((mpi.lib_var(), Path::new(env))),
        (None, None) => None,
    };
    let build = mpi.build();
    let name = mpi.lib_name();
    if let Some((what, path)) = named {
        let path = absolute(cwd, path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{what} {}: no such file (build the library with `{build}`)",
                path.display()
            ))
        };
    }
    if let Some(found) = beside.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
        return Ok(absolute(cwd, &found));
    }
    let dirs: Vec<String> = beside.iter().map(|d| d.display().to_string()).collect();
    let var = mpi.lib_var();
    Err(format!(
        "{name} ({}'s) not found: not beside this autocoll (in {}), and neither \
         --lib nor {var} names it. Install it with \
         `scripts/install` from the source tree, or build it with `{build}` \
         (it lands in target/release/, beside target/release/autocoll), or \
         name it with --lib PATH or {var}",
        mpi.name(),
        if dirs.is_empty() {
            "no directory known".to_string()
        } else {
            dirs.join(", ")
        }
    ))
}

/// Where an executable in `bin` looks for the library: beside itself (a
/// build tree's `target/release/`), then where `scripts/install` puts it
/// (`<prefix>/lib/autocoll/` for `<prefix>/bin/autocoll`).
pub fn search_dirs(bin: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![bin.to_path_buf()];
    if let Some(prefix) = bin.parent() {
        dirs.push(prefix.join("lib").join("autocoll"));
    }
    dirs
}

/// `mpi`'s library as this invocation names it, found and checked.
fn library(arg: &LibArg, mpi: Mpi) -> Result<PathBuf, Failure> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut beside = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let real = exe.canonicalize().ok();
        for dir in [Some(exe), real].into_iter().flatten() {
            if let Some(dir) = dir.parent().map(Path::to_path_buf) {
                for dir in search_dirs(&dir) {
                    if !beside.contains(&dir) {
                        beside.push(dir);
                    }
                }
            }
        }
    }
    let env = std::env::var_os(mpi.lib_var());
    let path = locate(mpi, arg.lib.as_deref(), env.as_deref(), &beside, &cwd)
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    interposition(mpi, &path, &bytes).map_err(|e| Failure::Run(anyhow!(e)))?;
    Ok(path)
}

/// `autocoll lib-path`.
pub fn run_path(a: PathArgs) -> Result<ExitCode, Failure> {
    let path = library(&a.lib, a.lib.mpi.unwrap_or(Mpi::Openmpi))?;
    say!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// An argument as a shell would need it, for `--verbose`.
fn quoted(arg: &OsStr) -> String {
    let text = arg.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// A program among the launcher's arguments: its place among them, its
/// file and the MPI it links.
pub type Found = (usize, PathBuf, Mpi);

/// The program among the launcher's arguments, its place among them and
/// the MPI it links: the first argument naming a file (from `cwd`, or on
/// `path` when it has no slash) whose dynamic section names Open MPI's or
/// MPICH's library.
pub fn program_mpi(rest: &[OsString], cwd: &Path, path: Option<&OsStr>) -> Option<Found> {
    let find = |arg: &OsStr| -> Option<PathBuf> {
        let here = absolute(cwd, Path::new(arg));
        if arg.to_string_lossy().contains('/') || here.is_file() {
            return here.is_file().then_some(here);
        }
        std::env::split_paths(path?)
            .map(|dir| dir.join(arg))
            .find(|p| p.is_file())
    };
    rest.iter()
        .enumerate()
        .filter(|(_, a)| !a.to_string_lossy().starts_with('-'))
        .find_map(|(i, arg)| {
            let file = find(arg)?;
            // Programs, not core files or data: a size cap keeps it cheap.
            let small = std::fs::metadata(&file).ok()?.len() < 1 << 30;
            let bytes = small.then(|| std::fs::read(&file).ok()).flatten()?;
            Mpi::of_binary(&bytes).map(|mpi| (i, file, mpi))
        })
}

/// What `launcher --version` prints.
fn version(launcher: &Path) -> Result<String, Failure> {
    let out = Command::new(launcher)
        .arg("--version")
        .output()
        .with_context(|| {
            format!(
                "running `{} --version` (install Open MPI or MPICH, Debian: openmpi-bin, mpich; or name the launcher with --mpirun PATH)",
                launcher.display()
            )
        })?;
    Ok(format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// The run's MPI: `--mpi`, else the program's, else the launcher's (Open
/// MPI when it says neither); a `--mpi` the program contradicts is
/// refused. `found` is the program among the launcher's arguments.
fn which_mpi(a: &Args, found: Option<&Found>) -> Result<Mpi, Failure> {
    match (a.lib.mpi, found.cloned()) {
        (Some(said), Some((_, program, links))) if said != links => Err(Failure::Usage(format!(
            "--mpi {}: {} links {}",
            said.flag(),
            program.display(),
            links.name()
        ))),
        (Some(said), _) => Ok(said),
        (None, Some((_, _, links))) => Ok(links),
        (None, None) => {
            let launcher = a.mpirun.clone().unwrap_or_else(|| "mpirun".into());
            Ok(Mpi::of_launcher(&version(&launcher)?).unwrap_or(Mpi::Openmpi))
        }
    }
}

/// `autocoll mpirun`: replaces this process with the launcher, whose exit
/// status becomes the command's; under `--learn`, runs it and learns from
/// the run at its end.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut vars = settings(&a, &cwd)?;
    // Read once: the program's file may be large.
    let found = program_mpi(&a.rest, &cwd, std::env::var_os("PATH").as_deref());
    let mpi = which_mpi(&a, found.as_ref())?;
    let lib = library(&a.lib, mpi)?;
    let launcher = a.mpirun.clone().unwrap_or_else(|| mpi.launcher().into());
    launcher_of(mpi, &launcher, &version(&launcher)?).map_err(|e| Failure::Run(anyhow!(e)))?;
    let root = rustix::process::geteuid().is_root();
    let preload = std::env::var_os("LD_PRELOAD");
    let session = match a.learn.learn.is_some() {
        true => Some(begin_learning(&a, mpi, &cwd, found.as_ref())?),
        false => None,
    };
    let rest = match &session {
        Some(s) => {
            vars.extend(s.vars());
            placed(&a.rest, mpi, found.as_ref(), s.placement.as_deref())
        }
        None => a.rest.clone(),
    };
    let args = command_line(mpi, &lib, &vars, root, preload.as_deref(), &rest);
    if a.verbose {
        let line: Vec<String> = std::iter::once(launcher.as_os_str())
            .chain(args.iter().map(OsString::as_os_str))
            .map(quoted)
            .collect();
        eprintln!("autocoll mpirun: {}", line.join(" "));
    }
    let mut command = Command::new(&launcher);
    command.args(&args);
    let Some(session) = session else {
        let e = command.exec();
        return Err(Failure::Run(
            anyhow!(e).context(format!("starting {}", launcher.display())),
        ));
    };
    let status = command
        .status()
        .with_context(|| format!("starting {}", launcher.display()))?;
    let code = exit_code(status);
    session.end(code)?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// A child's exit status as a shell gives it (128 + a signal's number).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Opens `--learn`'s directory for this job.
fn begin_learning(
    a: &Args,
    mpi: Mpi,
    cwd: &Path,
    found: Option<&Found>,
) -> Result<Session, Failure> {
    let (at, program, _) = found.ok_or_else(|| {
        Failure::Usage(
            "--learn: no program linking an MPI library among the launcher's arguments".into(),
        )
    })?;
    let before = &a.rest[..*at];
    let job = learn::decide::Job {
        engine: mpi.flag().into(),
        program: learn::program(program)?,
        ranks: launcher::ranks(before),
        hosts: launcher::hosts(before, cwd).map_err(|e| Failure::Usage(format!("--learn: {e}")))?,
    };
    Session::begin(&a.learn, job, cwd)
}

/// The launcher's arguments with the learned placement `file` in force,
/// unless they place the ranks themselves.
fn placed(
    rest: &[OsString],
    mpi: Mpi,
    found: Option<&Found>,
    file: Option<&Path>,
) -> Vec<OsString> {
    let at = found.map_or(rest.len(), |(at, _, _)| *at);
    let (before, after) = rest.split_at(at);
    let Some(file) = file.filter(|_| !launcher::places_itself(before)) else {
        return rest.to_vec();
    };
    let mut out = launcher::placed(before, mpi == Mpi::Mpich, file);
    out.extend_from_slice(after);
    out
}

#[cfg(test)]
mod tests;
