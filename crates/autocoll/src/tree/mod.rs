//! Every tree the collectives run over, built as data.
//!
//! A shape is first laid out over *positions* 0..P, position 0 being the
//! root; positions are then mapped to real ranks through the virtual-rank
//! table, rotated so that the root sits at position 0. With the identity
//! table, position `v` is rank `(root + v) mod P`, as in Open MPI's
//! `coll_base_topo.c`. The result gives every rank its parent, its children
//! in the order it sends to them, and, for scatter and gather, the ranks of
//! every subtree as one contiguous run of a depth-first preorder.
//!
//! The `hier` shape is laid out over the hosts and switches of a
//! [`Layout`] instead (see [`Hier`]); the tree it gives is the same data.

mod file;
mod hier;
mod shape;
pub(crate) mod table;

use std::fmt;

pub use file::ParentList;
pub use shape::Hier;
pub use shape::Shape;

use crate::error::{Error, Result};
use crate::layout::Layout;

/// A spanning tree over the ranks of a communicator, rooted at `root`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    root: usize,
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    preorder: Vec<usize>,
    start: Vec<usize>,
    len: Vec<usize>,
}

impl Tree {
    /// Builds `shape` over `size` ranks rooted at `root`. `table`, when
    /// given, is a permutation of the ranks: the order in which they take
    /// the tree's positions (identity when absent). The ranks are taken to
    /// share one host: `hier` is then its `inner` shape.
    pub fn build(shape: &Shape, size: usize, root: usize, table: Option<&[usize]>) -> Result<Tree> {
        if size == 0 {
            return Err(Error::Tree("a communicator has at least one rank".into()));
        }
        Tree::build_in(shape, &Layout::one_host(size), root, table)
    }

    /// Builds `shape` over the ranks of `layout` rooted at `root`. Only
    /// `hier` reads where the ranks run; the other shapes only its size.
    ///
    /// For `hier`, `table` orders the ranks as for every shape (rotated to
    /// start at the root): each group of ranks (a host's, a switch's) is
    /// led by its first rank in that order and its members take the
    /// positions of their level's shape in that order, so a table that
    /// reorders the ranks of a host changes its leader and its inner tree,
    /// and one that reorders hosts changes their places among the leaders.
    pub fn build_in(
        shape: &Shape,
        layout: &Layout,
        root: usize,
        table: Option<&[usize]>,
    ) -> Result<Tree> {
        let size = layout.size();
        if root >= size {
            return Err(Error::RankOutOfRange { rank: root, size });
        }
        let order = rank_order(shape, size, root, table)?;
        let children = match shape {
            Shape::Hier(h) => hier::children(h, layout, &order)?,
            _ => by_position(&shape.children_by_position(size)?, &order),
        };
        Tree::from_children(shape, root, children)
    }

    /// The tree whose ranks have `children` (in send order), checked to
    /// reach every rank from `root`.
    fn from_children(shape: &Shape, root: usize, children: Vec<Vec<usize>>) -> Result<Tree> {
        let size = children.len();
        let mut parent = vec![None; size];
        for (rank, kids) in children.iter().enumerate() {
            for &kid in kids {
                parent[kid] = Some(rank);
            }
        }
        let mut tree = Tree {
            root,
            parent,
            children,
            preorder: Vec::with_capacity(size),
            start: vec![0; size],
            len: vec![0; size],
        };
        tree.lay_out_preorder();
        if tree.preorder.len() != size {
            return Err(Error::Tree(format!(
                "{shape} does not reach every rank: {} of {size} are connected to the root",
                tree.preorder.len()
            )));
        }
        Ok(tree)
    }

    fn lay_out_preorder(&mut self) {
        // Iterative DFS: the explicit stack holds (rank, index of next child).
        let mut stack = vec![(self.root, 0usize)];
        self.preorder.push(self.root);
        while let Some(top) = stack.len().checked_sub(1) {
            let (rank, next) = stack[top];
            if let Some(&kid) = self.children[rank].get(next) {
                stack[top].1 += 1;
                self.start[kid] = self.preorder.len();
                self.preorder.push(kid);
                stack.push((kid, 0));
            } else {
                self.len[rank] = self.preorder.len() - self.start[rank];
                stack.pop();
            }
        }
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.parent.len()
    }

    /// The root rank.
    pub fn root(&self) -> usize {
        self.root
    }

    /// `rank`'s parent; `None` for the root.
    pub fn parent(&self, rank: usize) -> Option<usize> {
        self.parent[rank]
    }

    /// `rank`'s children, in the order it sends to them.
    pub fn children(&self, rank: usize) -> &[usize] {
        &self.children[rank]
    }

    /// The ranks of `rank`'s subtree, `rank` first, in depth-first preorder
    /// (children visited in send order). Every child's subtree is a
    /// contiguous run of its parent's.
    pub fn subtree(&self, rank: usize) -> &[usize] {
        &self.preorder[self.start[rank]..self.start[rank] + self.len[rank]]
    }

    /// Where `rank`'s subtree starts within the whole tree's preorder.
    pub fn preorder_index(&self, rank: usize) -> usize {
        self.start[rank]
    }

    /// The whole tree in preorder: the root's subtree.
    pub fn preorder(&self) -> &[usize] {
        &self.preorder
    }

    /// Hops from the root to `rank`.
    pub fn level(&self, mut rank: usize) -> usize {
        let mut hops = 0;
        while let Some(up) = self.parent[rank] {
            rank = up;
            hops += 1;
        }
        hops
    }

    /// The largest number of hops from the root to any rank.
    pub fn depth(&self) -> usize {
        (0..self.size()).map(|r| self.level(r)).max().unwrap_or(0)
    }

    /// The number of communication rounds a message takes to reach every
    /// rank when each rank sends to its children one after another, one
    /// send per round: the binomial tree's ⌈log2 P⌉, the flat tree's P−1.
    pub fn rounds(&self) -> usize {
        self.receive_rounds().into_iter().max().unwrap_or(0)
    }

    /// The round in which each rank receives (indexed by rank; the root's
    /// is 0) when each rank sends to its children one after another, one
    /// send per round, starting the round after it received.
    pub fn receive_rounds(&self) -> Vec<usize> {
        let mut arrival = vec![0; self.size()];
        for &rank in &self.preorder {
            for (i, &kid) in self.children[rank].iter().enumerate() {
                arrival[kid] = arrival[rank] + i + 1;
            }
        }
        arrival
    }

    /// The largest number of children of any rank.
    pub fn fan_out(&self) -> usize {
        self.children.iter().map(Vec::len).max().unwrap_or(0)
    }
}

impl fmt::Display for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (rank, kids) in self.children.iter().enumerate() {
            writeln!(f, "{rank} -> {kids:?}")?;
        }
        Ok(())
    }
}

/// Every rank's children, from every position's and the rank at each.
fn by_position(pos_children: &[Vec<usize>], order: &[usize]) -> Vec<Vec<usize>> {
    let mut children = vec![Vec::new(); order.len()];
    for (pos, kids) in pos_children.iter().enumerate() {
        children[order[pos]].extend(kids.iter().map(|&kid| order[kid]));
    }
    children
}

/// The real rank at each tree position.
fn rank_order(
    shape: &Shape,
    size: usize,
    root: usize,
    table: Option<&[usize]>,
) -> Result<Vec<usize>> {
    let identity: Vec<usize>;
    let table = match table {
        Some(t) => {
            check_permutation(t, size)?;
            t
        }
        None => {
            identity = (0..size).collect();
            &identity
        }
    };
    let at = table
        .iter()
        .position(|&r| r == root)
        .expect("a permutation holds the root");
    let backward = matches!(shape, Shape::BackwardChain);
    Ok((0..size)
        .map(|pos| {
            let step = if backward { size - pos } else { pos };
            table[(at + step) % size]
        })
        .collect())
}

fn check_permutation(table: &[usize], size: usize) -> Result<()> {
    if table.len() != size {
        return Err(Error::Tree(format!(
            "the virtual-rank table has {} entries for {size} ranks",
            table.len()
        )));
    }
    let mut seen = vec![false; size];
    for &r in table {
        if r >= size || std::mem::replace(&mut seen[r], true) {
            return Err(Error::Tree(format!(
                "the virtual-rank table {table:?} is not a permutation of 0..{size}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
