//! `tune --against FILE`: this sweep's winners judged by another sweep of
//! the same points (typically an `--exhaustive` one), by that sweep's own
//! measurements: per point the same winner, one within the tolerance of
//! its best, one it cannot tell from its best (their 95% intervals of the
//! median overlap), or a different one. With the two sweeps' measuring
//! times, this is the evidence that racing finds what measuring everything
//! finds, in a fraction of the time.

use std::collections::BTreeMap;
use std::fmt;

use autocoll::select::format_bytes;

use super::winners;
use crate::bench::Row;

/// How one point's winner fares by the other sweep's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Both sweeps chose it.
    Same,
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
        let ratio = seen.map_or(f64::NAN, |r| r.median_s / best.median_s);
        let agreement = if our.imp == best.imp {
            Agreement::Same
        } else {
            match seen {
                Some(_) if ratio <= 1.0 + tolerance => Agreement::Within,
                Some(r) if r.ci95_lo_s <= best.ci95_hi_s => Agreement::Overlap,
                _ => Agreement::Differ,
            }
        };
        out.push(Judged {
            point: key.clone(),
            ours: our.imp.clone(),
            theirs: best.imp.clone(),
            ratio,
            agreement,
        });
    }
    out
}

/// The verdict over all points, and the time each sweep took.
pub struct Verdict {
    /// Every point both sweeps hold.
    pub points: Vec<Judged>,
    /// The tolerance used.
    pub tolerance: f64,
    /// Seconds this sweep and the other spent measuring.
    pub seconds: (f64, f64),
}

impl Verdict {
    /// Points with this agreement.
    pub fn count(&self, a: Agreement) -> usize {
        self.points.iter().filter(|j| j.agreement == a).count()
    }

    /// The share of points whose winner is the same or within the
    /// tolerance.
    pub fn agreeing(&self) -> f64 {
        let n = self.count(Agreement::Same) + self.count(Agreement::Within);
        n as f64 / self.points.len().max(1) as f64
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "against the other sweep, at {} points both measured: the same winner at {}, \
             within {:.0}% at {}, not told apart (95% intervals overlap) at {}, \
             clearly slower at {} ({:.0}% same or within)",
            self.points.len(),
            self.count(Agreement::Same),
            self.tolerance * 100.0,
            self.count(Agreement::Within),
            self.count(Agreement::Overlap),
            self.count(Agreement::Differ),
            self.agreeing() * 100.0
        )?;
        for j in self
            .points
            .iter()
            .filter(|j| j.agreement != Agreement::Same)
        {
            let (op, ranks, bytes) = &j.point;
            writeln!(
                f,
                "  {op} on {ranks} ranks at {}: {} ({:+.1}% by the other's figures) for {}",
                format_bytes(*bytes),
                j.ours,
                (j.ratio - 1.0) * 100.0,
                j.theirs
            )?;
        }
        let (ours, theirs) = self.seconds;
        write!(
            f,
            "measuring time: this sweep {ours:.0} s, the other {theirs:.0} s ({:.2} of it)",
            ours / theirs
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded pair of sweeps (docs/tuning/evidence: racing, then
    /// measuring every candidate, over tcp on 2 ranks) judged again gives
    /// the verdict recorded beside them and quoted in docs/tuning.md.
    #[test]
    fn issue20_the_recorded_sweeps_are_judged_as_the_docs_say() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tuning/evidence");
        let load = |name: &str| match super::super::load_partial(&dir.join(name)) {
            Ok(p) if !p.rows.is_empty() => p,
            _ => panic!("{name} is missing or unreadable"),
        };
        let (race, full) = (
            load("tcp-n2-race.partial.json"),
            load("tcp-n2-exhaustive.partial.json"),
        );
        let verdict = Verdict {
            points: judge(&race.rows, &full.rows, 0.02),
            tolerance: 0.02,
            seconds: (race.elapsed_s, full.elapsed_s),
        };
        assert_eq!(verdict.points.len(), 9);
        assert_eq!(verdict.count(Agreement::Differ), 1);
        let recorded = std::fs::read_to_string(dir.join("tcp-n2-verdict.txt")).unwrap();
        assert_eq!(verdict.to_string().trim_end(), recorded.trim_end());
    }

    fn row(imp: &str, median: f64, lo: f64, hi: f64) -> Row {
        let json = serde_json::json!({
            "op": "bcast", "impl": imp, "ranks": 2, "bytes": 1024, "root": 0,
            "method": "truth", "reps": 5, "discarded": 0, "mean_s": median,
            "median_s": median, "min_s": lo, "max_s": hi, "stddev_s": 0.0,
            "ci95_lo_s": lo, "ci95_hi_s": hi, "raw_s": [median],
        });
        serde_json::from_value(json).unwrap()
    }

    fn agreement(ours: &str, theirs: &[Row]) -> Agreement {
        let mine = [row(ours, 0.5, 0.5, 0.5)];
        judge(&mine, theirs, 0.02)[0].agreement
    }

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
        assert_eq!(agreement("bcast:kary:k=3", &theirs), Agreement::Differ);
    }

    #[test]
    fn points_only_one_sweep_measured_are_left_out() {
        let mine = [row("bcast:flat", 1.0, 1.0, 1.0)];
        let mut other = row("bcast:flat", 1.0, 1.0, 1.0);
        other.bytes = 2048;
        assert!(judge(&mine, &[other], 0.02).is_empty());
    }
}
