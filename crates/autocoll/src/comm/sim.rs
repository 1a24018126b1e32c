//! The `sim` transport: the real collective code on virtual time, to see
//! at scales this machine cannot run.
//!
//! Every rank is a thread, as on [`local`](super::local), and messages
//! travel over its channels (a `Sim` wraps a `Local`); what differs is the
//! clock. Each rank
//! keeps its own virtual time ([`crate::clock::start_virtual`]), which
//! every measurement reads through [`crate::clock::now_ns`]. A message
//! carries the virtual time it arrives, worked out by the sender from a
//! [`Model`]:
//!
//! - LogGP's terms: the sender and the receiver are each busy `o` per
//!   message, a rank injects at most one message per `g`, and a message
//!   takes `L` on the wire after its last byte left;
//! - the topology's links in place of LogGP's per-byte gap `G`: every host
//!   has a link to its switch (up and down, `host_ns_per_byte`), switches
//!   of `hosts_per_switch` hosts have one to the top switch
//!   (`switch_ns_per_byte`), and a message occupies every link on its way
//!   for its bytes' time, after the messages already booked there;
//! - ranks of one host exchange through memory (`local_*`).
//!
//! Receives match on source and tag, so a rank's virtual time depends only
//! on its own work and the arrival times it is handed, not on the order in
//! which the threads happen to run. The exception is a link shared by
//! several senders: bookings are made in the order the threads reach
//! them, and a booking fits into the earliest gap that holds it, which
//! approximates first come, first served in virtual time.
//!
//! The work between messages (combining, copying) costs the thread's
//! processor time on this machine, times `cpu_scale` (0 leaves it out:
//! then every repetition is the same). Not modelled: ranks competing for
//! a core, TCP's congestion control and slow start, a receive buffer that
//! fills, and bandwidth shared between different senders' flows (a
//! sender's own flows share its link; other links serve their bookings
//! one after another).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::local::{check_rank, Local};
use super::{Communicator, Message, Tag, Transport};
use crate::clock::{now_ns, set_virtual};
use crate::error::{Error, Result};

/// What a message costs on the simulated machine: LogGP's terms and the
/// topology's links. Times in ns, per-byte costs in ns per byte.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Model {
    /// `L`: the wire's latency between two hosts.
    pub latency_ns: f64,
    /// `o`: the sender's and the receiver's processor time per message.
    pub overhead_ns: f64,
    /// `g`: the least time between two messages a rank injects.
    pub gap_ns: f64,
    /// A host's link to its switch, each way (80 is 100 Mbit/s).
    pub host_ns_per_byte: f64,
    /// Latency between two ranks of one host.
    pub local_latency_ns: f64,
    /// Per byte between two ranks of one host.
    pub local_ns_per_byte: f64,
    /// Ranks on each host, in rank order (`ranks_per_host` consecutive
    /// ranks share one).
    pub ranks_per_host: usize,
    /// Hosts on each switch; 0 puts every host on one switch.
    pub hosts_per_switch: usize,
    /// A switch's link to the top switch, each way.
    pub switch_ns_per_byte: f64,
    /// How much of the thread's processor time between messages counts
    /// (1: as this machine spends it; 0: none).
    pub cpu_scale: f64,
}

/// The emulated cluster `clusters/star8-100m.toml` as `autocoll sim fit`
/// measured it (docs/sim/star8.toml): eight hosts, one rank each, on
/// 95 Mbit/s links to one switch; ranks of one host as the two-subnet
/// cluster's (docs/sim/twosub.toml).
impl Default for Model {
    fn default() -> Self {
        Model {
            latency_ns: 21_427.0,
            overhead_ns: 10_714.0,
            gap_ns: 0.0,
            host_ns_per_byte: 84.235,
            local_latency_ns: 14_600.0,
            local_ns_per_byte: 0.438,
            ranks_per_host: 1,
            hosts_per_switch: 0,
            switch_ns_per_byte: 84.235,
            cpu_scale: 1.0,
        }
    }
}

impl Model {
    /// Reads a model from a TOML file; the error names the file and what
    /// is wrong in it.
    pub fn load(path: &Path) -> Result<Model> {
        let what = |detail: String| Error::Config(format!("{}: {detail}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| what(e.to_string()))?;
        let model: Model = toml::from_str(&text).map_err(|e| what(e.to_string()))?;
        model.check().map_err(what)?;
        Ok(model)
    }

    /// Refuses a model that cannot describe a machine.
    pub fn check(&self) -> std::result::Result<(), String> {
        let times = [
            ("latency_ns", self.latency_ns),
            ("overhead_ns", self.overhead_ns),
            ("gap_ns", self.gap_ns),
            ("host_ns_per_byte", self.host_ns_per_byte),
            ("local_latency_ns", self.local_latency_ns),
            ("local_ns_per_byte", self.local_ns_per_byte),
            ("switch_ns_per_byte", self.switch_ns_per_byte),
            ("cpu_scale", self.cpu_scale),
        ];
        if let Some((name, v)) = times.iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
            return Err(format!("{name} = {v}: a time must be a number ≥ 0"));
        }
        if self.ranks_per_host == 0 {
            return Err("ranks_per_host = 0: a host runs at least one rank".into());
        }
        Ok(())
    }

    /// The model as a TOML file's text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a model is plain numbers")
    }

    fn host(&self, rank: usize) -> usize {
        rank / self.ranks_per_host
    }

    fn switch(&self, host: usize) -> usize {
        match self.hosts_per_switch {
            0 => 0,
            n => host / n,
        }
    }

    /// The links a message from host `a` to host `b` crosses, with their
    /// cost per byte: `a`'s up, the switches' when it changes switch,
    /// `b`'s down. Links are numbered hosts first (2h up, 2h+1 down), then
    /// switches.
    fn path(&self, a: usize, b: usize, hosts: usize) -> Vec<(usize, f64)> {
        let mut links = vec![(2 * a, self.host_ns_per_byte)];
        let (sa, sb) = (self.switch(a), self.switch(b));
        if sa != sb {
            links.push((2 * hosts + 2 * sa, self.switch_ns_per_byte));
            links.push((2 * hosts + 2 * sb + 1, self.switch_ns_per_byte));
        }
        links.push((2 * b + 1, self.host_ns_per_byte));
        links
    }
}

/// A link's bookings in virtual time, `(start, end)` in order of start.
#[derive(Default)]
struct Link {
    busy: VecDeque<(u64, u64)>,
}

/// Bookings older than this many are taken to be in every rank's past.
const KEPT_BOOKINGS: usize = 512;

impl Link {
    /// Books the earliest `len` ns free from `ready` on; returns the start.
    fn book(&mut self, ready: u64, len: u64) -> u64 {
        let mut start = ready;
        let mut at = self.busy.len();
        for (i, &(s, e)) in self.busy.iter().enumerate() {
            if e <= start {
                continue;
            }
            if s >= start + len {
                at = i;
                break;
            }
            start = e;
        }
        self.busy.insert(at, (start, start + len));
        if self.busy.len() > KEPT_BOOKINGS {
            self.busy.pop_front();
        }
        start
    }
}

/// What the ranks of one simulated job share: the model and the links.
struct Machine {
    model: Model,
    hosts: usize,
    links: Vec<Mutex<Link>>,
}

impl Machine {
    fn new(model: Model, ranks: usize) -> Machine {
        let hosts = ranks.div_ceil(model.ranks_per_host);
        let switches = model.switch(hosts.saturating_sub(1)) + 1;
        let links = (0..2 * (hosts + switches))
            .map(|_| Mutex::new(Link::default()))
            .collect();
        Machine {
            model,
            hosts,
            links,
        }
    }

    /// When each message of a burst from `src` arrives. Messages to a
    /// rank of the same host go through memory; the others share the
    /// host's up link equally while they last (as TCP's flows do: a root
    /// that sends to three children gets the three messages out together,
    /// at a third of the rate each), then each takes the rest of its way.
    fn arrivals(&self, src: usize, burst: &[Pending]) -> Vec<u64> {
        let m = &self.model;
        let a = m.host(src);
        let mut out: Vec<u64> = burst
            .iter()
            .map(|p| match p.dest == src {
                true => p.depart,
                false => {
                    p.depart
                        + (m.local_latency_ns + p.data.len() as f64 * m.local_ns_per_byte) as u64
                }
            })
            .collect();
        let away: Vec<usize> = (0..burst.len())
            .filter(|&i| m.host(burst[i].dest) != a)
            .collect();
        let Some(first) = away.iter().map(|&i| burst[i].depart).min() else {
            return out;
        };
        // One flow per destination (a connection: its messages go in
        // order), each message's time alone on the link.
        let mut dests: Vec<usize> = Vec::new();
        let mut flows: Vec<Vec<usize>> = Vec::new();
        for &i in &away {
            match dests.iter().position(|&d| d == burst[i].dest) {
                Some(f) => flows[f].push(i),
                None => {
                    dests.push(burst[i].dest);
                    flows.push(vec![i]);
                }
            }
        }
        let alone = |i: usize| (burst[i].data.len() as f64 * m.host_ns_per_byte) as u64;
        let times: Vec<Vec<u64>> = flows
            .iter()
            .map(|f| f.iter().map(|&i| alone(i)).collect())
            .collect();
        let start = self.book(2 * a, first, away.iter().map(|&i| alone(i)).sum());
        let done = shared(start, &times);
        for (flow, ends) in flows.iter().zip(done) {
            // Its bytes trickle onto the next links from the burst's start
            // until it is done: each is booked for their time, from then.
            for (&i, done) in flow.iter().zip(ends) {
                let p = &burst[i];
                let mut end = done;
                for (link, per_byte) in m.path(a, m.host(p.dest), self.hosts).into_iter().skip(1) {
                    let len = (p.data.len() as f64 * per_byte) as u64;
                    end = end.max(self.book(link, start, len) + len);
                }
                out[i] = end + m.latency_ns as u64;
            }
        }
        out
    }

    /// Books `len` ns on `link` from `ready` on; returns the start.
    fn book(&self, link: usize, ready: u64, len: u64) -> u64 {
        self.links[link]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .book(ready, len)
    }
}

/// When each message of several flows that start together at `start`
/// and share one link equally ends, given each message's time alone on
/// the link (`flows[f][k]`: flow f's k-th message; a flow sends its
/// messages one after another). A flow that has ended leaves its share
/// to the others.
fn shared(start: u64, flows: &[Vec<u64>]) -> Vec<Vec<u64>> {
    let mut done: Vec<Vec<u64>> = flows.iter().map(|f| Vec::with_capacity(f.len())).collect();
    // Each flow's next message and what is left of it.
    let mut next: Vec<usize> = vec![0; flows.len()];
    let mut left: Vec<u64> = flows
        .iter()
        .map(|f| f.first().copied().unwrap_or(0))
        .collect();
    let mut t = start;
    loop {
        let active: Vec<usize> = (0..flows.len())
            .filter(|&f| next[f] < flows[f].len())
            .collect();
        let Some(step) = active.iter().map(|&f| left[f]).min() else {
            return done;
        };
        t += step * active.len() as u64;
        for &f in &active {
            left[f] -= step;
            if left[f] == 0 {
                done[f].push(t);
                next[f] += 1;
                left[f] = flows[f].get(next[f]).copied().unwrap_or(0);
            }
        }
    }
}

/// A message sent and not yet handed over: the rank's sends since its
/// last receive form a burst that shares the host's link.
struct Pending {
    dest: usize,
    tag: Tag,
    data: Bytes,
    /// When it left the sender's processor.
    depart: u64,
}

/// One rank's end of a simulated job: a local rank's channels, the
/// machine's model and links, and the rank's sends not yet handed over.
pub struct Sim {
    local: Local,
    machine: Arc<Machine>,
    /// The earliest virtual time this rank may inject its next message.
    next_inject: u64,
    /// Sends of the current burst, handed over at the rank's next
    /// receive, at the end of its collective call, or when it ends.
    pending: Vec<Pending>,
}

/// Creates the transports of an `n`-rank simulated job, one per rank.
pub fn transports(n: usize, model: &Model) -> Vec<Sim> {
    let machine = Arc::new(Machine::new(model.clone(), n));
    super::local::transports(n)
        .into_iter()
        .map(|local| Sim {
            local,
            machine: machine.clone(),
            next_inject: 0,
            pending: Vec::new(),
        })
        .collect()
}

/// A rank thread's stack: collectives keep their buffers on the heap, and
/// a thousand ranks of the default 2 MiB would reserve 2 GiB.
const STACK: usize = 512 << 10;

/// Runs `body` on `n` threads of virtual time, each with its own rank's
/// communicator, and returns what each rank returned, in rank order (as
/// [`super::local::run`], whose environment variables it honours).
pub fn run<R, F>(n: usize, model: &Model, body: F) -> Vec<R>
where
    R: Send,
    F: Fn(Communicator) -> R + Sync,
{
    let scale = model.cpu_scale;
    let start = move || crate::clock::start_virtual(scale);
    super::local::run_threads(transports(n, model), Some(STACK), &start, &body)
}

impl Sim {
    /// Hands the burst's messages over, each with its arrival time.
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let burst = std::mem::take(&mut self.pending);
        let src = self.rank();
        let arrivals = self.machine.arrivals(src, &burst);
        for (p, at_ns) in burst.into_iter().zip(arrivals) {
            let msg = Message {
                src,
                tag: p.tag,
                data: p.data,
                at_ns,
            };
            self.local.deliver(p.dest, msg)?;
        }
        Ok(())
    }

    /// The receiver's side of a message: busy `o` from when it arrives
    /// or the rank asks, whichever is later.
    fn received(&self, msg: Message) -> Bytes {
        set_virtual(now_ns().max(msg.at_ns) + self.machine.model.overhead_ns as u64);
        msg.data
    }
}

impl Transport for Sim {
    fn rank(&self) -> usize {
        self.local.rank()
    }

    fn size(&self) -> usize {
        self.local.size()
    }

    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        check_rank(dest, self.size())?;
        let model = &self.machine.model;
        let start = now_ns().max(self.next_inject);
        let depart = start + model.overhead_ns as u64;
        self.next_inject = start + model.gap_ns as u64;
        set_virtual(depart);
        self.pending.push(Pending {
            dest,
            tag,
            data,
            depart,
        });
        Ok(())
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        check_rank(src, self.size())?;
        self.flush()?;
        let msg = self.local.mailbox.recv_message(src, tag)?;
        Ok(self.received(msg))
    }

    /// Takes a message that has been sent, whatever its virtual arrival
    /// (the balancer's reports: a rank cannot know whether a message that
    /// has not been sent yet would have arrived by now).
    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        check_rank(src, self.size())?;
        self.flush()?;
        let msg = self.local.mailbox.try_recv_message(src, tag)?;
        Ok(msg.map(|m| self.received(m)))
    }

    fn kind(&self) -> &'static str {
        "sim"
    }

    fn finish_sends(&mut self) -> Result<()> {
        self.flush()
    }

    fn shared_clock(&self) -> bool {
        true
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.local.set_timeout(timeout);
    }

    fn hosts(&self) -> Vec<String> {
        let m = &self.machine.model;
        (0..self.size())
            .map(|r| format!("sim{}", m.host(r)))
            .collect()
    }

    fn switches(&self) -> Vec<Option<String>> {
        let m = &self.machine.model;
        (0..self.size())
            .map(|r| match m.hosts_per_switch {
                0 => None,
                _ => Some(format!("top/sw{}", m.switch(m.host(r)))),
            })
            .collect()
    }
}

impl Drop for Sim {
    /// Hands over what the rank sent last; its `Local` then tells the
    /// others that it ended.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests;
