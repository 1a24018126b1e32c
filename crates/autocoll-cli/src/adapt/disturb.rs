//! `--disturb`: a rank's link slowed from the middle call on, to see the
//! lottery follow a change. A delay is an observer that sleeps on the
//! rank's segments; a rate change is the emulated host's egress tbf,
//! changed with `tc` by rank 0 and put back at the end, whatever happened.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use autocoll::observe::{Event, Observer, Stage};
use autocoll::{Communicator, Implementation};

use super::run::separating_barrier;
use super::Setup;
use crate::cluster::spec::Rate;
use crate::Failure;

/// How the run is disturbed halfway.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Disturb {
    /// Rank `rank` sleeps `delay` on every segment it receives
    /// (`Stage::Received`) or after every segment it sends (`Stage::Sent`).
    Delay {
        rank: usize,
        delay: Duration,
        at: Stage,
    },
    /// The egress tbf of network namespace `host` (its `eth0`) drops to `rate`.
    Rate { host: String, rate: Rate },
}

impl std::fmt::Display for Disturb {
    /// As `--disturb` takes it, so a report's `spec` can be given back.
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

/// `rank=R,delay=200us`, `rank=R,send-delay=100us` or
/// `host=NETNS,rate=10mbit`.
pub(super) fn disturb_of(text: &str, ranks: usize) -> Result<Disturb, Failure> {
    let bad = |why: String| Failure::Usage(format!("--disturb `{text}`: {why}"));
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
        let delay = duration_of(fields[key]).map_err(bad)?;
        Ok(Disturb::Delay { rank, delay, at })
    };
    match keys.as_slice() {
        ["delay", "rank"] => delayed("delay", Stage::Received),
        ["rank", "send-delay"] => delayed("send-delay", Stage::Sent),
        ["host", "rate"] => {
            let rate = Rate::try_from(fields["rate"].to_string()).map_err(bad)?;
            Ok(Disturb::Rate {
                host: fields["host"].to_string(),
                rate,
            })
        }
        _ => Err(bad(
            "expected rank=R,delay=TIME, rank=R,send-delay=TIME or host=NETNS,rate=RATE".into(),
        )),
    }
}

/// `200us`, `2ms`, `1s`.
fn duration_of(text: &str) -> Result<Duration, String> {
    autocoll::clock::parse_duration(text).map_err(|e| format!("delay {e}"))
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

pub(super) fn install_delay(comm: &mut Communicator, s: &Setup) -> Option<Arc<Delay>> {
    match &s.disturb {
        Some(Disturb::Delay { rank, delay, at }) if *rank == comm.rank() => {
            let d = Arc::new(Delay {
                on: AtomicBool::new(false),
                delay: *delay,
                at: *at,
                candidates: s.candidates.clone(),
            });
            comm.set_observer(Some(d.clone()));
            Some(d)
        }
        _ => None,
    }
}

/// Starts the disturbance; for a throttle, returns how to undo it. Rank 0
/// throttles while the others wait in a barrier, so the change takes effect
/// at the same call for all.
pub(super) fn start_disturbance(
    comm: &mut Communicator,
    s: &Setup,
    delay: Option<&Delay>,
) -> anyhow::Result<Option<Vec<Vec<String>>>> {
    if let Some(d) = delay {
        d.on.store(true, Ordering::Relaxed);
    }
    let mut undo = None;
    if let (Some(Disturb::Rate { host, rate }), 0) = (&s.disturb, comm.rank()) {
        undo = Some(throttle(host, *rate)?);
    }
    comm.barrier_with(&separating_barrier())?;
    Ok(undo)
}

/// The `tc` command prefix that reaches a host's link: `eth0` inside its
/// namespace, the host's egress. (The root-namespace end of the veth is
/// out of reach of a rank that itself runs in a host's namespace.)
fn link_ends(host: &str) -> [Vec<String>; 1] {
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    [v(&[
        "tc", "-n", host, "qdisc", "%", "dev", "eth0", "root", "tbf",
    ])]
}

/// Sets `host`'s egress to `rate`; returns the commands that
/// put back the tbf found there.
fn throttle(host: &str, rate: Rate) -> anyhow::Result<Vec<Vec<String>>> {
    let mut undo = Vec::new();
    for end in link_ends(host) {
        let show: Vec<String> = end[..end.len() - 2]
            .iter()
            .map(|x| if x == "%" { "show".into() } else { x.clone() })
            .collect();
        let text = command_output(&show)?;
        let old = tbf_params(&text)
            .ok_or_else(|| anyhow!("no tbf on `{}`: is the cluster up?", show.join(" ")))?;
        let (burst, latency) = crate::cluster::net::bucket(rate);
        let change = |params: &[String]| -> Vec<String> {
            end.iter()
                .map(|x| if x == "%" { "change".into() } else { x.clone() })
                .chain(params.iter().cloned())
                .collect()
        };
        let new = [
            "rate".into(),
            rate.to_string(),
            "burst".into(),
            burst.to_string(),
            "latency".into(),
            latency.into(),
        ];
        undo.push(change(&old));
        if let Err(e) = command_output(&change(&new)) {
            // Put back what was already changed before giving up.
            undo_throttle(&undo);
            return Err(e);
        }
    }
    Ok(undo)
}

pub(super) fn undo_throttle(undo: &[Vec<String>]) {
    for cmd in undo {
        if let Err(e) = command_output(cmd) {
            eprintln!("autocoll: warning: could not restore the link: {e:#}");
        }
    }
}

/// `rate R burst B latency L` from `tc qdisc show` of a tbf.
fn tbf_params(show: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = show.split_whitespace().collect();
    let after = |key: &str| {
        let i = words.iter().position(|w| *w == key)?;
        words.get(i + 1).map(|w| w.to_string())
    };
    Some(vec![
        "rate".into(),
        after("rate")?,
        "burst".into(),
        after("burst")?,
        "latency".into(),
        after("lat")?,
    ])
}

fn command_output(cmd: &[String]) -> anyhow::Result<String> {
    let out = Command::new(&cmd[0])
        .args(&cmd[1..])
        .output()
        .with_context(|| format!("running `{}`", cmd.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            cmd.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disturb_specs_parse_and_bad_ones_say_why() {
        assert_eq!(
            disturb_of("rank=2,delay=200us", 4).ok(),
            Some(Disturb::Delay {
                rank: 2,
                delay: Duration::from_micros(200),
                at: Stage::Received
            })
        );
        assert_eq!(
            disturb_of("rank=0,send-delay=100us", 4).ok(),
            Some(Disturb::Delay {
                rank: 0,
                delay: Duration::from_micros(100),
                at: Stage::Sent
            })
        );
        assert_eq!(
            disturb_of("host=star8-h2,rate=10mbit", 8).ok(),
            Some(Disturb::Rate {
                host: "star8-h2".into(),
                rate: Rate(10_000_000)
            })
        );
        for text in [
            "rank=2,delay=200us",
            "rank=0,send-delay=100us",
            "host=star8-h2,rate=10mbit",
        ] {
            let spec = disturb_of(text, 8).ok().unwrap();
            assert_eq!(
                spec.to_string(),
                text,
                "a report's spec reads as it was given"
            );
        }
        let msg = |r: Result<Disturb, Failure>| match r {
            Err(Failure::Usage(m)) => m,
            _ => String::new(),
        };
        assert!(msg(disturb_of("rank=9,delay=1ms", 4)).contains("not a rank"));
        assert!(msg(disturb_of("rank=1,delay=1h", 4)).contains("needs a unit"));
        assert!(msg(disturb_of("rank=x,send-delay=1ms", 4)).contains("not a number"));
        assert!(msg(disturb_of("rank=1", 4)).contains("expected"));
    }

    #[test]
    fn tbf_parameters_come_from_tc_show() {
        let show = "qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 12500b lat 100ms\n";
        assert_eq!(
            tbf_params(show).unwrap(),
            ["rate", "100Mbit", "burst", "12500b", "latency", "100ms"]
        );
    }
}
