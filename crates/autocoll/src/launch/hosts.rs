//! Where the ranks run: hostfiles read, ranks placed on their lines'
//! slots, and the layout those places make.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;

use crate::error::{Error, Result};
use crate::layout::{Layout, SWITCH_SEPARATOR};

/// One line of a hostfile: `host slots=N [addr=IP] [switch=PATH]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostLine {
    /// The host's name, as the agent template's `{host}` receives it.
    pub host: String,
    /// How many ranks it takes.
    pub slots: usize,
    /// The address its ranks listen on; resolved from `host` when absent.
    pub addr: Option<IpAddr>,
    /// The path of the switch the host hangs on (`sw0/sw1`), when given.
    pub switch: Option<String>,
}

/// Parses a hostfile in Open MPI's form: one host per line, `slots=N`
/// (default 1), `#` comments. `max_slots=` is accepted and ignored;
/// `addr=IP` (an autocoll extension) gives the address to listen on when
/// the host name is not one, e.g. a network namespace's name; `switch=PATH`
/// (another) names the host's switch, as a path from the top switch down
/// (`sw0/sw1`), for the trees that follow the cluster (`hier`).
pub fn parse_hostfile(text: &str, source: &str) -> Result<Vec<HostLine>> {
    let mut hosts: Vec<HostLine> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |why: String| Error::Config(format!("{source}:{}: {why}", i + 1));
        let entry = parse_line(line).map_err(at)?;
        if let Some(other) = hosts
            .iter()
            .find(|h| h.host == entry.host && h.switch != entry.switch)
        {
            return Err(at(format!(
                "host {} is on switch {} here and on switch {} above (a host hangs under one switch)",
                entry.host,
                entry.switch.as_deref().unwrap_or("(none)"),
                other.switch.as_deref().unwrap_or("(none)")
            )));
        }
        hosts.push(entry);
    }
    if hosts.is_empty() {
        return Err(Error::Config(format!("{source}: names no host")));
    }
    Ok(hosts)
}

/// One line of a hostfile, its comment cut off: the host, then its
/// `key=value` words. The error says why, the caller where.
fn parse_line(line: &str) -> std::result::Result<HostLine, String> {
    let mut words = line.split_whitespace();
    let host = words
        .next()
        .expect("a non-empty line has a word")
        .to_string();
    let mut entry = HostLine {
        host,
        slots: 1,
        addr: None,
        switch: None,
    };
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| format!("`{word}` is not key=value"))?;
        entry.set(key, value)?;
    }
    Ok(entry)
}

impl HostLine {
    /// Takes one `key=value` word of its line.
    fn set(&mut self, key: &str, value: &str) -> std::result::Result<(), String> {
        match key {
            "slots" => {
                self.slots = value
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("slots=`{value}` is not a positive number"))?
            }
            "max_slots" => {}
            "addr" => {
                self.addr = Some(
                    value
                        .parse()
                        .map_err(|_| format!("addr=`{value}` is not an IP address"))?,
                )
            }
            "switch" => {
                if value.split(SWITCH_SEPARATOR).any(str::is_empty) {
                    return Err(format!(
                        "switch=`{value}` is not a path of names separated by `{SWITCH_SEPARATOR}`"
                    ));
                }
                self.switch = Some(value.to_string());
            }
            _ => {
                return Err(format!(
                    "unknown key `{key}` (slots, max_slots, addr, switch)"
                ))
            }
        }
        Ok(())
    }
}

/// Reads and parses a hostfile.
pub fn read_hostfile(path: &Path) -> Result<Vec<HostLine>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading hostfile {}", path.display()), e))?;
    parse_hostfile(&text, &path.display().to_string())
}

/// Where one rank runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The host's name.
    pub host: String,
    /// The address the rank listens on.
    pub addr: IpAddr,
    /// The host's switch, when the hostfile names it.
    pub switch: Option<String>,
}

/// Places `n` ranks: in hostfile order, each host's slots filled before the
/// next; all on 127.0.0.1 without a hostfile.
pub fn place(n: usize, hosts: Option<&[HostLine]>) -> Result<Vec<Place>> {
    let Some(hosts) = hosts else {
        let here = Place {
            host: "127.0.0.1".into(),
            addr: IpAddr::from([127, 0, 0, 1]),
            switch: None,
        };
        return Ok(vec![here; n]);
    };
    let slots: usize = hosts.iter().map(|h| h.slots).sum();
    if n > slots {
        return Err(Error::Config(format!(
            "the hostfile has {slots} slots, the job asks for {n} ranks"
        )));
    }
    let mut out = Vec::with_capacity(n);
    for line in hosts {
        let addr = match line.addr {
            Some(addr) => addr,
            None => resolve_host(&line.host)?,
        };
        for _ in 0..line.slots {
            out.push(Place {
                host: line.host.clone(),
                addr,
                switch: line.switch.clone(),
            });
        }
    }
    out.truncate(n);
    Ok(out)
}

/// The layout `n` ranks placed by the hostfile lines `hosts` have (the
/// hostfile's host names and switches), as [`place`] fills the slots,
/// without resolving any address: what a `local` job stands for when it
/// is given a hostfile.
pub fn layout_of(n: usize, hosts: &[HostLine]) -> Result<Layout> {
    let slots: usize = hosts.iter().map(|h| h.slots).sum();
    if n > slots {
        return Err(Error::Config(format!(
            "the hostfile has {slots} slots, the job asks for {n} ranks"
        )));
    }
    let (names, switches) = hosts
        .iter()
        .flat_map(|h| std::iter::repeat_n((h.host.clone(), h.switch.clone()), h.slots))
        .take(n)
        .unzip();
    Layout::new(names, switches)
}

fn resolve_host(host: &str) -> Result<IpAddr> {
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    let found = (host, 0)
        .to_socket_addrs()
        .map_err(|e| {
            Error::io(
                format!("resolving host `{host}` (give addr=IP in the hostfile)"),
                e,
            )
        })?
        .map(|a| a.ip())
        .collect::<Vec<_>>();
    found
        .iter()
        .find(|ip| ip.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| Error::Config(format!("host `{host}` has no address")))
}
