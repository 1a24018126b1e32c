//! Matching of incoming messages by source and tag, shared by the transports
//! whose messages arrive on one channel (local threads; TCP, whose receiving
//! thread files the frames it reads from its sockets).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};

use crate::error::{Error, Result};
use crate::transport::{Message, Tag};

/// What a transport's receiving side delivers: a message, or a fault seen on
/// a peer's connection (which ends the job's pending calls at once).
pub type Incoming = Result<Message>;

/// The key a message is matched on: source, context and the tag without
/// the call's description (which is compared separately to catch
/// mismatched calls).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Coll {
        src: usize,
        seq: u64,
        phase: u8,
        ctx: u32,
    },
    User {
        src: usize,
        tag: u64,
        ctx: u32,
    },
}

fn key(src: usize, tag: &Tag) -> Key {
    match *tag {
        Tag::Coll { call, phase, ctx } => Key::Coll {
            src,
            seq: call.seq,
            phase,
            ctx,
        },
        Tag::User { tag, ctx } => Key::User { src, tag, ctx },
    }
}

/// Whether a receive from `src` with `tag` takes `msg`.
pub(super) fn matches(msg: &Message, src: usize, tag: &Tag) -> bool {
    key(msg.src, &msg.tag) == key(src, tag)
}

/// Holds messages that arrived before anyone asked for them.
pub struct Mailbox {
    rank: usize,
    rx: Receiver<Incoming>,
    stash: HashMap<Key, VecDeque<Message>>,
    /// Peers known to have ended, with what was seen.
    gone: HashMap<usize, String>,
    timeout: Duration,
}

impl Mailbox {
    /// A mailbox for `rank` reading from `rx`.
    pub fn new(rank: usize, rx: Receiver<Incoming>, timeout: Duration) -> Self {
        Mailbox {
            rank,
            rx,
            stash: HashMap::new(),
            gone: HashMap::new(),
            timeout,
        }
    }

    /// How long `recv` waits.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Changes how long `recv` waits.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Waits for the next message from `src` with `tag`.
    pub fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        Ok(self.recv_message(src, tag)?.data)
    }

    /// Waits for the next message from `src` with `tag`, and returns it
    /// whole.
    pub fn recv_message(&mut self, src: usize, tag: Tag) -> Result<Message> {
        let deadline = Instant::now() + self.timeout;
        match self.next(src, tag, Some(deadline))? {
            Some(msg) => Ok(msg),
            None => Err(self.timed_out(src, &tag)),
        }
    }

    /// The next message from `src` with `tag` if it has arrived; never
    /// waits (for transports whose caller reads the sockets itself).
    pub fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        Ok(self.next(src, tag, None)?.map(|m| m.data))
    }

    /// As [`Mailbox::try_recv`], the message whole.
    pub fn try_recv_message(&mut self, src: usize, tag: Tag) -> Result<Option<Message>> {
        self.next(src, tag, None)
    }

    /// Takes matching messages from the stash, then from the channel until
    /// `deadline` (or until it is empty, without one); `None` when none came.
    fn next(&mut self, src: usize, tag: Tag, deadline: Option<Instant>) -> Result<Option<Message>> {
        let want = key(src, &tag);
        if let Some(queue) = self.stash.get_mut(&want) {
            if let Some(msg) = queue.pop_front() {
                if queue.is_empty() {
                    self.stash.remove(&want);
                }
                self.check_agreement(&msg, &tag)?;
                return Ok(Some(msg));
            }
        }
        self.check_alive(src)?;
        loop {
            let got = match deadline {
                Some(d) => self.rx.recv_deadline(d),
                None => self.rx.try_recv().map_err(|e| match e {
                    TryRecvError::Empty => RecvTimeoutError::Timeout,
                    TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                }),
            };
            let msg = match got {
                Ok(Ok(msg)) => msg,
                Ok(Err(Error::PeerGone { peer, reason, .. })) => {
                    // Messages the peer sent before it ended came first on
                    // the channel, so only a wait on that peer is hopeless.
                    self.gone.insert(peer, reason);
                    self.check_alive(src)?;
                    continue;
                }
                Ok(Err(fault)) => return Err(fault),
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::PeerGone {
                        rank: self.rank,
                        peer: src,
                        reason: "every connection to this rank is closed".into(),
                    });
                }
            };
            self.check_agreement(&msg, &tag)?;
            let got = key(msg.src, &msg.tag);
            if got == want {
                return Ok(Some(msg));
            }
            self.stash.entry(got).or_default().push_back(msg);
        }
    }

    fn check_alive(&self, src: usize) -> Result<()> {
        match self.gone.get(&src) {
            Some(reason) => Err(Error::PeerGone {
                rank: self.rank,
                peer: src,
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The error of a wait on `src` for `tag` that lasted the whole timeout.
    pub fn timed_out(&self, src: usize, tag: &Tag) -> Error {
        match tag.call() {
            Some(call) => Error::Timeout {
                rank: self.rank,
                peer: src,
                waited: self.timeout,
                call: *call,
            },
            None => Error::PeerGone {
                rank: self.rank,
                peer: src,
                reason: format!("no message with {tag} within {:?}", self.timeout),
            },
        }
    }

    /// A message for the same call number but a different call means the
    /// ranks' programs diverged; say so instead of waiting for a timeout.
    fn check_agreement(&self, msg: &Message, want: &Tag) -> Result<()> {
        if let (Some(remote), Some(local)) = (msg.tag.call(), want.call()) {
            let same_call = remote.seq == local.seq && msg.tag.ctx() == want.ctx();
            if same_call && remote != local {
                return Err(Error::Mismatch {
                    rank: self.rank,
                    local: *local,
                    peer: msg.src,
                    remote: *remote,
                });
            }
        }
        Ok(())
    }
}
