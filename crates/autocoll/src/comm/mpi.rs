//! The `mpi` transport: point-to-point over an MPI library (cargo feature
//! `mpi`), for programs started by `mpirun`.
//!
//! MPI tags are small integers and cannot hold a [`Tag`], so every message
//! starts with a 32-byte header carrying the full tag; matching, stashing
//! and the detection of mismatched calls are the shared [`Mailbox`]'s. A
//! payload of up to [`INLINE_MAX`] bytes travels in its header's message
//! (copying a small buffer is cheaper than a second message); a longer one
//! follows as a second message straight from the caller's [`Bytes`], which
//! is kept alive until MPI reports the send complete. MPI keeps the order of
//! messages with one source, tag and communicator, so the k-th long header
//! from a rank goes with the k-th payload from it.
//!
//! There is no progress thread: MPI makes progress inside MPI calls, and
//! `recv` polls (`MPI_Iprobe`, `MPI_Test`) until its message is in or the
//! timeout passes. All traffic runs on a private duplicate of the
//! communicator it is built on (`MPI_COMM_WORLD` for [`world`], the
//! program's own for [`Mpi::on`]), so it never meets the application's own
//! messages, wildcard receives included.
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
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::environment::{Threading, Universe};
use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator as _, CommunicatorCollectives, Root};

use super::{CallSig, Communicator, Incoming, Mailbox, Message, Tag, Transport, DEFAULT_TIMEOUT};
use crate::check::{Dtype, Native};
use crate::coll::op::Builtin;
use crate::error::{Error, Result};
use crate::select::Collective;

/// Payloads up to this many bytes ride in their header's message.
pub const INLINE_MAX: usize = 4096;
/// Bytes of the header in front of every message.
const HEADER: usize = 32;
/// MPI tag of header messages.
const HEADER_TAG: c_int = 1;
/// MPI tag of long payloads, which follow their header.
const DATA_TAG: c_int = 2;
/// Open MPI's and MPICH's `MPI_MAX_PROCESSOR_NAME`.
const NAME_MAX: usize = 256;
/// How long `recv` spins (yielding the core) before it naps between polls:
/// spinning keeps the latency of a message at MPI's own, napping keeps a
/// long wait from taking a core that other ranks of an oversubscribed job
/// need.
const SPIN: Duration = Duration::from_millis(2);
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

/// Initialises MPI and returns the communicator of every process that
/// `mpirun` started (`MPI_COMM_WORLD`). Call it once per process; MPI is
/// finalised when the communicator is dropped.
pub fn world() -> Result<Communicator> {
    Ok(world_with_library()?.0)
}

/// [`world`], and the MPI library's own collectives over the same
/// processes (to compare with, or to time beside, autocoll's). MPI is
/// finalised when both are dropped.
pub fn world_with_library() -> Result<(Communicator, Library)> {
    let (universe, level) =
        mpi::initialize_with_threading(Threading::Multiple).ok_or_else(|| {
            Error::Config(
                "MPI is already initialised in this process: call mpi::world() once".into(),
            )
        })?;
    if level != Threading::Multiple {
        return Err(Error::Config(format!(
            "the MPI library offers thread level {level:?}; the mpi transport needs MPI_THREAD_MULTIPLE"
        )));
    }
    let session = Arc::new(universe);
    // SAFETY: MPI is initialised (above) with MPI_THREAD_MULTIPLE, and the
    // session, kept in the transport, outlives its communicator.
    let mut transport = unsafe { Mpi::on(ffi::RSMPI_COMM_WORLD)? };
    transport._session = Some(session.clone());
    let library = Library {
        world: SimpleCommunicator::world(),
        _session: session,
    };
    let mut comm = Communicator::new(Box::new(transport));
    crate::trace::from_env(&mut comm)?;
    crate::balance::from_env(&mut comm)?;
    Ok((comm, library))
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
    /// Sends in flight and the payloads they read, index for index.
    sends: Vec<ffi::MPI_Request>,
    send_data: Vec<Bytes>,
    /// Scratch for `MPI_Testsome`.
    done: Vec<c_int>,
    /// Per source, messages whose header is in, in the order they were sent.
    arriving: Vec<VecDeque<Arriving>>,
    to_mailbox: Sender<Incoming>,
    mailbox: Mailbox,
    timeout: Duration,
    _session: Option<Arc<Universe>>,
}

/// A message whose header has arrived; its payload may still be on the way.
struct Arriving {
    /// The payload's receive, or null when the payload came inline.
    request: ffi::MPI_Request,
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
        Ok(Mpi {
            rank,
            size,
            comm: dup,
            names,
            hosts,
            switches,
            sends: Vec::new(),
            send_data: Vec::new(),
            done: Vec::new(),
            arriving: (0..size).map(|_| VecDeque::new()).collect(),
            to_mailbox,
            mailbox: Mailbox::new(rank, rx, DEFAULT_TIMEOUT),
            timeout: DEFAULT_TIMEOUT,
            _session: None,
        })
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
        // in `send_data` until MPI reports the request complete (see
        // `complete_sends` and `Drop`), and the communicator outlives it.
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
        self.sends.push(request);
        self.send_data.push(data);
        Ok(())
    }

    /// Releases the payloads of the sends that have completed.
    fn complete_sends(&mut self) -> Result<()> {
        let n = self.sends.len();
        if n == 0 {
            return Ok(());
        }
        self.done.resize(n, 0);
        let mut completed: c_int = 0;
        // SAFETY: `sends` holds `n` requests and `done` room for `n`
        // indices; statuses are not wanted. Completed requests are set to
        // MPI_REQUEST_NULL by MPI.
        let code = unsafe {
            ffi::PMPI_Testsome(
                n as c_int,
                self.sends.as_mut_ptr(),
                &mut completed,
                self.done.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            )
        };
        mpi_ok("PMPI_Testsome", code)?;
        if completed > 0 {
            let null = request_null();
            let mut keep = 0;
            for i in 0..n {
                if self.sends[i] != null {
                    self.sends.swap(keep, i);
                    self.send_data.swap(keep, i);
                    keep += 1;
                }
            }
            self.sends.truncate(keep);
            self.send_data.truncate(keep);
        }
        Ok(())
    }

    /// Moves MPI along: completes sends, takes every header that has
    /// arrived, and hands finished messages to the mailbox. True if
    /// anything came in.
    fn pump(&mut self) -> Result<bool> {
        self.complete_sends()?;
        let mut moved = false;
        while let Some((src, count)) = self.probe_header()? {
            self.take_header(src, count)?;
            moved = true;
        }
        for src in 0..self.size {
            moved |= self.deliver(src)?;
        }
        Ok(moved)
    }

    /// The source and length of a header that has arrived, if any.
    fn probe_header(&mut self) -> Result<Option<(usize, usize)>> {
        let mut flag: c_int = 0;
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::zeroed();
        // SAFETY: the communicator is live; `status` is written by MPI
        // when `flag` is set, and zeroed (a valid bit pattern) otherwise.
        let code = unsafe {
            ffi::PMPI_Iprobe(
                ffi::RSMPI_ANY_SOURCE,
                HEADER_TAG,
                self.comm,
                &mut flag,
                status.as_mut_ptr(),
            )
        };
        mpi_ok("PMPI_Iprobe", code)?;
        if flag == 0 {
            return Ok(None);
        }
        // SAFETY: MPI filled the status (flag is set).
        let mut status = unsafe { status.assume_init() };
        let mut count: c_int = 0;
        // SAFETY: `status` is the probe's; the datatype is a constant.
        let code = unsafe { ffi::PMPI_Get_count(&mut status, ffi::RSMPI_UINT8_T, &mut count) };
        mpi_ok("PMPI_Get_count", code)?;
        Ok(Some((status.MPI_SOURCE as usize, count as usize)))
    }

    /// Receives a header that `probe_header` found and, for a long
    /// payload, posts the payload's receive.
    fn take_header(&mut self, src: usize, count: usize) -> Result<()> {
        let mut buf = vec![0u8; count];
        // SAFETY: `buf` holds `count` bytes, the probed message's length.
        let code = unsafe {
            ffi::PMPI_Recv(
                buf.as_mut_ptr().cast(),
                count as c_int,
                ffi::RSMPI_UINT8_T,
                src as c_int,
                HEADER_TAG,
                self.comm,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        mpi_ok("PMPI_Recv", code)?;
        let header = decode(&buf).map_err(|reason| Error::Protocol {
            peer: format!("rank {src}"),
            reason,
        })?;
        let arriving = if header.inline {
            if count != HEADER + header.len {
                return Err(Error::Protocol {
                    peer: format!("rank {src}"),
                    reason: format!(
                        "header says {} inline bytes, message has {}",
                        header.len,
                        count - HEADER
                    ),
                });
            }
            Arriving {
                request: request_null(),
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

    fn irecv(&mut self, src: usize, len: usize, tag: Tag) -> Result<Arriving> {
        let count = c_int::try_from(len).map_err(|_| Error::Protocol {
            peer: format!("rank {src}"),
            reason: format!("payload of {len} bytes is above MPI's largest count"),
        })?;
        let mut buf = vec![0u8; len];
        let mut request = request_null();
        // SAFETY: `buf` has `count` bytes and its heap block does not move
        // while the `Arriving` that owns it waits in `arriving` (until
        // MPI_Test completes the request, or `Drop` waits for it).
        let code = unsafe {
            ffi::PMPI_Irecv(
                buf.as_mut_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                src as c_int,
                DATA_TAG,
                self.comm,
                &mut request,
            )
        };
        mpi_ok("PMPI_Irecv", code)?;
        Ok(Arriving {
            request,
            buf,
            skip: 0,
            tag,
        })
    }

    /// Hands `src`'s complete messages to the mailbox, oldest first, up to
    /// the first that is still arriving (which keeps their order).
    fn deliver(&mut self, src: usize) -> Result<bool> {
        let mut moved = false;
        while let Some(front) = self.arriving[src].front_mut() {
            if !test(&mut front.request)? {
                break;
            }
            let Arriving { buf, skip, tag, .. } = self.arriving[src].pop_front().expect("front");
            let data = Bytes::from(buf).slice(skip..);
            // The mailbox owns the receiving end, so this cannot fail.
            let _ = self.to_mailbox.send(Ok(Message { src, tag, data }));
            moved = true;
        }
        Ok(moved)
    }

    /// Pumps until `done` says so or the timeout passes: spinning first
    /// (yielding the core), then napping between polls.
    fn poll_until(&mut self, mut done: impl FnMut(&mut Self) -> Result<bool>) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let mut idle_since = Instant::now();
        loop {
            if done(self)? {
                return Ok(());
            }
            if self.pump()? {
                idle_since = Instant::now();
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            if now - idle_since < SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(NAP);
            }
        }
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
        self.complete_sends()?;
        let inline = data.len() <= INLINE_MAX;
        let header = encode(&tag, data.len(), inline);
        if inline {
            let mut both = Vec::with_capacity(HEADER + data.len());
            both.extend_from_slice(&header);
            both.extend_from_slice(&data);
            return self.isend(dest, HEADER_TAG, both.into());
        }
        self.isend(dest, HEADER_TAG, Bytes::copy_from_slice(&header))?;
        self.isend(dest, DATA_TAG, data)
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
        self.pump()?;
        self.mailbox.try_recv(src, tag)
    }

    /// MPI moves a long (rendezvous) message only while both ends are
    /// inside MPI calls; without this, a broadcast's root that went on to
    /// compute (or to sleep until a benchmark's next start) stalled the
    /// transfer to its children until its next call.
    fn finish_sends(&mut self) -> Result<()> {
        self.poll_until(|mpi| {
            mpi.complete_sends()?;
            Ok(mpi.sends.is_empty())
        })?;
        if self.sends.is_empty() {
            return Ok(());
        }
        Err(Error::SendsIncomplete {
            rank: self.rank,
            pending: self.sends.len(),
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

    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        self.mailbox.set_timeout(timeout);
    }

    fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }

    fn switches(&self) -> Vec<Option<String>> {
        self.switches.clone()
    }
}

impl Drop for Mpi {
    /// Waits (up to the timeout) for sends and receives in flight, so that
    /// no buffer MPI still uses is freed. Buffers of requests that never
    /// complete are leaked on purpose rather than freed under MPI.
    fn drop(&mut self) {
        let deadline = Instant::now() + self.timeout;
        while Instant::now() < deadline {
            let pending = !self.sends.is_empty() || self.arriving.iter().any(|q| !q.is_empty());
            if !pending || self.pump().is_err() {
                break;
            }
            std::thread::sleep(NAP);
        }
        std::mem::forget(std::mem::take(&mut self.send_data));
        for queue in &mut self.arriving {
            std::mem::forget(std::mem::take(queue));
        }
        if finalized() {
            return;
        }
        // SAFETY: the duplicate is this transport's own and MPI is not
        // finalised; a failure leaves a communicator allocated, no worse.
        unsafe { ffi::PMPI_Comm_free(&mut self.comm) };
    }
}

/// True once `MPI_Finalize` has run (then no handle may be freed).
fn finalized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time.
    unsafe { ffi::PMPI_Finalized(&mut flag) };
    flag != 0
}

/// This process's `MPI_Get_processor_name`.
fn processor_name() -> Result<String> {
    let mut buf = vec![0u8; NAME_MAX + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` has room for MPI_MAX_PROCESSOR_NAME characters and
    // the terminating zero.
    let code = unsafe { ffi::PMPI_Get_processor_name(buf.as_mut_ptr().cast(), &mut len) };
    mpi_ok("PMPI_Get_processor_name", code)?;
    buf.truncate(len.max(0) as usize);
    String::from_utf8(buf)
        .map_err(|e| Error::Config(format!("MPI processor name is not UTF-8: {e}")))
}

/// A variable of the environment, empty when not set. Never an error:
/// every rank must reach the collective that follows.
fn env_text(name: &str) -> String {
    std::env::var_os(name)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every rank's `text` (cut at [`NAME_MAX`] bytes), by rank.
fn all_texts(comm: ffi::MPI_Comm, size: usize, text: &str) -> Result<Vec<String>> {
    let mut mine = [0u8; NAME_MAX];
    let len = text.len().min(NAME_MAX);
    mine[..len].copy_from_slice(&text.as_bytes()[..len]);
    let mut all = vec![0u8; NAME_MAX * size];
    // SAFETY: `mine` holds NAME_MAX bytes and `all` NAME_MAX per rank of
    // the live communicator `comm`.
    let code = unsafe {
        ffi::PMPI_Allgather(
            mine.as_ptr().cast(),
            NAME_MAX as c_int,
            ffi::RSMPI_UINT8_T,
            all.as_mut_ptr().cast(),
            NAME_MAX as c_int,
            ffi::RSMPI_UINT8_T,
            comm,
        )
    };
    mpi_ok("PMPI_Allgather", code)?;
    Ok(all
        .chunks(NAME_MAX)
        .map(|c| {
            let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect())
}

fn request_null() -> ffi::MPI_Request {
    // SAFETY: a constant the MPI shim library defines; reading it has no
    // side effect.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// True once the request is complete (a null request is complete).
fn test(request: &mut ffi::MPI_Request) -> Result<bool> {
    if *request == request_null() {
        return Ok(true);
    }
    let mut flag: c_int = 0;
    // SAFETY: `request` is a live request made by this transport; its
    // status is not wanted.
    let code = unsafe { ffi::PMPI_Test(request, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
    mpi_ok("PMPI_Test", code)?;
    Ok(flag != 0)
}

fn mpi_ok(call: &'static str, code: c_int) -> Result<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(Error::Mpi { call, code })
    }
}

/// What a header says.
#[derive(Debug, PartialEq)]
struct Header {
    tag: Tag,
    len: usize,
    inline: bool,
}

/// Layout (little-endian): kind (0 collective, 1 user), phase, collective,
/// inline flag, root (u32), sequence number or user tag (u64), the call's
/// bytes (u64), payload length (u64).
fn encode(tag: &Tag, len: usize, inline: bool) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    match *tag {
        Tag::Coll { call, phase } => {
            h[1] = phase;
            h[2] = Collective::ALL
                .iter()
                .position(|&c| c == call.op)
                .expect("in ALL") as u8;
            h[4..8].copy_from_slice(&call.root.to_le_bytes());
            h[8..16].copy_from_slice(&call.seq.to_le_bytes());
            h[16..24].copy_from_slice(&call.bytes.to_le_bytes());
        }
        Tag::User(t) => {
            h[0] = 1;
            h[8..16].copy_from_slice(&t.to_le_bytes());
        }
    }
    h[3] = u8::from(inline);
    h[24..32].copy_from_slice(&(len as u64).to_le_bytes());
    h
}

fn decode(buf: &[u8]) -> std::result::Result<Header, String> {
    if buf.len() < HEADER {
        return Err(format!(
            "message of {} bytes is shorter than a header",
            buf.len()
        ));
    }
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    let tag = match buf[0] {
        0 => Tag::Coll {
            phase: buf[1],
            call: CallSig {
                seq: u64_at(8),
                op: *Collective::ALL
                    .get(buf[2] as usize)
                    .ok_or_else(|| format!("unknown collective number {}", buf[2]))?,
                root: u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes")),
                bytes: u64_at(16),
            },
        },
        1 => Tag::User(u64_at(8)),
        kind => return Err(format!("unknown message kind {kind}")),
    };
    let len = usize::try_from(u64_at(24)).map_err(|_| "payload length overflows".to_string())?;
    let inline = match buf[3] {
        0 => false,
        1 => true,
        f => return Err(format!("bad inline flag {f}")),
    };
    Ok(Header { tag, len, inline })
}

/// The MPI library's own collectives on `MPI_COMM_WORLD`: what `check`
/// compares autocoll's results with, and what benchmarks time beside them.
///
/// A call whose per-rank count is zero returns at once on every rank (the
/// count is the same on all of them): an empty Rust slice points at
/// address 1, which Open MPI takes for `MPI_IN_PLACE`, and such a call
/// would move nothing anyway.
pub struct Library {
    world: SimpleCommunicator,
    _session: Arc<Universe>,
}

impl Library {
    fn root(&self, root: usize) -> mpi::topology::Process<'_> {
        self.world.process_at_rank(root as mpi::Rank)
    }

    fn is(&self, root: usize) -> bool {
        self.world.rank() as usize == root
    }

    fn reduce_as<T: Equivalence + bytemuck::Pod>(
        &self,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        root: Option<usize>,
    ) -> Result<()> {
        let send: &[T] = cast(send)?;
        let op = system_op(op);
        match root {
            None => self.world.all_reduce_into(send, cast_mut::<T>(recv)?, op),
            Some(r) if self.is(r) => self
                .root(r)
                .reduce_into_root(send, cast_mut::<T>(recv)?, op),
            Some(r) => self.root(r).reduce_into(send, op),
        }
        Ok(())
    }

    fn reduce_typed(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        root: Option<usize>,
    ) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        match dtype {
            Dtype::I8 => self.reduce_as::<i8>(op, send, recv, root),
            Dtype::I16 => self.reduce_as::<i16>(op, send, recv, root),
            Dtype::I32 => self.reduce_as::<i32>(op, send, recv, root),
            Dtype::I64 => self.reduce_as::<i64>(op, send, recv, root),
            Dtype::U8 => self.reduce_as::<u8>(op, send, recv, root),
            Dtype::U16 => self.reduce_as::<u16>(op, send, recv, root),
            Dtype::U32 => self.reduce_as::<u32>(op, send, recv, root),
            Dtype::U64 => self.reduce_as::<u64>(op, send, recv, root),
            Dtype::F32 => self.reduce_as::<f32>(op, send, recv, root),
            Dtype::F64 => self.reduce_as::<f64>(op, send, recv, root),
        }
    }
}

fn cast<T: bytemuck::Pod>(bytes: &[u8]) -> Result<&[T]> {
    bytemuck::try_cast_slice(bytes).map_err(|e| {
        Error::Config(format!(
            "reduction buffer is not a slice of {}: {e}",
            std::any::type_name::<T>()
        ))
    })
}

fn cast_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [T]> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| {
        Error::Config(format!(
            "reduction buffer is not a slice of {}: {e}",
            std::any::type_name::<T>()
        ))
    })
}

fn system_op(op: Builtin) -> SystemOperation {
    match op {
        Builtin::Sum => SystemOperation::sum(),
        Builtin::Prod => SystemOperation::product(),
        Builtin::Min => SystemOperation::min(),
        Builtin::Max => SystemOperation::max(),
        Builtin::Band => SystemOperation::bitwise_and(),
        Builtin::Bor => SystemOperation::bitwise_or(),
        Builtin::Bxor => SystemOperation::bitwise_xor(),
    }
}

impl Native for Library {
    fn name(&self, op: Collective) -> String {
        let call = match op {
            Collective::Bcast => "Bcast",
            Collective::Reduce => "Reduce",
            Collective::Scatter => "Scatter",
            Collective::Gather => "Gather",
            Collective::Allreduce => "Allreduce",
            Collective::Allgather => "Allgather",
            Collective::Barrier => "Barrier",
        };
        format!("MPI_{call}")
    }

    fn bcast(&self, buf: &mut [u8], root: usize) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.root(root).broadcast_into(buf);
        Ok(())
    }

    fn scatter(&self, send: &[u8], recv: &mut [u8], root: usize) -> Result<()> {
        if recv.is_empty() {
            return Ok(());
        }
        match self.is(root) {
            true => self.root(root).scatter_into_root(send, recv),
            false => self.root(root).scatter_into(recv),
        }
        Ok(())
    }

    fn gather(&self, send: &[u8], recv: &mut [u8], root: usize) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        match self.is(root) {
            true => self.root(root).gather_into_root(send, recv),
            false => self.root(root).gather_into(send),
        }
        Ok(())
    }

    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        self.world.all_gather_into(send, recv);
        Ok(())
    }

    fn reduce(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        root: usize,
    ) -> Result<()> {
        self.reduce_typed(dtype, op, send, recv, Some(root))
    }

    fn allreduce(&self, dtype: Dtype, op: Builtin, send: &[u8], recv: &mut [u8]) -> Result<()> {
        self.reduce_typed(dtype, op, send, recv, None)
    }

    fn barrier(&self) -> Result<()> {
        self.world.barrier();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_for_every_kind_of_tag() {
        let call = CallSig {
            seq: u64::MAX - 3,
            op: Collective::Allgather,
            root: 7,
            bytes: 1 << 40,
        };
        for (tag, len, inline) in [
            (Tag::Coll { call, phase: 200 }, 0, true),
            (Tag::Coll { call, phase: 0 }, 1 << 33, false),
            (Tag::User(0xC4EC), 4096, true),
        ] {
            let h = encode(&tag, len, inline);
            assert_eq!(decode(&h).unwrap(), Header { tag, len, inline });
        }
    }

    #[test]
    fn bad_headers_are_refused_with_the_reason() {
        let good = encode(&Tag::User(1), 0, true);
        assert!(decode(&good[..31]).unwrap_err().contains("shorter"));
        let mut bad = good;
        bad[0] = 9;
        assert!(decode(&bad).unwrap_err().contains("kind 9"));
        let mut bad = encode(
            &Tag::Coll {
                call: CallSig {
                    seq: 0,
                    op: Collective::Bcast,
                    root: 0,
                    bytes: 0,
                },
                phase: 0,
            },
            0,
            true,
        );
        bad[2] = 7;
        assert!(decode(&bad).unwrap_err().contains("collective number 7"));
        bad[2] = 0;
        bad[3] = 2;
        assert!(decode(&bad).unwrap_err().contains("inline flag"));
    }
}
