//! The trace file, `autocoll.trace/1`: one file per rank, written whole at
//! the end of a recording and read back as a stream of calls.
//!
//! Layout. One line of JSON, the [`Header`] (what a person or a script
//! reads with `head -1`), then binary records, little-endian, then a
//! trailer:
//!
//! ```text
//! header   JSON object, one line, ending in '\n'
//! call     40 bytes: seq u64, bytes u64, imp u32, root u32, tree u32,
//!          events u32, op u8, 7 bytes of zeros
//! event    16 bytes, `events` of them after their call: time_ns u64,
//!          segment u32, peer u16, stage u8, phase u8
//! ...      (calls in the order they were made)
//! trailer  32 bytes: b"ACTRACE\n", calls u64, events u64, crc32 u32 of
//!          every byte before the trailer, 4 bytes of zeros
//! ```
//!
//! Why binary under a JSON line: a traced call holds a few to a few
//! hundred events, and analyses read 10^5–10^6 calls from every rank; at
//! 16 bytes an event (65,536 per MiB, in memory and on disk alike) the
//! files are a fifth of JSON lines' size and read without parsing text,
//! while the header stays readable and versioned. A file without its
//! trailer was cut short; one whose checksum or counts disagree was
//! damaged: both are refused with the file and the byte offset named.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::observe::Stage;

/// The schema every trace file's header names.
pub const SCHEMA: &str = "autocoll.trace/1";
/// Bytes of one call record.
pub const CALL_BYTES: usize = 40;
/// Bytes of one event record, in memory and in the file.
pub const EVENT_BYTES: usize = 16;
/// Bytes of the trailer.
pub const TRAILER_BYTES: usize = 32;
const TRAILER_MAGIC: &[u8; 8] = b"ACTRACE\n";
/// `peer` of an event that involves no other rank.
pub const NO_PEER: u16 = u16::MAX;
/// `tree` of a call whose algorithm is not a tree.
pub const NO_TREE: u32 = u32::MAX;
/// The longest header line a reader accepts: a header names each
/// implementation and tree once, so even a long run's is small.
const MAX_HEADER: usize = 64 << 20;

/// What one rank's file says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The recording's id, 32 hex digits, equal on every rank of one run:
    /// files of different runs are never analysed together.
    pub run: String,
    /// This file's rank.
    pub rank: u32,
    /// Ranks in the communicator.
    pub size: u32,
    /// This rank's host.
    pub host: String,
    /// The transport: `local`, `tcp`, `mpi`.
    pub transport: String,
    /// The clock's identity (the kernel's boot id, hex): ranks with equal
    /// ids read one monotonic clock.
    pub clock: String,
    /// True when every rank of the communicator reads this clock.
    pub shared_clock: bool,
    /// This clock minus rank 0's, estimated when clocks are not shared.
    pub offset: Option<ClockOffset>,
    /// Implementation ids; a call's `imp` indexes this list.
    pub impls: Vec<String>,
    /// This rank's place in each tree the calls ran over; a call's `tree`
    /// indexes this list.
    pub trees: Vec<TreePlace>,
    /// Calls in the file.
    pub calls: u64,
    /// Events in the file.
    pub events: u64,
    /// Oldest calls dropped because the buffer was full.
    pub dropped_calls: u64,
    /// Their events.
    pub dropped_events: u64,
    /// Events the recording buffer holds.
    pub capacity_events: u64,
    /// The autocoll version that wrote the file.
    pub autocoll: String,
}

impl Default for Header {
    /// A header of this schema and version with nothing recorded: rank 0
    /// of 1, empty names, no offsets, no calls.
    fn default() -> Self {
        Header {
            schema: SCHEMA.into(),
            run: "0".repeat(32),
            rank: 0,
            size: 1,
            host: String::new(),
            transport: String::new(),
            clock: "0".repeat(32),
            shared_clock: true,
            offset: None,
            impls: Vec::new(),
            trees: Vec::new(),
            calls: 0,
            events: 0,
            dropped_calls: 0,
            dropped_events: 0,
            capacity_events: 0,
            autocoll: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// A rank's parent and children (in send order) in one tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TreePlace {
    /// The parent rank; `None` at the root.
    pub parent: Option<u32>,
    /// The children, in the order this rank sends to them.
    pub children: Vec<u32>,
}

/// The offset of this rank's clock to rank 0's, measured at the start and
/// at the end of the recording, so that drift can be corrected linearly.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Taken when the recording started.
    pub start: OffsetSample,
    /// Taken when it was written; `None` if that exchange failed.
    pub end: Option<OffsetSample>,
}

/// One estimate: at `at_ns` on this clock, this clock read `offset_ns`
/// more than rank 0's, within ± `rtt_ns / 2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetSample {
    /// When, on this rank's clock.
    pub at_ns: u64,
    /// This clock − rank 0's clock.
    pub offset_ns: i64,
    /// The round trip of the exchange that gave it (its uncertainty).
    pub rtt_ns: u64,
}

impl ClockOffset {
    /// This clock − rank 0's at `t_ns` on this clock: the line through the
    /// two samples, or the start's offset alone.
    pub fn at(&self, t_ns: u64) -> i64 {
        match self.end {
            Some(end) if end.at_ns > self.start.at_ns => {
                let span = (end.at_ns - self.start.at_ns) as f64;
                let slope = (end.offset_ns - self.start.offset_ns) as f64 / span;
                self.start.offset_ns + (slope * (t_ns as f64 - self.start.at_ns as f64)) as i64
            }
            _ => self.start.offset_ns,
        }
    }
}

/// One stage of a call, as stored: 16 bytes, plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// When, in nanoseconds on this rank's monotonic clock.
    pub time_ns: u64,
    /// The segment (or algorithm step) index.
    pub segment: u32,
    /// The other rank, or [`NO_PEER`].
    pub peer: u16,
    /// What happened.
    pub stage: Stage,
    /// The algorithm's message phase (separates, e.g., an allreduce's
    /// reduce messages from its broadcast messages).
    pub phase: u8,
}

impl Event {
    /// The other rank, if any.
    pub fn peer(&self) -> Option<usize> {
        (self.peer != NO_PEER).then_some(self.peer as usize)
    }
}

/// One call on one rank, with its events in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The call's number on the communicator (equal on every rank).
    pub seq: u64,
    /// Which collective.
    pub op: Collective,
    /// Bytes per rank.
    pub bytes: u64,
    /// The root (0 for rootless collectives).
    pub root: u32,
    /// Index into the header's `impls`.
    pub imp: u32,
    /// Index into the header's `trees`, or [`NO_TREE`].
    pub tree: u32,
    /// The stages, in the order they happened.
    pub events: Vec<Event>,
}

impl Call {
    /// The call's tree place, if its algorithm is a tree.
    pub fn tree<'h>(&self, header: &'h Header) -> Option<&'h TreePlace> {
        header.trees.get(self.tree as usize)
    }
}

pub(crate) fn stage_code(stage: Stage) -> u8 {
    match stage {
        Stage::Enter => 0,
        Stage::Received => 1,
        Stage::Combined => 2,
        Stage::Sent => 3,
        Stage::Done => 4,
    }
}

pub(crate) fn stage_of(code: u8) -> Option<Stage> {
    Some(match code {
        0 => Stage::Enter,
        1 => Stage::Received,
        2 => Stage::Combined,
        3 => Stage::Sent,
        4 => Stage::Done,
        _ => return None,
    })
}

pub(crate) fn op_code(op: Collective) -> u8 {
    Collective::ALL
        .iter()
        .position(|&c| c == op)
        .expect("every collective is in ALL") as u8
}

/// Appends a call record and its events to `out`.
pub fn encode_call(out: &mut Vec<u8>, call: &Call) {
    encode_call_head(out, call, call.events.len() as u32);
    for e in &call.events {
        encode_event(out, e);
    }
}

/// Appends the record of `call` saying that `events` events follow it
/// (`call.events` is not read): for a writer that keeps its events
/// elsewhere and appends them with [`encode_event`].
pub fn encode_call_head(out: &mut Vec<u8>, call: &Call, events: u32) {
    out.extend_from_slice(&call.seq.to_le_bytes());
    out.extend_from_slice(&call.bytes.to_le_bytes());
    out.extend_from_slice(&call.imp.to_le_bytes());
    out.extend_from_slice(&call.root.to_le_bytes());
    out.extend_from_slice(&call.tree.to_le_bytes());
    out.extend_from_slice(&events.to_le_bytes());
    out.push(op_code(call.op));
    out.extend_from_slice(&[0; 7]);
}

/// Appends one event record to `out`.
pub fn encode_event(out: &mut Vec<u8>, e: &Event) {
    out.extend_from_slice(&e.time_ns.to_le_bytes());
    out.extend_from_slice(&e.segment.to_le_bytes());
    out.extend_from_slice(&e.peer.to_le_bytes());
    out.push(stage_code(e.stage));
    out.push(e.phase);
}

/// The whole file: header line, the records of `calls`, trailer. The
/// header's `calls` and `events` are set from what is written.
pub fn encode<'c>(header: &Header, calls: impl IntoIterator<Item = &'c Call>) -> Vec<u8> {
    let mut body = Vec::new();
    let (mut n_calls, mut n_events) = (0u64, 0u64);
    for call in calls {
        encode_call(&mut body, call);
        n_calls += 1;
        n_events += call.events.len() as u64;
    }
    let mut out = header_line(header, n_calls, n_events);
    out.extend_from_slice(&body);
    append_trailer(&mut out, n_calls, n_events);
    out
}

/// The header line of a file holding `n_calls` calls and `n_events`
/// events (the header's counts are set from them), ending in `\n`: the
/// start of a file whose records a writer appends with
/// [`encode_call_head`] and [`encode_event`] before [`append_trailer`].
pub fn header_line(header: &Header, n_calls: u64, n_events: u64) -> Vec<u8> {
    let header = Header {
        calls: n_calls,
        events: n_events,
        ..header.clone()
    };
    let mut out = serde_json::to_vec(&header).expect("a header serialises");
    out.push(b'\n');
    out
}

/// Ends the file in `out` (header line and records) with the trailer:
/// the counts and the checksum of every byte before it.
pub fn append_trailer(out: &mut Vec<u8>, n_calls: u64, n_events: u64) {
    let crc = crc32fast::hash(out);
    out.extend_from_slice(TRAILER_MAGIC);
    out.extend_from_slice(&n_calls.to_le_bytes());
    out.extend_from_slice(&n_events.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
}

/// Reads a trace file call by call, checking everything it reads.
pub struct Reader<R> {
    path: PathBuf,
    input: R,
    header: Header,
    offset: u64,
    calls_read: u64,
    events_read: u64,
    crc: crc32fast::Hasher,
    done: bool,
}

impl Reader<BufReader<File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self> {
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        Reader::new(path, BufReader::with_capacity(1 << 20, file))
    }
}

impl<R: BufRead> Reader<R> {
    /// Reads the header from `input`; `path` names it in errors.
    pub fn new(path: &Path, mut input: R) -> Result<Self> {
        let bad = |offset: u64, reason: String| Error::BadTrace {
            path: path.display().to_string(),
            offset,
            reason,
        };
        let mut line = Vec::new();
        (&mut input)
            .take(MAX_HEADER as u64)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        if line.last() != Some(&b'\n') {
            return Err(bad(
                line.len() as u64,
                "no header line (not a trace file, or cut short)".into(),
            ));
        }
        let header: Header = serde_json::from_slice(&line[..line.len() - 1]).map_err(|e| {
            bad(
                e.column().saturating_sub(1) as u64,
                format!("the header is not {SCHEMA} JSON: {e}"),
            )
        })?;
        if header.schema != SCHEMA {
            return Err(bad(
                0,
                format!("schema `{}`, expected `{SCHEMA}`", header.schema),
            ));
        }
        if header.rank >= header.size {
            return Err(bad(
                0,
                format!("rank {} of a {}-rank run", header.rank, header.size),
            ));
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&line);
        Ok(Reader {
            path: path.to_path_buf(),
            input,
            header,
            offset: line.len() as u64,
            calls_read: 0,
            events_read: 0,
            crc,
            done: false,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn bad(&self, reason: String) -> Error {
        Error::BadTrace {
            path: self.path.display().to_string(),
            offset: self.offset,
            reason,
        }
    }

    /// Fills `buf` exactly, or says how the file ended.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(self.bad(format!(
                        "the file ends inside {what} (cut short: {} of {} calls read)",
                        self.calls_read, self.header.calls
                    )))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("reading {}", self.path.display()), e)),
            }
        }
        Ok(())
    }

    /// The next call, or `None` after the last one (the trailer checked).
    pub fn next_call(&mut self) -> Result<Option<Call>> {
        if self.done {
            return Ok(None);
        }
        if self.calls_read == self.header.calls {
            self.finish()?;
            return Ok(None);
        }
        let mut rec = [0u8; CALL_BYTES];
        self.fill(&mut rec, "a call record")?;
        let call = self.decode_call(&rec)?;
        self.crc.update(&rec);
        self.offset += CALL_BYTES as u64;
        let mut events = Vec::with_capacity(call.1 as usize);
        let mut raw = [0u8; EVENT_BYTES];
        for _ in 0..call.1 {
            self.fill(&mut raw, "an event record")?;
            events.push(self.decode_event(&raw)?);
            self.crc.update(&raw);
            self.offset += EVENT_BYTES as u64;
        }
        self.calls_read += 1;
        self.events_read += u64::from(call.1);
        Ok(Some(Call { events, ..call.0 }))
    }

    fn decode_call(&self, rec: &[u8; CALL_BYTES]) -> Result<(Call, u32)> {
        let u64_at = |i: usize| u64::from_le_bytes(rec[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(rec[i..i + 4].try_into().expect("4 bytes"));
        let (imp, root, tree, events) = (u32_at(16), u32_at(20), u32_at(24), u32_at(28));
        let op = *Collective::ALL
            .get(rec[32] as usize)
            .ok_or_else(|| self.bad(format!("unknown collective code {}", rec[32])))?;
        if imp as usize >= self.header.impls.len() {
            return Err(self.bad(format!(
                "implementation {imp} of {} named in the header",
                self.header.impls.len()
            )));
        }
        if tree != NO_TREE && tree as usize >= self.header.trees.len() {
            return Err(self.bad(format!(
                "tree {tree} of {} named in the header",
                self.header.trees.len()
            )));
        }
        if root >= self.header.size || rec[33..].iter().any(|&b| b != 0) {
            return Err(self.bad(format!(
                "a damaged call record (root {root}, padding {:?})",
                &rec[33..]
            )));
        }
        let call = Call {
            seq: u64_at(0),
            bytes: u64_at(8),
            imp,
            root,
            tree,
            op,
            events: Vec::new(),
        };
        Ok((call, events))
    }

    fn decode_event(&self, raw: &[u8; EVENT_BYTES]) -> Result<Event> {
        let stage =
            stage_of(raw[14]).ok_or_else(|| self.bad(format!("unknown stage code {}", raw[14])))?;
        let peer = u16::from_le_bytes([raw[12], raw[13]]);
        if peer != NO_PEER && u32::from(peer) >= self.header.size {
            return Err(self.bad(format!(
                "an event names rank {peer} of a {}-rank run",
                self.header.size
            )));
        }
        Ok(Event {
            time_ns: u64::from_le_bytes(raw[..8].try_into().expect("8 bytes")),
            segment: u32::from_le_bytes(raw[8..12].try_into().expect("4 bytes")),
            peer,
            stage,
            phase: raw[15],
        })
    }

    fn finish(&mut self) -> Result<()> {
        let mut trailer = [0u8; TRAILER_BYTES];
        self.fill(&mut trailer, "the trailer")?;
        if &trailer[..8] != TRAILER_MAGIC {
            return Err(self.bad(
                "no trailer after the calls the header counts (damaged, or more calls than it says)"
                    .into(),
            ));
        }
        let calls = u64::from_le_bytes(trailer[8..16].try_into().expect("8 bytes"));
        let events = u64::from_le_bytes(trailer[16..24].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(trailer[24..28].try_into().expect("4 bytes"));
        if (calls, events) != (self.calls_read, self.events_read) || events != self.header.events {
            return Err(self.bad(format!(
                "the trailer counts {calls} calls and {events} events, the file holds {} and {}",
                self.calls_read, self.events_read
            )));
        }
        if crc != self.crc.clone().finalize() {
            return Err(self.bad("the checksum does not match: the file is damaged".into()));
        }
        let mut rest = [0u8; 1];
        if self
            .input
            .read(&mut rest)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?
            != 0
        {
            return Err(self.bad("bytes after the trailer".into()));
        }
        self.done = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
