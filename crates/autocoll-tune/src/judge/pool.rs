//! Several jobs of one sweep pooled into one set of rows.

use std::collections::BTreeMap;

use autocoll::measure::{Flag, Summary};

use crate::mark::{Mark, Paired};
use crate::row::Row;

/// Several sweeps of the same points, each a job of its own (a duel run
/// J times), as one: a row per implementation that every sweep measured,
/// its median the median of their medians and its interval their range
/// (over five jobs or more, at least a 94% interval of that median). One
/// job's figures move with the job by more than a 2% tolerance, so the
/// tolerance is judged by their median over jobs, not by one.
///
/// Jobs that fell back to another method are left out while any job
/// measured with the method asked: on crowded cores `truth` keeps its
/// calls in some jobs of a duel and not in others, and a job timed with
/// `barrier` answers another question.
pub fn pooled(sweeps: &[Vec<Row>]) -> Vec<Row> {
    let fell_back = |rows: &Vec<Row>| rows.iter().any(|r| r.flags.contains(&Flag::Fallback));
    let sweeps: Vec<&Vec<Row>> = match sweeps.iter().all(fell_back) {
        true => sweeps.iter().collect(),
        false => sweeps.iter().filter(|s| !fell_back(s)).collect(),
    };
    let key = |r: &Row| (r.op.clone(), r.ranks, r.bytes, r.root, r.imp.clone());
    let mut each: BTreeMap<_, Vec<&Row>> = BTreeMap::new();
    for rows in &sweeps {
        for r in rows.iter().filter(|r| r.median_s.is_finite()) {
            each.entry(key(r)).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for rows in each.into_values().filter(|v| v.len() == sweeps.len()) {
        let medians: Vec<f64> = rows.iter().map(|r| r.median_s).collect();
        // Every statistic is of the jobs' medians.
        let s = Summary::of(&medians);
        let mut row = rows[0].clone();
        (row.median_s, row.mean_s, row.stddev_s) = (s.median, s.mean, s.stddev);
        (row.min_s, row.max_s) = (s.min, s.max);
        (row.ci95_lo_s, row.ci95_hi_s) = (s.min, s.max);
        row.reps = rows.iter().map(|r| r.reps).sum();
        row.discarded = rows.iter().map(|r| r.discarded).sum();
        row.raw_s = medians;
        // Without every job's pairing, no job's own verdict stands.
        let unpaired = |m: &Mark| Mark {
            live: true,
            paired: None,
            ..m.clone()
        };
        row.race = pooled_mark(&rows).or_else(|| rows[0].race.as_ref().map(unpaired));
        out.push(row);
    }
    decide_paired(&mut out);
    out
}

/// The jobs' pairings of one implementation with one rival, as one: the
/// median of their paired ratios, their range its interval. None unless
/// every job paired it with the same rival (a duel).
fn pooled_mark(rows: &[&Row]) -> Option<Mark> {
    let mark = rows[0].race.as_ref()?;
    let first = mark.paired.as_ref()?;
    let each: Option<Vec<&Paired>> = rows.iter().map(|r| r.paired_with(&first.against)).collect();
    let each = each?;
    let ratios: Vec<f64> = each.iter().map(|p| p.ratio).collect();
    let s = Summary::of(&ratios);
    // Each order's median job, as the ratio's.
    let orders: Option<Vec<[f64; 2]>> = each.iter().map(|p| p.by_order).collect();
    let by_order = orders.map(|o| {
        let side = |k: usize| Summary::of(&o.iter().map(|r| r[k]).collect::<Vec<_>>()).median;
        [side(0), side(1)]
    });
    Some(Mark {
        live: true,
        rounds: rows
            .iter()
            .filter_map(|r| r.race.as_ref())
            .map(|m| m.rounds)
            .sum(),
        jobs: rows.len(),
        paired: Some(Paired {
            against: first.against.clone(),
            rounds: each.iter().map(|p| p.rounds).sum(),
            ratio: s.median,
            ci95: [s.min, s.max],
            by_order,
        }),
        ..mark.clone()
    })
}

/// Of two pooled rows paired with each other, the one behind by the
/// median job's paired ratio is out: the duel's winner is the one ahead
/// round by round, as in a race's final. Each side's median job is its
/// own, so in a dead heat both can come out a hair above 1: the one with
/// the larger ratio is behind, and the other stays the duel's winner.
fn decide_paired(rows: &mut [Row]) {
    let paired = |r: &Row| r.race.as_ref().and_then(|m| m.paired.clone());
    let behind: Vec<usize> = (0..rows.len())
        .filter(|&i| {
            let Some(p) = paired(&rows[i]) else {
                return false;
            };
            let Some(rival) = rows.iter().find(|r| r.imp == p.against) else {
                return false;
            };
            match paired(rival).filter(|q| q.against == rows[i].imp) {
                Some(q) => p.ratio > q.ratio,
                None => p.ratio > 1.0,
            }
        })
        .collect();
    for i in behind {
        if let Some(mark) = rows[i].race.as_mut() {
            mark.live = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{duel_row, row};
    use super::super::judged::{judge, Agreement};
    use super::*;
    use autocoll::measure::Method;

    #[test]
    fn a_duel_run_in_several_jobs_is_judged_by_its_median_job() {
        // Chain wins one job by 5% and trails the other two by 3%: the
        // median job has it 3% behind, beyond the tolerance, and the
        // jobs' range still has it ahead once (not told apart).
        let job = |flat: f64, chain: f64| {
            vec![
                row("bcast:flat", flat, flat, flat),
                row("bcast:chain", chain, chain, chain),
            ]
        };
        let jobs = [job(1.00, 0.95), job(1.00, 1.03), job(1.02, 1.0506)];
        let all = pooled(&jobs);
        let chain = all.iter().find(|r| r.imp == "bcast:chain").unwrap();
        assert_eq!(
            (chain.median_s, chain.ci95_lo_s, chain.ci95_hi_s),
            (1.03, 0.95, 1.0506)
        );
        assert_eq!(chain.raw_s, [0.95, 1.03, 1.0506]);
        assert_eq!(chain.reps, 15);
        let mine = [row("bcast:chain", 0.5, 0.5, 0.5)];
        let judged = &judge(&mine, &all, 0.02)[0];
        assert_eq!(
            (judged.theirs.as_str(), judged.agreement),
            ("bcast:flat", Agreement::Overlap)
        );
        assert!((judged.ratio - 1.03).abs() < 1e-12);
        // One job alone judged it the other way round.
        assert_eq!(judge(&mine, &jobs[0], 0.02)[0].agreement, Agreement::Same);
        // An implementation some job did not measure has no pooled figure.
        let partial = [job(1.0, 1.1), vec![row("bcast:flat", 1.0, 1.0, 1.0)]];
        let names: Vec<String> = pooled(&partial).into_iter().map(|r| r.imp).collect();
        assert_eq!(names, ["bcast:flat"]);
    }

    #[test]
    fn a_duel_is_judged_by_its_rounds_paired_not_by_its_medians() {
        // Each job's rounds put chain 12-15% behind binary (at 1M the
        // machine is fast or slow by turns, and both meet the same state
        // in a round), while its medians, each a mix of the two states in
        // its own proportion, put chain ahead in two jobs of three.
        let job = |chain: f64, binary: f64, paired: f64| {
            vec![
                duel_row("bcast:chain", chain, "bcast:binary", paired),
                duel_row("bcast:binary", binary, "bcast:chain", 1.0 / paired),
            ]
        };
        let jobs = [
            job(1.8, 2.9, 1.15),
            job(1.9, 3.0, 1.12),
            job(3.4, 3.0, 1.21),
        ];
        let all = pooled(&jobs);
        let get = |imp: &str| all.iter().find(|r| r.imp == imp).unwrap();
        assert!(get("bcast:chain").median_s < get("bcast:binary").median_s);
        let mark = get("bcast:chain").race.clone().unwrap();
        let paired = mark.paired.unwrap();
        assert_eq!((paired.ratio, paired.ci95), (1.15, [1.12, 1.21]));
        assert_eq!(paired.rounds, 300);
        assert!(!mark.live, "behind in the median job's rounds");
        assert!(get("bcast:binary").race.as_ref().unwrap().live);
        // The race's chain is judged slower by 15%, clearly: no job's
        // rounds had it ahead.
        let mine = [row("bcast:chain", 0.5, 0.5, 0.5)];
        let judged = &judge(&mine, &all, 0.02)[0];
        assert_eq!(judged.theirs, "bcast:binary");
        assert_eq!(judged.agreement, Agreement::Differ);
        assert!((judged.ratio - 1.15).abs() < 1e-12);
        // A race that picked binary picked the duel's winner.
        let mine = [row("bcast:binary", 0.5, 0.5, 0.5)];
        assert_eq!(judge(&mine, &all, 0.02)[0].agreement, Agreement::Same);
        // Jobs that did not pair the two are pooled by their medians, as
        // before, with no job's verdict standing.
        let mut unpaired = jobs.clone();
        unpaired[1][0].race.as_mut().unwrap().paired = None;
        let all = pooled(&unpaired);
        let chain = all.iter().find(|r| r.imp == "bcast:chain").unwrap();
        let mark = chain.race.as_ref().unwrap();
        assert!(mark.live && mark.paired.is_none());
        let judged = &judge(&[row("bcast:chain", 0.5, 0.5, 0.5)], &all, 0.02)[0];
        assert_eq!(judged.agreement, Agreement::Same, "by the medians");
    }

    #[test]
    fn a_duel_in_a_dead_heat_keeps_a_winner() {
        // Guards against a dead heat where each side's median job has it
        // a hair behind, which left a duel without a winner.
        let job = |paired: f64, back: f64| {
            vec![
                duel_row("bcast:chain", 1.0, "bcast:binary", paired),
                duel_row("bcast:binary", 1.0, "bcast:chain", back),
            ]
        };
        let jobs = [
            job(0.992, 1.008),
            job(1.000_002, 1.000_125),
            job(1.012, 0.988),
        ];
        let all = pooled(&jobs);
        let live = |imp: &str| {
            let row = all.iter().find(|r| r.imp == imp).unwrap();
            row.race.as_ref().unwrap().live
        };
        assert!(live("bcast:chain"), "the smaller ratio wins");
        assert!(!live("bcast:binary"));
        let mine = [row("bcast:chain", 0.5, 0.5, 0.5)];
        assert_eq!(judge(&mine, &all, 0.02)[0].agreement, Agreement::Same);
        let mine = [row("bcast:binary", 0.5, 0.5, 0.5)];
        assert_eq!(judge(&mine, &all, 0.02)[0].agreement, Agreement::Within);
    }

    #[test]
    fn a_duel_is_judged_by_the_jobs_of_the_method_it_asked_for() {
        // Truth kept its calls in four jobs, binary ahead in three; the
        // five others fell back to barrier, knomial ahead in all.
        let job = |paired: f64, fell_back: bool| {
            let mut rows = vec![
                duel_row("bcast:binary", 1.0, "bcast:knomial", paired),
                duel_row("bcast:knomial", 1.0, "bcast:binary", 1.0 / paired),
            ];
            for r in rows.iter_mut().filter(|_| fell_back) {
                r.method = Method::Barrier;
                r.flag(Flag::Fallback);
            }
            rows
        };
        let mut jobs: Vec<Vec<Row>> = [0.92, 0.87, 1.03, 0.88].map(|p| job(p, false)).into();
        jobs.extend([1.05, 1.06, 1.04, 1.05, 1.06].map(|p| job(p, true)));
        let all = pooled(&jobs);
        let binary = all.iter().find(|r| r.imp == "bcast:binary").unwrap();
        let paired = binary.race.as_ref().unwrap().paired.clone().unwrap();
        assert_eq!((paired.ratio, paired.ci95), (0.9, [0.87, 1.03]));
        assert_eq!(binary.method, Method::Truth);
        // Every job fell back: they are judged among themselves.
        let all = pooled(&jobs[4..]);
        let binary = all.iter().find(|r| r.imp == "bcast:binary").unwrap();
        assert!(!binary.race.as_ref().unwrap().live, "behind in every job");
    }
}
