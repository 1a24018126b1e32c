//! The embedded default: every rank is a thread of one process and messages
//! travel over unbounded channels. A payload is shared, never copied, on its
//! way from sender to receiver.
//!
//! `comm::local::run` starts a job on scoped threads and returns what each rank
//! returned: the transport of most tests and examples and of the command's
//! `--transport local`, with nothing to set up. Receives are matched by the
//! same [`Mailbox`] as `tcp`'s, so matching behaves
//! alike on both; all ranks read one clock.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{unbounded, Sender};

use crate::error::{Error, Result};
use crate::transport::mailbox::{Incoming, Mailbox};
use crate::transport::{Message, Tag, Transport, DEFAULT_TIMEOUT};

/// One rank's end of a set of in-process channels.
pub struct Local {
    rank: usize,
    peers: Arc<[Sender<Incoming>]>,
    /// Where this rank's messages are matched (the `sim` transport, which
    /// wraps a `Local`, reads their arrival times from it).
    pub(super) mailbox: Mailbox,
}

/// Creates the transports of an `n`-rank job in one process, one per rank.
pub fn transports(n: usize) -> Vec<Local> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| unbounded()).unzip();
    let peers: Arc<[Sender<Incoming>]> = senders.into();
    receivers
        .into_iter()
        .enumerate()
        .map(|(rank, rx)| Local {
            rank,
            peers: peers.clone(),
            mailbox: Mailbox::new(rank, rx, DEFAULT_TIMEOUT),
        })
        .collect()
}

/// Refuses a peer that is no rank of a `size`-rank job.
pub(super) fn check_rank(rank: usize, size: usize) -> Result<()> {
    match rank < size {
        true => Ok(()),
        false => Err(Error::RankOutOfRange { rank, size }),
    }
}

impl Local {
    /// Hands `msg` to `dest`'s channel.
    pub(super) fn deliver(&self, dest: usize, msg: Message) -> Result<()> {
        let size = self.size();
        let peer = self
            .peers
            .get(dest)
            .ok_or(Error::RankOutOfRange { rank: dest, size })?;
        peer.send(Ok(msg)).map_err(|_| Error::PeerGone {
            rank: self.rank,
            peer: dest,
            reason: "its thread has ended".into(),
        })
    }
}

impl Transport for Local {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.peers.len()
    }

    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        let msg = Message {
            src: self.rank,
            tag,
            data,
            at_ns: 0,
        };
        self.deliver(dest, msg)
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        check_rank(src, self.size())?;
        self.mailbox.recv(src, tag)
    }

    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        check_rank(src, self.size())?;
        self.mailbox.try_recv(src, tag)
    }

    fn kind(&self) -> &'static str {
        "local"
    }

    fn shared_clock(&self) -> bool {
        true
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.mailbox.set_timeout(timeout);
    }

    fn timeout(&self) -> Duration {
        self.mailbox.timeout()
    }

    fn hosts(&self) -> Vec<String> {
        vec!["localhost".to_string(); self.size()]
    }
}

impl Drop for Local {
    /// A rank that ends (or panics) tells the others, so that a wait on it
    /// fails at once instead of at the timeout.
    fn drop(&mut self) {
        for (peer, tx) in self.peers.iter().enumerate() {
            if peer != self.rank {
                let _ = tx.send(Err(Error::PeerGone {
                    rank: peer,
                    peer: self.rank,
                    reason: "its thread has ended".into(),
                }));
            }
        }
    }
}
