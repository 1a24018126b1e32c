//! `tcp`: every rank is a process; ranks talk over one TCP connection per
//! pair, on one host or many.
//!
//! Sending never waits for the peer: [`Tcp::send`] first tries a
//! non-blocking write from the caller's thread (the fast path of a
//! ping-pong) and hands whatever did not fit to the peer's writer thread,
//! which finishes it while the caller goes on. Receiving is done by the
//! caller's thread itself, as a plain socket program would: while the
//! message it waits for has not arrived, it polls every open connection,
//! decodes the frames that came (whoever sent them) and files them, or the
//! fault that ended a connection, in the [`Mailbox`] that matches receives
//! by source and tag. No thread hand-off sits on the latency path.
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
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::{unbounded, Receiver, Sender};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{SendAncillaryBuffer, SendFlags};

pub use setup::Config;

use crate::error::{Error, Result};
use crate::transport::mailbox::{Incoming, Mailbox};
use crate::transport::{Message, Tag, Transport};
use wire::{Header, HEADER_LEN};

/// A frame's payload is allocated whole up to this size; above it the
/// buffer grows only as bytes arrive, so a peer that announces a huge frame
/// and sends nothing makes this process allocate little.
const TRUSTED_ALLOC: usize = 64 << 20;

/// One rank's connections to the other ranks of a TCP job.
pub struct Tcp {
    rank: usize,
    peers: Vec<Option<Peer>>,
    readers: Vec<Option<Reader>>,
    to_self: Sender<Incoming>,
    mailbox: Mailbox,
    hosts: Vec<String>,
    switches: Vec<Option<String>>,
    /// Every rank's clock identity: equal ids read one monotonic clock.
    clocks: Vec<[u8; 16]>,
    max_frame: u64,
}

/// The sending side of one connection.
struct Peer {
    stream: Arc<TcpStream>,
    out: Arc<Mutex<Out>>,
    queue: Option<Sender<Pending>>,
    writer: Option<JoinHandle<()>>,
    /// Tells [`Drop`] the writer has finished.
    written: Receiver<()>,
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
        Tcp::start(config, links)
    }

    /// [`Tcp::connect`] on a listener the caller bound with
    /// [`setup::bind`] (to learn rank 0's port before the others start).
    pub fn connect_on(config: &Config, listener: std::net::TcpListener) -> Result<Tcp> {
        let links = setup::establish_on(config, listener)?;
        Tcp::start(config, links)
    }

    /// Starts the writer threads over established connections.
    fn start(config: &Config, links: setup::Links) -> Result<Tcp> {
        let (tx, rx) = unbounded();
        let mut peers = Vec::with_capacity(links.streams.len());
        let mut readers = Vec::with_capacity(links.streams.len());
        for (peer, stream) in links.streams.into_iter().enumerate() {
            let Some(stream) = stream else {
                peers.push(None);
                readers.push(None);
                continue;
            };
            let input = stream
                .try_clone()
                .map_err(|e| Error::io("duplicating a socket", e))?;
            readers.push(Some(Reader {
                peer,
                name: format!("rank {peer} ({})", links.addrs[peer]),
                max_frame: config.max_frame,
                input: BufReader::with_capacity(64 << 10, input),
            }));
            peers.push(Some(Peer::start(peer, stream)));
        }
        Ok(Tcp {
            rank: config.rank,
            peers,
            readers,
            to_self: tx,
            mailbox: Mailbox::new(config.rank, rx, config.timeout),
            hosts: links.hosts,
            switches: links.switches,
            clocks: links.clocks,
            max_frame: config.max_frame,
        })
    }

    /// Every rank's clock identity, by rank: ranks with equal ones run on
    /// one machine (one kernel).
    pub fn clocks(&self) -> &[[u8; 16]] {
        &self.clocks
    }

    /// Waits up to `left` for any connection to have input, and files every
    /// frame that came in the mailbox (or the fault that ended a connection).
    fn pump(&mut self, left: Duration) {
        let open: Vec<usize> = (0..self.readers.len())
            .filter(|&p| self.readers[p].is_some())
            .collect();
        if open.is_empty() {
            std::thread::sleep(left);
            return;
        }
        let mut fds: Vec<PollFd<'_>> = open
            .iter()
            .map(|&p| {
                let input = self.readers[p].as_ref().expect("open").input.get_ref();
                PollFd::new(input, PollFlags::IN)
            })
            .collect();
        let wait = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        if rustix::event::poll(&mut fds, Some(&wait)).is_err() {
            return; // Interrupted: the caller's loop polls again.
        }
        let ready: Vec<usize> = open
            .iter()
            .zip(&fds)
            .filter(|(_, fd)| !fd.revents().is_empty())
            .map(|(&p, _)| p)
            .collect();
        drop(fds);
        for p in ready {
            self.drain(p);
        }
    }

    /// Reads a frame from peer `p`, and any more it buffered whole; closes
    /// the connection on its end or on a protocol violation.
    fn drain(&mut self, p: usize) {
        let reader = self.readers[p]
            .as_mut()
            .expect("only open readers are drained");
        let ended = loop {
            match reader.frame() {
                Ok(msg) => {
                    let _ = self.to_self.send(Ok(msg));
                    // Bytes already buffered are invisible to poll, so a
                    // frame buffered whole is read now; a frame begun but
                    // not whole waits for the next poll, and the caller
                    // gets to act on what came (a forwarding rank sends
                    // segment k on before segment k+1 has arrived).
                    if !reader.whole_frame_buffered() {
                        break None;
                    }
                }
                Err(end) => break Some(end),
            }
        };
        let Some(end) = ended else { return };
        let reason = match end {
            End::Closed(reason) => reason,
            End::Protocol(reason) => {
                // Cut the peer off: nothing it sends now can be trusted.
                let _ = reader.input.get_ref().shutdown(Shutdown::Both);
                let _ = self.to_self.send(Err(Error::Protocol {
                    peer: reader.name.clone(),
                    reason: reason.clone(),
                }));
                format!("it broke the protocol: {reason}")
            }
        };
        let _ = self.to_self.send(Err(Error::PeerGone {
            rank: self.rank,
            peer: p,
            reason,
        }));
        self.readers[p] = None;
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
    fn start(peer: usize, stream: TcpStream) -> Peer {
        let stream = Arc::new(stream);
        let out = Arc::new(Mutex::new(Out::default()));
        let (queue, rx) = unbounded();
        let (done, written) = crossbeam_channel::bounded(1);
        let (w_stream, w_out) = (stream.clone(), out.clone());
        let writer = std::thread::Builder::new()
            .name(format!("tcp-write-{peer}"))
            .spawn(move || {
                write_queued(&w_stream, &w_out, rx);
                let _ = done.send(());
            })
            .expect("the operating system refused to start a writer thread");
        Peer {
            stream,
            out,
            queue: Some(queue),
            writer: Some(writer),
            written,
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

/// The receiving side of one connection.
struct Reader {
    peer: usize,
    name: String,
    max_frame: u64,
    input: BufReader<TcpStream>,
}

/// Why a connection stopped delivering frames.
enum End {
    /// Closed or failed: the peer is gone.
    Closed(String),
    /// The peer sent bytes that break the protocol.
    Protocol(String),
}

impl Reader {
    /// True when the read buffer holds a whole frame (or a header that
    /// breaks the protocol, which [`Reader::frame`] then reports).
    fn whole_frame_buffered(&self) -> bool {
        let buf = self.input.buffer();
        let Some(raw) = buf.first_chunk::<HEADER_LEN>() else {
            return false;
        };
        match Header::decode(raw) {
            Ok(header) => (buf.len() - HEADER_LEN) as u64 >= header.len,
            Err(_) => true,
        }
    }

    /// Reads one whole frame. A frame that has begun is read to its end
    /// with blocking reads (its sender writes frames whole); a peer that
    /// stalls inside one is cut off by the socket's read timeout.
    fn frame(&mut self) -> std::result::Result<Message, End> {
        let input = &mut self.input;
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
            at_ns: 0,
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

impl Tcp {
    /// Refuses a source that is no rank of the job.
    fn check_source(&self, src: usize) -> Result<()> {
        match src < self.size() {
            true => Ok(()),
            false => Err(Error::RankOutOfRange {
                rank: src,
                size: self.size(),
            }),
        }
    }
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
                at_ns: 0,
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
        self.check_source(src)?;
        let deadline = Instant::now() + self.mailbox.timeout();
        loop {
            if let Some(data) = self.mailbox.try_recv(src, tag)? {
                return Ok(data);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.mailbox.timed_out(src, &tag));
            }
            self.pump(left);
        }
    }

    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        self.check_source(src)?;
        self.pump(Duration::ZERO);
        self.mailbox.try_recv(src, tag)
    }

    fn kind(&self) -> &'static str {
        "tcp"
    }

    fn shared_clock(&self) -> bool {
        // Network namespaces of one machine have other host names but one
        // kernel, so the kernel's identity, not the name, decides.
        self.clocks.windows(2).all(|w| w[0] == w[1])
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.mailbox.set_timeout(timeout);
    }

    fn timeout(&self) -> Duration {
        self.mailbox.timeout()
    }

    fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }

    fn switches(&self) -> Vec<Option<String>> {
        self.switches.clone()
    }
}

impl Drop for Tcp {
    /// Finishes every queued frame, then closes the sending side so peers
    /// see a clean end after the last frame. A peer that stopped reading
    /// gets the timeout to take the rest; then its connection is cut.
    fn drop(&mut self) {
        let deadline = Instant::now() + self.mailbox.timeout();
        for peer in self.peers.iter_mut().flatten() {
            drop(peer.queue.take());
            let left = deadline.saturating_duration_since(Instant::now());
            if peer.written.recv_timeout(left).is_err() {
                let _ = peer.stream.shutdown(Shutdown::Both);
            }
            if let Some(writer) = peer.writer.take() {
                let _ = writer.join();
            }
            let _ = peer.stream.shutdown(Shutdown::Write);
        }
    }
}
