//! The `ip` and `tc` commands the cluster is made of.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};

use super::spec::Rate;

/// Runs iproute2 commands; every failure names the command and its stderr.
pub struct Ip;

impl Ip {
    /// Runs `ip ARGS`.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<()> {
        run("ip", args)
    }

    /// True when the interface exists (in `netns`, or here).
    pub fn link_exists(&self, netns: Option<&str>, name: &str) -> bool {
        let mut cmd = Command::new("ip");
        if let Some(ns) = netns {
            cmd.args(["-n", ns]);
        }
        cmd.args(["link", "show", "dev", name])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// True when the named network namespace exists.
    pub fn netns_exists(&self, name: &str) -> bool {
        Path::new("/run/netns").join(name).exists()
    }

    /// Creates a bridge unless it exists, and brings it up.
    pub fn bridge(&self, name: &str) -> anyhow::Result<()> {
        if !self.link_exists(None, name) {
            self.run(&["link", "add", name, "type", "bridge"])?;
        }
        self.run(&["link", "set", name, "up"])
    }

    /// Creates a network namespace unless it exists.
    pub fn netns(&self, name: &str) -> anyhow::Result<()> {
        if !self.netns_exists(name) {
            self.run(&["netns", "add", name])?;
        }
        Ok(())
    }

    /// Deletes a network namespace if it exists.
    pub fn netns_del(&self, name: &str) -> anyhow::Result<()> {
        // A namespace a process is still entering (`ip netns exec` of an
        // agent that was just killed) is briefly busy: try for a second.
        let mut tries = 0;
        while self.netns_exists(name) {
            match self.run(&["netns", "del", name]) {
                Err(_) if tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => return other,
            }
        }
        Ok(())
    }

    /// Deletes an interface of this namespace if it exists.
    pub fn link_del(&self, name: &str) -> anyhow::Result<()> {
        if !self.link_exists(None, name) {
            return Ok(());
        }
        // The kernel removes a deleted namespace's veth peers in the
        // background, so a peer seen a moment ago may be gone by now
        // (CI once failed on "Cannot find device"): gone is what we want.
        match self.run(&["link", "del", name]) {
            Err(_) if !self.link_exists(None, name) => Ok(()),
            other => other,
        }
    }

    /// Puts (or replaces) a token bucket at `rate` on the interface's egress.
    pub fn shape(&self, netns: Option<&str>, dev: &str, rate: Rate) -> anyhow::Result<()> {
        let mut args: Vec<String> = Vec::new();
        if let Some(ns) = netns {
            args.extend(["-n".into(), ns.into()]);
        }
        let (burst, latency) = bucket(rate);
        args.extend(
            ["qdisc", "replace", "dev", dev, "root", "tbf", "rate"]
                .map(String::from)
                .into_iter()
                .chain([rate.to_string(), "burst".into(), burst.to_string()])
                .chain(["latency".into(), latency.into()]),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run("tc", &args)
    }
}

/// The bucket size (bytes) and queueing limit of a link's tbf.
///
/// The bucket holds two full frames (or 100 µs at the link's rate, if
/// more): a real link sends every byte at its rate, while a larger bucket
/// lets the start of a message through at memory speed, so that a call's
/// time depends on how far the call before it drained the buckets. Two
/// frames cost under 1 % of the rate.
///
/// The queue holds 100 ms at the link's rate (1.25 MB at 100 Mbit/s, about
/// a host's 1000-frame transmit queue): a shorter one drops the packets of
/// many TCP flows into one link (a flat broadcast, a gather), and the
/// retransmissions make the link look slower than it is.
pub fn bucket(rate: Rate) -> (u64, &'static str) {
    let per_100us = rate.0 / 8 / 10_000;
    (per_100us.max(2 * 1514), "100ms")
}

fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running `{program}` (is iproute2 installed?)"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
