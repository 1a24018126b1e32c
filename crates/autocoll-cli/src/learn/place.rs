//! The machine a learned placement is made for, the placement a run had,
//! the best one the mapper finds, and the file that puts it in force.

use std::path::{Path, PathBuf};
use std::time::Duration;

use autocoll_map::search::Budget;
use autocoll_map::topology::parse_rate;
use autocoll_map::{Element, Estimator, Link, Mapping, Topology, Traffic};

use super::manifest::Host;

/// A host's link when only its name is known: placement then mostly keeps
/// heavy pairs on one host, and these rates only weigh how much that
/// saves (docs/decisions.md).
const LINK: &str = "10gbit";
/// A host's memory, as each of its processing elements sees it, likewise.
const MEMORY: &str = "10GB/s";
/// A switch's uplink when only the hostfile's `switch=` path names it.
const UPLINK: &str = "10gbit";

/// The search's share of a run's end: short beside a run, and on the
/// mapping experiments' patterns it found nothing better than greedy in
/// one second (docs/mapping.md).
const SEARCH: Duration = Duration::from_secs(1);

/// The topology's hosts and their processing elements, in order.
pub fn hosts_of(t: &Topology) -> Vec<Host> {
    let mut hosts: Vec<Host> = Vec::new();
    for pe in 0..t.pe_count() {
        let name = t.host_of(pe);
        match hosts.iter_mut().find(|h| h.name == name) {
            Some(h) => h.slots += 1,
            None => hosts.push(Host {
                name: name.into(),
                slots: 1,
                ..Host::default()
            }),
        }
    }
    hosts
}

/// A topology of `hosts` at assumed rates: under the switches their
/// `switch` paths name, else under one.
pub fn of_hosts(hosts: &[Host]) -> Result<Topology, String> {
    let link = Link::flat(parse_rate(LINK)?);
    let memory = Link::flat(parse_rate(MEMORY)?);
    let uplink = Link::flat(parse_rate(UPLINK)?);
    let mut elements = vec![switch("network", None, None)];
    for h in hosts {
        let mut parent = 0;
        for name in h.switch.iter().flat_map(|s| s.split('/')) {
            parent = match elements.iter().position(|e| e.name == name) {
                Some(i) if elements[i].parent == Some(parent) => i,
                Some(_) => return Err(format!("switch `{name}` hangs under two switches")),
                None => {
                    elements.push(switch(name, Some(parent), Some(uplink.clone())));
                    elements.len() - 1
                }
            };
        }
        elements.push(Element {
            name: h.name.clone(),
            parent: Some(parent),
            link: Some(link.clone()),
            max: None,
            pes: h.slots,
            pe_link: Some(memory.clone()),
            addr: h.addr.clone(),
            host: None,
        });
    }
    Topology::new("hosts", elements)
}

fn switch(name: &str, parent: Option<usize>, link: Option<Link>) -> Element {
    Element {
        name: name.into(),
        parent,
        link,
        max: None,
        pes: 0,
        pe_link: None,
        addr: None,
        host: None,
    }
}

/// The placement a run had: rank i on the next free processing element of
/// `hosts[i]`.
pub fn observed(t: &Topology, hosts: &[String]) -> Result<Mapping, String> {
    let mut used = vec![false; t.pe_count()];
    let mut pes = Vec::with_capacity(hosts.len());
    for (rank, host) in hosts.iter().enumerate() {
        let free = (0..t.pe_count()).find(|&pe| !used[pe] && t.host_of(pe) == host);
        let pe = free.ok_or_else(|| match (0..t.pe_count()).any(|pe| t.host_of(pe) == host) {
            true => format!("rank {rank} ran on {host}, whose slots the others fill"),
            false => format!("rank {rank} ran on {host}, which the topology does not have"),
        })?;
        used[pe] = true;
        pes.push(pe);
    }
    Mapping::new(pes, t.pe_count()).map_err(|e| e.to_string())
}

/// A mapping method's outcome.
pub struct Found {
    /// `greedy` or `search`.
    pub method: &'static str,
    /// The mapping.
    pub mapping: Mapping,
    /// Its estimate, seconds.
    pub estimate_s: f64,
}

/// The lowest estimate of greedy's mapping and the search's from it.
pub fn best(t: &Topology, traffic: &Traffic) -> Result<Found, String> {
    let estimator = Estimator::new(t);
    let greedy = autocoll_map::greedy(t, traffic).map_err(|e| e.to_string())?;
    let budget = Budget {
        time: SEARCH,
        ..Budget::default()
    };
    let search = autocoll_map::search(t, traffic, &greedy, budget).map_err(|e| e.to_string())?;
    let found = |method, mapping: Mapping| Found {
        method,
        estimate_s: estimator.cost(traffic, &mapping),
        mapping,
    };
    let (g, s) = (found("greedy", greedy), found("search", search));
    Ok(if s.estimate_s < g.estimate_s { s } else { g })
}

/// The files [`write_file`] writes, one per engine.
pub const FILES: [&str; 3] = ["rankfile", "machinefile", "hostfile"];

/// The file that puts `mapping` in force under `engine`, written into
/// `dir`: an Open MPI rankfile, an MPICH machinefile or a hostfile of
/// `autocoll launch`.
pub fn write_file(
    dir: &Path,
    engine: &str,
    t: &Topology,
    mapping: &Mapping,
) -> anyhow::Result<PathBuf> {
    let (name, text) = match engine {
        "openmpi" => (FILES[0], mapping.rankfile(t)),
        "mpich" => (FILES[1], mapping.machinefile(t)),
        _ => (FILES[2], mapping.hostfile(t)),
    };
    let path = dir.join(name);
    autocoll::files::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, slots: usize, switch: Option<&str>) -> Host {
        Host {
            name: name.into(),
            slots,
            switch: switch.map(String::from),
            ..Host::default()
        }
    }

    #[test]
    fn hosts_alone_hang_under_one_switch() {
        let t = of_hosts(&[host("a", 2, None), host("b", 2, None)]).unwrap();
        assert_eq!(t.pe_count(), 4);
        assert_eq!(hosts_of(&t), [host("a", 2, None), host("b", 2, None)]);
    }

    #[test]
    fn switch_paths_become_switches() {
        let hosts = [host("a", 1, Some("s0")), host("b", 1, Some("s0/s1"))];
        let t = of_hosts(&hosts).unwrap();
        let names: Vec<&str> = t.elements().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["network", "s0", "a", "s1", "b"]);
    }

    #[test]
    fn a_run_is_placed_on_its_hosts_slots_in_rank_order() {
        let t = of_hosts(&[host("a", 2, None), host("b", 2, None)]).unwrap();
        let on = |h: &[&str]| h.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = observed(&t, &on(&["b", "a", "b", "a"])).unwrap();
        assert_eq!(m.pes(), [2, 0, 3, 1]);
        let err = observed(&t, &on(&["c"])).unwrap_err();
        assert!(err.contains("does not have"), "{err}");
        let err = observed(&t, &on(&["a", "a", "a"])).unwrap_err();
        assert!(err.contains("others fill"), "{err}");
    }

    #[test]
    fn the_best_mapping_keeps_talking_pairs_on_one_host() {
        let t = of_hosts(&[host("a", 2, None), host("b", 2, None)]).unwrap();
        let mut traffic = Traffic::new(4);
        for (x, y) in [(0, 2), (2, 0), (1, 3), (3, 1)] {
            traffic.add(x, y, 1e6, 10);
        }
        let linear = autocoll_map::linear(4, &t).unwrap();
        let found = best(&t, &traffic).unwrap();
        let e = Estimator::new(&t);
        assert!(found.estimate_s < e.cost(&traffic, &linear) * 0.5);
        let pes = found.mapping.pes();
        assert_eq!(t.host_of(pes[0]), t.host_of(pes[2]));
        assert_eq!(t.host_of(pes[1]), t.host_of(pes[3]));
    }
}
