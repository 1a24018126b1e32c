//! One point's winner judged by the other sweep's figures.

use std::collections::BTreeMap;

use autocoll::measure::{same, Method, Point};
use autocoll::{Algorithm, Implementation, Layout, Shape};

use crate::row::Row;
use crate::table::winners;

/// How one point's winner fares by the other sweep's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Both sweeps chose it.
    Same,
    /// Another name for the other's winner: at this point the two send the
    /// same messages.
    Alike,
    /// Within the tolerance of the other's winner, by the other's medians.
    Within,
    /// Not within the tolerance, but the other's 95% intervals of the two
    /// overlap: the other sweep could not tell them apart either.
    Overlap,
    /// Clearly slower by the other's figures (or unmeasured there).
    Differ,
}

/// One point both sweeps measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// Collective, ranks, bytes.
    pub point: (String, usize, usize),
    /// This sweep's winner.
    pub ours: String,
    /// The other's winner.
    pub theirs: String,
    /// Our winner's median over theirs, both by the other's figures (NaN
    /// when the other has no figure of ours).
    pub ratio: f64,
    /// The method the other measured its winner with.
    pub method: Method,
    /// The method this sweep measured its winner with: where it is not
    /// the other's, the two sweeps answered different questions there.
    pub our_method: Method,
    /// How it fares.
    pub agreement: Agreement,
}

/// Every point both sweeps hold, in order.
pub fn judge(ours: &[Row], theirs: &[Row], tolerance: f64) -> Vec<Judged> {
    let mine = winners(ours);
    let other = winners(theirs);
    let mut rows_of: BTreeMap<(String, usize, usize, String), &Row> = BTreeMap::new();
    for r in theirs.iter().filter(|r| r.median_s.is_finite()) {
        rows_of.insert((r.op.clone(), r.ranks, r.bytes, r.imp.clone()), r);
    }
    let mut out = Vec::new();
    for (key, best) in &other {
        let Some(our) = mine.get(key) else { continue };
        let (op, ranks, bytes) = key.clone();
        let seen = rows_of.get(&(op, ranks, bytes, our.imp.clone()));
        // A duel paired the two round by round: its ratio, not two medians.
        let paired = seen.and_then(|r| r.paired_with(&best.imp));
        let ratio = match (seen, paired) {
            (_, Some(p)) => p.ratio,
            (Some(r), None) => r.median_s / best.median_s,
            (None, None) => f64::NAN,
        };
        let agreement = if our.imp == best.imp {
            Agreement::Same
        } else if sends_alike(our, best) {
            Agreement::Alike
        } else {
            match (seen, paired) {
                (Some(_), _) if ratio <= 1.0 + tolerance => Agreement::Within,
                (Some(_), Some(p)) if p.ci95[0] <= 1.0 => Agreement::Overlap,
                (Some(r), None) if r.ci95_lo_s <= best.ci95_hi_s => Agreement::Overlap,
                _ => Agreement::Differ,
            }
        };
        out.push(Judged {
            point: key.clone(),
            ours: our.imp.clone(),
            theirs: best.imp.clone(),
            ratio,
            method: best.method,
            our_method: our.method,
            agreement,
        });
    }
    out
}

impl Judged {
    /// The method to duel the two winners with: the more trusted of the
    /// two sweeps' there. A sweep that fell back at a point did so for all
    /// its candidates when `truth` kept too few calls of any one of them
    /// (of ~70, in an exhaustive sweep); where the other sweep timed its
    /// winner with `truth`, a duel of the two asks `truth` again, and
    /// falls back itself only if it must.
    pub fn duel_method(&self) -> Method {
        let trust = |m: Method| match m {
            Method::Truth => 0,
            Method::OlI => 1,
            _ => 2,
        };
        match trust(self.our_method) < trust(self.method) {
            true => self.our_method,
            false => self.method,
        }
    }
}

/// Whether two rows' implementations send the same messages at their point.
/// A sweep's file does not say where its ranks ran, so a tree that follows
/// the hosts is never taken for another; nor is an id that does not parse
/// (a file of another version).
fn sends_alike(a: &Row, b: &Row) -> bool {
    let point = |r: &Row| {
        let imp: Implementation = r.imp.parse().ok()?;
        let hier = matches!(imp.algorithm, Algorithm::Tree(Shape::Hier(_)));
        (!hier).then_some(Point {
            imp,
            bytes: r.bytes,
            root: r.root,
        })
    };
    match (point(a), point(b)) {
        (Some(x), Some(y)) => same::alike(&x, &y, &Layout::one_host(a.ranks)).unwrap_or(false),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{agreement, row};
    use super::*;

    #[test]
    fn a_winner_is_judged_by_the_other_sweeps_own_figures() {
        let theirs = [
            row("bcast:flat", 1.00, 0.95, 1.05),
            row("bcast:chain", 1.01, 0.99, 1.03),
            row("bcast:binary", 1.10, 1.04, 1.20),
            row("bcast:binomial", 1.50, 1.40, 1.60),
        ];
        assert_eq!(agreement("bcast:flat", &theirs), Agreement::Same);
        assert_eq!(agreement("bcast:chain", &theirs), Agreement::Within);
        assert_eq!(agreement("bcast:binary", &theirs), Agreement::Overlap);
        assert_eq!(agreement("bcast:binomial", &theirs), Agreement::Differ);
        assert_eq!(
            agreement("bcast:backward-chain", &theirs),
            Agreement::Differ
        );
    }

    #[test]
    fn points_only_one_sweep_measured_are_left_out() {
        let mine = [row("bcast:flat", 1.0, 1.0, 1.0)];
        let mut other = row("bcast:flat", 1.0, 1.0, 1.0);
        other.bytes = 2048;
        assert!(judge(&mine, &[other], 0.02).is_empty());
    }
}
