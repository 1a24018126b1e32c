//! The balancer's parameters, as the library and `AUTOCOLL_BALANCE` take
//! them.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::ids::Collective;

/// The variable that turns the balancer on for programs built on
/// [`crate::init`] and for [`crate::local::run`]: `swap`, `sort`, or
/// `key=value` pairs (see [`Params::parse`]); `off` or empty leaves it off.
pub const ENV_BALANCE: &str = "AUTOCOLL_BALANCE";

/// The collectives the balancer can balance.
pub const BALANCED_OPS: [Collective; 1] = [Collective::Bcast];

/// How the balancer changes a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The paper's: one pair of ranks trades places per period, the late
    /// rank with the rank of its subtree that waited most for it.
    Swap,
    /// Every position at once: the ranks that waited longest take the
    /// positions that receive earliest.
    Sort,
}

impl Mode {
    /// `swap` or `sort`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Swap => "swap",
            Mode::Sort => "sort",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Mode, String> {
        match text {
            "swap" => Ok(Mode::Swap),
            "sort" => Ok(Mode::Sort),
            _ => Err(format!("mode `{text}` is not swap or sort")),
        }
    }
}

/// The balancer's knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Swap pairs or sort every position.
    pub mode: Mode,
    /// Balanced calls of a collective between decisions, N (at least 1),
    /// whenever the balancer has something to do.
    pub period: u32,
    /// The longest period: while there is nothing to do, each decision
    /// doubles the period up to this.
    pub max_period: u32,
    /// A wait must change by more than this to be reported, a trial must
    /// lower the total wait by more than this to be kept, and the total
    /// must rise by more than this for the loads to count as moved.
    pub threshold: Duration,
    /// ...and by more than this share of the value before (the reports
    /// and the loads; 0.25 = 25%).
    pub relative: f64,
    /// A trial is kept when it lowers the total wait by more than this
    /// share (0.10 = 10%).
    pub gain: f64,
    /// The collectives balanced (each with its own table).
    pub ops: Vec<Collective>,
    /// Which of the [`REPORT_TAGS`](crate::balance::REPORT_TAGS) the reports travel on: balancers that
    /// take turns on one communicator need one each.
    pub channel: u16,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            mode: Mode::Swap,
            period: 8,
            max_period: 256,
            threshold: Duration::from_micros(20),
            relative: 0.25,
            gain: 0.10,
            ops: vec![Collective::Bcast],
            channel: 0,
        }
    }
}

impl Params {
    /// Parses `AUTOCOLL_BALANCE`'s value: `swap` (or `on`), `sort`, or
    /// comma-separated `key=value` pairs over the defaults: `mode=swap|sort`,
    /// `period=N`, `max-period=N`, `threshold=20us`, `relative=0.25` (or
    /// `25%`), `gain=0.1` (or `10%`), `ops=bcast`. `None` for `off` or
    /// nothing.
    pub fn parse(text: &str) -> std::result::Result<Option<Params>, String> {
        let text = text.trim();
        let mut params = Params::default();
        match text {
            "" | "off" => return Ok(None),
            "on" | "swap" => return Ok(Some(params)),
            "sort" => {
                params.mode = Mode::Sort;
                return Ok(Some(params));
            }
            _ => {}
        }
        for item in text.split(',') {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}` is not swap, sort, off or key=value"))?;
            params.set(key.trim(), value.trim())?;
        }
        params.check()?;
        Ok(Some(params))
    }

    fn set(&mut self, key: &str, value: &str) -> std::result::Result<(), String> {
        let count = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("{key}={v} is not a whole number"))
        };
        match key {
            "mode" => self.mode = value.parse()?,
            "period" => self.period = count(value)?,
            "max-period" => self.max_period = count(value)?,
            "threshold" => self.threshold = crate::clock::parse_duration(value)?,
            "relative" => self.relative = share(key, value)?,
            "gain" => self.gain = share(key, value)?,
            "ops" => {
                self.ops = value
                    .split('+')
                    .map(|op| op.trim().parse::<Collective>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| format!("ops={value}: {e}"))?
            }
            _ => {
                return Err(format!(
                    "unknown key `{key}` (mode, period, max-period, threshold, relative, gain, ops)"
                ))
            }
        }
        Ok(())
    }

    /// Refuses parameters the balancer cannot work with, saying which.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.period == 0 {
            return Err("period must be at least 1 call".into());
        }
        if self.max_period < self.period {
            return Err(format!(
                "max-period {} is below period {}",
                self.max_period, self.period
            ));
        }
        if !(self.relative.is_finite() && self.relative >= 0.0) {
            return Err(format!("relative {} is not a share >= 0", self.relative));
        }
        if !(self.gain.is_finite() && (0.0..1.0).contains(&self.gain)) {
            return Err(format!("gain {} is not a share in [0, 1)", self.gain));
        }
        if self.ops.is_empty() {
            return Err("ops names no collective".into());
        }
        if let Some(op) = self.ops.iter().find(|op| !BALANCED_OPS.contains(op)) {
            return Err(format!(
                "the balancer balances bcast only, not {op} (docs/balance.md says why)"
            ));
        }
        Ok(())
    }
}

/// `0.25` or `25%`.
fn share(key: &str, value: &str) -> std::result::Result<f64, String> {
    let (number, scale) = match value.strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (value, 1.0),
    };
    number
        .parse::<f64>()
        .map(|x| x * scale)
        .map_err(|_| format!("{key}={value} is not a number (0.25 or 25%)"))
}

/// The parameters `AUTOCOLL_BALANCE=value` asks for, if any.
pub(crate) fn params_of_env(value: Option<std::ffi::OsString>) -> Result<Option<Params>> {
    let Some(text) = value else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    Params::parse(&text).map_err(|why| Error::Config(format!("{ENV_BALANCE}={text}: {why}")))
}

#[cfg(test)]
mod tests;
