//! Races (see the glossary in docs/tuning.md): a point's candidates
//! measured together in rounds, the clearly slower ones dropped as the
//! data allows ([`autocoll::measure::race`]). Rank 0 gets every
//! candidate's rows, marked with its part in the race; the leader reports
//! the race after every round, so that a progress file can hold a point's
//! unfinished race and a later sweep go on with it.

use std::sync::atomic::{AtomicBool, Ordering};

use autocoll::measure::race::{Ending, Race, Rule};
use autocoll::measure::Summary;
use autocoll::measure::{self, machines, same, Flag, Machines, Method, Options, Point};
use autocoll::select::format_bytes;
use autocoll::{Communicator, Layout};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::mark::{Mark, Paired};
use crate::row::Row;

/// One point's race as the partial file keeps it: what it races and how
/// far it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    /// The collective.
    pub op: String,
    /// Ranks.
    pub ranks: usize,
    /// Bytes per rank.
    pub bytes: usize,
    /// The candidates, in the race's order.
    pub impls: Vec<String>,
    /// The method that times them (absent in files of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    /// The race so far.
    pub race: Race,
}

impl Saved {
    /// The saved state of `heat` on `ranks` ranks, timed by `method`.
    pub fn of(heat: &[Point], ranks: usize, method: Method, race: &Race) -> Saved {
        Saved {
            op: heat[0].imp.op.to_string(),
            ranks,
            bytes: heat[0].bytes,
            impls: heat.iter().map(|p| p.imp.to_string()).collect(),
            method: Some(method),
            race: race.clone(),
        }
    }

    /// Whether it is the race of `heat` on `ranks` ranks timed by `method`.
    fn races(&self, heat: &[Point], ranks: usize, method: Method) -> bool {
        self.method.is_none_or(|m| m == method)
            && self.ranks == ranks
            && self.bytes == heat[0].bytes
            && self.impls.len() == heat.len()
            && self
                .impls
                .iter()
                .zip(heat)
                .all(|(id, p)| *id == p.imp.to_string())
    }
}

impl Paired {
    /// Candidate `i`'s side of the race's final, if it was in it and a
    /// round paired the two (a method that discards calls may never have).
    fn of(heat: &[Point], race: &Race, i: usize) -> Option<Paired> {
        let last = race.last.as_ref().filter(|f| !f.ratios.is_empty())?;
        let k = last.pair.iter().position(|&p| p == i)?;
        // The final keeps the first's time over the second's.
        let ratios: Vec<f64> = match k {
            0 => last.ratios.clone(),
            _ => last.ratios.iter().map(|r| 1.0 / r).collect(),
        };
        let s = Summary::of(&ratios);
        Some(Paired {
            against: heat[last.pair[1 - k]].imp.to_string(),
            rounds: ratios.len(),
            ratio: s.median,
            ci95: [s.ci95_lo, s.ci95_hi],
            by_order: last.by_order(k),
        })
    }
}

/// What the ranks of a racing sweep share.
pub struct Setup<'a> {
    /// The points' races, each one point's candidates.
    pub heats: &'a [Vec<Point>],
    /// The method that times them.
    pub method: Method,
    /// Warm-up, calls per repetition, repetitions at most.
    pub opts: Options,
    /// When to drop and when to stop.
    pub rule: Rule,
    /// Races saved by an interrupted sweep.
    pub saved: &'a [Saved],
    /// Set to stop between rounds.
    pub stop: &'a AtomicBool,
    /// Reports nothing of crowded machines ([`Report::machines`]): a
    /// settling job, whose sweep's own job reported them already.
    pub quiet: bool,
    /// Hands a race over to a fresh job after the rounds
    /// [`Race::hand_over`] names for jobs of this many rounds (0: the
    /// whole race in this job). The race is saved; the launching process
    /// starts the next job, which goes on with it.
    pub per_job: usize,
}

/// What a race tells its caller as it goes. Only rank 0 gets rows and
/// notes, only the leader rounds; the library prints nothing.
pub trait Report: Sync {
    /// A point's rows, once its race is over.
    fn rows(&self, rows: Vec<Row>);
    /// The race of the point under way, after every round.
    fn round(&self, _saved: Saved) {}
    /// The job's machines before the first race (not when
    /// [`Setup::quiet`]): the caller says when they break `method`'s
    /// premise.
    fn machines(&self, _found: &Machines, _method: Method) {}
    /// Something the user should know, in a sentence.
    fn note(&self, _text: &str) {}
}

/// Runs every race, reporting to `report`. An interrupted race (the stop
/// flag, seen by the leader between rounds) gives no rows: its last
/// round's report is what resumes it. A point whose race ended
/// unmeasured (the method kept too few repetitions of a candidate:
/// `truth` on crowded cores) is raced again with the machines' fallback
/// ([`autocoll::measure::Machines::fallback`]), its rows flagged
/// `fallback`.
pub fn run(comm: &mut Communicator, s: &Setup, report: &dyn Report) -> autocoll::Result<()> {
    let found = Machines::of(comm)?;
    if !s.quiet && comm.rank() == 0 {
        report.machines(&found, s.method);
    }
    let job = Job {
        s,
        opts: found.options(&s.opts),
        found,
        report,
    };
    let layout = comm
        .layout()
        .cloned()
        .unwrap_or_else(|_| Layout::one_host(comm.size()));
    for (k, whole) in s.heats.iter().enumerate() {
        if !measure::agree(comm, !s.stop.load(Ordering::Relaxed))? {
            break;
        }
        // Every rank groups the candidates itself, alike (same::classes
        // depends on nothing that differs between ranks).
        let classes = if s.rule.eliminate {
            same::classes(whole, &layout)?
        } else {
            (0..whole.len()).collect()
        };
        let heat: Vec<Point> = (0..whole.len())
            .filter(|&i| classes[i] == i)
            .map(|i| whole[i].clone())
            .collect();
        let (raced, method) = job.race(comm, &heat, k as u64 + 1)?;
        if let Some(raced) = raced.filter(|r| r.race.ending.is_some()) {
            let out = with_alike(whole, &classes, rows_of(&heat, comm.size(), raced));
            report.rows(job.flagged(out, method));
        }
    }
    Ok(())
}

/// What every race of a job shares.
struct Job<'a> {
    s: &'a Setup<'a>,
    /// The job's machines.
    found: Machines,
    /// The setup's options for these machines.
    opts: Options,
    report: &'a dyn Report,
}

impl Job<'_> {
    /// One point's race with the setup's method, or with the machines'
    /// fallback when that kept too few repetitions or an earlier job's
    /// race of the point fell back already; with the method that ran.
    fn race(
        &self,
        comm: &mut Communicator,
        heat: &[Point],
        seed: u64,
    ) -> autocoll::Result<(Option<measure::Raced>, Method)> {
        let s = self.s;
        let fallback = self.found.fallback(s.method);
        // A race that fell back in an earlier job goes on with the
        // fallback (every rank reads the same saved races).
        let fell_back = fallback != s.method
            && s.saved.iter().any(|saved| {
                saved.method == Some(fallback) && saved.races(heat, comm.size(), fallback)
            });
        let mut method = if fell_back { fallback } else { s.method };
        let mut raced = self.race_one(comm, heat, method, seed)?;
        let short = raced
            .as_ref()
            .is_some_and(|r| r.race.ending == Some(Ending::Unmeasured));
        // `fell_back` is alike on every rank, so all skip the agreement.
        if !fell_back && measure::agree(comm, short)? {
            method = fallback;
            if comm.rank() == 0 {
                self.report.note(&format!(
                    "{} on {} ranks, {}: {} kept too few repetitions of some candidates; \
                     racing them again with {method} ({})",
                    heat[0].imp.op,
                    comm.size(),
                    format_bytes(heat[0].bytes),
                    s.method,
                    machines::bias(method)
                ));
            }
            raced = self.race_one(comm, heat, method, seed)?;
        }
        Ok((raced, method))
    }

    /// One point's race with `method`, going on with its saved race if
    /// any.
    fn race_one(
        &self,
        comm: &mut Communicator,
        heat: &[Point],
        method: Method,
        seed: u64,
    ) -> autocoll::Result<Option<measure::Raced>> {
        let s = self.s;
        let ranks = comm.size();
        let from = s
            .saved
            .iter()
            .find(|saved| saved.races(heat, ranks, method))
            .map(|saved| saved.race.clone());
        let mut report = |race: &Race| {
            self.report.round(Saved::of(heat, ranks, method, race));
            !s.stop.load(Ordering::Relaxed) && !race.hand_over(&s.rule, s.per_job)
        };
        measure::race_points(
            comm,
            heat,
            method,
            &self.opts,
            &s.rule,
            from,
            seed,
            &mut report,
        )
    }

    /// A point's rows, flagged when `method` (what measured them) was the
    /// fallback or does not hold on these machines.
    fn flagged(&self, mut rows: Vec<Row>, method: Method) -> Vec<Row> {
        for r in &mut rows {
            if method != self.s.method {
                r.flag(Flag::Fallback);
            } else if !self.found.holds(method) {
                r.flag(Flag::Crowded);
            }
        }
        rows
    }
}

/// Every candidate's row, marked.
fn rows_of(heat: &[Point], ranks: usize, raced: measure::Raced) -> Vec<Row> {
    let race = &raced.race;
    let ending = race.ending.expect("a finished race");
    heat.iter()
        .zip(raced.measurements)
        .enumerate()
        .map(|(i, (point, m))| {
            let mut row = Row::of_point(point, ranks, m);
            row.race = Some(Mark {
                live: race.live[i],
                ending,
                rounds: race.rounds,
                jobs: race.jobs,
                same_as: None,
                paired: Paired::of(heat, race, i),
                across: None,
            });
            row
        })
        .collect()
}

/// The rows of a whole heat from those of its raced candidates (the first
/// of each class, in order): a candidate that sends the same messages as
/// an earlier one gets that one's row under its own name, marked.
fn with_alike(whole: &[Point], classes: &[usize], raced: Vec<Row>) -> Vec<Row> {
    let mut raced = raced.into_iter();
    let mut out: Vec<Row> = Vec::with_capacity(whole.len());
    for (i, point) in whole.iter().enumerate() {
        // A class's first comes before the rest, so its row is out[first].
        let row = if classes[i] == i {
            let Some(row) = raced.next() else { break };
            row
        } else {
            let first = &out[classes[i]];
            let mut row = first.clone();
            row.imp = point.imp.to_string();
            if let Some(mark) = &mut row.race {
                mark.same_as = Some(first.imp.clone());
            }
            row
        };
        out.push(row);
    }
    out
}

/// Groups a plan's points into races: consecutive points of one
/// collective, size and root.
pub fn heats(points: Vec<Point>) -> Vec<Vec<Point>> {
    let mut out: Vec<Vec<Point>> = Vec::new();
    for p in points {
        match out.last_mut() {
            Some(heat) if same_point(&heat[0], &p) => heat.push(p),
            _ => out.push(vec![p]),
        }
    }
    out
}

fn same_point(a: &Point, b: &Point) -> bool {
    a.imp.op == b.imp.op && a.bytes == b.bytes && a.root == b.root
}

/// A race's rule: candidates within `tolerance` of the best are not told
/// apart; `min_reps` repetitions of each (`None`: the race's own 3, as a
/// bench's 5 would cost every one of ~70 candidates two more before any
/// could be dropped) before any is dropped, `max_reps` at most;
/// `final_rounds` for the final of two; `exhaustive`: no drops at all.
pub fn rule(
    tolerance: f64,
    min_reps: Option<usize>,
    max_reps: usize,
    final_rounds: usize,
    exhaustive: bool,
) -> Result<Rule, Error> {
    if !(0.0..1.0).contains(&tolerance) {
        return Err(Error::Tolerance(tolerance));
    }
    let min_reps = min_reps.unwrap_or(Rule::default().min_reps).max(1);
    Ok(Rule {
        tolerance,
        min_reps,
        max_reps: max_reps.max(min_reps),
        eliminate: !exhaustive,
        final_rounds,
    })
}

/// `OP:BYTES` of a race's point, which names it to a job of its own.
pub fn point_key(heat: &[Point]) -> String {
    heat.first()
        .map_or_else(String::new, |p| format!("{}:{}", p.imp.op, p.bytes))
}

/// The two candidates `pair` names (`A,B`) among `heats`, as the one race
/// of a settling job.
pub fn finalists_of(heats: Vec<Vec<Point>>, pair: &str) -> Result<Vec<Vec<Point>>, Error> {
    let names: Vec<&str> = pair.split(',').collect();
    let heat: Vec<Point> = heats
        .into_iter()
        .flatten()
        .filter(|p| names.contains(&p.imp.to_string().as_str()))
        .collect();
    match heat.len() {
        2 => Ok(vec![heat]),
        _ => Err(Error::FinalOf(pair.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_finalist_is_marked_with_its_own_time_over_its_rivals() {
        let heat: Vec<Point> = ["bcast:binomial", "bcast:flat", "bcast:chain"]
            .iter()
            .map(|imp| Point {
                imp: imp.parse().expect("an implementation"),
                bytes: 1024,
                root: 0,
            })
            .collect();
        let rule = Rule {
            max_reps: 4,
            ..Rule::default()
        };
        let mut race = Race::new(3);
        // chain is 10% slower than binomial in every round; flat is far
        // behind at first and then drops out of sight.
        for round in 0..40 {
            let level = if round % 2 == 0 { 1.0 } else { 1.5 };
            for i in race.contenders() {
                race.add(i, level * [1.0, 1.6, 1.1][i]);
            }
            if race.close_round(&rule) {
                break;
            }
        }
        let ours = Paired::of(&heat, &race, 0).expect("binomial in the final");
        let theirs = Paired::of(&heat, &race, 2).expect("chain in the final");
        assert_eq!(Paired::of(&heat, &race, 1), None, "flat was not");
        assert_eq!(ours.against, "bcast:chain");
        assert_eq!(theirs.against, "bcast:binomial");
        assert!((ours.ratio - 1.0 / 1.1).abs() < 1e-9, "{}", ours.ratio);
        assert!((theirs.ratio - 1.1).abs() < 1e-9, "{}", theirs.ratio);
        assert_eq!(ours.rounds, 6, "decided at the sixth pair");
    }
}
