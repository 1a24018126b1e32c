//! A [`Recorder`]'s binary record, sent to rank 0 at the end of a job.
//!
//! `ACP1`, then the rank, the ranks and the number of entries, then per
//! entry its kind (one byte: 0 point-to-point, 1 collective), destination,
//! class (one byte), count and bytes. Numbers are unsigned LEB128
//! (7 bits a byte, low first): most counts and ranks are small, so an
//! entry takes a few bytes rather than 30 and a rank's record stays far
//! below a frame however many peers it talks to.

use super::counts::{check_entry, Entry, Kind, Recorder, Totals};
use crate::error::{Error, Result};

const MAGIC: &[u8; 4] = b"ACP1";
/// The longest LEB128 encoding of a u64.
const MAX_VARINT: usize = 10;

impl Recorder {
    /// The counts as a compact binary record, for gathering to rank 0.
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    /// The counts [`Self::encode`] made; an error says where a record cut
    /// short or damaged goes wrong.
    pub fn decode(data: &[u8]) -> Result<Recorder> {
        decode(data)
    }
}

fn encode(recorder: &Recorder) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    put(&mut out, recorder.rank as u64);
    put(&mut out, recorder.ranks as u64);
    put(&mut out, recorder.counts.len() as u64);
    for (&(kind, dst, class), totals) in &recorder.counts {
        out.push(match kind {
            Kind::P2p => 0,
            Kind::Collective => 1,
        });
        put(&mut out, dst as u64);
        out.push(class as u8);
        put(&mut out, totals.count);
        put(&mut out, totals.bytes);
    }
    out
}

fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn decode(data: &[u8]) -> Result<Recorder> {
    let mut r = Cursor { data, at: 0 };
    if !data.starts_with(MAGIC) {
        return Err(r.bad("not a pattern record (no ACP1 at the start)"));
    }
    r.at = MAGIC.len();
    let rank = r.size("rank")?;
    let ranks = r.size("ranks")?;
    if rank >= ranks {
        return Err(r.bad(&format!("rank {rank} is not below ranks {ranks}")));
    }
    let mut recorder = Recorder::new(rank, ranks);
    for _ in 0..r.number("entry count")? {
        r.entry(&mut recorder)?;
    }
    if r.at != data.len() {
        return Err(r.bad(&format!("{} bytes after the last entry", data.len() - r.at)));
    }
    Ok(recorder)
}

/// Reads a record from the start, knowing where it is for errors.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn bad(&self, why: &str) -> Error {
        self.bad_at(self.at, why)
    }

    fn bad_at(&self, at: usize, why: &str) -> Error {
        Error::Pattern(format!(
            "record of {} bytes, at byte {at}: {why}",
            self.data.len()
        ))
    }

    fn byte(&mut self, what: &str) -> Result<u8> {
        let b = *self
            .data
            .get(self.at)
            .ok_or_else(|| self.bad(&format!("cut short before the {what}")))?;
        self.at += 1;
        Ok(b)
    }

    fn number(&mut self, what: &str) -> Result<u64> {
        let mut n = 0u64;
        for i in 0..MAX_VARINT {
            let b = self.byte(what)?;
            // The tenth byte holds the 64th bit only.
            if i == MAX_VARINT - 1 && b > 1 {
                return Err(self.bad(&format!("the {what} is above 2^64")));
            }
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(self.bad(&format!("the {what} runs past {MAX_VARINT} bytes")))
    }

    fn size(&mut self, what: &str) -> Result<usize> {
        let n = self.number(what)?;
        usize::try_from(n).map_err(|_| self.bad(&format!("{what} {n} is too large")))
    }

    /// Reads one entry into `recorder`, refusing one it cannot hold.
    /// Errors other than a cut name the entry's first byte.
    fn entry(&mut self, recorder: &mut Recorder) -> Result<()> {
        let start = self.at;
        let kind = match self.byte("kind")? {
            0 => Kind::P2p,
            1 => Kind::Collective,
            k => return Err(self.bad_at(start, &format!("kind {k} is neither 0 nor 1"))),
        };
        let entry = Entry {
            src: recorder.rank,
            dst: self.size("destination")?,
            class: u32::from(self.byte("class")?),
            count: self.number("count")?,
            bytes: self.number("bytes")?,
        };
        check_entry(recorder.ranks, &entry).map_err(|why| self.bad_at(start, &why))?;
        let totals = Totals {
            count: entry.count,
            bytes: entry.bytes,
        };
        let key = (kind, entry.dst, entry.class);
        if recorder.counts.insert(key, totals).is_some() {
            return Err(self.bad_at(
                start,
                &format!(
                    "a second entry for {kind:?} to rank {} of class {}",
                    entry.dst, entry.class
                ),
            ));
        }
        Ok(())
    }
}
