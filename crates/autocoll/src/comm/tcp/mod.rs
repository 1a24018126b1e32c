//! `tcp`: every rank is a process; ranks talk over one TCP connection per
//! pair, on one host or many.
//!
//! Sending never waits for the peer: [`Tcp::send`] first tries a
//! non-blocking write from the caller's thread (the fast path of a
//! ping-pong) and hands whatever did not fit to the peer's writer thread,
//! which finishes it while the caller goes on. Each connection has a reader
//! thread that decodes frames and pushes them, or the fault that ended the
//! connection, into the one channel a [`Mailbox`] matches receives from.
//!
//! Every byte from a socket is untrusted: see [`wire`] for the format and
//! [`setup`] for how ranks find and authenticate each other.

pub mod setup;
#[cfg(test)]
mod tests;
pub mod wire;

use std::io::{BufReader, IoSlice, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{unbounded, Receiver, Sender};
use rustix::net::{SendAncillaryBuffer, SendFlags};

pub use setup::Config;

use super::{Incoming, Mailbox, Message, Tag, Transport};
use crate::error::{Error, Result};
use wire::{Header, HEADER_LEN};

/// A frame's payload is allocated whole up to this size; above it the
/// buffer grows only as bytes arrive, so a peer that announces a huge frame
/// and sends nothing makes this process allocate little.
const TRUSTED_ALLOC: usize = 64 << 20;

/// One rank's connections to the other ranks of a TCP job.
pub struct Tcp {
    rank: usize,
    peers: Vec<Option<Peer>>,
    to_self: Sender<Incoming>,
    mailbox: Mailbox,
    hosts: Vec<String>,
    max_frame: u64,
}

/// The sending side of one connection.
struct Peer {
    stream: Arc<TcpStream>,
    out: Arc<Mutex<Out>>,
    queue: Option<Sender<Pending>>,
    writer: Option<JoinHandle<()>>,
}

/// What the caller and the writer thread share about a connection.
#[derive(Default)]
struct Out {
    /// Frames handed to the writer and not yet fully written. While any
    /// are, the caller must queue too, or frames would overtake each other.
    queued: usize,
    /// Why the connection can no longer be written, once it cannot.
    broken: Option<String>,
}

/// A frame being written: header, payload and how much of both is out.
struct Pending {
    header: [u8; HEADER_LEN],
    data: Bytes,
    done: usize,
}

impl Pending {
    fn total(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes what the socket takes; `Ok(true)` once all is written.
    fn write(&mut self, stream: &TcpStream, wait: bool) -> std::io::Result<bool> {
        let mut flags = SendFlags::NOSIGNAL;
        if !wait {
            flags |= SendFlags::DONTWAIT;
        }
        while self.done < self.total() {
            let (head, body) = if self.done < HEADER_LEN {
                (&self.header[self.done..], &self.data[..])
            } else {
                (&[][..], &self.data[self.done - HEADER_LEN..])
            };
            let slices = [IoSlice::new(head), IoSlice::new(body)];
            let mut control = SendAncillaryBuffer::default();
            match rustix::net::sendmsg(stream, &slices, &mut control, flags) {
                Ok(n) => self.done += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(rustix::io::Errno::AGAIN) if !wait => return Ok(false),
                Err(rustix::io::Errno::AGAIN) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the peer has not read for longer than the timeout",
                    ))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(true)
    }
}

impl Tcp {
    /// Joins the job `config` describes: binds, meets the other ranks and
    /// connects to every one of them.
    pub fn connect(config: &Config) -> Result<Tcp> {
        let links = setup::establish(config)?;
        Ok(Tcp::start(config, links))
    }

    /// Starts the reader and writer threads over established connections.
    fn start(config: &Config, links: setup::Links) -> Tcp {
        let (tx, rx) = unbounded();
        let peers = links
            .streams
            .into_iter()
            .enumerate()
            .map(|(peer, stream)| {
                let stream = stream?;
                let name = format!("rank {peer} ({})", links.addrs[peer]);
                Some(Peer::start(config, peer, name, stream, tx.clone()))
            })
            .collect();
        Tcp {
            rank: config.rank,
            peers,
            to_self: tx,
            mailbox: Mailbox::new(config.rank, rx, config.timeout),
            hosts: links.hosts,
            max_frame: config.max_frame,
        }
    }

    fn peer(&self, dest: usize) -> Result<&Peer> {
        let size = self.peers.len();
        match self.peers.get(dest) {
            Some(Some(peer)) => Ok(peer),
            _ => Err(Error::RankOutOfRange { rank: dest, size }),
        }
    }
}

fn lock(out: &Mutex<Out>) -> MutexGuard<'_, Out> {
    // A panic elsewhere leaves the counters intact; keep using them.
    out.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Peer {
    fn start(
        config: &Config,
        peer: usize,
        name: String,
        stream: TcpStream,
        tx: Sender<Incoming>,
    ) -> Peer {
        let stream = Arc::new(stream);
        let reader = Reader {
            me: config.rank,
            peer,
            name,
            max_frame: config.max_frame,
            tx,
        };
        let read_side = stream.clone();
        std::thread::Builder::new()
            .name(format!("tcp-read-{peer}"))
            .spawn(move || reader.run(&read_side))
            .expect("the operating system refused to start a reader thread");
        let out = Arc::new(Mutex::new(Out::default()));
        let (queue, rx) = unbounded();
        let (w_stream, w_out) = (stream.clone(), out.clone());
        let writer = std::thread::Builder::new()
            .name(format!("tcp-write-{peer}"))
            .spawn(move || write_queued(&w_stream, &w_out, rx))
            .expect("the operating system refused to start a writer thread");
        Peer {
            stream,
            out,
            queue: Some(queue),
            writer: Some(writer),
        }
    }

    /// Writes now what fits, queues the rest behind earlier frames.
    fn send(&self, mut frame: Pending) -> std::result::Result<(), String> {
        let mut out = lock(&self.out);
        if let Some(why) = &out.broken {
            return Err(why.clone());
        }
        if out.queued == 0 {
            match frame.write(&self.stream, false) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    let why = format!("writing to it failed: {e}");
                    out.broken = Some(why.clone());
                    return Err(why);
                }
            }
        }
        out.queued += 1;
        let queue = self.queue.as_ref().expect("the queue lives until drop");
        queue
            .send(frame)
            .map_err(|_| "its writer thread has ended".to_string())
    }
}

/// The writer thread: finishes queued frames in order.
fn write_queued(stream: &TcpStream, out: &Mutex<Out>, rx: Receiver<Pending>) {
    for mut frame in rx {
        let broken = lock(out).broken.is_some();
        let outcome = if broken {
            Ok(true)
        } else {
            frame.write(stream, true)
        };
        let mut out = lock(out);
        out.queued -= 1;
        if let Err(e) = outcome {
            out.broken = Some(format!("writing to it failed: {e}"));
        }
    }
}

/// The reader thread of one connection.
struct Reader {
    me: usize,
    peer: usize,
    name: String,
    max_frame: u64,
    tx: Sender<Incoming>,
}

/// Why a connection stopped delivering frames.
enum End {
    /// Closed or failed: the peer is gone.
    Closed(String),
    /// The peer sent bytes that break the protocol.
    Protocol(String),
}

impl Reader {
    fn run(self, stream: &TcpStream) {
        let mut input = BufReader::with_capacity(64 << 10, stream);
        loop {
            match self.frame(&mut input) {
                Ok(msg) => {
                    if self.tx.send(Ok(msg)).is_err() {
                        return;
                    }
                }
                Err(End::Closed(reason)) => return self.gone(reason),
                Err(End::Protocol(reason)) => {
                    // Cut the peer off: nothing it sends now can be trusted.
                    let _ = stream.shutdown(Shutdown::Both);
                    let _ = self.tx.send(Err(Error::Protocol {
                        peer: self.name.clone(),
                        reason: reason.clone(),
                    }));
                    return self.gone(format!("it broke the protocol: {reason}"));
                }
            }
        }
    }

    fn gone(&self, reason: String) {
        let _ = self.tx.send(Err(Error::PeerGone {
            rank: self.me,
            peer: self.peer,
            reason,
        }));
    }

    fn frame(&self, input: &mut impl Read) -> std::result::Result<Message, End> {
        let mut raw = [0u8; HEADER_LEN];
        read_header(input, &mut raw)?;
        let header = Header::decode(&raw).map_err(End::Protocol)?;
        if header.src as usize != self.peer {
            return Err(End::Protocol(format!(
                "frame claims to come from rank {}",
                header.src
            )));
        }
        if header.len > self.max_frame {
            return Err(End::Protocol(format!(
                "frame of {} bytes is above the maximum of {} (AUTOCOLL_MAX_FRAME)",
                header.len, self.max_frame
            )));
        }
        let len = header.len as usize;
        let mut data = Vec::with_capacity(len.min(TRUSTED_ALLOC));
        let got = input
            .take(header.len)
            .read_to_end(&mut data)
            .map_err(|e| End::Closed(format!("reading from it failed: {e}")))?;
        if got != len {
            return Err(End::Closed(format!(
                "its connection ended inside a frame ({got} of {len} bytes)"
            )));
        }
        Ok(Message {
            src: self.peer,
            tag: header.tag,
            data: Bytes::from(data),
        })
    }
}

/// Reads a whole header; a clean end before its first byte is a close.
fn read_header(input: &mut impl Read, raw: &mut [u8; HEADER_LEN]) -> std::result::Result<(), End> {
    let mut at = 0;
    while at < HEADER_LEN {
        match input.read(&mut raw[at..]) {
            Ok(0) if at == 0 => return Err(End::Closed("it closed its connection".into())),
            Ok(0) => {
                return Err(End::Closed(
                    "its connection ended inside a frame header".into(),
                ))
            }
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(End::Closed(format!("reading from it failed: {e}"))),
        }
    }
    Ok(())
}

impl Transport for Tcp {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.peers.len()
    }

    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        if data.len() as u64 > self.max_frame {
            return Err(Error::MessageTooLarge {
                bytes: data.len() as u64,
                max: self.max_frame,
            });
        }
        if dest == self.rank {
            let msg = Message {
                src: self.rank,
                tag,
                data,
            };
            let _ = self.to_self.send(Ok(msg));
            return Ok(());
        }
        let header = Header {
            src: self.rank as u32,
            tag,
            len: data.len() as u64,
        };
        let frame = Pending {
            header: header.encode(),
            data,
            done: 0,
        };
        self.peer(dest)?
            .send(frame)
            .map_err(|reason| Error::PeerGone {
                rank: self.rank,
                peer: dest,
                reason,
            })
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        if src >= self.size() {
            return Err(Error::RankOutOfRange {
                rank: src,
                size: self.size(),
            });
        }
        self.mailbox.recv(src, tag)
    }

    fn kind(&self) -> &'static str {
        "tcp"
    }

    fn shared_clock(&self) -> bool {
        self.hosts.windows(2).all(|w| w[0] == w[1])
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.mailbox.set_timeout(timeout);
    }

    fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }
}

impl Drop for Tcp {
    /// Finishes every queued frame (the writers give up after the timeout
    /// on a peer that stopped reading), then closes the sending side so
    /// peers see a clean end after the last frame.
    fn drop(&mut self) {
        for peer in self.peers.iter_mut().flatten() {
            drop(peer.queue.take());
            if let Some(writer) = peer.writer.take() {
                let _ = writer.join();
            }
            let _ = peer.stream.shutdown(Shutdown::Write);
        }
    }
}
