//! `autocoll lib-path` and `autocoll mpirun`: the MPI interposition library
//! (crates/autocoll-mpi, `libautocoll_mpi.so`) found, checked, and
//! preloaded into an unmodified MPI program under Open MPI's mpirun.
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
use crate::out::say;

/// The library's file name.
pub const LIB_NAME: &str = "libautocoll_mpi.so";

/// How to build the library, for the messages that need it.
pub const BUILD: &str = "cargo build --release -p autocoll-mpi --features mpi";

/// The bytes every build of the interposition library holds: the name of
/// the `MPI_Bcast` it exports, in its dynamic symbol table.
const MARK: &[u8] = b"\0MPI_Bcast\0";

/// `--lib`, shared by `lib-path` and `mpirun`.
#[derive(clap::Args)]
pub struct LibArg {
    /// The interposition library [default: $AUTOCOLL_MPI_LIB, else
    /// libautocoll_mpi.so beside this autocoll executable or in
    /// ../lib/autocoll/ from it].
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
}

/// Arguments of `autocoll lib-path`.
#[derive(clap::Args)]
#[command(after_help = format!("\
The library is looked for as --lib names it, else as $AUTOCOLL_MPI_LIB does,
else beside this autocoll executable (target/release/ or target/debug/),
else in ../lib/autocoll/ from it (where scripts/install puts it). Build it
with `{BUILD}`, or install both with scripts/install.

Examples:
  # preload it by hand
  mpirun -x LD_PRELOAD=$(autocoll lib-path) -n 4 ./my_mpi_program"))]
pub struct PathArgs {
    #[command(flatten)]
    lib: LibArg,
}

/// Arguments of `autocoll mpirun`.
#[derive(clap::Args)]
#[command(after_help = format!("\
Runs `MPIRUN -x LD_PRELOAD=<lib> -x AUTOCOLL_...=<value> MPIRUN-ARGS...`
(and --allow-run-as-root as root): the program's MPI_Bcast, MPI_Reduce,
MPI_Allreduce, MPI_Scatter, MPI_Gather, MPI_Allgather and MPI_Barrier run
autocoll's collectives. Open MPI only; exits with mpirun's status.
The library: --lib, else $AUTOCOLL_MPI_LIB, else beside this autocoll or
in ../lib/autocoll/ from it (scripts/install puts it there; or build it
with `{BUILD}`).
docs/mpi-library.md has the whole story.

Examples:
  # 4 ranks, the lottery choosing per call, a summary at MPI_Finalize
  autocoll mpirun --verbose -- -n 4 ./my_mpi_program
  # one implementation for bcast and allreduce, the others Open MPI's own
  autocoll mpirun --select fixed:bcast:chain:seg=8K,allreduce:ring -- -n 8 ./app in.dat
  # a tuning file from `autocoll tune`, with stage traces
  autocoll mpirun --select table:tuning.toml --trace traces -- -n 8 ./app
  # the lottery, starting each size on the tuning file's pick, remembering
  autocoll mpirun --select lottery:tuning.toml --state state.json -- -n 8 ./app"))]
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
    /// Open MPI's mpirun.
    #[arg(long, value_name = "PATH", default_value = "mpirun")]
    mpirun: PathBuf,
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
    if a.verbose {
        vars.push(("AUTOCOLL_VERBOSE", "1".into()));
    }
    Ok(vars)
}

/// mpirun's arguments (without mpirun itself): `--allow-run-as-root` when
/// `root` and `rest` has none, `-x LD_PRELOAD=<lib>` (before the
/// `preload` already set, so that it is kept), `-x NAME=value` per
/// variable, then `rest` unchanged.
pub fn command_line(
    lib: &Path,
    vars: &[(&str, OsString)],
    root: bool,
    preload: Option<&OsStr>,
    rest: &[OsString],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    if root && !rest.iter().any(|a| a == "--allow-run-as-root") {
        out.push("--allow-run-as-root".into());
    }
    let mut value = OsString::from(lib);
    if let Some(old) = preload.filter(|p| !p.is_empty()) {
        value.push(":");
        value.push(old);
    }
    for (name, value) in
        std::iter::once(("LD_PRELOAD", &value)).chain(vars.iter().map(|(n, v)| (*n, v)))
    {
        let mut pair = OsString::from(name);
        pair.push("=");
        pair.push(value);
        out.push("-x".into());
        out.push(pair);
    }
    out.extend(rest.iter().cloned());
    out
}

/// Refuses an mpirun whose `--version` output is not Open MPI's.
pub fn open_mpi(mpirun: &Path, version: &str) -> Result<(), String> {
    if version.contains("Open MPI") {
        return Ok(());
    }
    let said = version.lines().map(str::trim).find(|l| !l.is_empty());
    let said = said.map_or("nothing".to_string(), |l| format!("`{l}`"));
    let mpich = if version.contains("HYDRA") || version.contains("MPICH") {
        " (that is MPICH's)"
    } else {
        ""
    };
    Err(format!(
        "{} is not Open MPI's mpirun: its --version says {said}{mpich}. The \
         interposition library is built against Open MPI, whose handles \
         (MPI_Comm, MPI_Datatype, MPI_Op) are pointers; in MPICH and its \
         derivatives they are integers, so a program built with MPICH cannot \
         be served by it. Run an Open MPI program with Open MPI's mpirun \
         (--mpirun PATH)",
        mpirun.display()
    ))
}

/// Refuses a file that is not the interposition library.
pub fn interposition(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if bytes.windows(MARK.len()).any(|w| w == MARK) {
        return Ok(());
    }
    Err(format!(
        "{} is not autocoll's MPI interposition library: it defines no \
         MPI_Bcast (is it another file, or built without the `mpi` feature?); \
         build it with `{BUILD}`",
        path.display()
    ))
}

/// Where the library is: `flag` (`--lib`), else `env`
/// (`AUTOCOLL_MPI_LIB`), else [`LIB_NAME`] in one of `beside` (the
/// directories of the running executable); absolute against `cwd`. Only
/// existence is checked here.
pub fn locate(
    flag: Option<&Path>,
    env: Option<&OsStr>,
    beside: &[PathBuf],
    cwd: &Path,
) -> Result<PathBuf, String> {
    let named = match (flag, env.filter(|e| !e.is_empty())) {
        (Some(path), _) => Some(("--lib", path)),
        (None, Some(env)) => Some(("AUTOCOLL_MPI_LIB", Path::new(env))),
        (None, None) => None,
    };
    if let Some((what, path)) = named {
        let path = absolute(cwd, path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{what} {}: no such file (build the library with `{BUILD}`)",
                path.display()
            ))
        };
    }
    if let Some(found) = beside
        .iter()
        .map(|d| d.join(LIB_NAME))
        .find(|p| p.is_file())
    {
        return Ok(absolute(cwd, &found));
    }
    let dirs: Vec<String> = beside.iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "{LIB_NAME} not found: not beside this autocoll (in {}), and neither \
         --lib nor AUTOCOLL_MPI_LIB names it. Install both with \
         `scripts/install` from the source tree, or build it with `{BUILD}` \
         (it lands in target/release/, beside target/release/autocoll), or \
         name it with --lib PATH or AUTOCOLL_MPI_LIB",
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

/// The library this invocation means, found and checked.
fn library(arg: &LibArg) -> Result<PathBuf, Failure> {
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
    let env = std::env::var_os("AUTOCOLL_MPI_LIB");
    let path = locate(arg.lib.as_deref(), env.as_deref(), &beside, &cwd)
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    interposition(&path, &bytes).map_err(|e| Failure::Run(anyhow!(e)))?;
    Ok(path)
}

/// `autocoll lib-path`.
pub fn run_path(a: PathArgs) -> Result<ExitCode, Failure> {
    let path = library(&a.lib)?;
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

/// `autocoll mpirun`: replaces this process with mpirun, whose exit status
/// becomes the command's.
pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let vars = settings(&a, &cwd)?;
    let lib = library(&a.lib)?;
    let version = Command::new(&a.mpirun)
        .arg("--version")
        .output()
        .with_context(|| {
            format!(
                "running `{} --version` (install Open MPI, Debian: openmpi-bin, or name its mpirun with --mpirun PATH)",
                a.mpirun.display()
            )
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&version.stdout),
        String::from_utf8_lossy(&version.stderr)
    );
    open_mpi(&a.mpirun, &text).map_err(|e| Failure::Run(anyhow!(e)))?;
    let root = rustix::process::geteuid().is_root();
    let preload = std::env::var_os("LD_PRELOAD");
    let args = command_line(&lib, &vars, root, preload.as_deref(), &a.rest);
    if a.verbose {
        let line: Vec<String> = std::iter::once(a.mpirun.as_os_str())
            .chain(args.iter().map(OsString::as_os_str))
            .map(quoted)
            .collect();
        eprintln!("autocoll mpirun: {}", line.join(" "));
    }
    let e = Command::new(&a.mpirun).args(&args).exec();
    Err(Failure::Run(
        anyhow!(e).context(format!("starting {}", a.mpirun.display())),
    ))
}

#[cfg(test)]
mod tests;
