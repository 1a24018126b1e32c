//! The simulated machine's numbers: LogGP's terms and the topology's
//! links ([`Model`]), read from a file or built in.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::link::{BOTH_WAYS, WINDOW_BYTES};
use crate::error::{Error, Result};

/// What a message costs on the simulated machine: LogGP's terms and the
/// topology's links. Times in ns, per-byte costs in ns per byte.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Model {
    /// `L`: the wire's latency between two hosts.
    pub latency_ns: f64,
    /// `o`: the sender's and the receiver's processor time per message.
    pub overhead_ns: f64,
    /// `g`: the least time between two messages a rank injects.
    pub gap_ns: f64,
    /// A host's link to its switch, each way (80 is 100 Mbit/s).
    pub host_ns_per_byte: f64,
    /// Latency between two ranks of one host.
    pub local_latency_ns: f64,
    /// Per byte between two ranks of one host.
    pub local_ns_per_byte: f64,
    /// Ranks on each host, in rank order (`ranks_per_host` consecutive
    /// ranks share one).
    pub ranks_per_host: usize,
    /// Hosts on each switch; 0 puts every host on one switch.
    pub hosts_per_switch: usize,
    /// A switch's link to the top switch, each way.
    pub switch_ns_per_byte: f64,
    /// How much of the thread's processor time between messages counts
    /// (1: as this machine spends it; 0: none).
    pub cpu_scale: f64,
    /// Bytes a connection sends on a shared link before the next one has
    /// its turn (TCP's window); 0 shares every link evenly byte by byte.
    pub window_bytes: f64,
    /// How much slower a link carries data while the link the other way
    /// (between the same host or switch and the next) carries data too:
    /// each direction's acknowledgements queue behind the other's data
    /// (0.07: 7% slower).
    pub both_ways: f64,
}

/// The emulated cluster `clusters/star8-100m.toml` as `autocoll sim fit`
/// measured it (docs/sim/star8.toml): eight hosts, one rank each, on
/// 95 Mbit/s links to one switch; ranks of one host as the two-subnet
/// cluster's (docs/sim/twosub.toml).
impl Default for Model {
    fn default() -> Self {
        Model {
            latency_ns: 21_427.0,
            overhead_ns: 10_714.0,
            gap_ns: 0.0,
            host_ns_per_byte: 84.235,
            local_latency_ns: 14_600.0,
            local_ns_per_byte: 0.438,
            ranks_per_host: 1,
            hosts_per_switch: 0,
            switch_ns_per_byte: 84.235,
            cpu_scale: 1.0,
            window_bytes: WINDOW_BYTES,
            both_ways: BOTH_WAYS,
        }
    }
}

impl Model {
    /// Reads a model from a TOML file; the error names the file and what
    /// is wrong in it.
    pub fn load(path: &Path) -> Result<Model> {
        let what = |detail: String| Error::Config(format!("{}: {detail}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| what(e.to_string()))?;
        let model: Model = toml::from_str(&text).map_err(|e| what(e.to_string()))?;
        model.check().map_err(what)?;
        Ok(model)
    }

    /// Refuses a model that cannot describe a machine.
    pub fn check(&self) -> std::result::Result<(), String> {
        let numbers = [
            ("latency_ns", self.latency_ns),
            ("overhead_ns", self.overhead_ns),
            ("gap_ns", self.gap_ns),
            ("host_ns_per_byte", self.host_ns_per_byte),
            ("local_latency_ns", self.local_latency_ns),
            ("local_ns_per_byte", self.local_ns_per_byte),
            ("switch_ns_per_byte", self.switch_ns_per_byte),
            ("cpu_scale", self.cpu_scale),
            ("window_bytes", self.window_bytes),
            ("both_ways", self.both_ways),
        ];
        if let Some((name, v)) = numbers.iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
            return Err(format!("{name} = {v}: must be a number ≥ 0"));
        }
        if self.ranks_per_host == 0 {
            return Err("ranks_per_host = 0: a host runs at least one rank".into());
        }
        Ok(())
    }

    /// The model as a TOML file's text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a model is plain numbers")
    }

    pub(super) fn host(&self, rank: usize) -> usize {
        rank / self.ranks_per_host
    }

    pub(super) fn switch(&self, host: usize) -> usize {
        match self.hosts_per_switch {
            0 => 0,
            n => host / n,
        }
    }

    /// The links a message from host `a` to host `b` crosses, with their
    /// cost per byte: `a`'s up, the switches' when it changes switch,
    /// `b`'s down. Links are numbered hosts first (2h up, 2h+1 down), then
    /// switches.
    pub(super) fn path(&self, a: usize, b: usize, hosts: usize) -> Vec<(usize, f64)> {
        let link = |l: usize| (l, self.per_byte(l, hosts));
        let mut links = vec![link(2 * a)];
        let (sa, sb) = (self.switch(a), self.switch(b));
        if sa != sb {
            links.push(link(2 * hosts + 2 * sa));
            links.push(link(2 * hosts + 2 * sb + 1));
        }
        links.push(link(2 * b + 1));
        links
    }

    /// The cost per byte of link `link` (numbered as in [`Model::path`])
    /// of a machine of `hosts` hosts.
    pub(super) fn per_byte(&self, link: usize, hosts: usize) -> f64 {
        match link < 2 * hosts {
            true => self.host_ns_per_byte,
            false => self.switch_ns_per_byte,
        }
    }
}
