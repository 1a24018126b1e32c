//! Rows for the judge's tests.

use autocoll::measure::race::Ending;

use super::judged::{judge, Agreement};
use crate::mark::{Mark, Paired};
use crate::row::Row;

/// A row of bcast on 4 ranks at 1K timed by truth: its median and its
/// median's interval.
pub fn row(imp: &str, median: f64, lo: f64, hi: f64) -> Row {
    let json = serde_json::json!({
        "op": "bcast", "impl": imp, "ranks": 4, "bytes": 1024, "root": 0,
        "method": "truth", "reps": 5, "discarded": 0, "mean_s": median,
        "median_s": median, "min_s": lo, "max_s": hi, "stddev_s": 0.0,
        "ci95_lo_s": lo, "ci95_hi_s": hi, "raw_s": [median],
    });
    serde_json::from_value(json).unwrap()
}

/// How a sweep whose winner is `ours` fares by `theirs`.
pub fn agreement(ours: &str, theirs: &[Row]) -> Agreement {
    let mine = [row(ours, 0.5, 0.5, 0.5)];
    judge(&mine, theirs, 0.02)[0].agreement
}

/// A duel job's row: its median and its time over `rival`'s paired by
/// round, out if behind (as a duel's race leaves it).
pub fn duel_row(imp: &str, median: f64, rival: &str, ratio: f64) -> Row {
    let mut r = row(imp, median, median, median);
    r.race = Some(Mark {
        live: ratio <= 1.0,
        ending: Ending::Exhausted,
        rounds: 100,
        jobs: 1,
        same_as: None,
        paired: Some(Paired {
            against: rival.into(),
            rounds: 100,
            ratio,
            ci95: [ratio * 0.98, ratio * 1.02],
            by_order: None,
        }),
        across: None,
    });
    r
}
