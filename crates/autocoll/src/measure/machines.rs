//! Where the ranks run: which ranks share a machine and how many cores it
//! has. A machine is a running kernel (its boot id, [`clock_id`]), not a
//! host name: the network namespaces of an emulated cluster are hosts with
//! names of their own that share one machine's processors.
//!
//! Two methods rest on a premise that crowding breaks. `ol-i` assumes a
//! processor per rank (a rank's reply to a ping is not queued behind
//! another rank's work), and `truth` that the ranks enter each call
//! together (it discards calls whose entries are spread). When a machine
//! runs more ranks than it has cores, [`Machines::failing`] names them, and
//! [`Machines::fallback`] is a method that still measures there.

use std::collections::HashSet;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::call::allgather_words;
use crate::clock::clock_id;
use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::measure::method::{Method, Options};

/// One machine of the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The host names its ranks go by, in rank order, each once.
    pub hosts: Vec<String>,
    /// Its ranks, ascending.
    pub ranks: Vec<usize>,
    /// The cores its ranks may run on (its first rank's view: affinity
    /// and cgroup limits included, or `AUTOCOLL_CORES`).
    pub cores: usize,
}

impl Machine {
    /// More ranks than cores.
    pub fn crowded(&self) -> bool {
        self.ranks.len() > self.cores
    }
}

/// The machines of a job, in order of their first rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machines {
    /// Every machine.
    pub machines: Vec<Machine>,
    /// Each rank's core, by rank, where the job bound it
    /// ([`crate::binding`]; empty where nothing said).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bound: Vec<Option<usize>>,
}

impl Machines {
    /// Every rank tells every other its machine and cores; every rank
    /// calls it.
    pub fn of(comm: &mut Communicator) -> Result<Machines> {
        let id = clock_id();
        let (a, b) = id.split_at(8);
        let word = |half: &[u8]| u64::from_le_bytes(half.try_into().expect("8 bytes"));
        // On virtual time (the sim transport) every rank has a processor.
        let cores = match crate::clock::is_virtual() {
            true => comm.size(),
            false => cores()?,
        };
        let core = crate::binding::bound::current().and_then(|b| b.1);
        let mine = [
            word(a),
            word(b),
            cores as u64,
            core.map_or(u64::MAX, |c| c as u64),
        ];
        let all = allgather_words(comm, &mine)?;
        let ids: Vec<[u64; 2]> = all.chunks(4).map(|w| [w[0], w[1]]).collect();
        let counts: Vec<usize> = all.chunks(4).map(|w| w[2] as usize).collect();
        let mut found = Machines::from_ranks(&ids, &counts, &comm.hosts());
        found.bound = all
            .chunks(4)
            .map(|w| (w[3] != u64::MAX).then_some(w[3] as usize))
            .collect();
        Ok(found)
    }

    /// The machines of ranks with these machine ids, core counts and host
    /// names (each indexed by rank).
    pub fn from_ranks<I: PartialEq>(ids: &[I], cores: &[usize], hosts: &[String]) -> Machines {
        let mut first: Vec<usize> = Vec::new();
        let mut machines: Vec<Machine> = Vec::new();
        // (machine, host) pairs seen: 1024 simulated hosts share one
        // machine, and scanning its hosts for each rank's was half a
        // billion string comparisons on every rank.
        let mut seen: HashSet<(usize, &str)> = HashSet::new();
        for (rank, id) in ids.iter().enumerate() {
            let host = hosts.get(rank).map_or("", String::as_str);
            match first.iter().position(|&r| ids[r] == *id) {
                Some(m) => {
                    let machine = &mut machines[m];
                    machine.ranks.push(rank);
                    if seen.insert((m, host)) {
                        machine.hosts.push(host.to_string());
                    }
                }
                None => {
                    seen.insert((machines.len(), host));
                    first.push(rank);
                    machines.push(Machine {
                        hosts: vec![host.to_string()],
                        ranks: vec![rank],
                        cores: cores.get(rank).copied().unwrap_or(1).max(1),
                    });
                }
            }
        }
        Machines {
            machines,
            bound: Vec::new(),
        }
    }

    /// True when some machine runs more ranks than it has cores.
    pub fn crowded(&self) -> bool {
        self.machines.iter().any(Machine::crowded)
    }

    /// `opts` for measuring on these machines: `truth` sleeps through its
    /// waits where ranks outnumber cores ([`Options::spin_waits`]).
    pub fn options(&self, opts: &Options) -> Options {
        Options {
            spin_waits: opts.spin_waits && !self.crowded(),
            ..*opts
        }
    }

    /// Whether `method`'s premise holds on these machines.
    pub fn holds(&self, method: Method) -> bool {
        premise(method).is_none() || !self.crowded()
    }

    /// The methods among `methods` whose premise fails here.
    pub fn failing(&self, methods: &[Method]) -> Vec<Method> {
        methods
            .iter()
            .copied()
            .filter(|&m| !self.holds(m))
            .collect()
    }

    /// One line for the user when the machines are crowded: where, and
    /// which of `methods` cannot be trusted there and why.
    pub fn warning(&self, methods: &[Method]) -> Option<String> {
        let crowded: Vec<String> = self
            .machines
            .iter()
            .filter(|m| m.crowded())
            .map(Machine::to_string)
            .collect();
        if crowded.is_empty() {
            return None;
        }
        let mut text = format!("more ranks than cores ({})", crowded.join("; "));
        let broken: Vec<String> = self
            .failing(methods)
            .into_iter()
            .filter_map(|m| premise(m).map(|p| format!("{m} assumes {p}")))
            .collect();
        if !broken.is_empty() {
            text.push_str(&format!(": {}, which fails here", broken.join(", ")));
        }
        Some(text)
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts = if self.hosts.len() > 3 {
            format!("{} … {}", self.hosts[0], self.hosts[self.hosts.len() - 1])
        } else {
            self.hosts.join(", ")
        };
        write!(
            f,
            "{} ranks on {} core{} of one machine, host{} {hosts}",
            self.ranks.len(),
            self.cores,
            if self.cores == 1 { "" } else { "s" },
            if self.hosts.len() == 1 { "" } else { "s" },
        )
    }
}

/// What `method` assumes of the machines, if it assumes anything of them.
pub fn premise(method: Method) -> Option<&'static str> {
    match method {
        Method::OlI => Some("a processor per rank"),
        Method::Truth => Some("that the ranks enter each call together"),
        _ => None,
    }
}

impl Machines {
    /// The method that measures where `method` could not: `ol-i` where
    /// its premise holds (it does not need the ranks to start together),
    /// else `barrier`, which assumes nothing of the machines.
    pub fn fallback(&self, method: Method) -> Method {
        if method != Method::OlI && self.holds(Method::OlI) {
            Method::OlI
        } else {
            Method::Barrier
        }
    }
}

/// What a fallback method's figures are, to be said with them.
pub fn bias(method: Method) -> &'static str {
    match method {
        Method::OlI => {
            "each rank's time from the call to its answer less half its round trip, the \
             largest over ranks: within a few percent of truth where every rank has a \
             processor (docs/measurement.md)"
        }
        Method::Barrier => {
            "each call timed with the barrier after it: an upper bound, high by one \
             barrier alike for every candidate, so it ranks them but overstates each"
        }
        _ => "biased as docs/measurement.md says",
    }
}

/// The system's count of this process's cores, read once: after a tcp
/// rank binds itself to one core ([`crate::binding`]) its machine still
/// has them all.
static SYSTEM_CORES: OnceLock<usize> = OnceLock::new();

/// The cores this process may run on: `AUTOCOLL_CORES` where set (a
/// container's CPU quota is not always what the system reports), else the
/// system's count for this process (affinity and cgroup limits included)
/// when it first asked.
pub(crate) fn cores() -> Result<usize> {
    match std::env::var("AUTOCOLL_CORES") {
        Ok(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Error::Config(format!(
                    "AUTOCOLL_CORES=`{text}` is not a positive count of cores"
                ))
            }),
        Err(_) => Ok(*SYSTEM_CORES
            .get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn namespaces_of_one_kernel_are_one_machine() {
        let m = Machines::from_ranks(&[7, 7, 7, 9], &[2, 2, 2, 8], &hosts(&["a", "b", "b", "c"]));
        assert_eq!(m.machines.len(), 2);
        assert_eq!(m.machines[0].ranks, vec![0, 1, 2]);
        assert_eq!(m.machines[0].hosts, hosts(&["a", "b"]));
        assert_eq!(m.machines[1].ranks, vec![3]);
        assert!(m.machines[0].crowded() && !m.machines[1].crowded());
        assert!(m.crowded());
        assert_eq!(
            m.failing(&[Method::Truth, Method::Barrier, Method::OlI]),
            vec![Method::Truth, Method::OlI]
        );
        let text = m.warning(&[Method::OlI]).unwrap();
        assert!(text.contains("3 ranks on 2 cores"), "{text}");
        assert!(text.contains("ol-i assumes a processor per rank"), "{text}");
        assert!(!text.contains("truth"), "{text}");
    }

    #[test]
    fn a_machine_lists_each_host_once_in_order_of_its_first_rank() {
        let m = Machines::from_ranks(
            &[7, 9, 7, 7, 9],
            &[4; 5],
            &hosts(&["a", "a", "b", "a", "c"]),
        );
        assert_eq!(m.machines[0].hosts, hosts(&["a", "b"]));
        assert_eq!(m.machines[1].hosts, hosts(&["a", "c"]));
        assert_eq!(m.machines[1].ranks, vec![1, 4]);
    }

    #[test]
    fn as_many_ranks_as_cores_is_not_crowded() {
        let m = Machines::from_ranks(&[1, 1], &[2, 2], &hosts(&["h", "h"]));
        assert!(!m.crowded());
        assert!(m.holds(Method::Truth));
        assert_eq!(m.warning(&[Method::Truth]), None);
    }

    #[test]
    fn truth_spins_through_its_waits_only_where_ranks_have_a_core_each() {
        let roomy = Machines::from_ranks(&[1; 2], &[2; 2], &hosts(&["h"; 2]));
        let crowded = Machines::from_ranks(&[1; 3], &[2; 3], &hosts(&["h"; 3]));
        let asked = Options::default();
        assert!(asked.spin_waits);
        assert!(roomy.options(&asked).spin_waits);
        assert!(!crowded.options(&asked).spin_waits);
        // Only the waits change; and a caller's no is kept.
        assert_eq!(
            Options {
                spin_waits: true,
                ..crowded.options(&asked)
            },
            asked
        );
        let never = Options {
            spin_waits: false,
            ..asked
        };
        assert!(!roomy.options(&never).spin_waits);
    }

    #[test]
    fn the_fallback_is_ol_i_where_it_holds_else_barrier() {
        let roomy = Machines::from_ranks(&[1; 2], &[2; 2], &hosts(&["h"; 2]));
        assert_eq!(roomy.fallback(Method::Truth), Method::OlI);
        assert_eq!(roomy.fallback(Method::OlI), Method::Barrier);
        let crowded = Machines::from_ranks(&[1; 5], &[2; 5], &hosts(&["h"; 5]));
        assert_eq!(crowded.fallback(Method::Truth), Method::Barrier);
        assert_eq!(premise(Method::Barrier), None);
        assert!(!bias(Method::OlI).is_empty());
    }
}
