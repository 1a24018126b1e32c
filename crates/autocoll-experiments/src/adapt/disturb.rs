//! A rank's link slowed from the middle call on, to see the lottery follow
//! a change. A delay is an observer that sleeps on the rank's segments; a
//! rate change is made outside the job (on an emulated cluster, the
//! host's egress tbf), by rank 0 through an [`Outside`], and put back at
//! the end, whatever happened.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use autocoll::observe::{Event, Observer, Stage};
use autocoll::{Communicator, Implementation};

use crate::rounds::separating_barrier;
use crate::Error;

/// How the run is disturbed halfway.
#[derive(Clone, Debug, PartialEq)]
pub enum Disturb {
    /// Rank `rank` sleeps `delay` on every segment it receives
    /// (`Stage::Received`) or after every segment it sends (`Stage::Sent`).
    Delay {
        /// The rank whose link is slowed.
        rank: usize,
        /// The sleep per segment.
        delay: Duration,
        /// Where in a segment's life it sleeps.
        at: Stage,
    },
    /// The egress of network namespace `host` drops to `rate`, a rate as
    /// `tc` writes it (`10mbit`), which the [`Outside`] checks.
    Rate {
        /// The emulated host's network namespace.
        host: String,
        /// Its new egress rate.
        rate: String,
    },
}

/// What a run puts back at its end after a change outside the job.
pub type Undo = Box<dyn FnOnce() + Send>;

/// Changes outside the job (an emulated host's link rate), which only the
/// program that brought the cluster up knows how to make.
pub trait Outside: Sync {
    /// Sets `host`'s egress to `rate`; returns what puts it back.
    fn throttle(&self, host: &str, rate: &str) -> Result<Undo, Error>;
}

impl std::fmt::Display for Disturb {
    /// As [`Disturb::parse`] takes it, so a report's `spec` can be given back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Disturb::Delay { rank, delay, at } => {
                let key = if *at == Stage::Sent {
                    "send-delay"
                } else {
                    "delay"
                };
                write!(f, "rank={rank},{key}={}us", delay.as_micros())
            }
            Disturb::Rate { host, rate } => write!(f, "host={host},rate={rate}"),
        }
    }
}

impl Disturb {
    /// `rank=R,delay=200us`, `rank=R,send-delay=100us` or
    /// `host=NETNS,rate=10mbit`, in a job of `ranks`.
    pub fn parse(text: &str, ranks: usize) -> Result<Disturb, Error> {
        let bad = |why: String| Error::Spec(why);
        let mut fields = std::collections::BTreeMap::new();
        for item in text.split(',') {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("`{item}` is not key=value")))?;
            fields.insert(k.trim(), v.trim());
        }
        let keys: Vec<&str> = fields.keys().copied().collect();
        let delayed = |key: &str, at: Stage| {
            let rank: usize = fields["rank"]
                .parse()
                .map_err(|_| bad("rank is not a number".into()))?;
            if rank >= ranks {
                return Err(bad(format!(
                    "rank {rank} is not a rank of a {ranks}-rank job"
                )));
            }
            let delay = autocoll::clock::parse_duration(fields[key])
                .map_err(|e| bad(format!("delay {e}")))?;
            Ok(Disturb::Delay { rank, delay, at })
        };
        match keys.as_slice() {
            ["delay", "rank"] => delayed("delay", Stage::Received),
            ["rank", "send-delay"] => delayed("send-delay", Stage::Sent),
            ["host", "rate"] => Ok(Disturb::Rate {
                host: fields["host"].to_string(),
                rate: fields["rate"].to_string(),
            }),
            _ => Err(bad(
                "expected rank=R,delay=TIME, rank=R,send-delay=TIME or host=NETNS,rate=RATE".into(),
            )),
        }
    }
}

/// Sleeps on every segment this rank receives, or after every segment it
/// sends, of a candidate's call, once on.
pub(super) struct Delay {
    on: AtomicBool,
    delay: Duration,
    at: Stage,
    candidates: Vec<Implementation>,
}

impl Observer for Delay {
    fn event(&self, event: &Event<'_>) {
        if event.stage == self.at
            && self.on.load(Ordering::Relaxed)
            && self.candidates.contains(event.imp)
        {
            std::thread::sleep(self.delay);
        }
    }
}

/// The delay of `disturb` on the calls of `candidates`, put into `comm`
/// but not yet on, if it is this rank's.
pub(super) fn install_delay(
    comm: &mut Communicator,
    disturb: Option<&Disturb>,
    candidates: &[Implementation],
) -> Option<Arc<Delay>> {
    match disturb {
        Some(Disturb::Delay { rank, delay, at }) if *rank == comm.rank() => {
            let d = Arc::new(Delay {
                on: AtomicBool::new(false),
                delay: *delay,
                at: *at,
                candidates: candidates.to_vec(),
            });
            comm.set_observer(Some(d.clone()));
            Some(d)
        }
        _ => None,
    }
}

/// Starts the disturbance; for a change outside the job, returns how to
/// undo it. Rank 0 makes that change while the others wait in a barrier,
/// so that it takes effect at the same call for all.
pub(super) fn start_disturbance(
    comm: &mut Communicator,
    disturb: Option<&Disturb>,
    delay: Option<&Delay>,
    outside: Option<&dyn Outside>,
) -> Result<Option<Undo>, Error> {
    if let Some(d) = delay {
        d.on.store(true, Ordering::Relaxed);
    }
    let mut undo = None;
    if let (Some(Disturb::Rate { host, rate }), 0) = (disturb, comm.rank()) {
        let outside = outside.ok_or_else(|| {
            Error::Outside(format!("nothing here changes the rate of host {host}"))
        })?;
        undo = Some(outside.throttle(host, rate)?);
    }
    comm.barrier_with(&separating_barrier())?;
    Ok(undo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disturb_specs_parse_and_bad_ones_say_why() {
        assert_eq!(
            Disturb::parse("rank=2,delay=200us", 4).ok(),
            Some(Disturb::Delay {
                rank: 2,
                delay: Duration::from_micros(200),
                at: Stage::Received
            })
        );
        assert_eq!(
            Disturb::parse("rank=0,send-delay=100us", 4).ok(),
            Some(Disturb::Delay {
                rank: 0,
                delay: Duration::from_micros(100),
                at: Stage::Sent
            })
        );
        assert_eq!(
            Disturb::parse("host=star8-h2,rate=10mbit", 8).ok(),
            Some(Disturb::Rate {
                host: "star8-h2".into(),
                rate: "10mbit".into()
            })
        );
        for text in [
            "rank=2,delay=200us",
            "rank=0,send-delay=100us",
            "host=star8-h2,rate=10mbit",
        ] {
            let spec = Disturb::parse(text, 8).ok().unwrap();
            assert_eq!(
                spec.to_string(),
                text,
                "a report's spec reads as it was given"
            );
        }
        let msg = |r: Result<Disturb, Error>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg(Disturb::parse("rank=9,delay=1ms", 4)).contains("not a rank"));
        assert!(msg(Disturb::parse("rank=1,delay=1h", 4)).contains("needs a unit"));
        assert!(msg(Disturb::parse("rank=x,send-delay=1ms", 4)).contains("not a number"));
        assert!(msg(Disturb::parse("rank=1", 4)).contains("expected"));
    }
}
