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

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::clock::{now_ns, set_virtual};
use crate::error::Result;
use crate::transport::local::{check_rank, Local};
use crate::transport::{Message, Tag, Transport};

mod link;
mod machine;
mod model;

use machine::{Machine, Pending, Rank};
pub use model::Model;

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
    /// a thousand rank threads on two cores those yields would be most of a
    /// run's context switches. It looks at its mailbox at least
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

    fn timeout(&self) -> Duration {
        self.timeout
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
