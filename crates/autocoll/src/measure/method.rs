//! What is measured and how: the point, the method and its options, and
//! the measurement a run gives.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ids::Collective;
use crate::select::Implementation;
use crate::stats::{self, Summary};

/// How a collective's time is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// The leader's time for M back-to-back calls ÷ M: the gap g₀ at the
    /// root, not the latency (calls overlap in the network).
    SendLatency,
    /// M rounds of one call per root in turn (0, 1, …, P−1), ÷ M·P: a lower
    /// bound, since consecutive calls pipeline.
    Rounds,
    /// M pairs of (call, barrier) ÷ M: an upper bound that includes the
    /// barrier's own cost (the barrier is `barrier:dissemination`).
    Barrier,
    /// M times (call, then every other rank acknowledges to the leader) ÷ M:
    /// an upper bound that includes P−1 acknowledgements.
    Ack,
    /// The paper's method: per destination i, OL_i = E_i − RTT_i/2, and the
    /// sample is max_i OL_i. See [`ol_i`](crate::measure) in the README for
    /// the fan-in and symmetric mirrors.
    OlI,
    /// Ground truth from one shared clock: each rank records its enter and
    /// leave time; calls start on a common schedule of windows; a call's
    /// latency is max(leave) − min(enter). Needs a shared clock.
    Truth,
}

impl Method {
    /// All methods, in the order tables list them.
    pub const ALL: [Method; 6] = [
        Method::Truth,
        Method::OlI,
        Method::Rounds,
        Method::Barrier,
        Method::Ack,
        Method::SendLatency,
    ];

    /// The method's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Method::SendLatency => "send-latency",
            Method::Rounds => "rounds",
            Method::Barrier => "barrier",
            Method::Ack => "ack",
            Method::OlI => "ol-i",
            Method::Truth => "truth",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Method::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown method `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

impl Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What is measured: an implementation at a message size and root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The implementation under test.
    pub imp: Implementation,
    /// Bytes per rank, rounded down to whole elements by the run
    /// ([`effective_bytes`](crate::measure::effective_bytes)).
    pub bytes: usize,
    /// The root of rooted collectives (ignored by the others).
    pub root: usize,
}

/// What is measured as a baseline: the library's own collective (e.g.
/// `MPI_Bcast`) at a message size and root, on the same buffers as a
/// [`Point`] of that size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Baseline {
    /// The collective.
    pub op: Collective,
    /// Bytes per rank, rounded down to whole elements as for a [`Point`].
    pub bytes: usize,
    /// The root of rooted collectives (ignored by the others).
    pub root: usize,
}

/// How long to measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Calls per repetition (M in the paper).
    pub calls: usize,
    /// Untimed calls before the first repetition.
    pub warmup: usize,
    /// Repetitions before the stopping rule is consulted.
    pub min_reps: usize,
    /// Repetitions at most (`truth` may attempt 10× as many, since it
    /// discards calls whose ranks did not start together).
    pub max_reps: usize,
    /// Stop when the relative standard error of the mean falls below this.
    pub rse: f64,
    /// `truth`: spin (yielding) through the waits between calls, up to
    /// 10 ms, rather than sleep through them. A rank that slept starts its
    /// next call slower, and a window's length depends on a candidate's
    /// warm-up, so sleeping made the same tree measure up to 18% apart
    /// from itself ([`truth::wait_until`](crate::measure::truth::wait_until)). Set it false where ranks
    /// outnumber cores: there a spinning rank takes the processor from
    /// one still in its call.
    pub spin_waits: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            calls: 10,
            warmup: 5,
            min_reps: 5,
            max_reps: 50,
            rse: 0.03,
            spin_waits: true,
        }
    }
}

/// The outcome of one method at one point, at rank 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The method.
    pub method: Method,
    /// Repetitions kept.
    pub reps: usize,
    /// Calls discarded (`truth`: started late or overran their window).
    pub discarded: usize,
    /// Statistics of the kept repetitions, in seconds.
    pub summary: Summary,
    /// `ol-i`: the mean OL_i of every rank, in seconds, indexed by rank.
    pub ol_i: Option<Vec<f64>>,
    /// `truth`: the final window between call starts, in seconds.
    pub window: Option<f64>,
    /// Every kept repetition, in seconds, in the order measured.
    pub raw: Vec<f64>,
    /// What makes the figures doubtful ([`Flag::of`] for the sample's
    /// own; the caller adds what it knows of the machines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
}

/// Why a measurement should not be read as a clean number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flag {
    /// The later repetitions moved away from the first ones
    /// ([`stats::drifted`]): the machine changed while it was measured.
    Drift,
    /// The median's 95% interval is wide ([`stats::wide`]).
    Wide,
    /// No repetition was kept: there is no figure at all.
    Empty,
    /// Fewer repetitions were kept than the stopping rule's least.
    Few,
    /// A machine runs more ranks than it has cores, and the method assumes
    /// it does not ([`machines::premise`](crate::measure::machines::premise)).
    Crowded,
    /// Measured with [`Machines::fallback`](crate::measure::Machines::fallback) because the method asked for
    /// kept too few repetitions here (`truth` on crowded cores).
    Fallback,
}

impl Flag {
    /// The flag's name in tables, JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Flag::Drift => "drift",
            Flag::Wide => "wide",
            Flag::Empty => "empty",
            Flag::Few => "few",
            Flag::Crowded => "crowded",
            Flag::Fallback => "fallback",
        }
    }

    /// The flags the repetitions `raw` earn by themselves, `min_reps`
    /// being the fewest the stopping rule asked for.
    pub fn of(raw: &[f64], summary: &Summary, min_reps: usize) -> Vec<Flag> {
        let mut out = Vec::new();
        if raw.is_empty() {
            out.push(Flag::Empty);
        } else if raw.len() < min_reps {
            out.push(Flag::Few);
        }
        if stats::drifted(raw) {
            out.push(Flag::Drift);
        }
        if stats::wide(summary) {
            out.push(Flag::Wide);
        }
        out
    }
}

impl Measurement {
    /// Signed relative difference of this measurement's median from the
    /// truth's median: +0.10 means 10% too slow.
    pub fn error_vs(&self, truth: &Measurement) -> f64 {
        (self.summary.median - truth.summary.median) / truth.summary.median
    }
}
