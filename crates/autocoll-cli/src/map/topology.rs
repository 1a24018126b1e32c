//! The topology `map` works on: a topology file, or the one an emulated
//! cluster's spec stands for.

use std::path::Path;

use autocoll_map::{Element, Link, Topology};

use crate::cluster::spec::Spec;

/// What a host's processing elements get from its memory when the
/// topology comes from a cluster spec, which says nothing of it (the probe
/// measures it).
const MEMORY: &str = "2GB/s";

/// An uplink the cluster spec leaves unbounded: a veth between bridges.
const UNBOUNDED: &str = "10gbit";

/// A topology file, or the topology a cluster spec stands for.
pub(crate) fn load_topology(path: &Path) -> Result<Topology, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading topology {}: {e}", path.display()))?;
    let origin = path.display().to_string();
    let is_topology = text.lines().any(|l| l.trim_start().starts_with("schema"));
    match is_topology {
        true => Topology::parse(&text, &origin).map_err(|e| e.to_string()),
        false => {
            let spec = Spec::parse(&text, &origin).map_err(|e| format!("{e:#}"))?;
            of_spec(&spec).map_err(|e| format!("{origin}: {e}"))
        }
    }
}

/// The topology of an emulated cluster: its switches (uplinks at their
/// rate), its hosts (links at their rate, a processing element per slot,
/// memory at [`MEMORY`]), in the spec's order.
pub fn of_spec(spec: &Spec) -> Result<Topology, String> {
    let rate = |bits: u64| bits as f64 / 8.0;
    let memory = Link::flat(autocoll_map::topology::parse_rate(MEMORY)?);
    let unbounded = autocoll_map::topology::parse_rate(UNBOUNDED)?;
    let index = |name: &str| spec.switches.iter().position(|s| s.name == name);
    let mut elements: Vec<Element> = spec
        .switches
        .iter()
        .map(|s| Element {
            name: s.name.clone(),
            parent: s.parent.as_deref().and_then(index),
            link: s
                .parent
                .as_ref()
                .map(|_| Link::flat(s.uplink.map_or(unbounded, |r| rate(r.0)))),
            max: None,
            pes: 0,
            pe_link: None,
            addr: None,
            host: None,
        })
        .collect();
    for (i, h) in spec.hosts.iter().enumerate() {
        elements.push(Element {
            name: h.name.clone(),
            parent: index(&h.switch),
            link: Some(Link::flat(rate(h.rate.0))),
            max: None,
            pes: h.slots as usize,
            pe_link: Some(memory.clone()),
            addr: Some(spec.host_addr(i)),
            host: None,
        });
    }
    Topology::new(&spec.name, elements)
}
