//! `--disturb`: the text checked against the job, and a rate change made
//! with `tc`: the emulated host's egress tbf, changed by rank 0 and put
//! back at the end, whatever happened.

use std::process::Command;

use anyhow::{anyhow, bail, Context};
use autocoll_experiments::adapt::disturb::{Outside, Undo};
use autocoll_experiments::adapt::Disturb;

use crate::cluster::spec::Rate;
use crate::failure::Failure;

/// `rank=R,delay=200us`, `rank=R,send-delay=100us` or
/// `host=NETNS,rate=10mbit`; a rate in tc's own units.
pub(super) fn disturb_of(text: &str, ranks: usize) -> Result<Disturb, Failure> {
    let bad = |why: String| Failure::Usage(format!("--disturb `{text}`: {why}"));
    match Disturb::parse(text, ranks).map_err(|e| bad(e.to_string()))? {
        Disturb::Rate { host, rate } => {
            let rate = Rate::try_from(rate).map_err(bad)?;
            Ok(Disturb::Rate {
                host,
                rate: rate.to_string(),
            })
        }
        delay => Ok(delay),
    }
}

/// Changes an emulated host's egress rate with `tc`.
pub(super) struct Tc;

impl Outside for Tc {
    fn throttle(&self, host: &str, rate: &str) -> Result<Undo, autocoll_experiments::Error> {
        let outside = |e: anyhow::Error| autocoll_experiments::Error::Outside(format!("{e:#}"));
        let rate = Rate::try_from(rate.to_string()).map_err(|e| outside(anyhow!(e)))?;
        let undo = throttle(host, rate).map_err(outside)?;
        Ok(Box::new(move || undo_throttle(&undo)))
    }
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

fn undo_throttle(undo: &[Vec<String>]) {
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
    fn rates_are_checked_and_said_in_tc_units_and_bad_ones_name_the_flag() {
        assert_eq!(
            disturb_of("host=star8-h2,rate=10mbit", 8).ok(),
            Some(Disturb::Rate {
                host: "star8-h2".into(),
                rate: "10mbit".into()
            })
        );
        assert_eq!(
            disturb_of("host=h,rate=10000kbit", 8).ok(),
            Some(Disturb::Rate {
                host: "h".into(),
                rate: "10mbit".into()
            })
        );
        let msg = |r: Result<Disturb, Failure>| match r {
            Err(Failure::Usage(m)) => m,
            _ => String::new(),
        };
        assert!(msg(disturb_of("host=h,rate=10", 8)).contains("needs a unit"));
        assert!(
            msg(disturb_of("rank=9,delay=1ms", 4)).starts_with("--disturb `rank=9,delay=1ms`: ")
        );
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
