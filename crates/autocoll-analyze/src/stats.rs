//! Statistics over calls in bounded memory: Welford's running mean and
//! variance, and percentiles from a log-bucketed histogram.
//!
//! A trace holds 10^5–10^6 calls; keeping every value of every quantity
//! would make memory grow with the trace. A [`Stat`] keeps the count, mean,
//! sum of squared deviations, min and max exactly, and counts values in
//! buckets whose bounds grow by γ = 1.0202 (the DDSketch layout): a
//! percentile read from the bucket's midpoint is within 1% of the value it
//! stands for. Its size depends on the range of the values (about 115
//! buckets per factor of ten), not on how many there are.
//!
//! Values are nanoseconds; negative values (a difference of two clocks
//! whose offset was estimated) get a mirrored histogram of their own.

use serde::Serialize;

/// The growth factor of bucket bounds: (1 + α) / (1 − α) for α = 1%.
const GAMMA: f64 = 1.01 / 0.99;

/// Counts of |values| per bucket, from bucket `first` on.
#[derive(Clone, Debug, Default)]
struct Buckets {
    first: i32,
    counts: Vec<u64>,
}

impl Buckets {
    fn add(&mut self, key: i32) {
        if self.counts.is_empty() {
            self.first = key;
        }
        if key < self.first {
            let grow = (self.first - key) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = key;
        }
        let at = (key - self.first) as usize;
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += 1;
    }

    /// (key, count) of the non-empty buckets, smallest key first.
    fn iter(&self) -> impl DoubleEndedIterator<Item = (i32, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (self.first + i as i32, c))
    }
}

/// The bucket of a magnitude ≥ 1: values in (γ^(k−1), γ^k] share bucket k.
fn key_of(magnitude: f64) -> i32 {
    (magnitude.ln() / GAMMA.ln()).ceil() as i32
}

/// The value a bucket stands for: within 1% of every value in it.
fn value_of(key: i32) -> f64 {
    2.0 * GAMMA.powi(key) / (GAMMA + 1.0)
}

/// A running summary of one quantity over calls, in nanoseconds.
#[derive(Clone, Debug, Default)]
pub struct Stat {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    positive: Buckets,
    negative: Buckets,
    /// Values of magnitude below 1 ns.
    zero: u64,
}

impl Stat {
    /// Counts one value.
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
        if self.n == 1 {
            (self.min, self.max) = (x, x);
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        if x.abs() < 1.0 {
            self.zero += 1;
        } else if x > 0.0 {
            self.positive.add(key_of(x));
        } else {
            self.negative.add(key_of(-x));
        }
    }

    /// How many values were counted.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The mean, NaN when empty.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.mean
        }
    }

    /// The sample standard deviation (0 for one value, NaN when empty).
    pub fn sd(&self) -> f64 {
        match self.n {
            0 => f64::NAN,
            1 => 0.0,
            n => (self.m2 / (n - 1) as f64).sqrt(),
        }
    }

    /// The sum of the values.
    pub fn sum(&self) -> f64 {
        self.mean * self.n as f64
    }

    /// The q-quantile (0 ≤ q ≤ 1) by nearest rank, within 1% of the value
    /// of that rank; NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        let ordered = self
            .negative
            .iter()
            .rev()
            .map(|(k, c)| (-value_of(k), c))
            .chain(std::iter::once((0.0, self.zero)))
            .chain(self.positive.iter().map(|(k, c)| (value_of(k), c)));
        for (value, count) in ordered {
            seen += count;
            if seen >= rank {
                return value.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// The summary written in reports, in seconds.
    pub fn summary(&self) -> Summary {
        let s = |ns: f64| ns * 1e-9;
        Summary {
            n: self.n,
            mean_s: s(self.mean()),
            sd_s: s(self.sd()),
            min_s: s(if self.n == 0 { f64::NAN } else { self.min }),
            p10_s: s(self.quantile(0.10)),
            p50_s: s(self.quantile(0.50)),
            p90_s: s(self.quantile(0.90)),
            p99_s: s(self.quantile(0.99)),
            max_s: s(if self.n == 0 { f64::NAN } else { self.max }),
        }
    }
}

/// Count, mean, standard deviation and percentiles of a quantity over
/// calls, in seconds. Percentiles are within 1% of the exact ones.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Values counted.
    pub n: u64,
    /// Mean.
    pub mean_s: f64,
    /// Sample standard deviation.
    pub sd_s: f64,
    /// Smallest value.
    pub min_s: f64,
    /// 10th percentile.
    pub p10_s: f64,
    /// Median.
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// Largest value.
    pub max_s: f64,
}

/// The summary of `stat`, or `None` when it counted nothing.
pub(crate) fn some(stat: &Stat) -> Option<Summary> {
    (stat.count() > 0).then(|| stat.summary())
}

/// `part` over `whole`, or `None` when `whole` is 0.
pub(crate) fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Microseconds for a time in seconds: 3 significant digits or so, `-`
/// for a time that is not a number.
pub fn us(s: f64) -> String {
    let u = s * 1e6;
    if !u.is_finite() {
        "-".into()
    } else if u.abs() < 10.0 {
        format!("{u:.2}")
    } else if u.abs() < 100.0 {
        format!("{u:.1}")
    } else {
        format!("{u:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of values over six decades, both signs.
    fn sample(n: usize) -> Vec<f64> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let v = 10f64.powf(u * 6.0);
                if x.is_multiple_of(7) {
                    -v
                } else if x.is_multiple_of(11) {
                    0.0
                } else {
                    v
                }
            })
            .collect()
    }

    #[test]
    fn percentiles_are_within_one_percent_of_the_exact_ones() {
        let xs = sample(20_000);
        let mut stat = Stat::default();
        xs.iter().for_each(|&x| stat.add(x));
        let mut sorted = xs.clone();
        sorted.sort_by(f64::total_cmp);
        for q in [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0] {
            let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
            let exact = sorted[rank - 1];
            let got = stat.quantile(q);
            assert!(
                (got - exact).abs() <= 0.01 * exact.abs() + 1e-9,
                "q {q}: {got} against {exact}"
            );
        }
    }

    #[test]
    fn mean_and_deviation_are_exact() {
        let mut stat = Stat::default();
        [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
            .iter()
            .for_each(|&x| stat.add(x));
        assert_eq!(stat.count(), 8);
        assert!((stat.mean() - 5.0).abs() < 1e-12);
        assert!((stat.sd() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(stat.sum(), 40.0);
        let s = stat.summary();
        assert!((s.min_s - 2e-9).abs() < 1e-20 && (s.max_s - 9e-9).abs() < 1e-20);
        assert!(Stat::default().summary().mean_s.is_nan());
    }

    #[test]
    fn memory_depends_on_the_range_not_the_count() {
        let mut stat = Stat::default();
        for i in 0..1_000_000u64 {
            stat.add(1_000.0 + (i % 1_000) as f64);
        }
        // One decade: about 115 buckets, however many values.
        assert!(
            stat.positive.counts.len() < 40,
            "{}",
            stat.positive.counts.len()
        );
    }
}
