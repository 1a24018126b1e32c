//! MPICH across the emulated cluster: Hydra's hostfile and a `mpiexec`
//! wrapper beside Open MPI's `mpirun` one, so that `compare` and users run
//! MPICH's ranks on the cluster's links as they run Open MPI's.

use std::path::Path;
use std::process::Command;

use anyhow::Context;

use super::script::{quoted, write_script};
use super::spec::Spec;

/// The shim that makes MPICH's idle ranks yield their core.
const YIELD_SOURCE: &str = include_str!("ucx_yield.c");
/// Its library's name in the cluster's directory.
const YIELD_LIB: &str = "libucx-yield.so";
/// Its source there.
const YIELD_C: &str = "ucx-yield.c";

/// The files `write_files` makes, which `down` removes.
pub(super) const FILES: [&str; 4] = ["hostfile.mpich", "mpiexec", YIELD_LIB, YIELD_C];

/// Writes `hostfile.mpich`, the yield shim (when a C compiler is found)
/// and the `mpiexec` wrapper into `dir`.
pub(super) fn write_files(spec: &Spec, dir: &Path) -> anyhow::Result<()> {
    let hosts: String = spec
        .hosts
        .iter()
        .map(|h| format!("{}:{}\n", h.name, h.slots))
        .collect();
    autocoll::files::write_atomic(&dir.join("hostfile.mpich"), hosts.as_bytes())?;
    if let Err(e) = build_yield(dir) {
        eprintln!(
            "autocoll cluster: {e:#}; MPICH's ranks on this cluster will poll without yielding (Open MPI's are not affected)"
        );
    }
    write_script(&dir.join("mpiexec"), &script(spec, dir))
}

/// Compiles the shim with the system's C compiler (MPICH's `mpicc` needs
/// one too), into a temporary file renamed into place.
fn build_yield(dir: &Path) -> anyhow::Result<()> {
    let src = dir.join(YIELD_C);
    autocoll::files::write_atomic(&src, YIELD_SOURCE.as_bytes())?;
    let tmp = dir.join(format!("{YIELD_LIB}.tmp"));
    let out = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-ldl")
        .output()
        .context("building the yield shim for MPICH: running `cc`")?;
    anyhow::ensure!(
        out.status.success(),
        "building the yield shim for MPICH: cc failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    std::fs::rename(&tmp, dir.join(YIELD_LIB))
        .with_context(|| format!("moving {} into place", tmp.display()))
}

/// `DIR/mpiexec`: MPICH's Hydra with what every run across the emulated
/// hosts needs.
fn script(spec: &Spec, dir: &Path) -> String {
    format!(
        r#"#!/bin/sh
# MPICH's mpiexec across the emulated cluster `{name}` (made by `autocoll cluster up`).
# Usage: mpiexec -n N [mpiexec options] PROGRAM ARGS...
# Hydra's proxies start through the agent and call back to this namespace's
# address on the cluster ({root}): every namespace has the machine's one
# hostname, which names none of them. UCX keeps to TCP on the cluster's
# links: its shared-memory transports would join the emulated hosts past
# their links, as they share this machine's /dev/shm. The yield shim gives
# an idle rank's core up (MPICH polls without yielding: a 1K bcast on 8
# ranks took 16 ms instead of 0.4).
# A `-genv LD_PRELOAD LIB` among the arguments (autocoll mpirun's) would
# replace the shim for the ranks: the shim goes in front of LIB. A hostfile
# among them (-f, -hostfile, -machinefile) replaces the cluster's.
shim={shim}
if [ -f "$shim" ]; then
    export LD_PRELOAD="$shim${{LD_PRELOAD:+:$LD_PRELOAD}}"
else
    echo "mpiexec: $shim is missing (no C compiler at cluster up): MPICH's ranks will poll without yielding" >&2
fi
own= before= last=
for arg in "$@"; do
    shift
    case "$arg" in -f|-hostfile|-machinefile) own=1 ;; esac
    if [ "$before" = -genv ] && [ "$last" = LD_PRELOAD ] && [ -f "$shim" ]; then
        arg="$shim:$arg"
    fi
    set -- "$@" "$arg"
    before=$last last=$arg
done
[ -n "$own" ] || set -- -f {hostfile} "$@"
exec mpiexec.mpich -launcher ssh -launcher-exec {agent} -localhost {root} \
    -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 "$@"
"#,
        name = spec.name,
        root = spec.root_addr(),
        shim = quoted(dir.join(YIELD_LIB)),
        agent = quoted(dir.join("agent")),
        hostfile = quoted(dir.join("hostfile.mpich")),
    )
}
