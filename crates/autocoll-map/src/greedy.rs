//! The paper's greedy mapper (its Figure 3), generalised to trees of
//! unequal arity and depth.
//!
//! Bottom-up, the mapper forms clusters of ranks that fit the tree's
//! elements, heaviest communication first ("exploit bandwidth"); top-down,
//! it hands each element's cluster to its children in the order the
//! clusters were formed ("exploit concurrency"). Figure 3 assumes every
//! element of a level has the same number of children and leaves out
//! communication sets that span clusters. Here:
//!
//! - An element's *shape* is the multiset of its children's shapes (a
//!   processing element is the smallest shape). A cluster is formed for a
//!   shape, and any element of that shape can take it.
//! - Level h forms the clusters of the elements of height h (the longest
//!   way down to a processing element). Its candidates are the clusters
//!   not yet used whose shape some child of those elements has. Pairs of
//!   candidates are taken by the bytes between them, largest first, and
//!   merged when the union still fits some element still to be filled; a
//!   union that fills one exactly is complete.
//! - Elements left unfilled take, each in turn, the largest unfinished
//!   cluster that fits and then, again and again, the fitting cluster that
//!   communicates most with what it holds (the sets that span clusters).
//!   Unfinished clusters that are not used go back to the candidates of
//!   later levels as the clusters they were made of.
//! - A job with fewer ranks than processing elements is padded with idle
//!   ranks, which fill what the others leave.

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, Result};
use crate::mapping::fits;
use crate::mapping::Mapping;
use crate::topology::Topology;
use crate::traffic::Traffic;

/// A multiset of shapes: shape → how many.
type Shapes = BTreeMap<usize, usize>;

/// Shape 0 is a processing element's.
const PE: usize = 0;

/// The greedy mapping of `traffic` onto `topology`.
pub fn greedy(topology: &Topology, traffic: &Traffic) -> Result<Mapping> {
    fits(traffic.ranks(), topology)?;
    let tree = Shaped::new(topology);
    let mut state = Clusters::new(topology.pe_count(), traffic);
    for h in 1..=tree.height.iter().copied().max().unwrap_or(0) {
        let mut need: BTreeMap<usize, usize> = BTreeMap::new();
        for (e, _) in tree.height.iter().enumerate().filter(|(_, &x)| x == h) {
            *need.entry(tree.shape[e]).or_default() += 1;
        }
        state.level(&need, &tree.contents)?;
    }
    let top = state.available.iter().copied().next();
    let top = top.ok_or_else(|| Error::Mismatch("no cluster for the top element".into()))?;
    let mut pe_of_task = vec![usize::MAX; topology.pe_count()];
    tree.assign(top, topology.top(), &state.units, &mut pe_of_task);
    pe_of_task.truncate(traffic.ranks());
    Mapping::new(pe_of_task, topology.pe_count())
}

/// The topology's shapes and heights.
struct Shaped<'a> {
    topology: &'a Topology,
    height: Vec<usize>,
    shape: Vec<usize>,
    /// Per shape, the multiset of its children's shapes.
    contents: Vec<Shapes>,
}

impl<'a> Shaped<'a> {
    fn new(topology: &'a Topology) -> Shaped<'a> {
        let elements = topology.elements();
        let mut order: Vec<usize> = (0..elements.len()).collect();
        order.sort_by_key(|&e| std::cmp::Reverse(topology.depth(e)));
        let mut height = vec![0; elements.len()];
        let mut shape = vec![0; elements.len()];
        let mut ids: HashMap<Shapes, usize> = HashMap::new();
        let mut contents = vec![Shapes::new()];
        for &e in &order {
            let mut content = Shapes::new();
            let mut h = 0;
            if elements[e].pes > 0 {
                content.insert(PE, elements[e].pes);
                h = 1;
            }
            for &c in topology.children(e) {
                *content.entry(shape[c]).or_default() += 1;
                h = h.max(height[c] + 1);
            }
            height[e] = h;
            let next = contents.len();
            shape[e] = *ids.entry(content.clone()).or_insert(next);
            if shape[e] == next {
                contents.push(content);
            }
        }
        Shaped {
            topology,
            height,
            shape,
            contents,
        }
    }

    /// Places cluster `unit` on element `e`: its parts, in the order they
    /// were formed, to the children of their shape, in the element's order
    /// (processing elements first).
    fn assign(&self, unit: usize, e: usize, units: &[Unit], pe_of_task: &mut [usize]) {
        let mut parts: Vec<Option<usize>> = units[unit].parts.iter().map(|&p| Some(p)).collect();
        let mut take = |shape: usize| {
            let slot = parts
                .iter_mut()
                .find(|p| p.is_some_and(|u| units[u].shape == shape))
                .expect("a cluster holds one part per child");
            slot.take().expect("found above")
        };
        for slot in 0..self.topology.elements()[e].pes {
            let task = units[take(PE)]
                .task
                .expect("a processing element's part is a rank");
            pe_of_task[task] = self.topology.pe_at(e, slot);
        }
        for &c in self.topology.children(e) {
            let part = take(self.shape[c]);
            self.assign(part, c, units, pe_of_task);
        }
    }
}

/// A cluster: a rank, or the clusters it was formed of.
struct Unit {
    shape: usize,
    parts: Vec<usize>,
    task: Option<usize>,
    tasks: Vec<usize>,
}

/// The clusters formed so far.
struct Clusters {
    units: Vec<Unit>,
    /// Clusters not yet part of a larger one, in the order formed.
    available: std::collections::BTreeSet<usize>,
    unit_of_task: Vec<usize>,
    /// Bytes between ranks, both ways.
    pairs: Vec<(usize, usize, f64)>,
}

impl Clusters {
    fn new(tasks: usize, traffic: &Traffic) -> Clusters {
        let units = (0..tasks)
            .map(|t| Unit {
                shape: PE,
                parts: Vec::new(),
                task: Some(t),
                tasks: vec![t],
            })
            .collect();
        Clusters {
            units,
            available: (0..tasks).collect(),
            unit_of_task: (0..tasks).collect(),
            pairs: traffic.pairs(),
        }
    }

    /// Forms the clusters of one level: `need` elements of each shape.
    fn level(&mut self, need: &BTreeMap<usize, usize>, contents: &[Shapes]) -> Result<()> {
        let wanted: std::collections::BTreeSet<usize> = need
            .keys()
            .flat_map(|s| contents[*s].keys().copied())
            .collect();
        let candidates: Vec<usize> = self
            .available
            .iter()
            .copied()
            .filter(|&u| wanted.contains(&self.units[u].shape))
            .collect();
        let mut groups = Groups::new(&candidates, &self.units, need, contents);
        let adjacency = self.adjacency(&groups);
        for &(u, v, _) in &self.sorted_pairs(&adjacency) {
            groups.try_merge(u, v);
        }
        groups.fill(&adjacency)?;
        for (members, shape) in groups.complete() {
            let tasks: Vec<usize> = members
                .iter()
                .flat_map(|&m| self.units[m].tasks.clone())
                .collect();
            let id = self.units.len();
            for &t in &tasks {
                self.unit_of_task[t] = id;
            }
            for m in &members {
                self.available.remove(m);
            }
            self.units.push(Unit {
                shape,
                parts: members,
                task: None,
                tasks,
            });
            self.available.insert(id);
        }
        Ok(())
    }

    /// Bytes between candidate clusters: per cluster, its neighbours.
    fn adjacency(&self, groups: &Groups) -> HashMap<usize, Vec<(usize, f64)>> {
        let mut sum: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        for &(a, b, bytes) in &self.pairs {
            let (u, v) = (self.unit_of_task[a], self.unit_of_task[b]);
            if u != v && groups.is_candidate(u) && groups.is_candidate(v) {
                *sum.entry((u.min(v), u.max(v))).or_default() += bytes;
            }
        }
        let mut adjacency: HashMap<usize, Vec<(usize, f64)>> = HashMap::new();
        for ((u, v), bytes) in sum {
            adjacency.entry(u).or_default().push((v, bytes));
            adjacency.entry(v).or_default().push((u, bytes));
        }
        adjacency
    }

    /// Every pair once, most bytes first (ties: lower clusters first).
    fn sorted_pairs(
        &self,
        adjacency: &HashMap<usize, Vec<(usize, f64)>>,
    ) -> Vec<(usize, usize, f64)> {
        let mut pairs: Vec<(usize, usize, f64)> = adjacency
            .iter()
            .flat_map(|(&u, n)| {
                n.iter()
                    .filter(move |(v, _)| u < *v)
                    .map(move |&(v, b)| (u, v, b))
            })
            .collect();
        pairs.sort_by(|x, y| y.2.total_cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
        pairs
    }
}

/// The clusters being formed at one level: a union-find over candidates.
struct Groups<'a> {
    /// Per candidate cluster, its group (the group's first member).
    leader: HashMap<usize, usize>,
    /// Per group leader: members in order, their shapes, its bin if
    /// complete.
    members: BTreeMap<usize, (Vec<usize>, Shapes, Option<usize>)>,
    left: BTreeMap<usize, usize>,
    contents: &'a [Shapes],
    shape_of: HashMap<usize, usize>,
}

fn fits_in(part: &Shapes, whole: &Shapes) -> bool {
    part.iter()
        .all(|(s, c)| whole.get(s).is_some_and(|w| w >= c))
}

fn union(a: &Shapes, b: &Shapes) -> Shapes {
    let mut u = a.clone();
    for (s, c) in b {
        *u.entry(*s).or_default() += c;
    }
    u
}

impl<'a> Groups<'a> {
    fn new(
        candidates: &[usize],
        units: &[Unit],
        need: &BTreeMap<usize, usize>,
        contents: &'a [Shapes],
    ) -> Groups<'a> {
        let leader = candidates.iter().map(|&u| (u, u)).collect();
        let members = candidates
            .iter()
            .map(|&u| (u, (vec![u], Shapes::from([(units[u].shape, 1)]), None)))
            .collect();
        Groups {
            leader,
            members,
            left: need.clone(),
            contents,
            shape_of: candidates.iter().map(|&u| (u, units[u].shape)).collect(),
        }
    }

    fn is_candidate(&self, u: usize) -> bool {
        self.leader.contains_key(&u)
    }

    /// A shape still to be filled that `shapes` fits, and whether it
    /// fills it exactly.
    fn bin_for(&self, shapes: &Shapes) -> Option<(usize, bool)> {
        let fitting: Vec<usize> = self
            .left
            .iter()
            .filter(|(&s, &n)| n > 0 && fits_in(shapes, &self.contents[s]))
            .map(|(&s, _)| s)
            .collect();
        let exact = fitting.iter().find(|&&s| self.contents[s] == *shapes);
        exact
            .map(|&s| (s, true))
            .or(fitting.first().map(|&s| (s, false)))
    }

    fn try_merge(&mut self, u: usize, v: usize) {
        let (a, b) = (self.leader[&u], self.leader[&v]);
        if a == b || self.members[&a].2.is_some() || self.members[&b].2.is_some() {
            return;
        }
        let shapes = union(&self.members[&a].1, &self.members[&b].1);
        if let Some((bin, exact)) = self.bin_for(&shapes) {
            self.join(a, b, shapes);
            if exact {
                self.close(a, bin);
            }
        }
    }

    fn join(&mut self, a: usize, b: usize, shapes: Shapes) {
        let (moved, _, _) = self.members.remove(&b).expect("a group");
        for m in &moved {
            self.leader.insert(*m, a);
        }
        let group = self.members.get_mut(&a).expect("a group");
        group.0.extend(moved);
        group.1 = shapes;
    }

    fn close(&mut self, a: usize, bin: usize) {
        self.members.get_mut(&a).expect("a group").2 = Some(bin);
        *self.left.get_mut(&bin).expect("an open bin") -= 1;
    }

    fn open_groups(&self) -> Vec<usize> {
        self.members
            .iter()
            .filter(|(_, g)| g.2.is_none())
            .map(|(&a, _)| a)
            .collect()
    }

    /// Fills every shape still to be filled, as the module note says.
    fn fill(&mut self, adjacency: &HashMap<usize, Vec<(usize, f64)>>) -> Result<()> {
        while let Some((&bin, _)) = self.left.iter().find(|(_, &n)| n > 0) {
            let content = self.contents[bin].clone();
            let seed = self
                .open_groups()
                .into_iter()
                .filter(|g| fits_in(&self.members[g].1, &content))
                .max_by_key(|g| (self.members[g].0.len(), std::cmp::Reverse(*g)));
            let Some(current) = seed else {
                self.dissolve()?;
                continue;
            };
            while self.members[&current].1 != content {
                let next = self.closest(current, &content, adjacency);
                match next {
                    Some(g) => {
                        let shapes = union(&self.members[&current].1, &self.members[&g].1);
                        self.join(current, g, shapes);
                    }
                    None => self.dissolve_except(current)?,
                }
            }
            self.close(current, bin);
        }
        Ok(())
    }

    /// The open group that still fits beside `current` and exchanges the
    /// most bytes with it (ties: the lowest).
    fn closest(
        &self,
        current: usize,
        content: &Shapes,
        adjacency: &HashMap<usize, Vec<(usize, f64)>>,
    ) -> Option<usize> {
        let mut bytes: BTreeMap<usize, f64> = BTreeMap::new();
        for m in &self.members[&current].0 {
            for &(v, b) in adjacency.get(m).map(Vec::as_slice).unwrap_or(&[]) {
                *bytes.entry(self.leader[&v]).or_default() += b;
            }
        }
        let fits = |g: &usize| {
            *g != current
                && self.members[g].2.is_none()
                && fits_in(
                    &union(&self.members[&current].1, &self.members[g].1),
                    content,
                )
        };
        self.open_groups().into_iter().filter(fits).max_by(|a, b| {
            let (x, y) = (bytes.get(a).unwrap_or(&0.0), bytes.get(b).unwrap_or(&0.0));
            x.total_cmp(y).then(b.cmp(a))
        })
    }

    /// Splits every open group of more than one cluster back into its
    /// clusters: none fits what is left to fill.
    fn dissolve(&mut self) -> Result<()> {
        self.dissolve_except(usize::MAX)
    }

    fn dissolve_except(&mut self, keep: usize) -> Result<()> {
        let split: Vec<usize> = self
            .open_groups()
            .into_iter()
            .filter(|&g| g != keep && self.members[&g].0.len() > 1)
            .collect();
        if split.is_empty() {
            return Err(Error::Mismatch(
                "the greedy mapper found no cluster to fill an element (a bug)".into(),
            ));
        }
        for g in split {
            let (members, _, _) = self.members.remove(&g).expect("a group");
            for m in members {
                self.leader.insert(m, m);
                let shapes = Shapes::from([(self.shape_of[&m], 1)]);
                self.members.insert(m, (vec![m], shapes, None));
            }
        }
        Ok(())
    }

    /// The complete groups: members in order and the shape they fill.
    fn complete(&self) -> Vec<(Vec<usize>, usize)> {
        self.members
            .values()
            .filter_map(|(m, _, bin)| bin.map(|b| (m.clone(), b)))
            .collect()
    }
}
