//! Summary statistics of repeated measurements: pure functions of a sample.
//!
//! The measurement loop repeats until the relative standard error
//! ([`rse`]) is small enough, and every result carries the [`Summary`] of
//! its kept repetitions (mean, median with a 95% confidence interval,
//! spread); the lottery's drift rule compares medians. Nothing here knows
//! about ranks or clocks, so every statistic is tested on plain numbers.

use serde::{Deserialize, Serialize};

/// The summary of a sample of times, in seconds. Every field is NaN for an
/// empty sample (written as `null` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Arithmetic mean.
    #[serde(deserialize_with = "null_as_nan")]
    pub mean: f64,
    /// Median (the mean of the two middle values for an even count).
    #[serde(deserialize_with = "null_as_nan")]
    pub median: f64,
    /// Smallest value.
    #[serde(deserialize_with = "null_as_nan")]
    pub min: f64,
    /// Largest value.
    #[serde(deserialize_with = "null_as_nan")]
    pub max: f64,
    /// Sample standard deviation (n − 1 in the denominator; 0 for one value).
    #[serde(deserialize_with = "null_as_nan")]
    pub stddev: f64,
    /// Lower end of a 95% confidence interval of the median.
    #[serde(deserialize_with = "null_as_nan")]
    pub ci95_lo: f64,
    /// Upper end of a 95% confidence interval of the median.
    #[serde(deserialize_with = "null_as_nan")]
    pub ci95_hi: f64,
}

/// JSON writes NaN as `null`; read it back as NaN.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Summary {
    /// Summarises `xs` (any order).
    pub fn of(xs: &[f64]) -> Summary {
        if xs.is_empty() {
            return Summary {
                mean: f64::NAN,
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
                stddev: f64::NAN,
                ci95_lo: f64::NAN,
                ci95_hi: f64::NAN,
            };
        }
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (lo, hi) = median_ci95(&sorted);
        Summary {
            mean: mean(xs),
            median: median_sorted(&sorted),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            stddev: stddev(xs),
            ci95_lo: lo,
            ci95_hi: hi,
        }
    }
}

/// A sample drifted when the medians of its first and last thirds differ
/// by more than this share of its median.
pub const DRIFT_SHARE: f64 = 0.2;

/// A median is doubtful when its 95% interval spans more than this share
/// of it.
pub const WIDE_SHARE: f64 = 0.3;

/// Whether the repetitions `raw` (in the order measured) moved while they
/// were taken: the medians of the first and the last third lie more than
/// [`DRIFT_SHARE`] of the whole median apart. Needs six values.
pub fn drifted(raw: &[f64]) -> bool {
    let third = raw.len() / 3;
    if third < 2 {
        return false;
    }
    let whole = median(raw);
    let moved = (median(&raw[raw.len() - third..]) - median(&raw[..third])).abs();
    moved > DRIFT_SHARE * whole
}

/// Whether `s`'s median is too loosely known to be shown as a clean
/// number: its 95% interval spans more than [`WIDE_SHARE`] of it.
pub fn wide(s: &Summary) -> bool {
    s.ci95_hi - s.ci95_lo > WIDE_SHARE * s.median
}

/// Arithmetic mean; NaN when empty.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation; 0 for a single value, NaN when empty.
pub fn stddev(xs: &[f64]) -> f64 {
    match xs.len() {
        0 => f64::NAN,
        1 => 0.0,
        n => {
            let m = mean(xs);
            let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
            (ss / (n - 1) as f64).sqrt()
        }
    }
}

/// Relative standard error of the mean: (s / √n) / mean. Infinite for
/// fewer than two values, so that a stopping rule never stops on one.
pub fn rse(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return f64::INFINITY;
    }
    let m = mean(xs);
    if m == 0.0 {
        return if stddev(xs) == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
    }
    (stddev(xs) / (xs.len() as f64).sqrt() / m).abs()
}

/// The median of `xs` (NaN when empty).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_sorted(&sorted)
}

fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// A distribution-free 95% confidence interval of the median, from order
/// statistics: the number of values below the true median is
/// Binomial(n, ½), so [x₍ⱼ₎, x₍ₙ₋ⱼ₊₁₎] (1-based) covers it with probability
/// 1 − 2·P(B ≤ j − 1). The largest j with coverage ≥ 95% is taken; below
/// six values no such j exists and the interval is [min, max].
fn median_ci95(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    let j = order_statistic_rank(n, 0.025).max(1);
    (sorted[j - 1], sorted[n - j])
}

/// The largest j ≥ 1 with P(B ≤ j − 1) ≤ `tail` for B ~ Binomial(n, ½), or
/// 0 when even j = 1 fails. Computed in log space, so any n works.
fn order_statistic_rank(n: usize, tail: f64) -> usize {
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0; // ln C(n, k), starting at k = 0
    let mut cdf = 0.0;
    let mut j = 0;
    for k in 0..=n / 2 {
        if k > 0 {
            ln_choose += ((n - k + 1) as f64 / k as f64).ln();
        }
        cdf += (ln_choose + ln_half_n).exp();
        if cdf > tail {
            break;
        }
        j = k + 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn known_values() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]);
        assert!(close(s.mean, 2.5));
        assert!(close(s.median, 2.5));
        assert_eq!((s.min, s.max), (1.0, 4.0));
        // Variance of 1..4 with n−1: (2.25+0.25+0.25+2.25)/3 = 5/3.
        assert!(close(s.stddev, (5.0f64 / 3.0).sqrt()));
        assert!(close(Summary::of(&[3.0, 1.0, 2.0]).median, 2.0));
        assert!(close(rse(&[1.0, 3.0]), 2f64.sqrt() / 2f64.sqrt() / 2.0));
        assert_eq!(rse(&[5.0]), f64::INFINITY);
        assert_eq!(stddev(&[5.0]), 0.0);
    }

    #[test]
    fn median_takes_the_middle_or_the_mean_of_the_two_middles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn median_interval_matches_binomial_tables() {
        // n = 10: P(B ≤ 1) = 11/1024 ≤ 0.025 < P(B ≤ 2) = 56/1024, so j = 2
        // and the interval is [x₂, x₉] (coverage 97.9%).
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Summary::of(&xs);
        assert_eq!((s.ci95_lo, s.ci95_hi), (2.0, 9.0));
        // Tables give j = 6 for n = 20 ([x₆, x₁₅]) and j = 40 for n = 100.
        assert_eq!(order_statistic_rank(20, 0.025), 6);
        assert_eq!(order_statistic_rank(100, 0.025), 40);
        // n = 6: P(B = 0) = 1/64 ≤ 0.025, so [min, max] already covers 96.9%.
        assert_eq!(order_statistic_rank(6, 0.025), 1);
        // Five values cannot give 95% (1 − 2/32 = 93.75%): fall back to min, max.
        assert_eq!(order_statistic_rank(5, 0.025), 0);
        let s = Summary::of(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.ci95_lo, s.ci95_hi), (1.0, 5.0));
        // Huge samples do not underflow.
        let j = order_statistic_rank(5000, 0.025);
        assert!((2429..=2431).contains(&j), "{j}");
    }

    #[test]
    fn a_sample_whose_last_third_moved_drifted() {
        let steady = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.02, 0.98];
        assert!(!drifted(&steady));
        let slowed = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.6, 1.7, 1.5];
        assert!(drifted(&slowed));
        // Too few values to tell thirds apart.
        assert!(!drifted(&[1.0, 1.0, 1.0, 5.0, 5.0]));
    }

    #[test]
    fn a_median_known_to_within_its_share_is_not_wide() {
        assert!(!wide(&Summary::of(&[1.0, 1.1, 0.9, 1.0, 1.05])));
        assert!(wide(&Summary::of(&[1.0, 1.5, 0.9, 1.0, 1.05])));
        assert!(!wide(&Summary::of(&[])));
    }

    #[test]
    fn empty_sample_is_nan_everywhere() {
        let s = Summary::of(&[]);
        assert!(s.mean.is_nan() && s.median.is_nan() && s.ci95_hi.is_nan());
        let text = serde_json::to_string(&s).unwrap();
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert!(back.mean.is_nan() && back.ci95_lo.is_nan());
    }
}
