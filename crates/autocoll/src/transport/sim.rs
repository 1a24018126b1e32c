//! The `sim` transport: the real collective code on virtual time, to see
//! at scales this machine cannot run.
//!
//! Every rank is a thread, as on [`local`](super::local), and messages
//! travel over its channels (a `Sim` wraps a `Local`); what differs is the
//! clock. Each rank
//! keeps its own virtual time ([`crate::clock::start_virtual`]), which
//! every measurement reads through [`crate::clock::now_ns`]. A message
//! carries the virtual time it arrives, worked out from a [`Model`]:
//!
//! - LogGP's terms: the sender and the receiver are each busy `o` per
//!   message, a rank injects at most one message per `g`, and a message
//!   takes `L` on the wire after its last byte is through;
//! - the topology's links in place of LogGP's per-byte gap `G`: every host
//!   has a link to its switch (up and down, `host_ns_per_byte`), switches
//!   of `hosts_per_switch` hosts have one to the top switch
//!   (`switch_ns_per_byte`), and a message crosses every link on its way,
//!   taking turns at each with the other connections that have a message
//!   on it at the same virtual time, a window (`window_bytes`) at a time
//!   (as TCP's connections put a window of packets at a time into a
//!   link's queue), and `both_ways` slower while the link the other way
//!   carries data too (acknowledgements queue behind that data);
//! - ranks of one host exchange through memory (`local_*`).
//!
//! Sharing a link with every message that crosses it at the same virtual
//! time needs those messages known before any is handed over, and the
//! threads run in any order. A scheduler (`Machine`) plays the network
//! event by event, only as far as no running rank can still send into
//! it: a rank that waits for a message sends nothing before it comes, and
//! a running one nothing before its clock. So every run of a job with
//! `cpu_scale` 0 gives the same times, whatever order the threads run in.
//!
//! The work between messages (combining, copying) costs the thread's
//! processor time on this machine, times `cpu_scale` (0 leaves it out:
//! then every repetition is the same); the simulator's own work does not
//! count. Not modelled: ranks competing for a core, TCP's congestion
//! control and slow start (the window does not grow), a receive buffer
//! that fills.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::clock::{now_ns, set_virtual};
use crate::error::{Error, Result};
use crate::transport::local::{check_rank, Local};
use crate::transport::{Message, Tag, Transport};

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
    /// Bytes a connection sends on a shared link before the next one has
    /// its turn (TCP's window); 0 shares every link evenly byte by byte.
    pub window_bytes: f64,
    /// How much slower a link carries data while the link the other way
    /// (between the same host or switch and the next) carries data too:
    /// each direction's acknowledgements queue behind the other's data
    /// (0.07: 7% slower).
    pub both_ways: f64,
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
            window_bytes: WINDOW_BYTES,
            both_ways: BOTH_WAYS,
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
        let numbers = [
            ("latency_ns", self.latency_ns),
            ("overhead_ns", self.overhead_ns),
            ("gap_ns", self.gap_ns),
            ("host_ns_per_byte", self.host_ns_per_byte),
            ("local_latency_ns", self.local_latency_ns),
            ("local_ns_per_byte", self.local_ns_per_byte),
            ("switch_ns_per_byte", self.switch_ns_per_byte),
            ("cpu_scale", self.cpu_scale),
            ("window_bytes", self.window_bytes),
            ("both_ways", self.both_ways),
        ];
        if let Some((name, v)) = numbers.iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
            return Err(format!("{name} = {v}: must be a number ≥ 0"));
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
        let link = |l: usize| (l, self.per_byte(l, hosts));
        let mut links = vec![link(2 * a)];
        let (sa, sb) = (self.switch(a), self.switch(b));
        if sa != sb {
            links.push(link(2 * hosts + 2 * sa));
            links.push(link(2 * hosts + 2 * sb + 1));
        }
        links.push(link(2 * b + 1));
        links
    }

    /// The cost per byte of link `link` (numbered as in [`Model::path`])
    /// of a machine of `hosts` hosts.
    fn per_byte(&self, link: usize, hosts: usize) -> f64 {
        match link < 2 * hosts {
            true => self.host_ns_per_byte,
            false => self.switch_ns_per_byte,
        }
    }
}

/// TCP's initial window (RFC 6928: ten segments of 1460 bytes): a
/// connection puts this much on its host's link before it waits for
/// acknowledgements.
const WINDOW_BYTES: f64 = 14_600.0;

/// How much slower star8's links carried a 2-rank exchange than one way
/// (docs/sim.md).
const BOTH_WAYS: f64 = 0.07;

/// A message's turn on a link: what is left of its time alone there.
struct Job {
    msg: u64,
    left: f64,
}

/// A link played on in virtual time: its flows (one per connection,
/// whose messages cross in order) take turns, each a window's time alone
/// on it at a time, as TCP's connections take turns at a link's queue a
/// window of packets at a time; with no window they share it evenly;
/// `now` is how far it has been played.
struct Link {
    now: f64,
    flows: Vec<((usize, usize), VecDeque<Job>)>,
    /// Its entry in the scheduler's queue of next ends.
    queued: Option<u64>,
    /// A window's time alone on the link (0: an even share).
    window: f64,
    /// The flow whose turn it is, and what is left of its window.
    turn: usize,
    turn_left: f64,
    /// Time per unit of a message's time alone here: above 1 while the
    /// link the other way carries data too.
    slow: f64,
}

/// Less than this much of a message's time is taken to be nothing left.
const SLACK_NS: f64 = 1e-3;

impl Link {
    fn new(window: f64) -> Link {
        Link {
            now: 0.0,
            flows: Vec::new(),
            queued: None,
            window,
            turn: 0,
            turn_left: window,
            slow: 1.0,
        }
    }

    /// Plays the link on to `to`, pushing the messages whose last byte
    /// crossed, with when.
    fn advance(&mut self, to: f64, done: &mut Vec<(u64, f64)>) {
        if self.window > 0.0 {
            return self.take_turns(to, done);
        }
        loop {
            self.flows.retain(|(_, q)| !q.is_empty());
            let Some(least) = self.least() else {
                self.now = self.now.max(to);
                return;
            };
            // Each flow's time per unit of its time alone.
            let pace = self.flows.len() as f64 * self.slow;
            // Within a rounding error of `to` counts as through by then
            // (far into a run, a nanosecond's millionth is below f64's
            // resolution of the clock).
            if self.now + least * pace > to + SLACK_NS {
                let step = (to - self.now).max(0.0);
                self.now += step;
                self.flows
                    .iter_mut()
                    .for_each(|(_, q)| q[0].left -= step / pace);
                return;
            }
            self.now += least * pace;
            for (_, queue) in &mut self.flows {
                queue[0].left -= least;
                if queue[0].left <= SLACK_NS {
                    done.push((queue[0].msg, self.now));
                    queue.pop_front();
                }
            }
        }
    }

    /// [`Link::advance`] with turns: the flow whose turn it is crosses
    /// alone until its window or its messages run out, then the next.
    fn take_turns(&mut self, to: f64, done: &mut Vec<(u64, f64)>) {
        loop {
            if self.flows.is_empty() {
                (self.turn, self.turn_left) = (0, self.window);
                self.now = self.now.max(to);
                return;
            }
            if self.turn >= self.flows.len() {
                (self.turn, self.turn_left) = (0, self.window);
            }
            let queue = &mut self.flows[self.turn].1;
            let chunk = queue[0].left.min(self.turn_left);
            if self.now + chunk * self.slow > to + SLACK_NS {
                let step = (to - self.now).max(0.0);
                let work = step / self.slow;
                (self.now, queue[0].left, self.turn_left) =
                    (self.now + step, queue[0].left - work, self.turn_left - work);
                return;
            }
            self.now += chunk * self.slow;
            queue[0].left -= chunk;
            self.turn_left -= chunk;
            if queue[0].left <= SLACK_NS {
                done.push((queue[0].msg, self.now));
                queue.pop_front();
            }
            if queue.is_empty() {
                // The next flow moves up to this turn.
                self.flows.remove(self.turn);
                self.turn_left = self.window;
            } else if self.turn_left <= SLACK_NS {
                self.turn += 1;
                self.turn_left = self.window;
            }
        }
    }

    /// The least time alone left to a flow's first message.
    fn least(&self) -> Option<f64> {
        self.flows.iter().map(|(_, q)| q[0].left).reduce(f64::min)
    }

    /// When the next message ends if nothing else comes.
    fn next_end(&self) -> Option<f64> {
        if self.window <= 0.0 {
            let pace = self.flows.len() as f64 * self.slow;
            return self.least().map(|l| self.now + l * pace);
        }
        // The turns played on, on the flows' first messages, until one ends.
        let mut left: Vec<f64> = self.flows.iter().map(|(_, q)| q[0].left).collect();
        let (mut t, mut turn, mut window) = (self.now, self.turn, self.turn_left);
        while !left.is_empty() {
            if turn >= left.len() {
                (turn, window) = (0, self.window);
            }
            let chunk = left[turn].min(window);
            t += chunk * self.slow;
            left[turn] -= chunk;
            window -= chunk;
            if left[turn] <= SLACK_NS {
                return Some(t);
            }
            if window <= SLACK_NS {
                (turn, window) = (turn + 1, self.window);
            }
        }
        None
    }

    /// Whether a message is on it.
    fn busy(&self) -> bool {
        self.flows.iter().any(|(_, q)| !q.is_empty())
    }

    fn add(&mut self, flow: (usize, usize), job: Job) {
        match self.flows.iter_mut().find(|(f, _)| *f == flow) {
            Some((_, queue)) => queue.push_back(job),
            None => self.flows.push((flow, VecDeque::from([job]))),
        }
    }
}

/// Where a rank is, as the scheduler sees it.
#[derive(Clone, Copy)]
enum Rank {
    /// It may send, at this virtual time or later.
    Running(u64),
    /// It waits for a message from this source with this tag, and sends
    /// nothing until one comes.
    Waiting(usize, Tag),
    /// It has ended.
    Ended,
}

/// A message on the network, handed over when its last link is through.
struct Held {
    dest: usize,
    msg: Message,
    links_left: usize,
    through: f64,
}

/// A burst's messages that leave the host, all ready at the burst's
/// first departure.
struct Burst {
    src: usize,
    msgs: Vec<Away>,
}

/// A message that leaves its host: its id, its receiver, and the links of
/// its way with its time alone on each.
struct Away {
    id: u64,
    dest: usize,
    path: Vec<(usize, f64)>,
}

/// The job's state in virtual time, behind one lock.
#[derive(Default)]
struct State {
    links: Vec<Link>,
    /// The links with messages on them, by when the next is through
    /// (an f64's bits, which order as the numbers do: they are ≥ 0).
    ends: BTreeSet<(u64, usize)>,
    ranks: Vec<Rank>,
    running: BTreeSet<(u64, usize)>,
    /// Bursts not yet on their links, by (ready, sequence).
    bursts: BTreeMap<(u64, u64), Burst>,
    held: HashMap<u64, Held>,
    /// How many of each rank's messages are held.
    held_from: Vec<usize>,
    next_id: u64,
    /// How far virtual time has been played: nothing can start before.
    played: u64,
    /// Events played so far (a waiting rank's sign of progress).
    events: u64,
    /// The thread of each rank that has waited, woken when its message
    /// is handed over.
    threads: Vec<Option<std::thread::Thread>>,
}

impl State {
    fn set(&mut self, rank: usize, to: Rank) {
        if let Rank::Running(t) = self.ranks[rank] {
            self.running.remove(&(t, rank));
        }
        if let Rank::Running(t) = to {
            self.running.insert((t, rank));
        }
        self.ranks[rank] = to;
    }

    /// The next thing that happens on the network: a burst that becomes
    /// ready or a message through a link.
    fn next_event(&self) -> Option<f64> {
        let burst = self.bursts.keys().next().map(|&(t, _)| t as f64);
        let link = self.ends.first().map(|&(bits, _)| f64::from_bits(bits));
        burst.into_iter().chain(link).reduce(f64::min)
    }

    /// Files `link`'s next end anew after it changed.
    fn requeue(&mut self, link: usize) {
        if let Some(bits) = self.links[link].queued.take() {
            self.ends.remove(&(bits, link));
        }
        if let Some(end) = self.links[link].next_end() {
            let bits = end.to_bits();
            self.ends.insert((bits, link));
            self.links[link].queued = Some(bits);
        }
    }
}

/// What the ranks of one simulated job share: the model, the links, and
/// the scheduler that plays the network in virtual time.
///
/// A message is handed over only once virtual time has passed its end:
/// a rank that still runs may send from its clock on, and its messages
/// can slow those on the links it shares. Virtual time is played up to
/// the least clock of the running ranks (ranks that wait for a message
/// send nothing before it comes); when every rank waits, up to the next
/// event. So every message shares each link with exactly the messages
/// that cross it at the same virtual time, whatever order the threads
/// run in.
struct Machine {
    model: Model,
    hosts: usize,
    state: Mutex<State>,
    /// Signalled when messages are handed over.
    handed: Condvar,
}

impl Machine {
    fn new(model: Model, ranks: usize) -> Machine {
        let hosts = ranks.div_ceil(model.ranks_per_host);
        let switches = model.switch(hosts.saturating_sub(1)) + 1;
        let state = State {
            links: (0..2 * (hosts + switches))
                .map(|l| Link::new(model.window_bytes * model.per_byte(l, hosts)))
                .collect(),
            ranks: vec![Rank::Running(0); ranks],
            running: (0..ranks).map(|r| (0, r)).collect(),
            held_from: vec![0; ranks],
            threads: vec![None; ranks],
            ..State::default()
        };
        Machine {
            model,
            hosts,
            state: Mutex::new(state),
            handed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a burst from `src`: messages to its own host arrive through
    /// memory and are handed over at once; the others go on the network,
    /// ready on every link of their way when the burst's first leaves.
    fn send(&self, st: &mut State, local: &Local, src: usize, burst: Vec<Pending>) {
        let m = &self.model;
        let a = m.host(src);
        let first = burst.iter().map(|p| p.depart).min().unwrap_or(0);
        let mut away = Burst {
            src,
            msgs: Vec::new(),
        };
        for p in burst {
            let mut msg = Message {
                src,
                tag: p.tag,
                data: p.data,
                at_ns: p.depart,
            };
            let b = m.host(p.dest);
            if b == a {
                if p.dest != src {
                    msg.at_ns +=
                        (m.local_latency_ns + msg.data.len() as f64 * m.local_ns_per_byte) as u64;
                }
                hand(st, local, p.dest, msg);
                continue;
            }
            let path: Vec<(usize, f64)> = m
                .path(a, b, self.hosts)
                .into_iter()
                .map(|(link, per_byte)| (link, msg.data.len() as f64 * per_byte))
                .collect();
            let id = st.next_id;
            st.next_id += 1;
            st.held.insert(
                id,
                Held {
                    dest: p.dest,
                    msg,
                    links_left: path.len(),
                    through: 0.0,
                },
            );
            st.held_from[src] += 1;
            away.msgs.push(Away {
                id,
                dest: p.dest,
                path,
            });
        }
        if !away.msgs.is_empty() {
            let seq = st.next_id;
            st.next_id += 1;
            st.bursts.insert((first.max(st.played), seq), away);
        }
    }

    /// Plays virtual time on, event by event, as far as it is known (see
    /// [`Machine`]), handing over the messages through the network by
    /// then. A message through at `t` wakes its receiver at `t + L` at
    /// the earliest, so each event is played before the clocks it may
    /// wake are taken into account.
    fn play(&self, st: &mut State, local: &Local) {
        while let Some(at) = st.next_event() {
            if st.running.first().is_some_and(|&(t, _)| (t as f64) < at) {
                return;
            }
            let mut done = Vec::new();
            let mut touched = Vec::new();
            while let Some(entry) = st.bursts.first_entry() {
                let ready = entry.key().0;
                if ready as f64 > at {
                    break;
                }
                let burst = entry.remove();
                for Away { id, dest, path } in burst.msgs {
                    for (link, work) in path {
                        st.links[link].advance(ready as f64, &mut done);
                        st.links[link].add(
                            (burst.src, dest),
                            Job {
                                msg: id,
                                left: work,
                            },
                        );
                        st.requeue(link);
                        touched.push(link);
                    }
                }
            }
            // Links untouched by then need no playing: nothing changes on
            // them until their next end.
            let through: Vec<usize> = st
                .ends
                .iter()
                .take_while(|&&(bits, _)| f64::from_bits(bits) <= at + SLACK_NS)
                .map(|&(_, link)| link)
                .collect();
            for &link in &through {
                st.links[link].advance(at, &mut done);
                st.requeue(link);
            }
            touched.extend(through);
            self.both_ways(st, at, touched, &mut done);
            st.played = st.played.max(at as u64);
            st.events += 1;
            self.hand_through(st, local, done);
        }
    }

    /// Sets the pace of the links the other way from `touched` (changed at
    /// `at`): slower while both directions carry data.
    fn both_ways(
        &self,
        st: &mut State,
        at: f64,
        mut touched: Vec<usize>,
        done: &mut Vec<(u64, f64)>,
    ) {
        if self.model.both_ways == 0.0 {
            return;
        }
        while let Some(link) = touched.pop() {
            let other = link ^ 1;
            let slow = match st.links[link].busy() {
                true => 1.0 + self.model.both_ways,
                false => 1.0,
            };
            if st.links[other].slow != slow {
                let before = st.links[other].busy();
                st.links[other].advance(at, done);
                st.links[other].slow = slow;
                st.requeue(other);
                if st.links[other].busy() != before {
                    touched.push(other);
                }
            }
        }
    }

    /// Hands over the messages whose last link is through, in order of
    /// arrival (a connection's messages stay in order).
    fn hand_through(&self, st: &mut State, local: &Local, done: Vec<(u64, f64)>) {
        let mut through = Vec::new();
        for (id, end) in done {
            let held = st.held.get_mut(&id).expect("a message on a link is held");
            held.through = held.through.max(end);
            held.links_left -= 1;
            if held.links_left == 0 {
                through.push(id);
            }
        }
        let mut out: Vec<Held> = through
            .into_iter()
            .map(|id| st.held.remove(&id).expect("held"))
            .collect();
        for held in &mut out {
            held.msg.at_ns = held.through.round() as u64 + self.model.latency_ns as u64;
        }
        out.sort_by_key(|h| h.msg.at_ns);
        if !out.is_empty() {
            self.handed.notify_all();
        }
        for held in out {
            st.held_from[held.msg.src] -= 1;
            hand(st, local, held.dest, held.msg);
        }
    }
}

/// Hands `msg` to `dest`; a rank that waited for it runs again from its
/// arrival. A rank that has ended has told the others so, and its
/// messages are dropped.
fn hand(st: &mut State, local: &Local, dest: usize, msg: Message) {
    let wakes = match st.ranks[dest] {
        Rank::Waiting(src, tag) => crate::transport::mailbox::matches(&msg, src, &tag),
        _ => false,
    };
    if wakes {
        st.set(dest, Rank::Running(msg.at_ns));
    }
    let _ = local.deliver(dest, msg);
    if let (true, Some(thread)) = (wakes, &st.threads[dest]) {
        thread.unpark();
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
    /// How long a wait goes on with no event played (the receives').
    timeout: Duration,
}

/// Creates the transports of an `n`-rank simulated job, one per rank.
pub fn transports(n: usize, model: &Model) -> Vec<Sim> {
    let machine = Arc::new(Machine::new(model.clone(), n));
    crate::transport::local::transports(n)
        .into_iter()
        .map(|local| Sim {
            local,
            machine: machine.clone(),
            next_inject: 0,
            pending: Vec::new(),
            timeout: crate::transport::DEFAULT_TIMEOUT,
        })
        .collect()
}

/// How long a waiting rank parks at most before it looks at its mailbox
/// again unwoken.
const POLL: Duration = Duration::from_millis(100);

/// A wait that gives up only when a whole timeout passes with no event
/// played: the scheduler may hold a message back, in real time, while
/// ranks behind in virtual time still run.
struct Patience {
    seen: u64,
    /// `None` for a timeout too long to reach (`Duration::MAX`).
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Patience {
    fn new(events: u64, timeout: Duration) -> Patience {
        Patience {
            seen: events,
            deadline: Instant::now().checked_add(timeout),
            timeout,
        }
    }

    /// How long to wait on now that `events` have been played; `None`
    /// once a whole timeout has passed without one.
    fn left(&mut self, events: u64) -> Option<Duration> {
        let now = Instant::now();
        if events != self.seen {
            self.seen = events;
            self.deadline = now.checked_add(self.timeout);
        }
        match self.deadline {
            None => Some(Duration::MAX),
            Some(d) if now >= d => None,
            Some(d) => Some(d - now),
        }
    }
}

impl Sim {
    /// Puts the burst on the network; the rank runs on from its clock.
    fn flush(&mut self) -> Result<()> {
        let t = now_ns();
        self.step(t, None)?;
        Ok(())
    }

    /// At virtual time `t`, puts the burst on the network and, for a
    /// receive (`want`), takes the message if it is here or says that the
    /// rank waits for it; then plays the network on. One lock for all.
    fn step(&mut self, t: u64, want: Option<(usize, Tag)>) -> Result<Option<Message>> {
        let rank = self.rank();
        let burst = std::mem::take(&mut self.pending);
        let mut st = self.machine.lock();
        if !burst.is_empty() {
            self.machine.send(&mut st, &self.local, rank, burst);
        }
        let here = match want {
            Some((src, tag)) => self.local.mailbox.try_recv_message(src, tag)?,
            None => None,
        };
        let now = match (want, &here) {
            (Some((src, tag)), None) => {
                st.threads[rank].get_or_insert_with(std::thread::current);
                Rank::Waiting(src, tag)
            }
            _ => Rank::Running(t),
        };
        st.set(rank, now);
        self.machine.play(&mut st, &self.local);
        drop(st);
        // Playing the network is the simulator's work, not the rank's: it
        // costs the rank no virtual time (nor does waiting for the lock).
        set_virtual(t);
        Ok(here)
    }

    /// Waits for the message the rank said it waits for. The scheduler
    /// holds a message back, in real time, for as long as ranks behind in
    /// virtual time still run (a pipeline's far end, say), so the wait
    /// goes on while events are played; it fails as the mailbox's does
    /// only when a whole timeout passes without one (a deadlock, or a
    /// rank that stopped).
    ///
    /// The rank parks until the scheduler hands its message over and wakes
    /// it: a channel's blocking receive spins and yields first, and with
    /// a thousand rank threads on two cores those yields were most of a
    /// run's context switches (issue 20). It looks at its mailbox at least
    /// every [`POLL`] too, for news that comes without a wake (a peer that
    /// ended).
    fn wait(&mut self, src: usize, tag: Tag) -> Result<Message> {
        let mut patience = Patience::new(self.machine.lock().events, self.timeout);
        loop {
            if let Some(msg) = self.local.mailbox.try_recv_message(src, tag)? {
                return Ok(msg);
            }
            let Some(left) = patience.left(self.machine.lock().events) else {
                return Err(self.local.mailbox.timed_out(src, &tag));
            };
            std::thread::park_timeout(left.min(POLL));
        }
    }

    /// The receiver's side of a message asked for at `asked`: busy `o`
    /// from when it arrives or the rank asked, whichever is later (the
    /// processor time spent waiting is the simulator's).
    fn received(&self, msg: Message, asked: u64) -> Bytes {
        set_virtual(asked.max(msg.at_ns) + self.machine.model.overhead_ns as u64);
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

    /// Waits for the message: the rank sends nothing until it comes, so
    /// virtual time may be played past its clock meanwhile.
    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        check_rank(src, self.size())?;
        let asked = now_ns();
        let msg = match self.step(asked, Some((src, tag)))? {
            Some(msg) => msg,
            None => self.wait(src, tag).inspect_err(|_| {
                // A rank that gave up waiting runs on (to end, most likely).
                self.machine.lock().set(self.rank(), Rank::Running(asked));
            })?,
        };
        Ok(self.received(msg, asked))
    }

    /// Takes a message that has been handed over, whatever its virtual
    /// arrival (the balancer's reports). A rank that polls in a loop holds
    /// virtual time back: the balancer refuses `sim`.
    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        check_rank(src, self.size())?;
        self.flush()?;
        let asked = now_ns();
        let msg = self.local.mailbox.try_recv_message(src, tag)?;
        Ok(msg.map(|m| self.received(m, asked)))
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
        self.timeout = timeout;
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
    /// Puts what the rank sent last on the network and stops holding
    /// virtual time back; its `Local` then tells the others that it ended.
    ///
    /// Its messages still on the network are handed over first: a rank
    /// that hears a peer has ended stops waiting for it.
    fn drop(&mut self) {
        let _ = self.flush();
        let rank = self.rank();
        let mut st = self.machine.lock();
        st.set(rank, Rank::Ended);
        self.machine.play(&mut st, &self.local);
        // As a receive does (`wait`): on while events are played.
        let mut patience = Patience::new(st.events, self.timeout);
        while st.held_from[rank] > 0 {
            let Some(left) = patience.left(st.events) else {
                return;
            };
            st = self
                .machine
                .handed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}
