//! A race's final settled across jobs (tcp, a job per point; "settle" in
//! the glossary of docs/tuning.md). One job's figures move with the job,
//! by more than the tolerance between close candidates. So when a point's
//! race goes to a final (or is decided only late, [`LATE_JOBS`]), its two
//! finalists (its winner and runner-up) are measured again in jobs of
//! their own, interleaved round by round, and the median job's ratio of
//! their times decides: no more jobs run once more than half agree
//! ([`decided`]). A job timed by another method than the race's counts
//! for neither, and another runs in its place ([`another`]).
//!
//! This module is pure: the launcher runs the jobs and hands their rows
//! here.

use autocoll::measure::{Method, Summary};

use crate::mark::Across;
use crate::row::Row;
use crate::table::winners;

/// Rounds of each job of the two finalists: sixty repetitions, a second
/// or less at the sizes tuned here.
pub const ROUNDS: usize = 30;

/// Jobs after which a race decided without a final is settled all the
/// same ([`finalists`]): its first job runs two rounds and each after it
/// five, so a race still going in its fifth job had two candidates too
/// close for 17 rounds to part.
pub const LATE_JOBS: usize = 5;

/// The two to settle across jobs of one point's rows and the method that
/// timed them: the two of its race's final, or, when the race was
/// decided without one in [`LATE_JOBS`] jobs or more, its winner and
/// the runner-up (of the candidates dropped last, the fastest). Such a
/// race's figures come from short jobs, a few rounds each, and a job's
/// figures move with the job.
pub fn finalists(rows: &[Row]) -> Option<(String, String, Method)> {
    let first = rows.iter().find(|r| {
        r.race
            .as_ref()
            .is_some_and(|m| m.paired.is_some() && m.same_as.is_none())
    });
    let Some(first) = first else {
        return decided_late(rows);
    };
    let rival = first.race.as_ref()?.paired.as_ref()?.against.clone();
    Some((first.imp.clone(), rival, first.method))
}

/// The winner and the runner-up of a race decided in [`LATE_JOBS`] jobs
/// or more without a final: the point's winner as the tuning file gets it
/// ([`winners`]), and of the others the fastest of those dropped
/// last (the most repetitions).
fn decided_late(rows: &[Row]) -> Option<(String, String, Method)> {
    let late = |r: &&Row| {
        r.race
            .as_ref()
            .is_some_and(|m| m.same_as.is_none() && m.jobs >= LATE_JOBS)
    };
    let winner = winners(rows).into_values().next().filter(|w| late(&w))?;
    let runner_up = rows
        .iter()
        .filter(late)
        .filter(|r| r.imp != winner.imp)
        .min_by(|a, b| b.reps.cmp(&a.reps).then(a.median_s.total_cmp(&b.median_s)))?;
    Some((winner.imp, runner_up.imp.clone(), winner.method))
}

/// One job's `a` over `b`, if it measured both: the median of their
/// ratios paired by round (the job measures the two and nothing else, so
/// its race pairs them), else of their medians (a job of an earlier
/// version). Two calls a few milliseconds apart meet the machine in the
/// same state; two medians each mix its fast and slow states in their own
/// proportions.
///
/// A job timed by another method than `method` (it fell back: `truth` on
/// crowded cores keeps its calls in some jobs and not in others) gives
/// none: its figure answers another question than the race's.
pub fn ratio(rows: &[Row], a: &str, b: &str, method: Method) -> Option<f64> {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.method == method).collect();
    let paired = rows
        .iter()
        .filter(|r| r.imp == a)
        .find_map(|r| r.paired_with(b))
        .map(|p| p.ratio)
        .filter(|x| *x > 0.0);
    if paired.is_some() {
        return paired;
    }
    let median = |id: &str| {
        rows.iter()
            .find(|r| r.imp == id)
            .map(|r| r.median_s)
            .filter(|m| m.is_finite() && *m > 0.0)
    };
    Some(median(a)? / median(b)?)
}

/// Whether `ratios` (each job's `a` over `b`) already put one side of 1
/// past half of `jobs`: then the median of all `jobs` lies on that side
/// whatever the rest say, and they need not run. A clear difference is
/// settled in five jobs of nine.
pub fn decided(ratios: &[f64], jobs: usize) -> bool {
    let below = ratios.iter().filter(|r| **r < 1.0).count();
    let above = ratios.iter().filter(|r| **r > 1.0).count();
    2 * below.max(above) > jobs
}

/// Settles the final of `rows` (when it has one, [`finalists`]) in jobs
/// of their own: `job` measures the two finalists with the race's method
/// once and returns its rows (an error ends the settling, the race's own
/// final standing); at most `jobs` jobs count ([`another`]), none after
/// `stop` says so.
pub fn settle_in_jobs<E>(
    rows: &mut [Row],
    jobs: usize,
    stop: impl Fn() -> bool,
    mut job: impl FnMut(&str, &str, Method) -> Result<Vec<Row>, E>,
) -> Result<(), E> {
    let Some((a, b, method)) = finalists(rows) else {
        return Ok(());
    };
    let mut ratios = Vec::new();
    let mut tried = 0;
    while another(&ratios, tried, jobs) && !stop() {
        let rows = job(&a, &b, method)?;
        tried += 1;
        ratios.extend(ratio(&rows, &a, &b, method));
    }
    settle(rows, &a, &b, &ratios);
    Ok(())
}

/// Whether a final's settle runs another job, after `tried` jobs of which
/// `ratios` measured both finalists with the method asked: until `jobs`
/// did, or [`decided`], and at most twice `jobs` tried. A job that fell
/// back counts for neither side, so it does not count among the `jobs`
/// either (on crowded cores `truth` gives up in some jobs).
pub fn another(ratios: &[f64], tried: usize, jobs: usize) -> bool {
    ratios.len() < jobs && tried < 2 * jobs && !decided(ratios, jobs)
}

/// Marks both finalists with the jobs' verdict (`ratios`: each job's `a`
/// over `b`) and leaves the median job's faster one the only one in.
/// Without a job's ratio, or at a ratio of exactly 1, the race's own
/// final stands.
pub fn settle(rows: &mut [Row], a: &str, b: &str, ratios: &[f64]) {
    if ratios.is_empty() {
        return;
    }
    let Summary {
        median,
        min: least,
        max: most,
        ..
    } = Summary::of(ratios);
    let ahead = match median {
        m if m < 1.0 => Some(a),
        m if m > 1.0 => Some(b),
        _ => None,
    };
    for row in rows.iter_mut() {
        let Some(mark) = row.race.as_mut() else {
            continue;
        };
        // A candidate that sends a finalist's messages carries its marks.
        let who = mark.same_as.clone().unwrap_or_else(|| row.imp.clone());
        let across = match who.as_str() {
            id if id == a => Across {
                jobs: ratios.len(),
                ratio: median,
                range: [least, most],
            },
            id if id == b => Across {
                jobs: ratios.len(),
                ratio: 1.0 / median,
                range: [1.0 / most, 1.0 / least],
            },
            _ => continue,
        };
        if let Some(ahead) = ahead {
            mark.live = who == ahead;
        }
        mark.across = Some(across);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mark::{Mark, Paired};
    use autocoll::measure::race::Ending;

    fn row(imp: &str, median: f64, paired: Option<&str>) -> Row {
        let json = serde_json::json!({
            "op": "reduce", "impl": imp, "ranks": 2, "bytes": 65536, "root": 0,
            "method": "truth", "reps": 30, "discarded": 0, "mean_s": median,
            "median_s": median, "min_s": median, "max_s": median, "stddev_s": 0.0,
            "ci95_lo_s": median, "ci95_hi_s": median, "raw_s": [median],
        });
        let mut row: Row = serde_json::from_value(json).unwrap();
        row.race = Some(Mark {
            live: paired.is_some(),
            ending: Ending::Undecided,
            rounds: 100,
            jobs: 1,
            same_as: None,
            paired: paired.map(|rival| Paired {
                against: rival.into(),
                rounds: 70,
                ratio: 0.994,
                ci95: [0.967, 1.02],
                by_order: None,
            }),
            across: None,
        });
        row
    }

    #[test]
    fn the_median_job_settles_a_final_the_race_called_level() {
        // The race's final kept seg=32K (paired 0.994); every job after it
        // had seg=32K behind.
        let mut rows = vec![
            row("reduce:flat:seg=32K", 32.0, Some("reduce:flat")),
            row("reduce:flat", 32.2, Some("reduce:flat:seg=32K")),
            row("reduce:binary", 40.0, None),
            row("reduce:chain:seg=32K", 32.0, Some("reduce:flat")),
        ];
        rows[1].race.as_mut().unwrap().live = false;
        rows[3].race.as_mut().unwrap().same_as = Some("reduce:flat:seg=32K".into());
        let (a, b, method) = finalists(&rows).unwrap();
        assert_eq!(
            (a.as_str(), b.as_str(), method),
            ("reduce:flat:seg=32K", "reduce:flat", Method::Truth)
        );
        let job = [
            row("reduce:flat:seg=32K", 31.1, None),
            row("reduce:flat", 30.0, None),
        ];
        let r = ratio(&job, &a, &b, Method::Truth).unwrap();
        assert!((r - 31.1 / 30.0).abs() < 1e-12);
        settle(&mut rows, &a, &b, &[1.004, 1.046, r, 0.99, 1.023]);
        let marks: Vec<&Mark> = rows.iter().map(|r| r.race.as_ref().unwrap()).collect();
        assert!(!marks[0].live && marks[1].live && !marks[2].live);
        let across = marks[1].across.as_ref().unwrap();
        assert_eq!(across.jobs, 5);
        assert!((across.ratio - 1.0 / 1.023).abs() < 1e-12);
        assert!((across.range[0] - 1.0 / 1.046).abs() < 1e-12);
        assert!((across.range[1] - 1.0 / 0.99).abs() < 1e-12);
        assert!(marks[0]
            .across
            .as_ref()
            .is_some_and(|x| (x.ratio - 1.023).abs() < 1e-12));
        assert!(marks[2].across.is_none());
        // Its alike follows it.
        assert!(!marks[3].live && marks[3].across == marks[0].across);
        // The tuning table follows: the settled winner is the point's.
        let best = winners(&rows);
        assert_eq!(best.values().next().unwrap().imp, "reduce:flat");
    }

    #[test]
    fn a_race_decided_late_is_settled_against_its_runner_up() {
        let raced = |jobs: usize| {
            let mut rows = vec![
                row("reduce:flat", 32.0, None),
                row("reduce:binary", 33.0, None),
                row("reduce:chain", 34.0, None),
                row("reduce:kary:k=3", 20.0, None),
                row("reduce:binomial", 32.0, None),
            ];
            for (r, reps) in rows.iter_mut().zip([30, 25, 25, 3, 30]) {
                r.reps = reps;
                let mark = r.race.as_mut().unwrap();
                mark.jobs = jobs;
                mark.ending = Ending::Alone;
            }
            rows[0].race.as_mut().unwrap().live = true;
            // The same messages as the winner: no rival of its own.
            rows[4].race.as_mut().unwrap().same_as = Some("reduce:flat".into());
            rows
        };
        // Of the two dropped last, the faster; not the one a few early
        // rounds put ahead.
        assert_eq!(
            finalists(&raced(LATE_JOBS)),
            Some(("reduce:flat".into(), "reduce:binary".into(), Method::Truth))
        );
        assert_eq!(finalists(&raced(LATE_JOBS - 1)), None, "decided early");
    }

    #[test]
    fn a_settling_job_is_read_by_its_rounds_paired() {
        // The job's medians have seg=32K 3% ahead; its rounds, paired, had
        // it 0.6% ahead (the `row` helper's pairing): the rounds decide.
        let job = [
            row("reduce:flat:seg=32K", 29.1, Some("reduce:flat")),
            row("reduce:flat", 30.0, Some("reduce:flat:seg=32K")),
        ];
        let r = ratio(&job, "reduce:flat:seg=32K", "reduce:flat", Method::Truth).unwrap();
        assert!((r - 0.994).abs() < 1e-12, "{r}");
        // A pairing with another rival is not this one's.
        let r = ratio(&job, "reduce:flat:seg=32K", "reduce:binary", Method::Truth);
        assert_eq!(r, None, "no figure of binary in the job");
        let other = [
            row("reduce:flat:seg=32K", 29.1, Some("reduce:binary")),
            row("reduce:flat", 30.0, None),
        ];
        let r = ratio(&other, "reduce:flat:seg=32K", "reduce:flat", Method::Truth).unwrap();
        assert!((r - 29.1 / 30.0).abs() < 1e-12, "by the medians: {r}");
        // A job that fell back to barrier measured something else.
        let r = ratio(&job, "reduce:flat:seg=32K", "reduce:flat", Method::Barrier);
        assert_eq!(r, None, "the job was timed by truth");
    }

    #[test]
    fn without_a_job_or_a_final_the_race_stands() {
        let mut rows = vec![
            row("reduce:flat:seg=32K", 32.0, Some("reduce:flat")),
            row("reduce:flat", 32.2, Some("reduce:flat:seg=32K")),
        ];
        rows[1].race.as_mut().unwrap().live = false;
        let marks =
            |rows: &[Row]| -> Vec<Option<Mark>> { rows.iter().map(|r| r.race.clone()).collect() };
        let before = marks(&rows);
        settle(&mut rows, "reduce:flat:seg=32K", "reduce:flat", &[]);
        assert_eq!(marks(&rows), before);
        // A level median keeps the race's choice but says so.
        settle(
            &mut rows,
            "reduce:flat:seg=32K",
            "reduce:flat",
            &[0.98, 1.0, 1.02],
        );
        assert!(rows[0].race.as_ref().unwrap().live && !rows[1].race.as_ref().unwrap().live);
        assert!(rows[1].race.as_ref().unwrap().across.is_some());
        let alone = [
            row("reduce:flat", 30.0, None),
            row("reduce:binary", 40.0, None),
        ];
        assert_eq!(finalists(&alone), None);
        assert_eq!(
            ratio(&alone, "reduce:flat", "reduce:chain", Method::Truth),
            None
        );
    }

    #[test]
    fn settling_stops_once_the_median_job_is_known() {
        assert!(!decided(&[], 9));
        assert!(!decided(&[0.9, 0.95, 1.1, 0.97], 9));
        assert!(decided(&[0.9, 0.95, 1.1, 0.97, 0.99, 0.98], 9));
        assert!(decided(&[1.01, 1.02, 1.03, 1.04, 1.05], 9));
        assert!(!decided(&[1.0, 1.0, 1.0, 1.0, 1.0], 9), "level is no side");
        // Two jobs: the median is their mean, known only when both agree.
        assert!(!decided(&[0.9], 2));
        assert!(decided(&[0.9, 0.99], 2));
        // Whenever it stops, the jobs it skipped could not move the side.
        let full = [0.97, 1.02, 0.96, 1.05, 0.99, 0.98, 1.08, 0.95, 1.01];
        let k = (1..=9).find(|&k| decided(&full[..k], 9)).unwrap();
        let side = |r: &[f64]| Summary::of(r).median < 1.0;
        assert_eq!(side(&full[..k]), side(&full), "stopped after {k}");
        assert_eq!(k, 8);
    }

    #[test]
    fn a_settling_job_that_fell_back_is_run_again() {
        // Three of the first four jobs fell back: no ratio from them.
        let got = [0.95];
        assert!(another(&got, 4, 9), "one job of nine measured");
        // Nine measured, or the side known, or eighteen tried: no more.
        let nine = [0.9, 1.1, 0.95, 1.05, 0.97, 1.02, 0.99, 1.01, 1.0];
        assert!(!another(&nine, 12, 9));
        assert!(!another(&[0.9, 0.91, 0.92, 0.93, 0.94], 7, 9));
        assert!(!another(&[0.9, 1.1], 18, 9));
        assert!(another(&[0.9, 1.1], 17, 9));
        assert!(!another(&[], 0, 0), "--final-jobs 0 settles nothing");
    }
}
