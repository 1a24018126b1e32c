//! Hand-worked cases of the estimator and the greedy mapper, the files,
//! Scotch's and hwloc's, the probe's plan, and properties of every
//! mapper; the topologies they share are built here.

mod files;
mod model;
mod probing;
mod properties;
mod scotch_hwloc;

use proptest::prelude::*;

use crate::search::Budget;
use crate::traffic::Which;
use crate::*;

/// A top switch `top` (with `max`) over `hosts` hosts `h0`, `h1`, … of
/// `pes` processing elements each; host links of `link` bytes/s, memory
/// of 1000 bytes/s.
fn star(hosts: usize, pes: usize, link: Link, max: Option<f64>) -> Topology {
    let mut elements = vec![top(max)];
    for h in 0..hosts {
        elements.push(host(&format!("h{h}"), 0, pes, link.clone()));
    }
    Topology::new("star", elements).unwrap()
}

fn top(max: Option<f64>) -> Element {
    Element {
        name: "top".into(),
        parent: None,
        link: None,
        max,
        pes: 0,
        pe_link: None,
        addr: None,
        host: None,
    }
}

fn host(name: &str, parent: usize, pes: usize, link: Link) -> Element {
    Element {
        name: name.into(),
        parent: Some(parent),
        link: Some(link),
        max: None,
        pes,
        pe_link: Some(Link::flat(1000.0)),
        addr: None,
        host: None,
    }
}

fn traffic(ranks: usize, messages: &[(usize, usize, f64)]) -> Traffic {
    let mut t = Traffic::new(ranks);
    for &(src, dst, bytes) in messages {
        t.add(src, dst, bytes, 1);
    }
    t
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// A random tree: a top switch over 1–3 sub-switches (some with a
/// maximum), each over 1–3 hosts of 1–4 processing elements, with random
/// rates.
fn any_topology() -> impl Strategy<Value = Topology> {
    let a_host = (1usize..5, 1.0f64..1000.0);
    let sub = (
        prop::collection::vec(a_host, 1..4),
        prop::option::of(10.0f64..1e4),
    );
    prop::collection::vec(sub, 1..4).prop_map(|subs| {
        let mut elements = vec![top(None)];
        for (s, (hosts, max)) in subs.into_iter().enumerate() {
            let parent = elements.len();
            let mut sw = host(&format!("s{s}"), 0, 0, Link::flat(50.0));
            sw.pe_link = None;
            sw.max = max;
            elements.push(sw);
            for (h, (pes, rate)) in hosts.into_iter().enumerate() {
                elements.push(host(&format!("s{s}h{h}"), parent, pes, Link::flat(rate)));
            }
        }
        Topology::new("any", elements).unwrap()
    })
}

/// The paper's cluster: five hosts on the top switch, three under a
/// sub-switch (every host two processing elements; uplink 10 B/s, host
/// links 100, memory 1000), in that order in the file.
fn two_subnets() -> Topology {
    let mut elements = vec![top(None)];
    for h in 0..5 {
        elements.push(host(&format!("h{h}"), 0, 2, Link::flat(100.0)));
    }
    let mut sub = host("sub", 0, 0, Link::flat(10.0));
    sub.pe_link = None;
    elements.push(sub);
    for h in 5..8 {
        elements.push(host(&format!("h{h}"), 6, 2, Link::flat(100.0)));
    }
    Topology::new("two", elements).unwrap()
}
