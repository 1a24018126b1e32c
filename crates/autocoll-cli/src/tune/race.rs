//! `tune`'s races: a point's candidates measured together in rounds, the
//! clearly slower ones dropped as the data allows (`autocoll::measure::race`).
//! Rank 0 gets every candidate's rows, marked with its part in the race;
//! the leader reports the race after every round, so that the partial file
//! can hold a point's unfinished race and `--resume` go on with it.

use std::sync::atomic::{AtomicBool, Ordering};

use autocoll::measure::race::{Ending, Race, Rule};
use autocoll::measure::Summary;
use autocoll::measure::{self, machines, same, Flag, Method, Options, Point};
use autocoll::select::format_bytes;
use autocoll::{Communicator, Layout};
use serde::{Deserialize, Serialize};

use crate::bench::{self, Row, Subject};

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

/// A raced candidate's part in its race.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    /// Still in at the end (a dropped candidate's figures rest on its few
    /// repetitions).
    pub live: bool,
    /// How the race ended.
    pub ending: Ending,
    /// Rounds the race ran.
    pub rounds: usize,
    /// Jobs that measured the race (over tcp a race runs in jobs of a
    /// few rounds; absent in files of earlier versions: one).
    #[serde(default = "one")]
    pub jobs: usize,
    /// Not raced: it sends the same messages as this candidate, whose
    /// figures it carries ([`autocoll::measure::same`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    /// Of the two in the race's final: its time over its rival's, paired
    /// by round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
    /// Of the two in the final (or the winner and the runner-up of a race
    /// decided late): how it fared in the jobs that settled it (tcp, a
    /// job per point; [`super::across`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across: Option<super::across::Across>,
}

fn one() -> usize {
    1
}

/// A finalist's paired comparison with its rival.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// The rival.
    pub against: String,
    /// Rounds in which both kept a repetition.
    pub rounds: usize,
    /// The median of this candidate's time over the rival's.
    pub ratio: f64,
    /// Its 95% interval.
    pub ci95: [f64; 2],
    /// The median ratio in the rounds this candidate ran first, and in
    /// those it ran second: alike unless coming first in a round costs
    /// (or gains) something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_order: Option<[f64; 2]>,
}

/// `row`'s time over `rival`'s paired by round, if its sweep paired them
/// (a race's final, or a duel).
pub fn paired_with<'a>(row: &'a Row, rival: &str) -> Option<&'a Paired> {
    let p = row.race.as_ref()?.paired.as_ref()?;
    (p.against == rival && p.ratio.is_finite()).then_some(p)
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
    /// Says nothing of crowded machines: a final's settling job, whose
    /// sweep's own job said it already (in its method's words).
    pub quiet: bool,
    /// Hands a race over to a fresh job after the rounds
    /// [`Race::hand_over`] names for jobs of this many rounds (0: the
    /// whole race in this job). The race is saved; the launching process
    /// starts the next job, which goes on with it.
    pub per_job: usize,
}

/// Runs every race; rank 0 hands each point's rows to `rows`, the leader
/// each round's race to `round`. An interrupted race (the stop flag, seen
/// by the leader between rounds) gives no rows: its last round's report
/// is what resumes it. A point whose race ended unmeasured (the method
/// kept too few repetitions of a candidate: `truth` on crowded cores) is
/// raced again with the machines' fallback ([`autocoll::measure::Machines::fallback`]), its
/// rows flagged `fallback`.
pub fn run(
    comm: &mut Communicator,
    s: &Setup,
    rows: &(dyn Fn(Vec<Row>) + Sync),
    round: &(dyn Fn(Saved) + Sync),
) -> autocoll::Result<()> {
    let found = match s.quiet {
        true => measure::Machines::of(comm)?,
        false => bench::machines(comm, &[s.method], true)?,
    };
    let opts = found.options(&s.opts);
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
        let heat = heat.as_slice();
        let fallback = found.fallback(s.method);
        // A race that fell back in an earlier job goes on with the
        // fallback (every rank reads the same saved races).
        let fell_back = fallback != s.method
            && s.saved.iter().any(|saved| {
                saved.method == Some(fallback) && saved.races(heat, comm.size(), fallback)
            });
        let mut method = if fell_back { fallback } else { s.method };
        let mut raced = race_one(comm, s, &opts, heat, method, k as u64 + 1, round)?;
        let short = raced
            .as_ref()
            .is_some_and(|r| r.race.ending == Some(Ending::Unmeasured));
        // `fell_back` is alike on every rank, so all skip the agreement.
        if !fell_back && measure::agree(comm, short)? {
            method = fallback;
            if comm.rank() == 0 {
                bench::note(&format!(
                    "{} on {} ranks, {}: {} kept too few repetitions of some candidates; \
                     racing them again with {method} ({})",
                    heat[0].imp.op,
                    comm.size(),
                    format_bytes(heat[0].bytes),
                    s.method,
                    machines::bias(method)
                ));
            }
            raced = race_one(comm, s, &opts, heat, method, k as u64 + 1, round)?;
        }
        if let Some(raced) = raced.filter(|r| r.race.ending.is_some()) {
            let mut out = with_alike(whole, &classes, rows_of(heat, comm.size(), raced));
            for r in &mut out {
                if method != s.method {
                    r.flag(Flag::Fallback);
                } else if !found.holds(method) {
                    r.flag(Flag::Crowded);
                }
            }
            rows(out);
        }
    }
    Ok(())
}

/// One point's race with `method` and `opts` (the setup's, for these
/// machines), going on with its saved race if any.
fn race_one(
    comm: &mut Communicator,
    s: &Setup,
    opts: &Options,
    heat: &[Point],
    method: Method,
    seed: u64,
    round: &(dyn Fn(Saved) + Sync),
) -> autocoll::Result<Option<measure::Raced>> {
    let ranks = comm.size();
    let from = s
        .saved
        .iter()
        .find(|saved| saved.races(heat, ranks, method))
        .map(|saved| saved.race.clone());
    let mut report = |race: &Race| {
        round(Saved::of(heat, ranks, method, race));
        !s.stop.load(Ordering::Relaxed) && !race.hand_over(&s.rule, s.per_job)
    };
    measure::race_points(comm, heat, method, opts, &s.rule, from, seed, &mut report)
}

/// Every candidate's row, marked.
fn rows_of(heat: &[Point], ranks: usize, raced: measure::Raced) -> Vec<Row> {
    let race = &raced.race;
    let ending = race.ending.expect("a finished race");
    heat.iter()
        .zip(raced.measurements)
        .enumerate()
        .map(|(i, (point, m))| {
            let mut row = Row::new(&Subject::Ours(point.clone()), ranks, m);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue20_each_finalist_is_marked_with_its_own_time_over_its_rivals() {
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
