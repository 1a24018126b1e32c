//! The `mpi` transport: point-to-point over an MPI library (cargo feature
//! `mpi`), for programs started by `mpirun`.
//!
//! MPI tags are small integers and cannot hold a [`Tag`], so every message
//! starts with a 40-byte header carrying the full tag; matching, stashing
//! and the detection of mismatched calls are the shared [`Mailbox`]'s. A
//! payload of up to [`INLINE_MAX`] bytes travels in its header's message
//! (copying a small buffer is cheaper than a second message); a longer one
//! follows straight from the caller's [`Bytes`], which is kept alive until
//! MPI reports the sends complete, in pieces small enough for MPI to send
//! at once (60 KiB, under Open MPI's tcp eager limit). MPI keeps the order
//! of messages with one source, tag and communicator, so the k-th long
//! header from a rank goes with the k-th payload from it.
//!
//! Each source has a standing receive for its next header (a header and
//! an inline payload fit in it), so a small message lands without a probe.
//! There is no progress thread: MPI makes progress inside MPI calls, and
//! all requests in flight (the standing receives, long payloads, sends)
//! sit in one array that one `MPI_Testsome` covers. `recv` tests it,
//! yielding the core now and then, for 2 ms; then, when no timeout is
//! set (the interposition library: a collective waits as long as its peers
//! take, as MPI's own do), it blocks in `MPI_Waitsome`. With a timeout it
//! goes on testing until the deadline: MPI has no wait that ends at one.
//! All traffic runs on a private duplicate of the communicator it is built
//! on (`MPI_COMM_WORLD` for `comm::mpi::world`, the program's own for [`Mpi::on`]),
//! so it never meets the application's own messages, wildcard receives
//! included.
//!
//! Every MPI call of the transport goes to `PMPI_*`, the profiling names:
//! under the MPI interposition library (`autocoll-mpi`), which defines
//! `MPI_Send` and friends to record the program's traffic, the transport's
//! own messages must not be recorded, nor pass through another tool's
//! wrappers.

use std::collections::VecDeque;
use std::ffi::c_int;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::{unbounded, Sender};
use mpi::environment::Universe;
use mpi::ffi;

use crate::error::{Error, Result};
use crate::transport::mailbox::{Incoming, Mailbox};
use crate::transport::{Message, Tag, Transport, DEFAULT_TIMEOUT};

mod calls;
mod header;
mod teardown;

use calls::{all_texts, env_text, mpi_ok, processor_name, request_null};
use header::{decode, encode, Header, HEADER};

/// Payloads up to this many bytes ride in their header's message.
pub const INLINE_MAX: usize = 4096;
/// Largest piece of a long payload (see [`pieces`]).
const PIECE: usize = 60 * 1024;
/// MPI tag of header messages.
const HEADER_TAG: c_int = 1;
/// MPI tag of long payloads, which follow their header.
const DATA_TAG: c_int = 2;
/// How long `recv` tests and yields before it blocks in `MPI_Waitsome`
/// (with no timeout): a message that comes soon is taken at MPI's own
/// latency, a long wait leaves the core to the ranks that compute.
const SPIN: Duration = Duration::from_millis(2);
/// Tests before a yield: a yield on a busy machine can give the core away
/// for a whole time slice (a 1 KiB bcast on 4 ranks sharing 2 cores: 7 µs
/// against 11 with one test per yield).
const RETESTS: usize = 8;
/// The pause between tests while a dropped transport waits for its sends.
const NAP: Duration = Duration::from_micros(50);

/// True when this process was started by `mpirun`/`mpiexec` (Open MPI's
/// or a PMI-based one such as MPICH's Hydra): cheap, reads the environment.
pub fn under_mpirun() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// One rank's end of the MPI transport.
pub struct Mpi {
    rank: usize,
    size: usize,
    /// The private duplicate all traffic runs on (freed in `Drop`, before
    /// MPI is finalised by `_session`, which drops after it).
    comm: ffi::MPI_Comm,
    /// Every rank's `MPI_Get_processor_name`: one name, one kernel clock.
    names: Vec<String>,
    /// Every rank's host: `AUTOCOLL_HOST` where set (ranks in network
    /// namespaces share one processor name), else its processor name.
    hosts: Vec<String>,
    /// Every rank's switch (`AUTOCOLL_SWITCH`), when set.
    switches: Vec<Option<String>>,
    /// Every request in flight, in one array so that one `MPI_Testsome` or
    /// `MPI_Waitsome` covers them all. The first `size` are the standing
    /// header receives, one per source (slot = source rank).
    requests: Vec<ffi::MPI_Request>,
    /// What each request of `requests` is, index for index.
    pending: Vec<Pending>,
    /// The buffer of each source's standing header receive.
    header_bufs: Vec<Vec<u8>>,
    /// Sends not yet complete.
    sending: usize,
    /// Numbers long payloads, to find a completed one in its source's queue.
    next_seq: u64,
    /// Scratch for `MPI_Testsome`/`MPI_Waitsome`.
    done: Vec<c_int>,
    statuses: Vec<ffi::MPI_Status>,
    /// Per source, messages whose header is in, in the order they were sent.
    arriving: Vec<VecDeque<Arriving>>,
    to_mailbox: Sender<Incoming>,
    mailbox: Mailbox,
    timeout: Duration,
    pub(crate) _session: Option<Arc<Universe>>,
}

/// What a request of [`Mpi::requests`] waits for.
enum Pending {
    /// The standing receive of its source's next header.
    Header,
    /// The `seq`-th long payload, from `src`.
    Payload { src: usize, seq: u64 },
    /// A send, and the bytes it reads (kept until it completes).
    Send { _data: Bytes },
}

/// A message whose header has arrived; its payload may still be on the way.
struct Arriving {
    /// Its long payload's number; `None` when the payload came inline.
    seq: Option<u64>,
    /// Pieces of the payload still on the way (0: every byte is in `buf`).
    missing: usize,
    buf: Vec<u8>,
    /// Bytes of `buf` before the payload (the header, when inline).
    skip: usize,
    tag: Tag,
}

// SAFETY: MPI handles may move between threads under MPI_THREAD_MULTIPLE
// (`world_with_library` checks it); `Mpi::on`'s caller promises that the
// transport is used by one thread at a time otherwise. Every other field
// is Send.
unsafe impl Send for Mpi {}

impl Mpi {
    /// The transport over a private duplicate of `comm`, made with
    /// `PMPI_Comm_dup` (collective: every rank of `comm` must call it).
    ///
    /// # Safety
    /// MPI must be initialised and not finalised, `comm` must be a valid
    /// intracommunicator, and the transport must be used by one thread at a
    /// time unless MPI runs at `MPI_THREAD_MULTIPLE`. It is dropped before
    /// `MPI_Finalize` returns or after it (then the duplicate is not freed).
    pub unsafe fn on(comm: ffi::MPI_Comm) -> Result<Mpi> {
        let mut dup = ffi::RSMPI_COMM_NULL;
        mpi_ok("PMPI_Comm_dup", ffi::PMPI_Comm_dup(comm, &mut dup))?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        mpi_ok("PMPI_Comm_rank", ffi::PMPI_Comm_rank(dup, &mut rank))?;
        mpi_ok("PMPI_Comm_size", ffi::PMPI_Comm_size(dup, &mut size))?;
        let (rank, size) = (rank as usize, size as usize);
        let names = all_texts(dup, size, &processor_name()?)?;
        let hosts = all_texts(dup, size, &env_text("AUTOCOLL_HOST"))?
            .into_iter()
            .zip(&names)
            .map(|(host, name)| if host.is_empty() { name.clone() } else { host })
            .collect();
        let switches = all_texts(dup, size, &env_text("AUTOCOLL_SWITCH"))?
            .into_iter()
            .map(|s| Some(s).filter(|s| !s.is_empty()))
            .collect();
        let (to_mailbox, rx) = unbounded();
        let mut mpi = Mpi {
            rank,
            size,
            comm: dup,
            names,
            hosts,
            switches,
            requests: vec![request_null(); size],
            pending: (0..size).map(|_| Pending::Header).collect(),
            header_bufs: (0..size).map(|_| vec![0u8; HEADER + INLINE_MAX]).collect(),
            sending: 0,
            next_seq: 0,
            done: Vec::new(),
            statuses: Vec::new(),
            arriving: (0..size).map(|_| VecDeque::new()).collect(),
            to_mailbox,
            mailbox: Mailbox::new(rank, rx, DEFAULT_TIMEOUT),
            timeout: DEFAULT_TIMEOUT,
            _session: None,
        };
        for src in 0..size {
            mpi.post_header(src)?;
        }
        Ok(mpi)
    }

    fn check_rank(&self, rank: usize) -> Result<()> {
        if rank >= self.size {
            return Err(Error::RankOutOfRange {
                rank,
                size: self.size,
            });
        }
        Ok(())
    }

    /// Posts the standing receive of `src`'s next header: a message of up
    /// to a header and an inline payload lands without a probe.
    fn post_header(&mut self, src: usize) -> Result<()> {
        let buf = self.header_bufs[src].as_mut_ptr();
        // SAFETY: the buffer holds HEADER + INLINE_MAX bytes and is neither
        // moved nor replaced until the request completes (`take_header`)
        // or is cancelled and waited for (`Drop`).
        self.requests[src] = unsafe { self.irecv_into(buf, HEADER + INLINE_MAX, src, HEADER_TAG)? };
        Ok(())
    }

    /// Starts receiving `len` bytes from `src` with `mpi_tag` into `buf`.
    ///
    /// # Safety
    /// `buf` must hold `len` bytes (at most `c_int::MAX`) that stay in
    /// place until the request completes, or is cancelled and waited for.
    unsafe fn irecv_into(
        &self,
        buf: *mut u8,
        len: usize,
        src: usize,
        mpi_tag: c_int,
    ) -> Result<ffi::MPI_Request> {
        let mut request = request_null();
        // SAFETY: the caller's promise on `buf`; the communicator is live.
        let code = unsafe {
            ffi::PMPI_Irecv(
                buf.cast(),
                len as c_int,
                ffi::RSMPI_UINT8_T,
                src as c_int,
                mpi_tag,
                self.comm,
                &mut request,
            )
        };
        mpi_ok("PMPI_Irecv", code)?;
        Ok(request)
    }

    /// Starts sending `data` and keeps it until the send completes.
    fn isend(&mut self, dest: usize, mpi_tag: c_int, data: Bytes) -> Result<()> {
        let count = c_int::try_from(data.len()).map_err(|_| {
            Error::Config(format!(
                "a message of {} bytes is above MPI's largest count ({})",
                data.len(),
                c_int::MAX
            ))
        })?;
        let mut request = request_null();
        // SAFETY: the buffer is `data`'s, `count` bytes long; `data` is kept
        // in `pending` until MPI reports the request complete (see
        // `progress` and `Drop`), and the communicator outlives it.
        let code = unsafe {
            ffi::PMPI_Isend(
                data.as_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                dest as c_int,
                mpi_tag,
                self.comm,
                &mut request,
            )
        };
        mpi_ok("PMPI_Isend", code)?;
        self.requests.push(request);
        self.pending.push(Pending::Send { _data: data });
        self.sending += 1;
        Ok(())
    }

    /// Moves MPI along with one `MPI_Testsome` (or, with `block`, one
    /// `MPI_Waitsome`, which returns once something completes) over every
    /// request in flight; takes the headers that came in and hands finished
    /// messages to the mailbox. True if anything completed.
    fn progress(&mut self, block: bool) -> Result<bool> {
        let n = self.requests.len();
        self.done.resize(n, 0);
        // SAFETY: MPI_Status is a C struct of integers; all zeroes is valid.
        self.statuses
            .resize_with(n, || unsafe { std::mem::zeroed() });
        let mut count: c_int = 0;
        // SAFETY: `requests` holds `n` requests of this transport (null
        // ones are skipped by MPI), `done` and `statuses` room for `n`
        // entries; completed requests are set to MPI_REQUEST_NULL.
        let code = unsafe {
            let (reqs, done, statuses) = (
                self.requests.as_mut_ptr(),
                self.done.as_mut_ptr(),
                self.statuses.as_mut_ptr(),
            );
            if block {
                ffi::PMPI_Waitsome(n as c_int, reqs, &mut count, done, statuses)
            } else {
                ffi::PMPI_Testsome(n as c_int, reqs, &mut count, done, statuses)
            }
        };
        mpi_ok(
            if block {
                "PMPI_Waitsome"
            } else {
                "PMPI_Testsome"
            },
            code,
        )?;
        // MPI_UNDEFINED (negative) when no request was active.
        if count <= 0 {
            return Ok(false);
        }
        for k in 0..count as usize {
            let i = self.done[k] as usize;
            match self.pending[i] {
                Pending::Header => {
                    let status = self.statuses[k];
                    self.take_header(i, &status)?;
                }
                Pending::Payload { src, seq } => {
                    let arriving = self.arriving[src].iter_mut();
                    if let Some(a) = arriving.into_iter().find(|a| a.seq == Some(seq)) {
                        a.missing -= 1;
                    }
                }
                Pending::Send { .. } => self.sending -= 1,
            }
        }
        self.forget_completed();
        for src in 0..self.size {
            self.deliver(src);
        }
        Ok(true)
    }

    /// Drops the completed payload receives and sends from `requests`
    /// (their requests are null now); the standing header receives stay in
    /// their slots.
    fn forget_completed(&mut self) {
        let null = request_null();
        let mut keep = self.size;
        for i in self.size..self.requests.len() {
            if self.requests[i] != null {
                self.requests.swap(keep, i);
                self.pending.swap(keep, i);
                keep += 1;
            }
        }
        self.requests.truncate(keep);
        self.pending.truncate(keep);
    }

    /// Takes the header that `src`'s standing receive completed with,
    /// posts the receive again and, for a long payload, the payload's.
    fn take_header(&mut self, src: usize, status: &ffi::MPI_Status) -> Result<()> {
        let mut count: c_int = 0;
        // SAFETY: `status` is the completed receive's; the datatype is a
        // constant.
        let code = unsafe { ffi::PMPI_Get_count(status, ffi::RSMPI_UINT8_T, &mut count) };
        mpi_ok("PMPI_Get_count", code)?;
        let count = count.max(0) as usize;
        let header = decode(&self.header_bufs[src][..count]);
        let inline = matches!(header, Ok(Header { inline: true, .. }));
        let buf = if inline {
            let mut buf =
                std::mem::replace(&mut self.header_bufs[src], vec![0u8; HEADER + INLINE_MAX]);
            buf.truncate(count);
            buf
        } else {
            Vec::new()
        };
        self.post_header(src)?;
        let protocol = |reason| Error::Protocol {
            peer: format!("rank {src}"),
            reason,
        };
        let header = header.map_err(protocol)?;
        let arriving = if inline {
            if count != HEADER + header.len {
                return Err(protocol(format!(
                    "header says {} inline bytes, message has {}",
                    header.len,
                    count - HEADER
                )));
            }
            Arriving {
                seq: None,
                missing: 0,
                buf,
                skip: HEADER,
                tag: header.tag,
            }
        } else {
            self.irecv(src, header.len, header.tag)?
        };
        self.arriving[src].push_back(arriving);
        Ok(())
    }

    /// Posts the receives of a long payload's pieces (see [`pieces`]).
    fn irecv(&mut self, src: usize, len: usize, tag: Tag) -> Result<Arriving> {
        let mut buf = vec![0u8; len];
        let seq = self.next_seq;
        self.next_seq += 1;
        let pieces = pieces(len);
        for range in pieces.clone() {
            let part = &mut buf[range];
            // SAFETY: `part` (at most PIECE bytes) lies in `buf`, whose heap
            // block does not move while the `Arriving` that owns it waits in
            // `arriving` (until every piece's request completes, or `Drop`
            // waits for them).
            let request = unsafe { self.irecv_into(part.as_mut_ptr(), part.len(), src, DATA_TAG)? };
            self.requests.push(request);
            self.pending.push(Pending::Payload { src, seq });
        }
        Ok(Arriving {
            seq: Some(seq),
            missing: pieces.len(),
            buf,
            skip: 0,
            tag,
        })
    }

    /// Hands `src`'s complete messages to the mailbox, oldest first, up to
    /// the first that is still arriving (which keeps their order).
    fn deliver(&mut self, src: usize) {
        while self.arriving[src].front().is_some_and(|a| a.missing == 0) {
            let Arriving { buf, skip, tag, .. } = self.arriving[src].pop_front().expect("front");
            let data = Bytes::from(buf).slice(skip..);
            // The mailbox owns the receiving end, so this cannot fail.
            let _ = self.to_mailbox.send(Ok(Message {
                src,
                tag,
                data,
                at_ns: 0,
            }));
        }
    }

    /// Moves MPI along until `done` says so or the timeout passes: testing
    /// every request in flight (yielding the core every [`RETESTS`] tests)
    /// for [`SPIN`], then, with no timeout, blocking in `MPI_Waitsome`;
    /// with one, MPI has no wait that ends at a deadline, so it goes on
    /// testing.
    fn poll_until(&mut self, mut done: impl FnMut(&mut Self) -> Result<bool>) -> Result<()> {
        let deadline = Instant::now().checked_add(self.timeout);
        let mut idle_since = Instant::now();
        loop {
            if done(self)? {
                return Ok(());
            }
            if self.progress(false)? {
                idle_since = Instant::now();
                continue;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(());
            }
            if deadline.is_none() && now - idle_since >= SPIN {
                self.progress(true)?;
            } else if self.test_again()? {
                idle_since = now;
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Tests [`RETESTS`] more times: true as soon as something completes.
    fn test_again(&mut self) -> Result<bool> {
        for _ in 0..RETESTS {
            if self.progress(false)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// True while a send or a long payload is in flight.
    fn in_flight(&self) -> bool {
        self.requests.len() > self.size
    }
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        self.check_rank(dest)?;
        let inline = data.len() <= INLINE_MAX;
        let header = encode(&tag, data.len(), inline);
        if inline {
            let mut both = Vec::with_capacity(HEADER + data.len());
            both.extend_from_slice(&header);
            both.extend_from_slice(&data);
            self.isend(dest, HEADER_TAG, both.into())?;
        } else {
            self.isend(dest, HEADER_TAG, Bytes::copy_from_slice(&header))?;
            for range in pieces(data.len()) {
                self.isend(dest, DATA_TAG, data.slice(range))?;
            }
        }
        self.progress(false).map(drop)
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        self.check_rank(src)?;
        let mut found = None;
        self.poll_until(|mpi| {
            found = mpi.mailbox.try_recv(src, tag)?;
            Ok(found.is_some())
        })?;
        found.ok_or_else(|| self.mailbox.timed_out(src, &tag))
    }

    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        self.check_rank(src)?;
        self.progress(false)?;
        self.mailbox.try_recv(src, tag)
    }

    /// MPI moves a long (rendezvous) message only while both ends are
    /// inside MPI calls; without this, a broadcast's root that went on to
    /// compute (or to sleep until a benchmark's next start) stalled the
    /// transfer to its children until its next call.
    fn finish_sends(&mut self) -> Result<()> {
        self.poll_until(|mpi| Ok(mpi.sending == 0))?;
        if self.sending == 0 {
            return Ok(());
        }
        Err(Error::SendsIncomplete {
            rank: self.rank,
            pending: self.sending,
            waited: self.timeout,
        })
    }

    fn kind(&self) -> &'static str {
        "mpi"
    }

    /// Ranks on one host read one `CLOCK_MONOTONIC` (network namespaces
    /// included), so the clock is shared when every processor name is the
    /// same.
    fn shared_clock(&self) -> bool {
        self.names.windows(2).all(|w| w[0] == w[1])
    }

    /// [`Duration::MAX`] waits as long as the peers take, as MPI's own
    /// calls do (what the interposition library sets).
    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        self.mailbox.set_timeout(timeout);
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }

    fn switches(&self) -> Vec<Option<String>> {
        self.switches.clone()
    }
}

/// The byte ranges a long payload travels in: pieces of at most
/// [`PIECE`] bytes, each under the eager limit of Open MPI's tcp
/// transport (64 KiB), so that it leaves at once instead of waiting for
/// the receiver to match it and answer (MPI's rendezvous). With ranks
/// sharing cores the receiver is often not on one, and a ring allreduce of
/// 1 MiB on the emulated cluster took 1.5 times the link bound.
fn pieces(len: usize) -> impl ExactSizeIterator<Item = std::ops::Range<usize>> + Clone {
    (0..len.div_ceil(PIECE)).map(move |i| i * PIECE..((i + 1) * PIECE).min(len))
}

#[cfg(test)]
mod tests;
