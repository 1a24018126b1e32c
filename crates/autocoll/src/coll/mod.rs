//! The collectives, one file per algorithm family.
//!
//! Everything below this module works on bytes: the typed API in
//! [`crate::comm::Communicator`] casts user buffers to bytes and erases the
//! reduction op into a [`Combine`]. Rooted data flows (bcast, reduce,
//! scatter, gather) are one generic pipeline each over any [`Tree`](crate::Tree);
//! algorithms that are not trees live in their own files.

pub(crate) mod allgather;
pub(crate) mod allreduce;
pub(crate) mod alltoall;
pub(crate) mod barrier;
pub(crate) mod bcast;
pub(crate) mod blocks;
pub(crate) mod dispatch;
mod fold;
pub(crate) mod gather;
pub mod op;
pub(crate) mod reduce;
pub(crate) mod reduce_scatter;
pub(crate) mod scan;
pub(crate) mod scatter;

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use crate::clock::now_ns;
use crate::error::{Error, Result};
use crate::ids::CallSig;
use crate::layout::Layout;
use crate::observe::{Event, Observer, Stage};
use crate::select::Implementation;
use crate::transport::{Tag, Transport};
use crate::tree::Tree;

/// Combines an incoming run of elements into an accumulator, both as bytes.
pub(crate) type Combine<'a> = &'a (dyn Fn(&mut [u8], &[u8]) + Sync);

/// What every algorithm needs: the transport, the call and the observers.
pub(crate) struct Ctx<'a> {
    pub transport: &'a mut dyn Transport,
    pub call: CallSig,
    pub rank: usize,
    pub size: usize,
    pub imp: &'a Implementation,
    pub tree: Option<&'a Tree>,
    /// Where the ranks run, or why the transport's reports make no layout.
    pub layout: std::result::Result<&'a Layout, &'a str>,
    pub observers: &'a [Arc<dyn Observer>],
}

impl Ctx<'_> {
    /// Reports a stage to the observers, if there are any: one clock read,
    /// the same event for each.
    #[inline]
    pub fn note(&self, stage: Stage, phase: u8, segment: usize, peer: Option<usize>) {
        if self.observers.is_empty() {
            return;
        }
        let event = Event {
            rank: self.rank,
            sig: self.call,
            imp: self.imp,
            tree: self.tree,
            stage,
            phase,
            segment: segment as u32,
            peer,
            time_ns: now_ns(),
        };
        for observer in self.observers {
            observer.event(&event);
        }
    }

    pub fn send(&mut self, dest: usize, phase: u8, data: Bytes, segment: usize) -> Result<()> {
        let tag = Tag::coll(self.call, phase);
        self.transport.send(dest, tag, data)?;
        self.note(Stage::Sent, phase, segment, Some(dest));
        Ok(())
    }

    /// Receives a message that must hold exactly `len` bytes (one of
    /// another length was still received, and is traced as such).
    pub fn recv(&mut self, src: usize, phase: u8, len: usize, segment: usize) -> Result<Bytes> {
        let data = self.recv_any(src, phase, segment)?;
        if data.len() != len {
            return Err(Error::MessageSize {
                rank: self.rank,
                peer: src,
                expected: len,
                got: data.len(),
                call: self.call,
            });
        }
        Ok(data)
    }

    /// Receives a message of a length only the sender knows.
    pub fn recv_any(&mut self, src: usize, phase: u8, segment: usize) -> Result<Bytes> {
        let tag = Tag::coll(self.call, phase);
        let data = self.transport.recv(src, tag)?;
        self.note(Stage::Received, phase, segment, Some(src));
        Ok(data)
    }

    /// Receives into `dest`, which fixes the expected length.
    pub fn recv_into(
        &mut self,
        src: usize,
        phase: u8,
        dest: &mut [u8],
        segment: usize,
    ) -> Result<Bytes> {
        let data = self.recv(src, phase, dest.len(), segment)?;
        dest.copy_from_slice(&data);
        Ok(data)
    }

    /// Receives a run of elements and combines it into `acc`.
    pub fn recv_combine(
        &mut self,
        src: usize,
        phase: u8,
        acc: &mut [u8],
        combine: Combine<'_>,
        segment: usize,
    ) -> Result<()> {
        let data = self.recv(src, phase, acc.len(), segment)?;
        combine(acc, &data);
        self.note(Stage::Combined, phase, segment, Some(src));
        Ok(())
    }
}

/// The byte ranges of a `total`-byte message cut into `seg`-byte segments
/// (the last one shorter). A zero-byte message has no segments.
pub(crate) fn segments(total: usize, seg: usize) -> impl Iterator<Item = Range<usize>> {
    let seg = seg.max(1);
    (0..total.div_ceil(seg)).map(move |k| k * seg..(k * seg).saturating_add(seg).min(total))
}

/// The segment size in bytes for an implementation: its `seg` rounded down
/// to whole elements (at least one), or unbounded when unsegmented.
pub(crate) fn segment_bytes(imp: &Implementation, elem: usize) -> usize {
    match imp.seg {
        Some(seg) => (seg / elem).max(1) * elem,
        None => usize::MAX,
    }
}

/// The `b`-byte block `i` of a buffer of equal blocks.
pub(crate) fn nth_block(i: usize, b: usize) -> Range<usize> {
    i * b..(i + 1) * b
}

/// Block `i` of `n` elements split into `parts` near-equal blocks, in bytes.
pub(crate) fn block(n: usize, parts: usize, i: usize, elem: usize) -> Range<usize> {
    (i * n / parts) * elem..((i + 1) * n / parts) * elem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_message_once() {
        let cuts: Vec<_> = segments(10, 4).collect();
        assert_eq!(cuts, vec![0..4, 4..8, 8..10]);
        assert_eq!(segments(0, 4).count(), 0);
        assert_eq!(segments(3, 100).collect::<Vec<_>>(), vec![0..3]);
        assert_eq!(segments(3, usize::MAX).collect::<Vec<_>>(), vec![0..3]);
    }

    #[test]
    fn blocks_partition_unevenly_sized_vectors() {
        let blocks: Vec<_> = (0..3).map(|i| block(7, 3, i, 8)).collect();
        assert_eq!(blocks, vec![0..16, 16..32, 32..56]);
        assert_eq!(block(0, 4, 2, 8), 0..0);
    }
}
