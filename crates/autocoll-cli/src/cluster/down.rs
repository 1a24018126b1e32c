//! Taking an emulated cluster down.

use std::path::Path;

use anyhow::Context;

use super::net::Ip;
use super::spec::Spec;
use crate::out::say;

/// Removes what `up` makes, skipping what is not there. A part that cannot
/// be removed does not stop the others (one busy namespace once left a
/// test cluster's bridge and last host behind); every failure is reported.
pub fn down(spec: &Spec, dir: &Path) -> anyhow::Result<()> {
    let ip = Ip;
    let mut failed: Vec<String> = Vec::new();
    let mut attempt = |step: anyhow::Result<()>| {
        if let Err(e) = step {
            failed.push(format!("{e:#}"));
        }
    };
    for host in &spec.hosts {
        // Deleting the namespace deletes eth0 and with it the veth pair.
        attempt(ip.netns_del(&spec.netns(host)));
        attempt(ip.link_del(&spec.host_veth(host)));
    }
    for sw in &spec.switches {
        if sw.parent.is_some() {
            attempt(ip.link_del(&spec.uplink_veths(sw).0));
        }
    }
    for sw in &spec.switches {
        attempt(ip.link_del(&spec.bridge(&sw.name)));
    }
    let ours = ["hostfile", "hostfile.autocoll", "agent", "mpirun"];
    for file in ours.into_iter().chain(super::mpich::FILES) {
        attempt(remove_if_present(&dir.join(file)));
    }
    // The hosts' TMPDIRs (the agent's): what runs left there.
    let tmp = dir.join("tmp");
    if tmp.exists() {
        attempt(
            std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display())),
        );
    }
    if dir.exists() {
        attempt(std::fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display())));
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "cluster {}: not all down:\n  {}",
            spec.name,
            failed.join("\n  ")
        );
    }
    say!("cluster {}: down", spec.name);
    Ok(())
}

fn remove_if_present(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}
