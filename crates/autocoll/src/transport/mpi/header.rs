//! The 40-byte header in front of every message of the `mpi` transport:
//! the full tag with its communicator's context, whether the payload rides
//! inline, and its length.

use crate::ids::{CallSig, Collective};
use crate::transport::Tag;

/// Bytes of the header in front of every message.
pub(super) const HEADER: usize = 40;

/// What a header says.
#[derive(Debug, PartialEq)]
pub(super) struct Header {
    pub(super) tag: Tag,
    pub(super) len: usize,
    pub(super) inline: bool,
}

/// Layout (little-endian): kind (0 collective, 1 user), phase, collective,
/// inline flag, root (u32), sequence number or user tag (u64), the call's
/// bytes (u64), payload length (u64), the communicator's context (u32), 0 (u32).
pub(super) fn encode(tag: &Tag, len: usize, inline: bool) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    match *tag {
        Tag::Coll { call, phase, .. } => {
            h[1] = phase;
            h[2] = Collective::ALL
                .iter()
                .position(|&c| c == call.op)
                .expect("in ALL") as u8;
            h[4..8].copy_from_slice(&call.root.to_le_bytes());
            h[8..16].copy_from_slice(&call.seq.to_le_bytes());
            h[16..24].copy_from_slice(&call.bytes.to_le_bytes());
        }
        Tag::User { tag: t, .. } => {
            h[0] = 1;
            h[8..16].copy_from_slice(&t.to_le_bytes());
        }
    }
    h[3] = u8::from(inline);
    h[24..32].copy_from_slice(&(len as u64).to_le_bytes());
    h[32..36].copy_from_slice(&tag.ctx().to_le_bytes());
    h
}

pub(super) fn decode(buf: &[u8]) -> std::result::Result<Header, String> {
    if buf.len() < HEADER {
        return Err(format!(
            "message of {} bytes is shorter than a header",
            buf.len()
        ));
    }
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
    let ctx = u32::from_le_bytes(buf[32..36].try_into().expect("4 bytes"));
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
            ctx,
        },
        1 => Tag::User {
            tag: u64_at(8),
            ctx,
        },
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
