//! A recording on a communicator: how it starts (the directory checked,
//! the run id agreed, clock offsets estimated), and how each rank's file
//! is written.
//!
//! Starting is collective: every rank checks that it can write into the
//! directory and the ranks agree on the outcome, so that a bad directory
//! fails `trace()` on every rank with its name, not a later write; rank 0
//! draws the run id and sends it to all. When the ranks do not share a
//! clock, each rank estimates its clock's offset to rank 0 by ping-pongs
//! with it and keeps the sample of the smallest round trip (Cristian's
//! method: the offset is then known within half that round trip); the
//! same is done again when the file is written, so an analysis can
//! correct drift linearly. Writing is local otherwise: each rank encodes
//! its buffer and writes `DIR/rank-NNNNN.trace` atomically.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::clock::{clock_id, now_ns};
use crate::coll::op::Op;
use crate::comm::communicator::Communicator;
use crate::comm::trace_options::{check_dir, file_of, TraceOptions, Tracing, ENV_TRACE};
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::select::Implementation;
use crate::trace::format::{ClockOffset, Header, OffsetSample};
use crate::trace::recorder::Recorder;
use crate::transport::{Tag, Transport};
use crate::tree::Shape;

/// Ping-pongs per offset estimate; the one of the smallest round trip is kept.
const PING_PONGS: usize = 20;

/// Starts the recording `AUTOCOLL_TRACE` asks for, if it is set
/// (collective: every rank's environment must agree).
pub fn from_env(comm: &mut Communicator) -> Result<()> {
    match std::env::var_os(ENV_TRACE) {
        Some(dir) if !dir.is_empty() => comm.trace(PathBuf::from(dir)),
        _ => Ok(()),
    }
}

impl Tracing {
    /// Starts a recording on every rank (collective).
    pub(crate) fn start(
        comm: &mut Communicator,
        dir: &Path,
        options: &TraceOptions,
    ) -> Result<Tracing> {
        let (rank, size) = (comm.rank(), comm.size());
        let path = file_of(dir, rank);
        let mine = check_dir(dir, size);
        agree_on_dir(comm, dir, mine)?;
        let run = agree_on_run(comm)?;
        let estimate = options.estimate_offsets || !comm.shared_clock();
        let start = if estimate {
            Some(exchange(comm)?)
        } else {
            None
        };
        let header = Header {
            run,
            rank: rank as u32,
            size: size as u32,
            host: comm.hosts().swap_remove(rank),
            transport: comm.transport_kind().into(),
            clock: hex(&clock_id()),
            shared_clock: comm.shared_clock(),
            offset: start.map(|start| ClockOffset { start, end: None }),
            ..Header::default()
        };
        Ok(Tracing {
            recorder: Arc::new(Recorder::new(options.capacity_events)),
            path,
            header,
            estimate,
        })
    }

    /// Takes the end offset (when offsets are estimated: collective) and
    /// writes this rank's file. The recording goes on.
    pub(crate) fn write(&mut self, comm: &mut Communicator) -> Result<PathBuf> {
        if self.estimate {
            let end = match exchange(comm) {
                Ok(sample) => Some(sample),
                Err(e) => {
                    eprintln!(
                        "autocoll: warning: {}: no clock offset at the end of the recording: {e}",
                        self.path.display()
                    );
                    None
                }
            };
            if let Some(offset) = &mut self.header.offset {
                offset.end = end;
            }
        }
        let bytes = self.recorder.encode(&self.header);
        crate::files::write_atomic(&self.path, &bytes)?;
        Ok(self.path.clone())
    }
}

/// Every rank learns whether all can write: a failing rank returns its own
/// error, the others one that names it.
fn agree_on_dir(comm: &mut Communicator, dir: &Path, mine: Result<()>) -> Result<()> {
    let flag = [if mine.is_err() {
        comm.rank() as u64 + 1
    } else {
        0
    }];
    let mut worst = [0u64];
    let imp = Implementation::tree(Collective::Allreduce, Shape::Binomial, None)?;
    comm.allreduce_with(&imp, &flag, &mut worst, &Op::MAX)?;
    mine?;
    match worst[0] {
        0 => Ok(()),
        r => Err(Error::Config(format!(
            "trace directory {}: rank {} cannot write there (its error says why)",
            dir.display(),
            r - 1
        ))),
    }
}

/// Rank 0's random run id, sent to all: 32 hex digits.
fn agree_on_run(comm: &mut Communicator) -> Result<String> {
    let mut id = [0u8; 16];
    if comm.rank() == 0 {
        random(&mut id);
    }
    let imp = Implementation::tree(Collective::Bcast, Shape::Binomial, None)?;
    comm.unbalanced(|c| c.bcast_with(&imp, &mut id, 0))?;
    Ok(hex(&id))
}

fn random(out: &mut [u8; 16]) {
    if rustix::rand::getrandom(&mut out[..], rustix::rand::GetRandomFlags::empty()).is_err() {
        // No entropy source: the time and the process make the id unique
        // enough to tell runs apart.
        out[..8].copy_from_slice(&now_ns().to_le_bytes());
        out[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// This rank's clock offset to rank 0's (collective): rank 0 answers each
/// other rank's pings in turn with its clock; each keeps the ping of the
/// smallest round trip. Rank 0's own offset is zero, exactly.
fn exchange(comm: &mut Communicator) -> Result<OffsetSample> {
    let tag = Tag::coll(comm.reserve_call(Collective::Barrier), 0);
    let (rank, size) = (comm.rank(), comm.size());
    let transport = comm.transport_mut();
    let sample = if rank == 0 {
        for peer in 1..size {
            if let Err(e) = answer(transport, peer, tag) {
                // The others can still be served; this one goes without.
                eprintln!("autocoll: warning: clock offset of rank {peer} not taken: {e}");
            }
        }
        OffsetSample {
            at_ns: now_ns(),
            offset_ns: 0,
            rtt_ns: 0,
        }
    } else {
        ping(transport, tag)?
    };
    transport.finish_sends()?;
    Ok(sample)
}

/// Rank 0's side: answers `peer`'s pings with its clock until it says done
/// (an empty message).
fn answer(transport: &mut dyn Transport, peer: usize, tag: Tag) -> Result<()> {
    loop {
        if transport.recv(peer, tag)?.is_empty() {
            return Ok(());
        }
        let now = now_ns();
        transport.send(peer, tag, Bytes::copy_from_slice(&now.to_le_bytes()))?;
    }
}

/// Another rank's side: the ping-pongs, then done.
fn ping(transport: &mut dyn Transport, tag: Tag) -> Result<OffsetSample> {
    let mut best: Option<OffsetSample> = None;
    for _ in 0..PING_PONGS {
        let t1 = now_ns();
        transport.send(0, tag, Bytes::from_static(b"?"))?;
        let reply = transport.recv(0, tag)?;
        let t2 = now_ns();
        let theirs: [u8; 8] = reply[..].try_into().map_err(|_| Error::Protocol {
            peer: "rank 0".into(),
            reason: format!("a clock reply of {} bytes, not 8", reply.len()),
        })?;
        let t0 = u64::from_le_bytes(theirs);
        let mid = t1 + (t2 - t1) / 2;
        let sample = OffsetSample {
            at_ns: mid,
            offset_ns: (i128::from(mid) - i128::from(t0)) as i64,
            rtt_ns: t2 - t1,
        };
        if best.is_none_or(|b| sample.rtt_ns < b.rtt_ns) {
            best = Some(sample);
        }
    }
    transport.send(0, tag, Bytes::new())?;
    Ok(best.expect("at least one ping-pong"))
}
