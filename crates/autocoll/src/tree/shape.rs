//! Tree shapes laid out over positions, position 0 being the root, and
//! the shapes of the levels of a `hier` tree (laid out by `hier.rs`).

use std::fmt;

use crate::error::{Error, Result};

/// The shape of a tree, independent of its size and root.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shape {
    /// The root sends to every other rank (the paper's "sequential" tree).
    Flat,
    /// Every rank sends to the next one.
    Chain,
    /// The chain in the opposite rank order.
    BackwardChain,
    /// Every rank sends to at most two children (heap numbering).
    Binary,
    /// Every rank sends to at most `k` children (heap numbering).
    Kary(usize),
    /// The binomial tree: a rank's largest subtree is served first.
    Binomial,
    /// The k-nomial tree of radix `k` (binomial is radix 2).
    Knomial(usize),
    /// An explicit tree: the parent position of every position, entry 0
    /// (the root) being 0. Positions count from the root, so one list
    /// serves every root.
    User(Vec<usize>),
    /// The tree that follows where the ranks run: a host's ranks under
    /// their leader, host leaders under their switch's leader, switch
    /// leaders at the top, each level in a shape of its own. Laid out over
    /// a [`crate::Layout`], not over positions (see [`Hier`]).
    Hier(Box<Hier>),
}

impl Shape {
    /// Every shape name, as implementation ids spell it.
    pub const NAMES: [&'static str; 9] = [
        "flat",
        "chain",
        "backward-chain",
        "binary",
        "kary",
        "binomial",
        "knomial",
        "user",
        "hier",
    ];

    /// The shape's name in implementation ids.
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Flat => "flat",
            Shape::Chain => "chain",
            Shape::BackwardChain => "backward-chain",
            Shape::Binary => "binary",
            Shape::Kary(_) => "kary",
            Shape::Binomial => "binomial",
            Shape::Knomial(_) => "knomial",
            Shape::User(_) => "user",
            Shape::Hier(_) => "hier",
        }
    }

    /// The fan-out or radix parameter, for the shapes that take one.
    pub fn k(&self) -> Option<usize> {
        match self {
            Shape::Kary(k) | Shape::Knomial(k) => Some(*k),
            _ => None,
        }
    }

    /// For every position, its children positions in send order.
    pub fn children_by_position(&self, size: usize) -> Result<Vec<Vec<usize>>> {
        match self {
            Shape::Flat => Ok(flat(size)),
            Shape::Chain | Shape::BackwardChain => Ok(chain(size)),
            Shape::Binary => Ok(kary(size, 2)),
            Shape::Kary(k) => {
                check_k(*k, "kary")?;
                Ok(kary(size, *k))
            }
            Shape::Binomial => Ok(knomial(size, 2)),
            Shape::Knomial(k) => {
                check_k(*k, "knomial")?;
                Ok(knomial(size, *k))
            }
            Shape::User(parents) => user(parents, size),
            Shape::Hier(_) => Err(Error::Tree(
                "hier is laid over the hosts of a layout, not over positions (Tree::build_in)"
                    .into(),
            )),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Kary(k) | Shape::Knomial(k) => write!(f, "{}(k={k})", self.name()),
            Shape::Hier(h) => write!(f, "{h}"),
            _ => f.write_str(self.name()),
        }
    }
}

fn check_k(k: usize, name: &str) -> Result<()> {
    if k < 2 {
        return Err(Error::Tree(format!("{name} needs k >= 2, got {k}")));
    }
    Ok(())
}

fn flat(size: usize) -> Vec<Vec<usize>> {
    let mut kids = vec![Vec::new(); size];
    kids[0] = (1..size).collect();
    kids
}

fn chain(size: usize) -> Vec<Vec<usize>> {
    (0..size)
        .map(|p| if p + 1 < size { vec![p + 1] } else { vec![] })
        .collect()
}

fn kary(size: usize, k: usize) -> Vec<Vec<usize>> {
    (0..size)
        .map(|p| (1..=k).map(|i| k * p + i).filter(|&c| c < size).collect())
        .collect()
}

/// Position `p`'s children are `p + d·k^j` for every digit place `k^j` below
/// the lowest non-zero digit of `p`, largest place (largest subtree) first.
fn knomial(size: usize, k: usize) -> Vec<Vec<usize>> {
    let mut top = 1;
    while top < size {
        top *= k;
    }
    (0..size)
        .map(|p| {
            let mut place = if p == 0 { top } else { lowest_place(p, k) };
            let mut kids = Vec::new();
            while place > 1 {
                place /= k;
                kids.extend((1..k).map(|d| p + d * place).filter(|&c| c < size));
            }
            kids
        })
        .collect()
}

/// The value of the lowest non-zero base-`k` digit's place of `p` (p > 0).
fn lowest_place(p: usize, k: usize) -> usize {
    let mut place = 1;
    while (p / place).is_multiple_of(k) {
        place *= k;
    }
    place
}

fn user(parents: &[usize], size: usize) -> Result<Vec<Vec<usize>>> {
    if parents.len() != size {
        return Err(Error::Tree(format!(
            "the user tree has {} positions, the communicator {size} ranks",
            parents.len()
        )));
    }
    if parents[0] != 0 {
        return Err(Error::Tree(format!(
            "the user tree's entry 0 is the root and must be 0, not {}",
            parents[0]
        )));
    }
    let mut kids = vec![Vec::new(); size];
    for (pos, &up) in parents.iter().enumerate().skip(1) {
        if up >= size || up == pos {
            return Err(Error::Tree(format!(
                "the user tree gives position {pos} the parent {up}, which is not another position below {size}"
            )));
        }
        kids[up].push(pos);
    }
    Ok(kids)
}

/// The shapes of the three levels of a `hier` tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hier {
    /// Among the ranks of one host, its leader at the root.
    pub inner: Shape,
    /// Among the leaders of the hosts on one switch (of all hosts when no
    /// switch is known).
    pub outer: Shape,
    /// Among the leaders of the switches under one switch, and at the top.
    pub top: Shape,
}

impl Default for Hier {
    /// Binomial at every level: ⌈log2 n⌉ rounds among n members, whatever
    /// the number of ranks per host or hosts per switch.
    fn default() -> Self {
        Hier {
            inner: Shape::Binomial,
            outer: Shape::Binomial,
            top: Shape::Binomial,
        }
    }
}

impl Hier {
    /// The three levels with their names, as ids spell them.
    pub fn levels(&self) -> [(&'static str, &Shape); 3] {
        [
            ("inner", &self.inner),
            ("outer", &self.outer),
            ("top", &self.top),
        ]
    }

    /// Refuses a level shape that cannot serve groups of any size: `user`
    /// (its parent list has one length) and `hier` itself; `kary` and
    /// `knomial` need k ≥ 2.
    pub fn check(&self) -> Result<()> {
        for (level, shape) in self.levels() {
            match shape {
                Shape::User(_) | Shape::Hier(_) => {
                    return Err(Error::Tree(format!(
                        "hier's {level} level cannot be `{}` (it is laid over groups of any size)",
                        shape.name()
                    )))
                }
                Shape::Kary(k) | Shape::Knomial(k) if *k < 2 => {
                    return Err(Error::Tree(format!(
                        "hier's {level} level {} needs k >= 2, got {k}",
                        shape.name()
                    )))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl fmt::Display for Hier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hier(inner={},outer={},top={})",
            self.inner, self.outer, self.top
        )
    }
}
