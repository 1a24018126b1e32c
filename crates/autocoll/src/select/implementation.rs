//! One name per implementation: `<op>:<algorithm>[:<key>=<value>]*`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;
use crate::ids::{parse_bytes, Collective};
use crate::tree::{Hier, Shape};

impl Collective {
    /// The algorithms other than trees that implement this collective.
    pub fn named_algorithms(self) -> &'static [Algorithm] {
        match self {
            Collective::Allreduce => &[
                Algorithm::Ring,
                Algorithm::RecursiveDoubling,
                Algorithm::Rabenseifner,
            ],
            Collective::Allgather => &[Algorithm::Ring, Algorithm::RecursiveDoubling],
            Collective::Barrier => &[Algorithm::Dissemination],
            Collective::Alltoall => &[
                Algorithm::Pairwise,
                Algorithm::Bruck,
                Algorithm::Linear(None),
                Algorithm::TwoLevel,
            ],
            Collective::Scan | Collective::Exscan => {
                &[Algorithm::Linear(None), Algorithm::RecursiveDoubling]
            }
            Collective::ReduceScatter => &[
                Algorithm::Ring,
                Algorithm::RecursiveHalving,
                Algorithm::Pairwise,
            ],
            Collective::Allgatherv => &[Algorithm::Ring, Algorithm::RecursiveDoubling],
            Collective::Alltoallv => &[Algorithm::Pairwise, Algorithm::Linear(None)],
            _ => &[],
        }
    }
}

/// How a collective moves its data.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// The generic pipeline of the collective's data-flow pattern over a tree.
    Tree(Shape),
    /// Ring: reduce-scatter then allgather (allreduce), or P−1 shifts
    /// (allgather, and reduce-scatter's partial results). An allgather's
    /// ring takes a segment size: its blocks then flow on in segments.
    Ring,
    /// Recursive doubling: log P pairwise exchanges of everything held.
    RecursiveDoubling,
    /// Rabenseifner: reduce-scatter by recursive halving, allgather by doubling.
    Rabenseifner,
    /// Recursive halving: log P exchanges, each of half of what is held.
    RecursiveHalving,
    /// Dissemination barrier: in round j, signal rank + 2^j.
    Dissemination,
    /// Pairwise exchange: in step s, send to rank + s, receive from rank − s
    /// (alltoall's blocks, or reduce-scatter's to combine).
    Pairwise,
    /// Bruck: ⌈log₂ P⌉ rounds, each sending every block whose distance has
    /// the round's bit set; for small blocks.
    Bruck,
    /// Linear. Alltoall: every block sent straight to its rank, at most
    /// `k` sends ahead of the receives (`alltoall:linear:k=4`; without
    /// `k`, [`Algorithm::LINEAR_WINDOW`]). Scan and exscan: a pipeline
    /// along the ranks in order, segmented by `seg`.
    Linear(Option<usize>),
    /// Two-level alltoall over the hosts of the layout: the blocks between
    /// two hosts travel as one message between their leaders (each host's
    /// lowest rank), gathered from and scattered to the ranks of the
    /// host; blocks within a host go straight to their rank.
    TwoLevel,
    /// The MPI library's own algorithm (`<op>:mpi`), a candidate only where
    /// a caller supplies it: the interposition library `autocoll-mpi` runs
    /// it as `PMPI_<Op>` through [`crate::Communicator::run_raw`].
    Native,
}

impl Algorithm {
    /// How many blocks `alltoall:linear` without `k` sends before it waits
    /// for the first of the matching receives: MPICH's default throttle
    /// (`MPIR_CVAR_ALLTOALL_THROTTLE`). On 33 ranks or fewer every block is
    /// in flight at once, which kept the links busiest where measured.
    pub const LINEAR_WINDOW: usize = 32;

    /// The sends `alltoall:linear` keeps ahead of its receives on `ranks`
    /// ranks (at least one).
    pub fn window(&self, ranks: usize) -> usize {
        let k = match self {
            Algorithm::Linear(k) => k.unwrap_or(Self::LINEAR_WINDOW),
            _ => 1,
        };
        k.min(ranks.saturating_sub(1)).max(1)
    }

    /// The algorithm's name in implementation ids.
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Tree(shape) => shape.name(),
            Algorithm::Ring => "ring",
            Algorithm::RecursiveDoubling => "recursive-doubling",
            Algorithm::Rabenseifner => "rabenseifner",
            Algorithm::RecursiveHalving => "recursive-halving",
            Algorithm::Dissemination => "dissemination",
            Algorithm::Pairwise => "pairwise",
            Algorithm::Bruck => "bruck",
            Algorithm::Linear(_) => "linear",
            Algorithm::TwoLevel => "two-level",
            Algorithm::Native => "mpi",
        }
    }
}

/// One choice of how to run a collective: operation, algorithm, parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Implementation {
    /// The collective.
    pub op: Collective,
    /// The algorithm or tree shape.
    pub algorithm: Algorithm,
    /// Segment size in bytes for pipelined tree algorithms; `None` sends
    /// every message whole.
    pub seg: Option<usize>,
}

impl Implementation {
    /// A tree implementation, checked for consistency.
    pub fn tree(op: Collective, shape: Shape, seg: Option<usize>) -> Result<Self, Error> {
        Self::new(op, Algorithm::Tree(shape), seg)
    }

    /// An implementation, checked for consistency.
    pub fn new(op: Collective, algorithm: Algorithm, seg: Option<usize>) -> Result<Self, Error> {
        let imp = Implementation { op, algorithm, seg };
        imp.validate()?;
        Ok(imp)
    }

    /// The MPI library's own `op` (`<op>:mpi`).
    pub fn native(op: Collective) -> Self {
        Implementation {
            op,
            algorithm: Algorithm::Native,
            seg: None,
        }
    }

    /// The tree shape, for tree algorithms.
    pub fn shape(&self) -> Option<&Shape> {
        match &self.algorithm {
            Algorithm::Tree(s) => Some(s),
            _ => None,
        }
    }

    /// Why a tree algorithm does not fit its op, if it does not.
    fn validate_tree(&self, shape: &Shape) -> Result<(), String> {
        if !self.op.over_trees() {
            return Err(format!(
                "{} runs over no tree (its algorithms: {})",
                self.op,
                named_list(self.op)
            ));
        }
        if let Some(k) = shape.k() {
            if k < 2 {
                return Err(format!("k must be at least 2, got {k}"));
            }
        }
        if self.op == Collective::Barrier && self.seg.is_some() {
            return Err("a barrier carries no data to segment".into());
        }
        if let Shape::Hier(h) = shape {
            h.check().map_err(|e| match e {
                Error::Tree(why) => why,
                other => other.to_string(),
            })?;
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), Error> {
        let fail = |reason: String| Error::ParseImpl {
            input: self.to_string(),
            reason,
        };
        match &self.algorithm {
            Algorithm::Tree(shape) => self.validate_tree(shape).map_err(fail)?,
            Algorithm::Native => {
                if self.seg.is_some() {
                    return Err(fail("`mpi` takes no segment size".into()));
                }
            }
            Algorithm::Linear(Some(0)) => {
                return Err(fail("linear keeps k ≥ 1 sends in flight".into()));
            }
            Algorithm::Linear(Some(_)) if self.op.regular() != Collective::Alltoall => {
                return Err(fail(format!("{}'s `linear` takes no k", self.op)));
            }
            Algorithm::Linear(_) if self.op.scans() => {}
            Algorithm::Ring if self.op.regular() == Collective::Allgather => {}
            other => {
                let plain = match other {
                    Algorithm::Linear(_) => &Algorithm::Linear(None),
                    other => other,
                };
                if !self.op.named_algorithms().contains(plain) {
                    return Err(fail(format!(
                        "{} has no algorithm `{}`{}",
                        self.op,
                        other.name(),
                        match self.op.over_trees() {
                            true => String::new(),
                            false => format!(" (its algorithms: {})", named_list(self.op)),
                        }
                    )));
                }
                if self.seg.is_some() {
                    return Err(fail(format!("`{}` takes no segment size", other.name())));
                }
            }
        }
        if self.seg == Some(0) {
            return Err(fail("a segment holds at least one byte".into()));
        }
        Ok(())
    }

    /// Every implementation of `op` that `all` stands for: every tree shape
    /// (kary with k=3, knomial with k=4, hier binomial at every level;
    /// `user` needs a parent list and is left out) unsegmented and at each
    /// of `segs`, then the named algorithms (a scan's `linear` and an
    /// allgather's `ring` at each of `segs` too).
    pub fn all(op: Collective, segs: &[usize]) -> Vec<Implementation> {
        let shapes = [
            Shape::Flat,
            Shape::Chain,
            Shape::BackwardChain,
            Shape::Binary,
            Shape::Kary(3),
            Shape::Binomial,
            Shape::Knomial(4),
            Shape::Hier(Box::default()),
        ];
        let seg_choices: Vec<Option<usize>> = if op == Collective::Barrier {
            vec![None]
        } else {
            std::iter::once(None)
                .chain(segs.iter().map(|&s| Some(s)))
                .collect()
        };
        let mut out = Vec::new();
        let shapes = if op.over_trees() { &shapes[..] } else { &[] };
        for shape in shapes {
            for &seg in &seg_choices {
                out.push(Implementation {
                    op,
                    algorithm: Algorithm::Tree(shape.clone()),
                    seg,
                });
            }
        }
        out.extend(op.named_algorithms().iter().map(|a| Implementation {
            op,
            algorithm: a.clone(),
            seg: None,
        }));
        if op.regular() == Collective::Alltoall {
            out.push(Implementation {
                op,
                algorithm: Algorithm::Linear(Some(2)),
                seg: None,
            });
        }
        let segmented = match op.regular() {
            _ if op.scans() => Some(Algorithm::Linear(None)),
            Collective::Allgather => Some(Algorithm::Ring),
            _ => None,
        };
        if let Some(algorithm) = segmented {
            out.extend(segs.iter().map(|&s| Implementation {
                op,
                algorithm: algorithm.clone(),
                seg: Some(s),
            }));
        }
        out
    }
}

/// The named algorithms of `op`, as a list for messages.
fn named_list(op: Collective) -> String {
    let names: Vec<_> = op.named_algorithms().iter().map(Algorithm::name).collect();
    names.join(", ")
}

/// Prints a byte count as implementation ids do: `16K`, `1M`, or bytes.
pub fn format_bytes(n: usize) -> String {
    const M: usize = 1 << 20;
    const K: usize = 1 << 10;
    if n > 0 && n.is_multiple_of(M) {
        format!("{}M", n / M)
    } else if n > 0 && n.is_multiple_of(K) {
        format!("{}K", n / K)
    } else {
        n.to_string()
    }
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.op, self.algorithm.name())?;
        if let Algorithm::Tree(shape) = &self.algorithm {
            if let Some(k) = shape.k() {
                write!(f, ":k={k}")?;
            }
            if let Shape::Hier(h) = shape {
                for (level, s) in h.levels() {
                    write!(f, ":{level}={}", level_shape(s))?;
                }
            }
        }
        if let Algorithm::Linear(Some(k)) = &self.algorithm {
            write!(f, ":k={k}")?;
        }
        if let Some(seg) = self.seg {
            write!(f, ":seg={}", format_bytes(seg))?;
        }
        if let Algorithm::Tree(Shape::User(parents)) = &self.algorithm {
            let list: Vec<String> = parents.iter().map(usize::to_string).collect();
            write!(f, ":parents={}", list.join("."))?;
        }
        Ok(())
    }
}

impl FromStr for Implementation {
    type Err = Error;
    fn from_str(input: &str) -> Result<Self, Error> {
        let fail = |reason: String| Error::ParseImpl {
            input: input.to_string(),
            reason,
        };
        let mut parts = input.split(':');
        let op: Collective = parts.next().unwrap_or("").parse().map_err(fail)?;
        let alg = parts.next().ok_or_else(|| {
            fail("missing the algorithm after the operation (e.g. `bcast:binomial`)".into())
        })?;
        let mut params = Params::default();
        for part in parts {
            params.add(part).map_err(fail)?;
        }
        let algorithm = params.algorithm(alg).map_err(fail)?;
        let imp = Implementation {
            op,
            algorithm,
            seg: params.seg,
        };
        imp.validate().map_err(|e| match e {
            Error::ParseImpl { reason, .. } => fail(reason),
            other => other,
        })?;
        Ok(imp)
    }
}

/// A level of `hier` as ids spell it: the shape's name, with k right
/// after it for kary and knomial (`knomial4`).
fn level_shape(shape: &Shape) -> String {
    match shape.k() {
        Some(k) => format!("{}{k}", shape.name()),
        None => shape.name().to_string(),
    }
}

/// Parses what [`level_shape`] prints.
fn parse_level(level: &str, value: &str) -> Result<Shape, String> {
    let name = value.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &value[name.len()..];
    let k = || -> Result<usize, String> {
        match digits.parse() {
            Ok(k) => Ok(k),
            Err(_) if digits.is_empty() => Err(format!(
                "{level}=`{value}`: {name} needs its k, e.g. {name}4"
            )),
            Err(_) => Err(format!("{level}=`{value}`: k is too large")),
        }
    };
    let plain = |shape: Shape| -> Result<Shape, String> {
        match digits.is_empty() {
            true => Ok(shape),
            false => Err(format!("{level}=`{value}`: {name} takes no k")),
        }
    };
    match name {
        "flat" => plain(Shape::Flat),
        "chain" => plain(Shape::Chain),
        "backward-chain" => plain(Shape::BackwardChain),
        "binary" => plain(Shape::Binary),
        "binomial" => plain(Shape::Binomial),
        "kary" => Ok(Shape::Kary(k()?)),
        "knomial" => Ok(Shape::Knomial(k()?)),
        _ => Err(format!(
            "{level}=`{value}` is not a level shape (flat, chain, backward-chain, binary, kary<k>, binomial, knomial<k>)"
        )),
    }
}

#[derive(Default)]
struct Params {
    k: Option<usize>,
    seg: Option<usize>,
    parents: Option<Vec<usize>>,
    inner: Option<Shape>,
    outer: Option<Shape>,
    top: Option<Shape>,
}

impl Params {
    fn add(&mut self, part: &str) -> Result<(), String> {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("parameter `{part}` is not key=value"))?;
        let dup = || format!("parameter `{key}` is given twice");
        match key {
            "k" => {
                let k = value
                    .parse()
                    .map_err(|_| format!("k=`{value}` is not a whole number"))?;
                self.k.replace(k).map_or(Ok(()), |_| Err(dup()))
            }
            "seg" => {
                let seg = parse_bytes(value)?;
                self.seg.replace(seg).map_or(Ok(()), |_| Err(dup()))
            }
            "parents" => {
                let list = value
                    .split('.')
                    .map(|v| {
                        v.parse()
                            .map_err(|_| format!("parents: `{v}` is not a position"))
                    })
                    .collect::<Result<Vec<usize>, _>>()?;
                self.parents.replace(list).map_or(Ok(()), |_| Err(dup()))
            }
            "inner" | "outer" | "top" => {
                let shape = parse_level(key, value)?;
                let slot = match key {
                    "inner" => &mut self.inner,
                    "outer" => &mut self.outer,
                    _ => &mut self.top,
                };
                slot.replace(shape).map_or(Ok(()), |_| Err(dup()))
            }
            other => Err(format!(
                "unknown parameter `{other}` (known: k, seg, parents, inner, outer, top)"
            )),
        }
    }

    fn algorithm(&mut self, name: &str) -> Result<Algorithm, String> {
        let shape = match name {
            "flat" => Shape::Flat,
            "chain" => Shape::Chain,
            "backward-chain" => Shape::BackwardChain,
            "binary" => Shape::Binary,
            "binomial" => Shape::Binomial,
            "kary" => Shape::Kary(self.k.take().ok_or("kary needs k=<fan-out>")?),
            "knomial" => Shape::Knomial(self.k.take().ok_or("knomial needs k=<radix>")?),
            "user" => Shape::User(
                self.parents
                    .take()
                    .ok_or("user needs parents=<p0.p1....> (parent position of each position)")?,
            ),
            "hier" => {
                let default = Hier::default();
                Shape::Hier(Box::new(Hier {
                    inner: self.inner.take().unwrap_or(default.inner),
                    outer: self.outer.take().unwrap_or(default.outer),
                    top: self.top.take().unwrap_or(default.top),
                }))
            }
            "ring" => return self.named(Algorithm::Ring),
            "recursive-doubling" => return self.named(Algorithm::RecursiveDoubling),
            "rabenseifner" => return self.named(Algorithm::Rabenseifner),
            "recursive-halving" => return self.named(Algorithm::RecursiveHalving),
            "dissemination" => return self.named(Algorithm::Dissemination),
            "pairwise" => return self.named(Algorithm::Pairwise),
            "bruck" => return self.named(Algorithm::Bruck),
            "two-level" => return self.named(Algorithm::TwoLevel),
            "linear" => {
                let k = self.k.take();
                return self.named(Algorithm::Linear(k));
            }
            "mpi" => return self.named(Algorithm::Native),
            other => return Err(format!("unknown algorithm `{other}`")),
        };
        self.leftovers(name)?;
        Ok(Algorithm::Tree(shape))
    }

    fn named(&mut self, alg: Algorithm) -> Result<Algorithm, String> {
        self.leftovers(alg.name())?;
        Ok(alg)
    }

    fn leftovers(&self, name: &str) -> Result<(), String> {
        if self.k.is_some() {
            return Err(format!("`{name}` takes no k"));
        }
        if self.parents.is_some() {
            return Err(format!("`{name}` takes no parents"));
        }
        if self.inner.is_some() || self.outer.is_some() || self.top.is_some() {
            return Err(format!("`{name}` takes no inner, outer or top (hier does)"));
        }
        Ok(())
    }
}

impl Serialize for Implementation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Implementation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
