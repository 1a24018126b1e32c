//! `tune`'s races: a point's candidates measured together in rounds, the
//! clearly slower ones dropped as the data allows (`autocoll::measure::race`).
//! Rank 0 gets every candidate's rows, marked with its part in the race;
//! the leader reports the race after every round, so that the partial file
//! can hold a point's unfinished race and `--resume` go on with it.

use std::sync::atomic::{AtomicBool, Ordering};

use autocoll::measure::race::{Ending, Race, Rule};
use autocoll::measure::{self, Method, Options, Point};
use autocoll::Communicator;
use serde::{Deserialize, Serialize};

use crate::bench::{Row, Subject};

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
    /// The race so far.
    pub race: Race,
}

impl Saved {
    /// The saved state of `heat` on `ranks` ranks.
    pub fn of(heat: &[Point], ranks: usize, race: &Race) -> Saved {
        Saved {
            op: heat[0].imp.op.to_string(),
            ranks,
            bytes: heat[0].bytes,
            impls: heat.iter().map(|p| p.imp.to_string()).collect(),
            race: race.clone(),
        }
    }

    /// Whether it is the race of `heat` on `ranks` ranks.
    fn races(&self, heat: &[Point], ranks: usize) -> bool {
        self.ranks == ranks
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Still in at the end (a dropped candidate's figures rest on its few
    /// repetitions).
    pub live: bool,
    /// How the race ended.
    pub ending: Ending,
    /// Rounds the race ran.
    pub rounds: usize,
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
}

/// Runs every race; rank 0 hands each point's rows to `rows`, the leader
/// each round's race to `round`. An interrupted race (the stop flag, seen
/// by the leader between rounds) gives no rows: its last round's report
/// is what resumes it.
pub fn run(
    comm: &mut Communicator,
    s: &Setup,
    rows: &(dyn Fn(Vec<Row>) + Sync),
    round: &(dyn Fn(Saved) + Sync),
) -> autocoll::Result<()> {
    let ranks = comm.size();
    for (k, heat) in s.heats.iter().enumerate() {
        if !measure::agree(comm, !s.stop.load(Ordering::Relaxed))? {
            break;
        }
        let from = s
            .saved
            .iter()
            .find(|saved| saved.races(heat, ranks))
            .map(|saved| saved.race.clone());
        let mut report = |race: &Race| {
            round(Saved::of(heat, ranks, race));
            !s.stop.load(Ordering::Relaxed)
        };
        let seed = k as u64 + 1;
        let raced = measure::race_points(
            comm,
            heat,
            s.method,
            &s.opts,
            &s.rule,
            from,
            seed,
            &mut report,
        )?;
        if let Some(raced) = raced.filter(|r| r.race.ending.is_some()) {
            rows(rows_of(heat, ranks, raced));
        }
    }
    Ok(())
}

/// Every candidate's row, marked.
fn rows_of(heat: &[Point], ranks: usize, raced: measure::Raced) -> Vec<Row> {
    let ending = raced.race.ending.expect("a finished race");
    heat.iter()
        .zip(raced.measurements)
        .zip(&raced.race.live)
        .map(|((point, m), &live)| {
            let mut row = Row::new(&Subject::Ours(point.clone()), ranks, m);
            row.race = Some(Mark {
                live,
                ending,
                rounds: raced.race.rounds,
            });
            row
        })
        .collect()
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
