//! `bench --best`: each point's candidates raced as `tune` races them
//! ([`autocoll_tune::race`]: interleaved rounds, the clearly slower dropped,
//! candidates that send the same messages raced once), and only the
//! winner shown. The JSON and CSV keep every candidate's row, marked with
//! its part in the race.

use std::sync::atomic::AtomicBool;

use autocoll::measure::race::Rule;
use autocoll::measure::{Machines, Method, Options};
use autocoll::Communicator;
use autocoll_tune::race::{self, Report, Saved, Setup};
use autocoll_tune::row::Row;

use super::args::{Args, Transport};
use super::plan::{Planned, Subject};
use super::report::{machine_notes, note};
use crate::failure::Failure;

/// A race's reports as the command gives them: rows and rounds to the
/// caller's sinks, machines and notes to the user.
pub(crate) struct Told<'a> {
    /// Where a point's rows go.
    pub(crate) rows: &'a (dyn Fn(Vec<Row>) + Sync),
    /// Where each round's race goes.
    pub(crate) rounds: &'a (dyn Fn(Saved) + Sync),
}

impl Report for Told<'_> {
    fn rows(&self, rows: Vec<Row>) {
        (self.rows)(rows)
    }

    fn round(&self, saved: Saved) {
        (self.rounds)(saved)
    }

    fn machines(&self, found: &Machines, method: Method) {
        machine_notes(found, &[method], true)
    }

    fn note(&self, text: &str) {
        note(text)
    }
}

/// What `--best` asks for: the method that races and the race's rule;
/// `None` without `--best`. Refuses what it cannot be combined with.
pub(super) fn race_of(a: &Args, methods: &[Method]) -> Result<Option<(Method, Rule)>, Failure> {
    if !a.best {
        return Ok(None);
    }
    let refuse = |why: &str| Err(Failure::Usage(format!("--best {why}")));
    if a.transport == Transport::Mpi {
        return refuse("races on --transport local, tcp or sim, not mpi");
    }
    if a.baseline || a.compare_truth {
        return refuse("reports one winner per point: not with --baseline or --compare-truth");
    }
    if methods.len() != 1 {
        return refuse("races the candidates with one --method, not several");
    }
    let rule = crate::args::race_rule(&a.racing, &a.stats, false)?;
    Ok(Some((methods[0], rule)))
}

/// Every rank's part: the plan's points raced, rank 0 handing each
/// point's rows to `rows`.
pub(super) fn run(
    comm: &mut Communicator,
    plan: &[Planned],
    method: Method,
    opts: &Options,
    rule: Rule,
    stop: &AtomicBool,
    rows: &(dyn Fn(Vec<Row>) + Sync),
) -> autocoll::Result<()> {
    let points = plan.iter().filter_map(|p| match &p.subject {
        Subject::Ours(point) => Some(point.clone()),
        Subject::Library(..) => None,
    });
    let heats = race::heats(points.collect());
    let setup = Setup {
        heats: &heats,
        method,
        opts: *opts,
        rule,
        saved: &[],
        stop,
        quiet: false,
        per_job: 0,
    };
    race::run(
        comm,
        &setup,
        &Told {
            rows,
            rounds: &|_| {},
        },
    )
}

/// The row of a point's winner, among its rows.
pub(super) fn winner(rows: &[Row]) -> Option<&Row> {
    let best = autocoll_tune::table::winners(rows).into_values().next()?;
    rows.iter().find(|r| r.imp == best.imp)
}
