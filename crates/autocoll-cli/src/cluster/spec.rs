//! Cluster specs: the TOML file that names switches and hosts, and the
//! names of everything `up` makes from it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;

use serde::Deserialize;

/// Linux refuses interface names longer than this.
const IFNAME_MAX: usize = 15;

/// A link rate in bits per second, written as tc writes it: `100mbit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Rate(pub u64);

impl TryFrom<String> for Rate {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        let units = [
            ("gbit", 1_000_000_000),
            ("mbit", 1_000_000),
            ("kbit", 1_000),
        ];
        let (digits, scale) = units
            .iter()
            .find_map(|(unit, scale)| text.strip_suffix(unit).map(|d| (d, *scale)))
            .ok_or_else(|| format!("rate `{text}` needs a unit: kbit, mbit or gbit"))?;
        match digits.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Rate(n * scale)),
            _ => Err(format!(
                "rate `{text}` is not a positive whole number of {}",
                &text[digits.len()..]
            )),
        }
    }
}

impl fmt::Display for Rate {
    /// In tc's own units, so the text can be passed to `tc` as is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            r if r % 1_000_000_000 == 0 => write!(f, "{}gbit", r / 1_000_000_000),
            r if r % 1_000_000 == 0 => write!(f, "{}mbit", r / 1_000_000),
            r if r % 1_000 == 0 => write!(f, "{}kbit", r / 1_000),
            r => write!(f, "{r}bit"),
        }
    }
}

/// A cluster as its spec file describes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Short name: prefixes every namespace, bridge and veth it makes.
    pub name: String,
    /// The private /24 all hosts share, e.g. `10.77.8.0/24`.
    pub subnet: String,
    /// Switches; exactly one has no parent (the top).
    #[serde(rename = "switch")]
    pub switches: Vec<Switch>,
    /// Hosts, numbered .1, .2, … in this order.
    #[serde(rename = "host")]
    pub hosts: Vec<Host>,
}

/// One switch: a Linux bridge.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    /// The switch's name.
    pub name: String,
    /// The switch above this one; absent for the top switch.
    pub parent: Option<String>,
    /// Rate of the uplink to the parent.
    pub uplink: Option<Rate>,
}

/// One host: a network namespace with one link to its switch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// The host's name, as the hostfile and the agent know it.
    pub name: String,
    /// The switch its link goes to.
    pub switch: String,
    /// Processes it runs (the hostfile's `slots`).
    #[serde(default = "one")]
    pub slots: u32,
    /// Its link's rate, both ways.
    pub rate: Rate,
}

fn one() -> u32 {
    1
}

impl Spec {
    /// Reads and checks a spec file; errors name the file and the field.
    pub fn load(path: &Path) -> anyhow::Result<Spec> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        Spec::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a spec's `text`; errors name `origin`.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Spec> {
        let spec: Spec = toml::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        spec.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        Ok(spec)
    }

    fn validate(&self) -> Result<(), String> {
        let short = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
        if !short(&self.name) {
            return Err(format!(
                "name `{}` must be letters and digits only",
                self.name
            ));
        }
        self.prefix()?;
        if self.hosts.is_empty() || self.hosts.len() > 250 {
            return Err(format!(
                "a cluster has 1 to 250 hosts, this one {}",
                self.hosts.len()
            ));
        }
        let mut seen = HashSet::new();
        for name in self
            .switches
            .iter()
            .map(|s| &s.name)
            .chain(self.hosts.iter().map(|h| &h.name))
        {
            if !short(name) {
                return Err(format!(
                    "switch or host name `{name}` must be letters and digits only"
                ));
            }
            if !seen.insert(name) {
                return Err(format!("the name `{name}` is used twice"));
            }
        }
        self.validate_switches()?;
        for host in &self.hosts {
            if !self.switches.iter().any(|s| s.name == host.switch) {
                return Err(format!(
                    "host `{}`: no switch named `{}`",
                    host.name, host.switch
                ));
            }
            if host.slots == 0 {
                return Err(format!("host `{}`: slots must be at least 1", host.name));
            }
        }
        self.validate_names()
    }

    fn validate_switches(&self) -> Result<(), String> {
        let tops: Vec<&str> = self
            .switches
            .iter()
            .filter(|s| s.parent.is_none())
            .map(|s| s.name.as_str())
            .collect();
        if tops.len() != 1 {
            return Err(format!(
                "exactly one switch must have no parent (the top); found {}: {:?}",
                tops.len(),
                tops
            ));
        }
        let parent: HashMap<&str, &str> = self
            .switches
            .iter()
            .filter_map(|s| s.parent.as_deref().map(|p| (s.name.as_str(), p)))
            .collect();
        for sw in &self.switches {
            match (&sw.parent, &sw.uplink) {
                (Some(p), _) if !self.switches.iter().any(|s| &s.name == p) => {
                    return Err(format!(
                        "switch `{}`: no parent switch named `{p}`",
                        sw.name
                    ))
                }
                (Some(_), None) => {
                    return Err(format!(
                        "switch `{}` has a parent but no `uplink` rate",
                        sw.name
                    ))
                }
                (None, Some(_)) => {
                    return Err(format!("switch `{}` is the top: it has no uplink", sw.name))
                }
                _ => {}
            }
            // Walking up from any switch must reach the top within n steps.
            let mut at = sw.name.as_str();
            for _ in 0..=self.switches.len() {
                match parent.get(at) {
                    Some(p) => at = p,
                    None => break,
                }
            }
            if parent.contains_key(at) {
                return Err(format!("switch `{}` is on a cycle of parents", sw.name));
            }
        }
        Ok(())
    }

    fn validate_names(&self) -> Result<(), String> {
        let names = self
            .hosts
            .iter()
            .map(|h| self.host_veth(h))
            .chain(self.switches.iter().map(|s| self.bridge(&s.name)))
            .chain(self.switches.iter().flat_map(|s| {
                let (up, down) = self.uplink_veths(s);
                [up, down]
            }));
        for name in names {
            if name.len() > IFNAME_MAX {
                return Err(format!(
                    "interface name `{name}` is longer than {IFNAME_MAX} characters: shorten the cluster's or the switch's name"
                ));
            }
        }
        Ok(())
    }

    /// The first three octets of the subnet.
    pub fn prefix(&self) -> Result<[u8; 3], String> {
        let bad = || {
            format!(
                "subnet `{}` must be a /24 such as 10.77.8.0/24",
                self.subnet
            )
        };
        let addr = self.subnet.strip_suffix("/24").ok_or_else(bad)?;
        let ip: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let [a, b, c, d] = ip.octets();
        if d != 0 || !ip.is_private() {
            return Err(format!(
                "{}; it must be private (10/8, 172.16/12, 192.168/16)",
                bad()
            ));
        }
        Ok([a, b, c])
    }

    /// Address of the `i`-th host (1-based in the last octet).
    pub fn host_addr(&self, i: usize) -> String {
        let [a, b, c] = self.prefix().expect("validated");
        format!("{a}.{b}.{c}.{}", i + 1)
    }

    /// The root namespace's address on the top bridge (for mpirun).
    pub fn root_addr(&self) -> String {
        let [a, b, c] = self.prefix().expect("validated");
        format!("{a}.{b}.{c}.254")
    }

    /// The network namespace of a host.
    pub fn netns(&self, host: &Host) -> String {
        format!("{}-{}", self.name, host.name)
    }

    /// The root-namespace end of a host's link (the other end is `eth0`).
    pub fn host_veth(&self, host: &Host) -> String {
        format!("{}-{}", self.name, host.name)
    }

    /// The bridge of a switch.
    pub fn bridge(&self, switch: &str) -> String {
        format!("{}-{switch}", self.name)
    }

    /// The two ends of a switch's uplink: in the parent's bridge, in its own.
    pub fn uplink_veths(&self, switch: &Switch) -> (String, String) {
        (
            format!("{}-{}u", self.name, switch.name),
            format!("{}-{}d", self.name, switch.name),
        )
    }

    /// The path of switch `name` from the top switch down, as layouts
    /// name switches (`sw0/sw1`).
    pub fn switch_path(&self, name: &str) -> String {
        let mut path = vec![name];
        let mut at = name;
        // Validated: the parents lead to the top within as many steps.
        while let Some(up) = self
            .switches
            .iter()
            .find(|s| s.name == at)
            .and_then(|s| s.parent.as_deref())
        {
            path.push(up);
            at = up;
        }
        path.reverse();
        path.join("/")
    }

    /// The switch with no parent.
    pub fn top(&self) -> &Switch {
        self.switches
            .iter()
            .find(|s| s.parent.is_none())
            .expect("validated: one top switch")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Spec, String> {
        let spec: Spec = toml::from_str(text).map_err(|e| e.to_string())?;
        spec.validate()?;
        Ok(spec)
    }

    const TWO: &str = r#"
        name = "t"
        subnet = "10.9.9.0/24"
        switch = [ { name = "a" }, { name = "b", parent = "a", uplink = "10mbit" } ]
        host = [ { name = "x", switch = "a", rate = "100mbit" },
                 { name = "y", switch = "b", slots = 2, rate = "1gbit" } ]
    "#;

    #[test]
    fn a_two_switch_spec_parses_with_its_names_and_addresses() {
        let spec = parse(TWO).unwrap();
        assert_eq!(spec.hosts[1].rate, Rate(1_000_000_000));
        assert_eq!(spec.hosts[0].slots, 1);
        assert_eq!(spec.switches[1].uplink, Some(Rate(10_000_000)));
        assert_eq!(spec.host_addr(1), "10.9.9.2");
        assert_eq!(spec.root_addr(), "10.9.9.254");
        assert_eq!(
            spec.uplink_veths(&spec.switches[1]),
            ("t-bu".into(), "t-bd".into())
        );
        assert_eq!(spec.top().name, "a");
    }

    #[test]
    fn rates_round_trip_through_tc_units() {
        for text in ["100mbit", "10mbit", "1gbit", "64kbit"] {
            assert_eq!(Rate::try_from(text.to_string()).unwrap().to_string(), text);
        }
        assert!(Rate::try_from("100".to_string())
            .unwrap_err()
            .contains("needs a unit"));
        assert!(Rate::try_from("0mbit".to_string()).is_err());
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        let cases = [
            (TWO.replace("parent = \"a\", ", ""), "exactly one switch"),
            (TWO.replace("\"10.9.9.0/24\"", "\"8.8.8.0/24\""), "private"),
            (TWO.replace("\"10.9.9.0/24\"", "\"10.9.0.0/16\""), "/24"),
            (
                TWO.replace("switch = \"b\"", "switch = \"c\""),
                "no switch named `c`",
            ),
            (
                TWO.replace("uplink = \"10mbit\"", "uplink = \"fast\""),
                "needs a unit",
            ),
            (TWO.replace("name = \"y\"", "name = \"x\""), "used twice"),
            (
                TWO.replace("name = \"t\"", "name = \"averyverylongname\""),
                "longer than 15",
            ),
            (TWO.replace("slots = 2", "slots = 0"), "at least 1"),
            (TWO.replace("slots = 2", "slot = 2"), "unknown field"),
        ];
        for (text, reason) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(reason), "{reason:?} not in {err:?}");
        }
    }

    #[test]
    fn a_cycle_of_parents_is_refused() {
        let text = TWO.replace(
            "switch = [",
            "switch = [ { name = \"c\", parent = \"d\", uplink = \"1mbit\" }, { name = \"d\", parent = \"c\", uplink = \"1mbit\" },",
        );
        assert!(parse(&text).unwrap_err().contains("cycle"));
    }

    #[test]
    fn the_shipped_specs_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clusters");
        for (file, hosts) in [
            ("star8-100m.toml", 8),
            ("two-subnet.toml", 8),
            ("slow-host.toml", 8),
            ("star4x2-100m.toml", 4),
        ] {
            let spec = Spec::load(&dir.join(file)).unwrap();
            assert_eq!(spec.hosts.len(), hosts, "{file}");
        }
    }
}
