//! The `hier` shape: a tree that follows where the ranks run.
//!
//! The ranks are grouped level by level from the top of the job's
//! [`Layout`] down: switches by their paths (`sw0`, then `sw0/sw1`), the
//! hosts hung directly on one switch, then each host's ranks. Every group
//! is led by its first rank in the order of the (rotated) virtual-rank
//! table, and the leaders of the groups of one level hang under the
//! leader of the group above with that level's shape:
//!
//! - `inner` among the ranks of one host (the host's leader at the root),
//! - `outer` among the leaders of the hosts on one switch (of every host,
//!   when the job knows no switch),
//! - `top` among the leaders of the switches under one switch (and of the
//!   group of hosts hung on that switch directly), up to the job's top.
//!
//! The root comes first in that order, so it leads its host, its switch
//! and every switch above. A rank's children are the ones of the highest
//! level first (the farthest subtrees, which take longest, are served
//! first, as binomial serves its largest subtree first), then its host's.

use crate::error::Result;
use crate::layout::{Layout, SWITCH_SEPARATOR};
use crate::tree::shape::{Hier, Shape};

/// One group of ranks on the way from the job down to a host.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Group {
    /// The ranks under a switch, by its path up to this component.
    Switch(String),
    /// The ranks of the hosts hung directly on a switch (`None`: of the
    /// hosts of no known switch).
    HostsOf(Option<usize>),
    /// The ranks of one host.
    Host(usize),
}

/// Every rank's groups from the top down, ending with its host.
fn paths(layout: &Layout) -> Vec<Vec<Group>> {
    (0..layout.size())
        .map(|rank| {
            let switch = layout.switch(rank);
            let mut path = Vec::new();
            if let Some(id) = switch {
                let full = layout.switch_path(id);
                let mut end = 0;
                for part in full.split(SWITCH_SEPARATOR) {
                    end += part.len();
                    path.push(Group::Switch(full[..end].to_string()));
                    end += SWITCH_SEPARATOR.len_utf8();
                }
            }
            path.push(Group::HostsOf(switch));
            path.push(Group::Host(layout.host(rank)));
            path
        })
        .collect()
}

/// Every rank's children, in send order, of the `hier` tree over `layout`
/// whose ranks come in `order` (the rotated virtual-rank table: the root
/// first).
pub(super) fn children(hier: &Hier, layout: &Layout, order: &[usize]) -> Result<Vec<Vec<usize>>> {
    hier.check()?;
    let mut builder = Builder {
        hier,
        paths: paths(layout),
        children: vec![Vec::new(); layout.size()],
    };
    builder.lay(order.to_vec(), 0)?;
    Ok(builder.children)
}

struct Builder<'a> {
    hier: &'a Hier,
    paths: Vec<Vec<Group>>,
    children: Vec<Vec<usize>>,
}

impl Builder<'_> {
    /// Lays out the group whose `members` (in order, the leader first)
    /// share the first `depth` groups of their paths.
    fn lay(&mut self, members: Vec<usize>, depth: usize) -> Result<()> {
        let first = members[0];
        if self.paths[first].len() == depth {
            // One host's ranks.
            return self.arrange(&self.hier.inner.clone(), &members);
        }
        let shape = match depth.checked_sub(1).map(|d| &self.paths[first][d]) {
            Some(Group::HostsOf(_)) => self.hier.outer.clone(),
            _ => self.hier.top.clone(),
        };
        let mut groups: Vec<(Group, Vec<usize>)> = Vec::new();
        for rank in members {
            let key = &self.paths[rank][depth];
            match groups.iter_mut().find(|(k, _)| k == key) {
                Some((_, ranks)) => ranks.push(rank),
                None => groups.push((key.clone(), vec![rank])),
            }
        }
        let leaders: Vec<usize> = groups.iter().map(|(_, ranks)| ranks[0]).collect();
        self.arrange(&shape, &leaders)?;
        for (_, ranks) in groups {
            self.lay(ranks, depth + 1)?;
        }
        Ok(())
    }

    /// Hangs `ranks` (the first at the root) in `shape`: the ranks take
    /// the positions in order, or, for the backward chain, the first and
    /// then the others from the last down.
    fn arrange(&mut self, shape: &Shape, ranks: &[usize]) -> Result<()> {
        if ranks.len() < 2 {
            return Ok(());
        }
        let mut at = ranks.to_vec();
        if *shape == Shape::BackwardChain {
            at[1..].reverse();
        }
        for (pos, kids) in shape.children_by_position(at.len())?.iter().enumerate() {
            self.children[at[pos]].extend(kids.iter().map(|&k| at[k]));
        }
        Ok(())
    }
}
