//! The verdict of one sweep judged by another, as text.

use std::fmt;

use autocoll::select::format_bytes;

use super::judged::{Agreement, Judged};

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

    /// The points whose winners differ (neither the same nor another name
    /// for the same messages), a line each: collective, ranks, bytes, our
    /// winner, the other's and the method to duel them with
    /// ([`Judged::duel_method`]), tab-separated.
    pub fn differing(&self) -> String {
        let apart = |j: &&Judged| !matches!(j.agreement, Agreement::Same | Agreement::Alike);
        let mut out = String::new();
        for j in self.points.iter().filter(apart) {
            let (op, ranks, bytes) = &j.point;
            out += &format!(
                "{op}\t{ranks}\t{}\t{}\t{}\t{}\n",
                format_bytes(*bytes),
                j.ours,
                j.theirs,
                j.duel_method()
            );
        }
        out
    }

    /// The share of points whose winner is the same (by name or by its
    /// messages) or within the tolerance.
    pub fn agreeing(&self) -> f64 {
        let n = self.count(Agreement::Same)
            + self.count(Agreement::Alike)
            + self.count(Agreement::Within);
        n as f64 / self.points.len().max(1) as f64
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "against the other sweep, at {} points both measured: the same winner at {} \
             ({} of them by another name: the same messages), \
             within {:.0}% at {}, not told apart (95% intervals overlap) at {}, \
             clearly slower at {} ({:.0}% same or within)",
            self.points.len(),
            self.count(Agreement::Same) + self.count(Agreement::Alike),
            self.count(Agreement::Alike),
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
            if j.agreement == Agreement::Alike {
                writeln!(
                    f,
                    "  {op} on {ranks} ranks at {}: {}, the same messages as {}",
                    format_bytes(*bytes),
                    j.ours,
                    j.theirs
                )?;
                continue;
            }
            // The other sweep may not have timed our pick at all.
            let figure = match j.ratio.is_finite() {
                true => format!("{:+.1}% by the other's figures", (j.ratio - 1.0) * 100.0),
                false => "not timed by the other".to_string(),
            };
            write!(
                f,
                "  {op} on {ranks} ranks at {}: {} ({figure}) for {}",
                format_bytes(*bytes),
                j.ours,
                j.theirs
            )?;
            match j.our_method == j.method {
                true => writeln!(f)?,
                false => writeln!(f, " (timed by {} here, {} there)", j.our_method, j.method)?,
            }
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
    use super::super::fixtures::{agreement, row};
    use super::super::judged::judge;
    use super::*;
    use autocoll::measure::Method;

    #[test]
    fn another_name_for_the_same_messages_is_the_same_winner() {
        // On 4 ranks the 3-ary tree is the flat tree: the other sweep never
        // measured it, yet it is its winner.
        let theirs = [
            row("bcast:flat", 1.00, 0.95, 1.05),
            row("bcast:chain", 1.50, 1.40, 1.60),
        ];
        assert_eq!(agreement("bcast:kary:k=3", &theirs), Agreement::Alike);
        let verdict = Verdict {
            points: judge(&[row("bcast:kary:k=3", 0.5, 0.5, 0.5)], &theirs, 0.02),
            tolerance: 0.02,
            seconds: (1.0, 4.0),
        };
        assert_eq!(verdict.agreeing(), 1.0);
    }

    #[test]
    fn the_points_whose_winners_differ_are_listed_for_a_duel() {
        let theirs = [
            row("bcast:flat", 1.00, 0.95, 1.05),
            row("bcast:chain", 1.50, 1.40, 1.60),
        ];
        let judged = |ours: &str| Verdict {
            points: judge(&[row(ours, 0.5, 0.5, 0.5)], &theirs, 0.02),
            tolerance: 0.02,
            seconds: (1.0, 4.0),
        };
        assert_eq!(
            judged("bcast:chain").differing(),
            "bcast\t4\t1K\tbcast:chain\tbcast:flat\ttruth\n"
        );
        // The same winner, or another name for its messages: no duel.
        assert_eq!(judged("bcast:flat").differing(), "");
        assert_eq!(judged("bcast:kary:k=3").differing(), "");
    }

    #[test]
    fn a_duel_asks_the_more_trusted_method_of_the_two_sweeps() {
        // The race timed the point with truth, the reference fell back to
        // barrier for every candidate: a duel by barrier would ask
        // another question than the race answered.
        let timed = |imp: &str, m: Method| {
            let mut r = row(imp, 1.0, 0.95, 1.05);
            r.method = m;
            r
        };
        let judged = |ours: Method, theirs: Method| Verdict {
            points: judge(
                &[timed("bcast:chain", ours)],
                &[timed("bcast:flat", theirs), timed("bcast:chain", theirs)],
                0.0,
            ),
            tolerance: 0.0,
            seconds: (1.0, 4.0),
        };
        let verdict = judged(Method::Truth, Method::Barrier);
        assert_eq!(
            verdict.differing(),
            "bcast\t4\t1K\tbcast:chain\tbcast:flat\ttruth\n"
        );
        assert!(verdict
            .to_string()
            .contains("for bcast:flat (timed by truth here, barrier there)\n"));
        // The other way round, truth too; ol-i before barrier.
        let duel = |ours, theirs| judged(ours, theirs).points[0].duel_method();
        assert_eq!(duel(Method::Barrier, Method::Truth), Method::Truth);
        assert_eq!(duel(Method::OlI, Method::Barrier), Method::OlI);
        assert_eq!(duel(Method::Barrier, Method::OlI), Method::OlI);
        // Timed alike: no word of it.
        let verdict = judged(Method::Barrier, Method::Barrier);
        assert!(verdict.differing().ends_with("\tbarrier\n"));
        assert!(!verdict.to_string().contains("timed by"));
    }
}
