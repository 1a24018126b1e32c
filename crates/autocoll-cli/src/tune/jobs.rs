//! Where `tune`'s races run: on threads, or over tcp in jobs the command
//! launches (a job per point by default, a race handed from job to job,
//! a final settled in jobs of its own), and a rank's part in such a job.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use autocoll::measure::race::Rule as RaceRule;
use autocoll::measure::{Method, Options, Point};
use autocoll_tune::{across, race, Row};

use super::args::{rule_of, Args};
use super::saver::Saver;
use super::sweep::Sweep;
use crate::bench::{self, RaceSink, Sink};
use crate::failure::Failure;

/// Races on `p` threads.
pub(super) fn race_local(
    ranks: bench::Ranks,
    setup: &race::Setup,
    timeout: Duration,
    told: &bench::Told,
) -> anyhow::Result<()> {
    bench::every_rank_ok(ranks.run(|mut comm| {
        comm.set_timeout(timeout);
        race::run(&mut comm, setup, told)
    }))
}

/// Races `heats` on `p` ranks over tcp, one after another, until one
/// fails or Ctrl-C: all in one job (`--one-job`), else each point in jobs
/// of its own ([`race_in_jobs`]), its rows saved once its final is settled
/// ([`settle_across_jobs`]).
pub(super) fn race_tcp(
    p: usize,
    a: &Args,
    heats: &[Vec<Point>],
    (sink, rounds, saver): (&Sink, &RaceSink, &Saver),
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    if a.one_job {
        // Rows are saved as each point finishes, whatever the job does
        // after.
        let hosts = Arc::new(Mutex::new(Vec::new()));
        let races = Some(rounds.clone());
        return bench::run_tcp(p, &a.placement, a.timeout, &[], sink.clone(), races, hosts);
    }
    for heat in heats {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let point = vec!["--point".into(), race::point_key(heat).into()];
        let mut rows = race_in_jobs(p, a, heat, &point, rounds, saver, stop)?;
        // A settling job that fails leaves the race's own final standing,
        // its rows saved.
        let settled = match a.final_jobs > 0 && !a.exhaustive {
            true => settle_across_jobs(p, a, &point, &mut rows, stop),
            false => Ok(()),
        };
        sink(rows);
        settled?;
    }
    Ok(())
}

/// The race of one point (`point`, its job's arguments), in as many jobs
/// as it hands over to ([`autocoll::measure::race::Race::hand_over`]):
/// each job after the first resumes the race its predecessor saved.
/// Rank 0's rows; none if Ctrl-C stopped it.
fn race_in_jobs(
    p: usize,
    a: &Args,
    heat: &[Point],
    point: &[std::ffi::OsString],
    rounds: &RaceSink,
    saver: &Saver,
    stop: &AtomicBool,
) -> anyhow::Result<Vec<Row>> {
    let (op, bytes) = (heat[0].imp.op.to_string(), heat[0].bytes);
    let mut extra = point.to_vec();
    let mut before = saver.progress(&op, p, bytes);
    loop {
        let job = tcp_job(p, a, &extra, Some(rounds.clone()));
        // The next job resumes from the file.
        saver.flush();
        let rows = job?;
        if !rows.is_empty() || stop.load(Ordering::Relaxed) {
            return Ok(rows);
        }
        let now = saver.progress(&op, p, bytes);
        if now.is_none() || now == before {
            anyhow::bail!(
                "the race of {op} on {p} ranks at {}: a job ended without a result and \
                 without going on with the race",
                autocoll::select::format_bytes(bytes)
            );
        }
        before = now;
        if !a.resume && !extra.iter().any(|x| x == "--resume") {
            // The next job's ranks read the saved race from the partial file.
            extra.push("--resume".into());
        }
    }
}

/// One tcp job of `p` ranks with `extra` arguments: rank 0's rows.
fn tcp_job(
    p: usize,
    a: &Args,
    extra: &[std::ffi::OsString],
    races: Option<RaceSink>,
) -> anyhow::Result<Vec<Row>> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let collect: Sink = {
        let got = got.clone();
        Arc::new(move |rows| got.lock().unwrap_or_else(|e| e.into_inner()).extend(rows))
    };
    let hosts = Arc::new(Mutex::new(Vec::new()));
    bench::run_tcp(p, &a.placement, a.timeout, extra, collect, races, hosts)?;
    let rows = std::mem::take(&mut *got.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(rows)
}

/// When the race of the point `point` (its job's arguments) went to a
/// final, or was decided late, its two finalists measured again in up to
/// `--final-jobs` jobs of their own ([`across::settle_in_jobs`]).
fn settle_across_jobs(
    p: usize,
    a: &Args,
    point: &[std::ffi::OsString],
    rows: &mut [Row],
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let job = |x: &str, y: &str, method: Method| {
        let mut extra = point.to_vec();
        extra.extend([
            "--final-of".into(),
            format!("{x},{y}").into(),
            "--final-method".into(),
            method.to_string().into(),
        ]);
        tcp_job(p, a, &extra, None)
    };
    let stopped = || stop.load(Ordering::Relaxed);
    across::settle_in_jobs(rows, a.final_jobs, stopped, job)
}

/// One rank of a tcp run: this job size's share of the sweep.
pub(super) fn as_rank(
    a: &Args,
    sweep: &Sweep,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let mut comm = crate::launch::join(Duration::from_secs(a.timeout))?;
    let method = sweep.method.unwrap_or(if comm.shared_clock() {
        Method::Truth
    } else {
        Method::OlI
    });
    let rows = |rows: Vec<Row>| bench::say(&bench::Report::Rows(rows));
    let heats = match &a.point {
        Some(key) => sweep.heat_of(comm.size(), method, key)?,
        None => sweep.heats(comm.size(), method),
    };
    // A settling job measures the two finalists of its point, every round.
    let (heats, method, rule, saved) = match (&a.final_of, a.final_method) {
        (Some(pair), Some(method)) => {
            let rule = RaceRule {
                min_reps: 1,
                max_reps: across::ROUNDS,
                eliminate: false,
                final_rounds: 0,
                ..rule_of(a)?
            };
            let heats = race::finalists_of(heats, pair)
                .map_err(|e| Failure::Usage(format!("--final-of {e}")))?;
            (heats, method, rule, &[][..])
        }
        _ => (heats, method, rule_of(a)?, &sweep.saved[..]),
    };
    let setup = race::Setup {
        heats: &heats,
        method,
        opts: *opts,
        rule,
        saved,
        stop,
        quiet: a.final_of.is_some(),
        // Race::hand_over never hands over without elimination.
        per_job: match a.point.is_some() && a.final_of.is_none() {
            true => a.rounds_per_job,
            false => 0,
        },
    };
    let rounds = |saved| bench::say(&bench::Report::Race(Box::new(saved)));
    race::run(
        &mut comm,
        &setup,
        &bench::Told {
            rows: &rows,
            rounds: &rounds,
        },
    )
    .context("running the sweep")
    .map_err(Failure::Run)?;
    Ok(ExitCode::SUCCESS)
}
