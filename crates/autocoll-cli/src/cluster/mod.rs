//! `autocoll cluster up|down|status SPEC`: an emulated cluster on this
//! machine. Every host is a network namespace with one veth link to a Linux
//! bridge (its switch); switches are joined by veth uplinks; a `tbf` qdisc
//! on both ends of every link sets its rate in each direction.
//!
//! Every name is derived from the spec, so `down` removes exactly what `up`
//! made, even after an `up` that stopped half way, and `up` skips what
//! already exists.

mod down;
mod mpich;
pub(crate) mod net;
mod owners;
mod script;
pub mod spec;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::failure::Failure;
use crate::out::say;
pub use down::down;
use net::Ip;
use script::{quoted, write_script};
use spec::{Host, Spec, Switch};

/// Arguments of `autocoll cluster`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the 8-host 100 Mbit/s star (as root), then what of it exists
  autocoll cluster up clusters/star8-100m.toml
  autocoll cluster status clusters/star8-100m.toml
  # take it down again
  autocoll cluster down clusters/star8-100m.toml")]
pub struct Args {
    /// What to do.
    #[arg(value_enum)]
    action: Action,
    /// The cluster's spec (TOML), e.g. `clusters/star8-100m.toml`.
    spec: PathBuf,
    /// Where the hostfile and the agent go (in `<dir>/<name>/`).
    #[arg(long, default_value = "target/cluster")]
    out: PathBuf,
    /// With `up`: the cluster belongs to process PID, and the first
    /// `cluster up` after that process has ended takes it down (tests pass
    /// their own id, so that a killed test leaves nothing up for long).
    #[arg(long, value_name = "PID")]
    owner: Option<u32>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Action {
    /// Create (or complete) the cluster.
    Up,
    /// Remove everything `up` makes.
    Down,
    /// Say what exists; exit 0 only when all of it does.
    Status,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let text = std::fs::read_to_string(&a.spec)
        .map_err(|e| Failure::Usage(format!("reading {}: {e}", a.spec.display())))?;
    let spec = Spec::parse(&text, &a.spec.display().to_string())
        .map_err(|e| Failure::Usage(format!("{e:#}")))?;
    let dir = std::path::absolute(a.out.join(&spec.name))
        .with_context(|| format!("resolving {}", a.out.display()))?;
    if matches!(a.action, Action::Status) {
        return Ok(status(&spec));
    }
    if !rustix::process::geteuid().is_root() {
        return Err(Failure::Usage(format!(
            "cluster {}: network namespaces, bridges and qdiscs need root; run it as root (sudo)",
            match a.action {
                Action::Up => "up",
                _ => "down",
            }
        )));
    }
    match a.action {
        Action::Up => {
            owners::clear_orphans();
            up(&spec, &dir)?;
            if let Some(owner) = a.owner {
                owners::record(&spec, &text, &dir, owner)?;
            }
        }
        _ => {
            down(&spec, &dir)?;
            owners::forget(&spec.name)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Brings the cluster of `spec` up (completing one that is partly up) and
/// writes its hostfiles and agent into `dir`.
pub fn up(spec: &Spec, dir: &Path) -> anyhow::Result<()> {
    let ip = Ip;
    for sw in &spec.switches {
        ip.bridge(&spec.bridge(&sw.name))?;
    }
    let top = spec.bridge(&spec.top().name);
    ip.run(&[
        "addr",
        "replace",
        &format!("{}/24", spec.root_addr()),
        "dev",
        &top,
    ])?;
    for sw in spec.switches.iter().filter(|s| s.parent.is_some()) {
        uplink(spec, sw)?;
    }
    for (i, host) in spec.hosts.iter().enumerate() {
        host_up(spec, i, host)?;
    }
    write_files(spec, dir)?;
    print_usage(spec, dir);
    Ok(())
}

fn uplink(spec: &Spec, sw: &Switch) -> anyhow::Result<()> {
    let ip = Ip;
    let (up, down) = spec.uplink_veths(sw);
    let parent = sw.parent.as_deref().expect("only switches with a parent");
    let rate = sw.uplink.expect("validated: a parent means an uplink");
    if !ip.link_exists(None, &up) {
        ip.run(&["link", "add", &up, "type", "veth", "peer", "name", &down])?;
    }
    ip.run(&["link", "set", &up, "master", &spec.bridge(parent), "up"])?;
    ip.run(&["link", "set", &down, "master", &spec.bridge(&sw.name), "up"])?;
    ip.shape(None, &up, rate)?;
    ip.shape(None, &down, rate)
}

fn host_up(spec: &Spec, i: usize, host: &Host) -> anyhow::Result<()> {
    let ip = Ip;
    let ns = spec.netns(host);
    let veth = spec.host_veth(host);
    ip.netns(&ns)?;
    if !ip.link_exists(None, &veth) {
        ip.run(&[
            "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ])?;
    }
    ip.run(&[
        "link",
        "set",
        &veth,
        "master",
        &spec.bridge(&host.switch),
        "up",
    ])?;
    ip.shape(None, &veth, host.rate)?;
    ip.run(&["-n", &ns, "link", "set", "lo", "up"])?;
    let addr = format!("{}/24", spec.host_addr(i));
    ip.run(&["-n", &ns, "addr", "replace", &addr, "dev", "eth0"])?;
    ip.run(&["-n", &ns, "link", "set", "eth0", "up"])?;
    ip.shape(Some(&ns), "eth0", host.rate)
}

/// Prints one line per part; all present is exit 0, else 1.
fn status(spec: &Spec) -> ExitCode {
    let ip = Ip;
    let mut missing = 0;
    let mut line = |what: String, present: bool| {
        say!("{} {what}", if present { "up  " } else { "DOWN" });
        missing += usize::from(!present);
    };
    for sw in &spec.switches {
        let br = spec.bridge(&sw.name);
        line(
            format!("switch {} (bridge {br})", sw.name),
            ip.link_exists(None, &br),
        );
        if let (Some(parent), Some(rate)) = (&sw.parent, sw.uplink) {
            let up = spec.uplink_veths(sw).0;
            line(
                format!("uplink {} -> {parent} at {rate} ({up})", sw.name),
                ip.link_exists(None, &up),
            );
        }
    }
    for (i, host) in spec.hosts.iter().enumerate() {
        let ns = spec.netns(host);
        let present = ip.netns_exists(&ns) && ip.link_exists(Some(&ns), "eth0");
        let addr = spec.host_addr(i);
        line(
            format!("host {} {addr} at {} (netns {ns})", host.name, host.rate),
            present,
        );
    }
    say!("cluster {}: {missing} part(s) missing", spec.name);
    if missing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The hostfiles and the launch agent. Open MPI's `hostfile` names hosts
/// only (its daemons reach them through the agent); `autocoll launch`
/// also needs the address each rank listens on, which a namespace's name
/// does not resolve to, so `hostfile.autocoll` adds `addr=`, and the
/// host's switch path (`switch=`) for the trees that follow the cluster.
fn write_files(spec: &Spec, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lines = |addr: bool| -> String {
        spec.hosts
            .iter()
            .enumerate()
            .map(|(i, h)| match addr {
                true => format!(
                    "{} slots={} addr={} switch={}\n",
                    h.name,
                    h.slots,
                    spec.host_addr(i),
                    spec.switch_path(&h.switch)
                ),
                false => format!("{} slots={}\n", h.name, h.slots),
            })
            .collect()
    };
    autocoll::files::write_atomic(&dir.join("hostfile"), lines(false).as_bytes())?;
    autocoll::files::write_atomic(&dir.join("hostfile.autocoll"), lines(true).as_bytes())?;
    write_script(&dir.join("agent"), &agent_script(spec, dir))?;
    write_script(&dir.join("mpirun"), &mpirun_script(spec, dir))?;
    mpich::write_files(spec, dir)
}

/// `DIR/mpirun`: Open MPI's mpirun with what every run across the emulated
/// hosts needs, so that the printed usage, `compare` and the tests cannot
/// drift apart (one of them once lacked `rtc ^hwloc` and crashed).
fn mpirun_script(spec: &Spec, dir: &Path) -> String {
    format!(
        r#"#!/bin/sh
# mpirun across the emulated cluster `{name}` (made by `autocoll cluster up`).
# Usage: mpirun -n N [mpirun options] PROGRAM ARGS...
# Daemons start through the agent; MPI and Open MPI's own traffic stay on
# the cluster's links ({net}); every daemon writes hwloc's shared topology
# under one hostname, and that component crashed daemons now and then.
# The hosts share this machine's cores: bound to "its" first core, every
# host's rank would stack on one, and seeing one process per "host" Open
# MPI would busy-poll without yielding, so a rank with data to forward
# waited for a scheduler slice (a 1K bcast took 15 ms instead of 0.5).
exec mpirun --allow-run-as-root --hostfile {hostfile} \
    --mca plm_rsh_agent {agent} \
    --mca btl tcp,self --mca btl_tcp_if_include {net} --mca oob_tcp_if_include {net} \
    --mca rtc ^hwloc --bind-to none --mca mpi_yield_when_idle 1 "$@"
"#,
        name = spec.name,
        net = spec.subnet,
        hostfile = quoted(dir.join("hostfile")),
        agent = quoted(dir.join("agent")),
    )
}

/// A launch agent called like ssh: `agent [-options] HOST COMMAND...`.
/// The command words are joined and run by `sh -c` inside the host's
/// namespace, as a remote shell would run them, with `AUTOCOLL_HOST` and
/// `AUTOCOLL_SWITCH` saying where: every namespace has the machine's one
/// hostname, and Open MPI's daemons pass their environment on to the
/// ranks they start, so MPI ranks learn their host and switch from it.
/// Each host also gets its own `TMPDIR` under `dir`, as a real host has
/// its own /tmp: Open MPI's daemons make their session directories there,
/// named after the hostname they share, and a daemon that ended removed
/// the directory another host's daemon was still making its own in
/// (`orte_init` failed now and then when runs followed each other).
fn agent_script(spec: &Spec, dir: &Path) -> String {
    let hosts: Vec<&str> = spec.hosts.iter().map(|h| h.name.as_str()).collect();
    // One case arm per switch: its hosts and its path.
    let arms: Vec<String> = spec
        .switches
        .iter()
        .filter_map(|sw| {
            let on: Vec<&str> = spec
                .hosts
                .iter()
                .filter(|h| h.switch == sw.name)
                .map(|h| h.name.as_str())
                .collect();
            (!on.is_empty()).then(|| {
                format!(
                    "    {}) switch={} ;;",
                    on.join("|"),
                    spec.switch_path(&sw.name)
                )
            })
        })
        .collect();
    format!(
        r#"#!/bin/sh
# Launch agent of the emulated cluster `{name}` (made by `autocoll cluster up`).
# Usage, like ssh: agent [-options] HOST COMMAND...
# For Open MPI's plm_rsh_agent and `autocoll launch --agent`.
while [ $# -gt 0 ]; do
    case "$1" in -*) shift ;; *) break ;; esac
done
host=$1
shift 2>/dev/null || {{ echo "agent: usage: agent HOST COMMAND..." >&2; exit 255; }}
case "$host" in
{arms}
    *) echo "agent: no host \`$host\` in cluster {name} (hosts: {list})" >&2; exit 255 ;;
esac
export AUTOCOLL_HOST="$host" AUTOCOLL_SWITCH="$switch"
export TMPDIR={tmp}/"$host"
mkdir -p "$TMPDIR" || exit 255
exec ip netns exec "{name}-$host" sh -c "$*"
"#,
        name = spec.name,
        tmp = quoted(dir.join("tmp")),
        arms = arms.join("\n"),
        list = hosts.join(" "),
    )
}

fn print_usage(spec: &Spec, dir: &Path) {
    let agent = dir.join("agent");
    let slots: u32 = spec.hosts.iter().map(|h| h.slots).sum();
    say!(
        "cluster {}: up, {} hosts, {slots} slots, subnet {}, this namespace is {} on bridge {}",
        spec.name,
        spec.hosts.len(),
        spec.subnet,
        spec.root_addr(),
        spec.bridge(&spec.top().name)
    );
    say!("{} -n {slots} PROGRAM", dir.join("mpirun").display());
    say!(
        "{} -n {slots} PROGRAM   (MPICH)",
        dir.join("mpiexec").display()
    );
    say!(
        "autocoll launch -n {slots} --hostfile {} --agent {} -- PROGRAM",
        dir.join("hostfile.autocoll").display(),
        agent.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PATH` with `bin` first, where a test puts its stand-in programs.
    fn path_with(bin: &Path) -> String {
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// Runs a script the test has just written. Another test thread that
    /// forks in the moment the script is open for writing hands its child
    /// the open file until the child's exec, and running the script then
    /// fails with "Text file busy": that is retried, for the
    /// script and for the scripts it runs in turn (sh exits 126).
    fn output(cmd: &mut std::process::Command) -> std::process::Output {
        for _ in 0..100 {
            match cmd.output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {}
                Ok(out)
                    if out.status.code() == Some(126)
                        && String::from_utf8_lossy(&out.stderr).contains("busy") => {}
                other => return other.unwrap(),
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{cmd:?} stayed busy for a second")
    }

    /// The lines a stand-in program printed, one argument each.
    fn printed(out: std::process::Output) -> Vec<String> {
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(str::to_string).collect()
    }

    /// The argument after `flag`.
    fn after(args: &[String], flag: &str) -> String {
        let i = args.iter().position(|a| a == flag).unwrap();
        args[i + 1].clone()
    }

    /// The wrapper hands mpirun the cluster's files as single words even
    /// when the directory's name has spaces and quotes, and passes the
    /// user's arguments on after its own.
    #[test]
    fn the_mpirun_wrapper_quotes_its_paths_and_passes_arguments_on() {
        let spec: Spec = toml::from_str(
            r#"
            name = "w"
            subnet = "10.9.8.0/24"
            switch = [ { name = "s" } ]
            host = [ { name = "a", switch = "s", rate = "100mbit" } ]
            "#,
        )
        .unwrap();
        let root = std::env::temp_dir().join(format!("autocoll-wrapper-{}", std::process::id()));
        let dir = root.join("it's a dir");
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // A stand-in mpirun that prints each argument on a line.
        write_script(&bin.join("mpirun"), "#!/bin/sh\nprintf '%s\\n' \"$@\"\n").unwrap();
        write_files(&spec, &dir).unwrap();
        let path = path_with(&bin);
        let out = output(
            std::process::Command::new(dir.join("mpirun"))
                .args(["-n", "2", "prog with space"])
                .env("PATH", path),
        );
        std::fs::remove_dir_all(&root).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let args = printed(out);
        let after = |flag: &str| after(&args, flag);
        assert_eq!(
            after("--hostfile"),
            dir.join("hostfile").display().to_string()
        );
        assert_eq!(
            after("plm_rsh_agent"),
            dir.join("agent").display().to_string()
        );
        assert_eq!(after("btl_tcp_if_include"), "10.9.8.0/24");
        assert_eq!(after("rtc"), "^hwloc");
        assert_eq!(args[args.len() - 3..], ["-n", "2", "prog with space"]);
    }

    /// What the MPICH wrapper of a one-host cluster, made in a directory
    /// named with a space and a quote, hands a stand-in mpiexec.mpich when
    /// called with `args`: its arguments, then LD_PRELOAD; and the
    /// wrapper's directory.
    fn through_mpiexec(subnet: &str, args: &[&str]) -> (Vec<String>, PathBuf) {
        let spec: Spec = toml::from_str(&format!(
            r#"
            name = "w"
            subnet = "{subnet}"
            switch = [ {{ name = "s" }} ]
            host = [ {{ name = "a", switch = "s", rate = "100mbit", slots = 2 }} ]
            "#
        ))
        .unwrap();
        let root =
            std::env::temp_dir().join(format!("autocoll-mpiexec-{}-{subnet}", std::process::id()));
        let dir = root.join("it's a dir");
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        write_script(
            &bin.join("mpiexec.mpich"),
            "#!/bin/sh\nprintf '%s\\n' \"$@\" \"$LD_PRELOAD\"\n",
        )
        .unwrap();
        write_files(&spec, &dir).unwrap();
        let out = output(
            std::process::Command::new(dir.join("mpiexec"))
                .args(args)
                .env("PATH", path_with(&bin))
                .env_remove("LD_PRELOAD"),
        );
        let hosts = std::fs::read_to_string(dir.join("hostfile.mpich")).unwrap();
        let built = dir.join("libucx-yield.so").is_file();
        std::fs::remove_dir_all(&root).unwrap();
        assert!(built, "the yield shim was not built");
        assert_eq!(hosts, "a:2\n");
        (printed(out), dir)
    }

    /// The MPICH wrapper runs Hydra's proxies through the agent, has them
    /// call back to this namespace's address, keeps UCX on the cluster's
    /// links, and preloads the yield shim it built (a C compiler is on
    /// every machine that builds this project).
    #[test]
    fn the_mpiexec_wrapper_runs_hydra_through_the_agent_with_the_yield_shim() {
        let (args, dir) = through_mpiexec("10.9.6.0/24", &["-n", "2", "prog"]);
        let after = |flag: &str| after(&args, flag);
        assert_eq!(
            after("-launcher-exec"),
            dir.join("agent").display().to_string()
        );
        assert_eq!(
            after("-f"),
            dir.join("hostfile.mpich").display().to_string()
        );
        assert_eq!(after("-localhost"), "10.9.6.254");
        assert_eq!(after("UCX_TLS"), "tcp,self");
        assert_eq!(args[args.len() - 4..args.len() - 1], ["-n", "2", "prog"]);
        let shim = dir.join("libucx-yield.so").display().to_string();
        assert_eq!(args[args.len() - 1], shim);
    }

    /// autocoll mpirun's preload and `--learn`'s machinefile given to the
    /// MPICH wrapper: the shim stays in front of the preload, and the
    /// hostfile given replaces the cluster's.
    #[test]
    fn the_mpiexec_wrapper_keeps_its_shim_before_a_preload_and_takes_a_hostfile() {
        let args = ["-genv", "LD_PRELOAD", "/l.so", "-f", "mine", "prog"];
        let (theirs, dir) = through_mpiexec("10.9.5.0/24", &args);
        let shim = dir.join("libucx-yield.so");
        let preload = format!("{}:/l.so", shim.display());
        assert_eq!(after(&theirs, "LD_PRELOAD"), preload);
        let hostfiles = theirs.iter().filter(|a| *a == "-f").count();
        assert_eq!(hostfiles, 1, "{theirs:?}");
        assert_eq!(after(&theirs, "-f"), "mine");
    }

    /// The agent tells the command it runs its host and its switch's path
    /// and gives it a TMPDIR of the host's own, and the autocoll hostfile
    /// names the switch too.
    #[test]
    fn the_agent_exports_the_host_and_its_switch_path() {
        let spec: Spec = toml::from_str(
            r#"
            name = "w"
            subnet = "10.9.7.0/24"
            switch = [ { name = "top" }, { name = "sub", parent = "top", uplink = "100mbit" } ]
            host = [ { name = "a", switch = "top", rate = "100mbit" },
                     { name = "b", switch = "sub", rate = "100mbit", slots = 2 } ]
            "#,
        )
        .unwrap();
        let root = std::env::temp_dir().join(format!("autocoll-agent-{}", std::process::id()));
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // A stand-in `ip` that runs the command after `netns exec NS`.
        write_script(&bin.join("ip"), "#!/bin/sh\nshift 3\nexec \"$@\"\n").unwrap();
        write_files(&spec, &root).unwrap();
        let path = path_with(&bin);
        let run = |host: &str| {
            let out = output(
                std::process::Command::new(root.join("agent"))
                    .args([
                        host,
                        "echo",
                        "$AUTOCOLL_HOST",
                        "$AUTOCOLL_SWITCH",
                        "$TMPDIR",
                    ])
                    .env("PATH", &path),
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let tmp = |host: &str| root.join("tmp").join(host).display().to_string();
        assert_eq!(run("a"), format!("a top {}", tmp("a")));
        assert_eq!(run("b"), format!("b top/sub {}", tmp("b")));
        assert!(std::path::Path::new(&tmp("b")).is_dir());
        assert_eq!(run("c"), "");
        let hostfile = std::fs::read_to_string(root.join("hostfile.autocoll")).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            hostfile,
            "a slots=1 addr=10.9.7.1 switch=top\nb slots=2 addr=10.9.7.2 switch=top/sub\n"
        );
    }
}
