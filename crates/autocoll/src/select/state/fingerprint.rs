//! What makes two runs comparable ([`Fingerprint`]), and two
//! communicators share what they learn ([`CommShape`]).

use serde::{Deserialize, Serialize};

use crate::select::lottery::Objective;

/// What makes two runs comparable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The distinct hosts, in rank order of first appearance.
    pub hosts: Vec<String>,
    /// Ranks on each of those hosts.
    pub ranks_per_host: Vec<usize>,
    /// The transport's kind.
    pub transport: String,
    /// autocoll's version.
    pub version: String,
    /// What the lottery minimised: averages of one measure say nothing of
    /// another's (files from before there was a choice measured the
    /// slowest rank).
    #[serde(default)]
    pub objective: Objective,
    /// Per rank, its host's index among `hosts` (files that lack it had
    /// each host's ranks one after another).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<usize>,
}

/// What makes two communicators share what they learn: their ranks'
/// placement over hosts (host indices in order of first appearance),
/// their transport, autocoll's version and the objective.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommShape {
    placement: Vec<usize>,
    transport: String,
    version: String,
    objective: Objective,
}

impl Fingerprint {
    /// The fingerprint of a job whose rank i runs on `hosts[i]`.
    pub fn new(hosts: &[String], transport: &str) -> Self {
        let mut distinct: Vec<String> = Vec::new();
        let mut counts: Vec<usize> = Vec::new();
        let mut placement = Vec::with_capacity(hosts.len());
        for h in hosts {
            match distinct.iter().position(|d| d == h) {
                Some(i) => {
                    counts[i] += 1;
                    placement.push(i);
                }
                None => {
                    placement.push(distinct.len());
                    distinct.push(h.clone());
                    counts.push(1);
                }
            }
        }
        Fingerprint {
            hosts: distinct,
            ranks_per_host: counts,
            transport: transport.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            objective: Objective::default(),
            placement,
        }
    }

    /// The shape of the communicator it describes.
    pub fn shape(&self) -> CommShape {
        let placement = match self.placement.is_empty() {
            false => self.placement.clone(),
            true => (0..self.ranks_per_host.len())
                .flat_map(|h| std::iter::repeat_n(h, self.ranks_per_host[h]))
                .collect(),
        };
        CommShape {
            placement,
            transport: self.transport.clone(),
            version: self.version.clone(),
            objective: self.objective,
        }
    }

    /// The same fingerprint, for a lottery that minimises `objective`.
    pub fn measuring(self, objective: Objective) -> Self {
        Fingerprint { objective, ..self }
    }
}
