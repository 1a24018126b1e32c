//! The scheduler that plays the simulated network in virtual time: where
//! every rank is, the messages on the links, and when each is handed over.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Condvar, Mutex};

use bytes::Bytes;

use super::link::{Job, Link, SLACK_NS};
use super::model::Model;
use crate::transport::local::Local;
use crate::transport::{Message, Tag};

/// Where a rank is, as the scheduler sees it.
#[derive(Clone, Copy)]
pub(super) enum Rank {
    /// It may send, at this virtual time or later.
    Running(u64),
    /// It waits for a message from this source with this tag, and sends
    /// nothing until one comes.
    Waiting(usize, Tag),
    /// It has ended.
    Ended,
}

/// A message on the network, handed over when its last link is through.
pub(super) struct Held {
    pub(super) dest: usize,
    pub(super) msg: Message,
    pub(super) links_left: usize,
    pub(super) through: f64,
}

/// A burst's messages that leave the host, all ready at the burst's
/// first departure.
pub(super) struct Burst {
    pub(super) src: usize,
    pub(super) msgs: Vec<Away>,
}

/// A message that leaves its host: its id, its receiver, and the links of
/// its way with its time alone on each.
pub(super) struct Away {
    pub(super) id: u64,
    pub(super) dest: usize,
    pub(super) path: Vec<(usize, f64)>,
}

/// The job's state in virtual time, behind one lock.
#[derive(Default)]
pub(super) struct State {
    pub(super) links: Vec<Link>,
    /// The links with messages on them, by when the next is through
    /// (an f64's bits, which order as the numbers do: they are ≥ 0).
    pub(super) ends: BTreeSet<(u64, usize)>,
    pub(super) ranks: Vec<Rank>,
    pub(super) running: BTreeSet<(u64, usize)>,
    /// Bursts not yet on their links, by (ready, sequence).
    pub(super) bursts: BTreeMap<(u64, u64), Burst>,
    pub(super) held: HashMap<u64, Held>,
    /// How many of each rank's messages are held.
    pub(super) held_from: Vec<usize>,
    pub(super) next_id: u64,
    /// How far virtual time has been played: nothing can start before.
    pub(super) played: u64,
    /// Events played so far (a waiting rank's sign of progress).
    pub(super) events: u64,
    /// The thread of each rank that has waited, woken when its message
    /// is handed over.
    pub(super) threads: Vec<Option<std::thread::Thread>>,
}

impl State {
    pub(super) fn set(&mut self, rank: usize, to: Rank) {
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
    pub(super) fn next_event(&self) -> Option<f64> {
        let burst = self.bursts.keys().next().map(|&(t, _)| t as f64);
        let link = self.ends.first().map(|&(bits, _)| f64::from_bits(bits));
        burst.into_iter().chain(link).reduce(f64::min)
    }

    /// Files `link`'s next end anew after it changed.
    pub(super) fn requeue(&mut self, link: usize) {
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
pub(super) struct Machine {
    pub(super) model: Model,
    pub(super) hosts: usize,
    pub(super) state: Mutex<State>,
    /// Signalled when messages are handed over.
    pub(super) handed: Condvar,
}

impl Machine {
    pub(super) fn new(model: Model, ranks: usize) -> Machine {
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

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a burst from `src`: messages to its own host arrive through
    /// memory and are handed over at once; the others go on the network,
    /// ready on every link of their way when the burst's first leaves.
    pub(super) fn send(&self, st: &mut State, local: &Local, src: usize, burst: Vec<Pending>) {
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
    pub(super) fn play(&self, st: &mut State, local: &Local) {
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
    pub(super) fn both_ways(
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
    pub(super) fn hand_through(&self, st: &mut State, local: &Local, done: Vec<(u64, f64)>) {
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
pub(super) fn hand(st: &mut State, local: &Local, dest: usize, msg: Message) {
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
pub(super) struct Pending {
    pub(super) dest: usize,
    pub(super) tag: Tag,
    pub(super) data: Bytes,
    /// When it left the sender's processor.
    pub(super) depart: u64,
}
