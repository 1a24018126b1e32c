//! What every rank needs to run the experiment: the broadcast, the load
//! and where it moves, the balancers; and their texts' parsers.

use std::time::Duration;

use autocoll::balance::{Mode, Params};
use autocoll::{Implementation, Shape, Tree};

use crate::Error;

/// A busy rank: `rank` works `work` before every call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// The rank that works.
    pub rank: usize,
    /// How long, before every call.
    pub work: Duration,
}

/// What every rank needs to run the experiment.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Ranks of the job.
    pub ranks: usize,
    /// Bytes per broadcast.
    pub bytes: usize,
    /// Calls per series.
    pub calls: usize,
    /// The broadcast, a tree implementation.
    pub imp: Implementation,
    /// The root of every broadcast.
    pub root: usize,
    /// The pseudo-load, if any rank is loaded.
    pub load: Option<Load>,
    /// From this call on the load is on this rank: (call, rank).
    pub moves: Option<(usize, usize)>,
    /// The balanced series' modes (identity always runs first).
    pub modes: Vec<Mode>,
    /// The balancers' parameters but their mode and channel.
    pub params: Params,
    /// Seed of the order of the series in each round.
    pub seed: u64,
    /// How long a rank waits for a peer.
    pub timeout: Duration,
}

impl Setup {
    /// The rank that works before call `k`, and how long.
    pub fn load_at(&self, k: usize) -> Option<Load> {
        let load = self.load?;
        match self.moves {
            Some((at, rank)) if k >= at => Some(Load { rank, ..load }),
            _ => Some(load),
        }
    }

    /// The series' names: identity, then each mode's.
    pub fn names(&self) -> Vec<String> {
        let modes = self.modes.iter().map(|m| m.name().to_string());
        std::iter::once("identity".to_string())
            .chain(modes)
            .collect()
    }
}

impl Load {
    /// `rank=R,work=T` (rank optional: by default the root's
    /// [`first_receiver`]) in a job of `ranks`.
    pub fn parse(text: &str, ranks: usize, root: usize) -> Result<Load, Error> {
        let bad = |why: String| {
            Error::Spec(format!(
                "{why} (expected rank=R,work=T, e.g. rank=1,work=200us)"
            ))
        };
        let (mut rank, mut work) = (None, None);
        for item in text.split(',') {
            match item.trim().split_once('=') {
                Some(("rank", r)) => rank = Some(rank_of(r, ranks).map_err(bad)?),
                Some(("work", t)) => {
                    work = Some(
                        autocoll::clock::parse_duration(t)
                            .map_err(|e| bad(format!("work={t}: {e}")))?,
                    )
                }
                _ => return Err(bad(format!("`{item}` is not rank=R or work=T"))),
            }
        }
        let work = work.ok_or_else(|| bad("no work=T".into()))?;
        let rank = rank.unwrap_or_else(|| first_receiver(ranks, root));
        Ok(Load { rank, work })
    }
}

/// `CALL:rank=R2` (the load moves to R2 from call CALL on) in a job of
/// `ranks` running `calls` calls: (CALL, R2).
pub fn moves_of(text: &str, ranks: usize, calls: usize) -> Result<(usize, usize), Error> {
    let bad = |why: String| Error::Spec(format!("{why} (expected CALL:rank=R2, e.g. 200:rank=3)"));
    let (call, rank) = text.split_once(':').ok_or_else(|| bad("no `:`".into()))?;
    let call: usize = call
        .trim()
        .parse()
        .map_err(|_| bad(format!("`{call}` is not a call number")))?;
    if call == 0 || call >= calls {
        return Err(bad(format!(
            "call {call} is not between 1 and --calls {calls} - 1"
        )));
    }
    let rank = match rank.trim().split_once('=') {
        Some(("rank", r)) => rank_of(r, ranks).map_err(bad)?,
        _ => return Err(bad(format!("`{rank}` is not rank=R2"))),
    };
    Ok((call, rank))
}

fn rank_of(text: &str, ranks: usize) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(r) if r < ranks => Ok(r),
        Ok(r) => Err(format!("rank {r} is not a rank of a {ranks}-rank job")),
        Err(_) => Err(format!("rank `{text}` is not a number")),
    }
}

/// The paper's loaded rank: the root's first receiver in the binomial
/// tree under the identity table, the child with the largest subtree (the
/// first it sends to; on ties, the earliest in send order).
pub fn first_receiver(ranks: usize, root: usize) -> usize {
    let tree =
        Tree::build(&Shape::Binomial, ranks, root, None).expect("binomial trees of any size");
    let kids = tree.children(root);
    let most = kids
        .iter()
        .map(|&k| tree.subtree(k).len())
        .max()
        .unwrap_or(0);
    kids.iter()
        .copied()
        .find(|&k| tree.subtree(k).len() == most)
        .unwrap_or(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_moves_parse_and_bad_ones_say_why() {
        let l = Load::parse("rank=3,work=200us", 8, 0).unwrap();
        assert_eq!(
            l,
            Load {
                rank: 3,
                work: Duration::from_micros(200)
            }
        );
        let by_default = Load::parse("work=1ms", 8, 0).unwrap();
        let tree = Tree::build(&Shape::Binomial, 8, 0, None).unwrap();
        assert_eq!(
            tree.subtree(by_default.rank).len(),
            4,
            "the root's largest subtree"
        );
        assert_eq!(moves_of("300:rank=5", 8, 400).ok(), Some((300, 5)));
        for (bad, says) in [
            ("rank=9,work=1ms", "not a rank"),
            ("rank=1", "no work"),
            ("speed=2", "is not rank=R"),
        ] {
            match Load::parse(bad, 8, 0) {
                Err(Error::Spec(m)) => assert!(m.contains(says), "{m}"),
                _ => panic!("load {bad} accepted"),
            }
        }
        for bad in ["400:rank=1", "x:rank=1", "10:rank=8", "10"] {
            assert!(moves_of(bad, 8, 400).is_err(), "moves {bad} accepted");
        }
    }
}
