//! A measured row: one method's figures for one implementation at one
//! point (collective, ranks, bytes, root). `bench` prints and writes
//! them, `tune` races with them and keeps the fastest, `compare` and the
//! plots read them back.

use autocoll::measure::{Flag, Measurement, Method, Point};
use serde::{Deserialize, Deserializer, Serialize};

use crate::mark::{Mark, Paired};

/// JSON has no NaN (a statistic of no kept repetition): it travels as null.
fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Option::<f64>::deserialize(d).map(|v| v.unwrap_or(f64::NAN))
}

/// One row of the results: a method at a point. Times are in seconds per
/// call; a statistic of no kept repetition is NaN.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// The collective (`bcast`, `allreduce`, ...).
    pub op: String,
    /// The implementation's id, or the MPI library's row id.
    #[serde(rename = "impl")]
    pub imp: String,
    /// Ranks of the job.
    pub ranks: usize,
    /// Bytes per rank.
    pub bytes: usize,
    /// Root of a rooted collective (0 otherwise).
    pub root: usize,
    /// The method that timed it.
    pub method: Method,
    /// Repetitions kept.
    pub reps: usize,
    /// Calls discarded (`truth`: started late or overran their window).
    pub discarded: usize,
    /// Mean time.
    #[serde(deserialize_with = "nan_if_null")]
    pub mean_s: f64,
    /// Median time.
    #[serde(deserialize_with = "nan_if_null")]
    pub median_s: f64,
    /// Least time.
    #[serde(deserialize_with = "nan_if_null")]
    pub min_s: f64,
    /// Greatest time.
    #[serde(deserialize_with = "nan_if_null")]
    pub max_s: f64,
    /// Standard deviation of the times.
    #[serde(deserialize_with = "nan_if_null")]
    pub stddev_s: f64,
    /// Lower end of the median's 95% interval.
    #[serde(deserialize_with = "nan_if_null")]
    pub ci95_lo_s: f64,
    /// Upper end of the median's 95% interval.
    #[serde(deserialize_with = "nan_if_null")]
    pub ci95_hi_s: f64,
    /// This method's error against the truth, when both ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_vs_truth: Option<f64>,
    /// The 95% interval of `error_vs_truth` when it is the median of errors
    /// paired repetition by repetition (methods measured interleaved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_ci95: Option<[f64; 2]>,
    /// `ol-i`: the mean OL_i of every rank, indexed by rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ol_i_s: Option<Vec<f64>>,
    /// `truth`: the final window between call starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    /// Every kept repetition's time.
    pub raw_s: Vec<f64>,
    /// Its part in a race, if it was raced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<Mark>,
    /// Why the figures are doubtful, if they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
}

impl Row {
    /// The row of `m`, a measurement of `imp` (its id) of collective `op`
    /// at `bytes` and `root` on `ranks` ranks.
    pub fn new(op: &str, imp: String, at: (usize, usize), ranks: usize, m: Measurement) -> Row {
        let s = m.summary;
        let (bytes, root) = at;
        Row {
            op: op.to_string(),
            imp,
            ranks,
            bytes,
            root,
            method: m.method,
            reps: m.reps,
            discarded: m.discarded,
            mean_s: s.mean,
            median_s: s.median,
            min_s: s.min,
            max_s: s.max,
            stddev_s: s.stddev,
            ci95_lo_s: s.ci95_lo,
            ci95_hi_s: s.ci95_hi,
            error_vs_truth: None,
            error_ci95: None,
            ol_i_s: m.ol_i,
            window_s: m.window,
            raw_s: m.raw,
            race: None,
            flags: m.flags,
        }
    }

    /// The row of `m`, a measurement of `point` on `ranks` ranks.
    pub fn of_point(point: &Point, ranks: usize, m: Measurement) -> Row {
        let op = point.imp.op.to_string();
        Row::new(
            &op,
            point.imp.to_string(),
            (point.bytes, point.root),
            ranks,
            m,
        )
    }

    /// Adds `flag` once.
    pub fn flag(&mut self, flag: Flag) {
        if !self.flags.contains(&flag) {
            self.flags.push(flag);
            self.flags.sort();
        }
    }

    /// Its time over `rival`'s paired by round, if its sweep paired them
    /// (a race's final, or a duel).
    pub fn paired_with(&self, rival: &str) -> Option<&Paired> {
        let p = self.race.as_ref()?.paired.as_ref()?;
        (p.against == rival && p.ratio.is_finite()).then_some(p)
    }

    /// The flags as one word: `drift+wide`, empty when clean.
    pub fn flag_text(&self) -> String {
        let names: Vec<&str> = self.flags.iter().map(|f| f.name()).collect();
        names.join("+")
    }
}
