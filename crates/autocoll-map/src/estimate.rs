//! The cost estimator: the paper's Figure 4, with the switches' maximum
//! bandwidth.
//!
//! Every link direction and every switch element with a maximum is a
//! resource. Ranks are taken in turn. A rank's messages are charged to the
//! resources on their paths, one after another (a rank's own messages do
//! not overlap: `count × length / bandwidth(length)` each). Then each
//! resource adds the rank's time as far as the rank's bytes do not fit in
//! what the resource could still have carried, at its maximum, during the
//! time it is already busy: ranks overlap each other up to a resource's
//! maximum and queue beyond it. The cost is the busiest resource's time.
//!
//! Figure 4 adds the rank's bytes to the resource's before computing the
//! room left, which would charge the first rank on an idle link twice its
//! time; the room here is computed from the earlier ranks' bytes (see
//! docs/decisions.md).

use crate::mapping::Mapping;
use crate::topology::Hop;
use crate::topology::{Table, Topology};
use crate::traffic::Traffic;

/// A direction of a link, or a switch element's aggregate.
#[derive(Clone, Debug)]
struct Resource {
    name: String,
    table: Table,
    max: f64,
}

/// The estimator for one topology: its resources and the paths between
/// processing elements.
#[derive(Clone, Debug)]
pub struct Estimator<'a> {
    topology: &'a Topology,
    resources: Vec<Resource>,
    /// Per element with a parent: its link's (up, down) resources.
    link: Vec<Option<(usize, usize)>>,
    /// Per processing element: its link's (up, down) resources.
    pe_link: Vec<(usize, usize)>,
    /// Per element with a maximum: its resource.
    switch: Vec<Option<usize>>,
}

/// An estimate: the time and where it is spent.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The estimated communication time, in seconds.
    pub seconds: f64,
    /// The busiest resource (`h0 up`, `h0/1 down`, `switch sw0`), if any
    /// message crosses one.
    pub busiest: Option<String>,
}

impl<'a> Estimator<'a> {
    /// The resources of `topology`.
    pub fn new(topology: &'a Topology) -> Estimator<'a> {
        let mut resources = Vec::new();
        let mut pair = |name: &str, l: &crate::topology::Link| {
            resources.push(Resource {
                name: format!("{name} up"),
                table: l.up.clone(),
                max: l.max_up,
            });
            resources.push(Resource {
                name: format!("{name} down"),
                table: l.down.clone(),
                max: l.max_down,
            });
            (resources.len() - 2, resources.len() - 1)
        };
        let elements = topology.elements();
        let link = elements
            .iter()
            .map(|e| e.link.as_ref().map(|l| pair(&e.name, l)))
            .collect();
        let pe_link = (0..topology.pe_count())
            .map(|pe| {
                let (e, slot) = topology.pe(pe);
                let l = elements[e]
                    .pe_link
                    .as_ref()
                    .expect("checked by Topology::new");
                pair(&format!("{}/{slot}", elements[e].name), l)
            })
            .collect();
        let switch = elements
            .iter()
            .map(|e| {
                e.max.map(|m| {
                    resources.push(Resource {
                        name: format!("switch {}", e.name),
                        table: Table::flat(m),
                        max: m,
                    });
                    resources.len() - 1
                })
            })
            .collect();
        Estimator {
            topology,
            resources,
            link,
            pe_link,
            switch,
        }
    }

    /// The resources a message from processing element `a` to `b` uses,
    /// into `path`.
    fn path(&self, a: usize, b: usize, path: &mut Vec<usize>) {
        path.clear();
        path.push(self.pe_link[a].0);
        path.push(self.pe_link[b].1);
        let meet = self.topology.walk(a, b, |hop| {
            let (e, link) = match hop {
                Hop::Up(e) => (e, self.link[e].expect("below the top").0),
                Hop::Down(e) => (e, self.link[e].expect("below the top").1),
            };
            path.extend(self.switch[e]);
            path.push(link);
        });
        path.extend(self.switch[meet]);
    }

    /// The estimated time of `traffic` placed by `mapping`, in seconds.
    pub fn cost(&self, traffic: &Traffic, mapping: &Mapping) -> f64 {
        self.run(traffic, mapping).0
    }

    /// The estimate with the busiest resource named.
    pub fn estimate(&self, traffic: &Traffic, mapping: &Mapping) -> Estimate {
        let (seconds, busiest) = self.run(traffic, mapping);
        Estimate {
            seconds,
            busiest: busiest.map(|r| self.resources[r].name.clone()),
        }
    }

    /// The cost with rank i on `pes[i]` (the ranks of `traffic` first;
    /// no checks: the mappers' inner loop).
    pub(crate) fn cost_of(&self, traffic: &Traffic, pes: &[usize]) -> f64 {
        self.run_on(traffic, pes).0
    }

    fn run(&self, traffic: &Traffic, mapping: &Mapping) -> (f64, Option<usize>) {
        self.run_on(traffic, mapping.pes())
    }

    fn run_on(&self, traffic: &Traffic, pe: &[usize]) -> (f64, Option<usize>) {
        let n = self.resources.len();
        let (mut cost, mut bytes) = (vec![0.0; n], vec![0.0; n]);
        let (mut task_cost, mut task_bytes) = (vec![0.0; n], vec![0.0; n]);
        let mut touched = Vec::new();
        let mut path = Vec::new();
        for src in 0..traffic.ranks() {
            for m in traffic.sent_by(src) {
                self.path(pe[src], pe[m.dst], &mut path);
                let total = m.bytes * m.count as f64;
                for &r in &path {
                    if task_bytes[r] == 0.0 {
                        touched.push(r);
                    }
                    task_cost[r] += total / self.resources[r].table.at(m.bytes);
                    task_bytes[r] += total;
                }
            }
            for r in touched.drain(..) {
                let room = (self.resources[r].max * cost[r] - bytes[r]).max(0.0);
                if room < task_bytes[r] {
                    cost[r] += (task_bytes[r] - room) / task_bytes[r] * task_cost[r];
                }
                bytes[r] += task_bytes[r];
                task_cost[r] = 0.0;
                task_bytes[r] = 0.0;
            }
        }
        let busiest = (0..n)
            .filter(|&r| cost[r] > 0.0)
            .max_by(|&a, &b| cost[a].total_cmp(&cost[b]).then(b.cmp(&a)));
        (busiest.map_or(0.0, |r| cost[r]), busiest)
    }
}

/// The estimated time of `traffic` on `topology` placed by `mapping`.
pub fn estimate(topology: &Topology, traffic: &Traffic, mapping: &Mapping) -> Estimate {
    Estimator::new(topology).estimate(traffic, mapping)
}
