//! The machine's model from a few exchanges at start-up, for a lottery
//! that has not measured enough to fit one.
//!
//! Rank 0 times round trips with one peer, the first rank on another host
//! (or rank 1 when every rank shares a host): small messages give the
//! latency, large ones the time per byte. The large size starts at 64 KiB
//! and doubles, up to 4 MiB, until a large trip takes many small ones, so
//! that the bytes, not the latency, set it on a fast network too; on a
//! 100 Mbit/s link the probe costs a few tens of milliseconds. Each time is
//! the least of a few round trips, halved: a trip can only be slowed, by
//! what else the machine does. The other ranks only wait for the result.
//!
//! Every rank gets the same answer, so that any of them may hold a lottery.

use bytes::Bytes;

use crate::clock::now_ns;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::pattern::PROBE_TAG;
use crate::select::estimate::Link;

/// The small message: latency's.
const SMALL: usize = 8;
/// The first large message.
const FIRST_LARGE: usize = 64 << 10;
/// The largest large message.
const MAX_LARGE: usize = 4 << 20;
/// A large trip long enough to read bytes off: this many small ones.
const BYTES_DOMINATE: f64 = 16.0;
/// Round trips of each size; the least counts.
const SMALL_TRIPS: usize = 5;
const LARGE_TRIPS: usize = 3;

/// The machine's model as rank 0 measures it with one peer, on every
/// rank; `None` on one rank, or when the large trips were no slower than
/// the small ones (nothing to read a time per byte from). Every rank of
/// `comm` must call it.
pub fn probe(comm: &mut Communicator) -> Result<Option<Link>> {
    if comm.size() < 2 {
        return Ok(None);
    }
    let (peer, crosses) = peer(comm);
    let link = match comm.rank() {
        0 => {
            let link = measure(comm, peer, crosses)?;
            for rank in 1..comm.size() {
                comm.send_bytes(rank, PROBE_TAG, encode(link))?;
            }
            link
        }
        r => {
            if r == peer {
                echo(comm)?;
            }
            decode(&comm.recv_bytes(0, PROBE_TAG)?)?
        }
    };
    Ok(link)
}

/// The first rank on another host than rank 0's, else rank 1; and
/// whether it is on another host.
fn peer(comm: &Communicator) -> (usize, bool) {
    let Ok(layout) = comm.layout() else {
        return (1, false);
    };
    match (1..layout.size()).find(|&r| layout.host(r) != layout.host(0)) {
        Some(r) => (r, true),
        None => (1, false),
    }
}

/// Rank 0's side: the trips, then the end of the peer's echo (an empty
/// message).
fn measure(comm: &mut Communicator, peer: usize, crosses: bool) -> Result<Option<Link>> {
    let small = one_way(comm, peer, SMALL, SMALL_TRIPS)?;
    let mut large = FIRST_LARGE;
    let mut large_s = one_way(comm, peer, large, LARGE_TRIPS)?;
    while large_s < BYTES_DOMINATE * small && large < MAX_LARGE {
        large *= 2;
        large_s = one_way(comm, peer, large, LARGE_TRIPS)?;
    }
    comm.send_bytes(peer, PROBE_TAG, Bytes::new())?;
    let per_byte = (large_s - small) / (large - SMALL) as f64;
    Ok((per_byte > 0.0).then(|| Link::of_pair(small, per_byte, crosses)))
}

/// Half the least round trip of `bytes` to `peer` and back, in seconds.
fn one_way(comm: &mut Communicator, peer: usize, bytes: usize, trips: usize) -> Result<f64> {
    let data = Bytes::from(vec![0u8; bytes]);
    let mut least = u64::MAX;
    for _ in 0..trips {
        let start = now_ns();
        comm.send_bytes(peer, PROBE_TAG, data.clone())?;
        comm.recv_bytes(peer, PROBE_TAG)?;
        least = least.min(now_ns().saturating_sub(start));
    }
    Ok(least as f64 * 1e-9 / 2.0)
}

/// The peer's side: every message back to rank 0 until an empty one.
fn echo(comm: &mut Communicator) -> Result<()> {
    loop {
        let data = comm.recv_bytes(0, PROBE_TAG)?;
        if data.is_empty() {
            return Ok(());
        }
        comm.send_bytes(0, PROBE_TAG, data)?;
    }
}

/// The result's message: empty for none, else the three numbers.
fn encode(link: Option<Link>) -> Bytes {
    let Some(l) = link else {
        return Bytes::new();
    };
    let numbers = [l.latency_s, l.s_per_byte, l.local_s_per_byte];
    Bytes::copy_from_slice(bytemuck::cast_slice(&numbers))
}

fn decode(data: &[u8]) -> Result<Option<Link>> {
    if data.is_empty() {
        return Ok(None);
    }
    if data.len() != 24 {
        return Err(Error::Protocol {
            peer: "rank 0".into(),
            reason: format!("the link probe's result: {} bytes, not 24", data.len()),
        });
    }
    let numbers: Vec<f64> = bytemuck::pod_collect_to_vec(data);
    Ok(Some(Link {
        latency_s: numbers[0],
        s_per_byte: numbers[1],
        local_s_per_byte: numbers[2],
    }))
}

#[cfg(test)]
mod tests;
