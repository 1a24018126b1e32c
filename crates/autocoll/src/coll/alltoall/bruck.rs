//! Bruck: ⌈log₂ P⌉ rounds instead of P−1 steps, for blocks small enough
//! that latency outweighs moving each block up to log₂ P times.
//!
//! The blocks are first rotated so that slot i holds the block for the
//! rank i places ahead. In the round of bit k, a rank sends every slot
//! whose index has bit k set, packed into one message, to the rank k
//! places ahead, and receives the same slots from the rank k places
//! behind. A block at slot i thus travels i ranks forward, to its
//! destination, where slot i holds the block of the rank i places behind.

use bytes::{BufMut, BytesMut};

use super::super::{nth_block, Ctx};
use crate::error::Result;

/// `recv` holds block `rank` of every rank's `send`, in rank order.
pub(crate) fn bruck(ctx: &mut Ctx<'_>, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    let b = send.len() / p;
    let mut slots = vec![0u8; send.len()];
    for i in 0..p {
        slots[nth_block(i, b)].copy_from_slice(&send[nth_block((r + i) % p, b)]);
    }
    let mut bit = 1;
    let mut round = 0;
    while bit < p {
        let moving: Vec<usize> = (0..p).filter(|i| i & bit != 0).collect();
        let mut out = BytesMut::with_capacity(moving.len() * b);
        for &i in &moving {
            out.put_slice(&slots[nth_block(i, b)]);
        }
        ctx.send((r + bit) % p, 0, out.freeze(), round)?;
        let data = ctx.recv((r + p - bit) % p, 0, moving.len() * b, round)?;
        for (k, &i) in moving.iter().enumerate() {
            slots[nth_block(i, b)].copy_from_slice(&data[nth_block(k, b)]);
        }
        bit <<= 1;
        round += 1;
    }
    for i in 0..p {
        recv[nth_block((r + p - i) % p, b)].copy_from_slice(&slots[nth_block(i, b)]);
    }
    Ok(())
}
