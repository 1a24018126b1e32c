//! Two-level: the blocks from one host to another cross the network as
//! one message between the two hosts' leaders (each host's lowest rank),
//! not as one message per pair of ranks. Between H hosts that is H·(H−1)
//! messages, each holding the n_A·n_B blocks of its pair of hosts; the
//! bytes over each host's link are those of pairwise exchange, the
//! messages fewer by the square of the ranks per host, which is what wins
//! where a message's fixed cost outweighs its bytes.
//!
//! Every rank but the leader sends its leader, in one message, its blocks
//! for the ranks of other hosts (phase [`GATHER`]). The leaders exchange,
//! for each pair of hosts, every block from the ranks of one to the ranks
//! of the other, sending to host + 1, + 2, … and receiving from host − 1,
//! − 2, … ([`EXCHANGE`]); each leader then sends every rank of its host,
//! in one message, its blocks from the other hosts ([`SCATTER`]). Blocks
//! between ranks of one host go straight to their rank ([`DIRECT`]), all
//! sends ahead of the receives, so over one host this is `linear` with
//! every block in flight.
//!
//! The blocks for, and from, the ranks of other hosts are always in one
//! order: host by host, and by rank within a host (a host's *outside*).
//! Ranks of a host need not be contiguous, and hosts may differ in size.

use bytes::{BufMut, Bytes, BytesMut};

use super::super::{nth_block, Ctx};
use crate::error::{Error, Result};
use crate::layout::Layout;

/// Blocks between ranks of one host, straight to their rank.
const DIRECT: u8 = 0;
/// A rank's blocks for other hosts, to its leader.
const GATHER: u8 = 1;
/// Every block from one host to another, between their leaders.
const EXCHANGE: u8 = 2;
/// A rank's blocks from other hosts, from its leader.
const SCATTER: u8 = 3;

/// The hosts as one rank sees them.
struct Hosts {
    /// Every host's ranks, in rank order; the first of each leads it.
    ranks: Vec<Vec<usize>>,
    /// This rank's host.
    mine: usize,
    /// This rank's place among the ranks of its host.
    place: usize,
    /// The ranks of the other hosts, host by host, each in rank order.
    outside: Vec<usize>,
}

impl Hosts {
    fn new(layout: &Layout, rank: usize) -> Hosts {
        let ranks = layout.ranks_by_host();
        let mine = layout.host(rank);
        let place = ranks[mine].iter().position(|&r| r == rank).unwrap_or(0);
        let outside = ranks
            .iter()
            .enumerate()
            .filter(|&(host, _)| host != mine)
            .flat_map(|(_, of_host)| of_host.iter().copied())
            .collect();
        Hosts {
            ranks,
            mine,
            place,
            outside,
        }
    }

    fn local(&self) -> &[usize] {
        &self.ranks[self.mine]
    }

    fn leader(&self) -> usize {
        self.local()[0]
    }

    /// The host `step` places after this one (before, when `step` is
    /// taken from the host count).
    fn host_at(&self, step: usize) -> usize {
        (self.mine + step) % self.ranks.len()
    }

    /// Where the ranks of `host` start in [`Self::outside`].
    fn offset(&self, host: usize) -> usize {
        (0..host)
            .filter(|&h| h != self.mine)
            .map(|h| self.ranks[h].len())
            .sum()
    }
}

/// `recv` holds block `rank` of every rank's `send`, in rank order.
pub(crate) fn two_level(ctx: &mut Ctx<'_>, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let layout = ctx.layout.map_err(|why| Error::Layout(why.to_string()))?;
    if layout.size() != ctx.size {
        return Err(Error::Layout(format!(
            "a layout of {} ranks for a call on {}",
            layout.size(),
            ctx.size
        )));
    }
    let hosts = Hosts::new(layout, ctx.rank);
    let b = send.len() / ctx.size;
    let crosses = !hosts.outside.is_empty();
    let leads = hosts.place == 0;
    if crosses && !leads {
        ctx.send(hosts.leader(), GATHER, pack(send, &hosts.outside, b), 0)?;
    }
    direct_sends(ctx, &hosts, send, recv, b)?;
    if crosses && leads {
        lead(ctx, &hosts, send, recv, b)?;
    }
    direct_recvs(ctx, &hosts, recv, b)?;
    if crosses && !leads {
        let data = ctx.recv(hosts.leader(), SCATTER, hosts.outside.len() * b, 0)?;
        unpack(&data, &hosts.outside, recv, b);
    }
    Ok(())
}

/// The `b`-byte blocks of `buf` for `ranks`, one after the other.
fn pack(buf: &[u8], ranks: &[usize], b: usize) -> Bytes {
    let mut out = BytesMut::with_capacity(ranks.len() * b);
    for &r in ranks {
        out.put_slice(&buf[nth_block(r, b)]);
    }
    out.freeze()
}

/// What [`pack`] packed for `ranks`, each block back at its rank's place.
fn unpack(data: &[u8], ranks: &[usize], recv: &mut [u8], b: usize) {
    for (k, &r) in ranks.iter().enumerate() {
        recv[nth_block(r, b)].copy_from_slice(&data[nth_block(k, b)]);
    }
}

/// The rank's own block, and its blocks for the other ranks of its host,
/// sent in pairwise order within the host (to place + 1, + 2, …).
fn direct_sends(
    ctx: &mut Ctx<'_>,
    hosts: &Hosts,
    send: &[u8],
    recv: &mut [u8],
    b: usize,
) -> Result<()> {
    let me = nth_block(ctx.rank, b);
    recv[me.clone()].copy_from_slice(&send[me]);
    let (local, n) = (hosts.local(), hosts.local().len());
    for s in 1..n {
        let to = local[(hosts.place + s) % n];
        ctx.send(
            to,
            DIRECT,
            Bytes::copy_from_slice(&send[nth_block(to, b)]),
            s,
        )?;
    }
    Ok(())
}

/// The blocks from the other ranks of the host (from place − 1, − 2, …).
fn direct_recvs(ctx: &mut Ctx<'_>, hosts: &Hosts, recv: &mut [u8], b: usize) -> Result<()> {
    let (local, n) = (hosts.local(), hosts.local().len());
    for s in 1..n {
        let from = local[(hosts.place + n - s) % n];
        ctx.recv_into(from, DIRECT, &mut recv[nth_block(from, b)], s)?;
    }
    Ok(())
}

/// The leader's part: its host's blocks for other hosts in, one message
/// to and from every other host, each rank's blocks from them out.
fn lead(ctx: &mut Ctx<'_>, hosts: &Hosts, send: &[u8], recv: &mut [u8], b: usize) -> Result<()> {
    let local = hosts.local();
    let span = hosts.outside.len() * b;
    // The leader's own blocks stand where its gather would.
    let mut gathered = vec![pack(send, &hosts.outside, b)];
    for (k, &r) in local.iter().enumerate().skip(1) {
        gathered.push(ctx.recv(r, GATHER, span, k)?);
    }
    let count = hosts.ranks.len();
    for step in 1..count {
        let to = hosts.host_at(step);
        let bundle = bundle(&gathered, hosts.offset(to), hosts.ranks[to].len(), b);
        ctx.send(hosts.ranks[to][0], EXCHANGE, bundle, step)?;
    }
    let mut from_host = vec![Bytes::new(); count];
    for step in 1..count {
        let from = hosts.host_at(count - step);
        let len = hosts.ranks[from].len() * local.len() * b;
        from_host[from] = ctx.recv(hosts.ranks[from][0], EXCHANGE, len, step)?;
    }
    for (place, &r) in local.iter().enumerate().skip(1) {
        ctx.send(r, SCATTER, hand_out(hosts, &from_host, place, b), place)?;
    }
    unpack(&hand_out(hosts, &from_host, 0, b), &hosts.outside, recv, b);
    Ok(())
}

/// The blocks from every rank of the host (`gathered`, in place order) to
/// the `n` ranks of another host, whose blocks start at `offset` of each
/// gather: source by source, and by rank within each.
fn bundle(gathered: &[Bytes], offset: usize, n: usize, b: usize) -> Bytes {
    let mut out = BytesMut::with_capacity(gathered.len() * n * b);
    for from in gathered {
        out.put_slice(&from[offset * b..(offset + n) * b]);
    }
    out.freeze()
}

/// The blocks from the other hosts to the rank at `place` on this host,
/// in the order of [`Hosts::outside`]: a host's bundle holds, for each of
/// its ranks, one block for each rank of this host.
fn hand_out(hosts: &Hosts, from_host: &[Bytes], place: usize, b: usize) -> Bytes {
    let n = hosts.local().len();
    let mut out = BytesMut::with_capacity(hosts.outside.len() * b);
    for (host, bundle) in from_host.iter().enumerate() {
        if host != hosts.mine {
            for source in 0..hosts.ranks[host].len() {
                out.put_slice(&bundle[nth_block(source * n + place, b)]);
            }
        }
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_lists_other_hosts_ranks_host_by_host_and_offsets_find_each_host() {
        let names = [0, 1, 0, 2, 1, 1].map(|h| format!("h{h}")).to_vec();
        let layout = Layout::of_hosts(names).unwrap();
        let hosts = Hosts::new(&layout, 4);
        assert_eq!((hosts.mine, hosts.place, hosts.leader()), (1, 1, 1));
        assert_eq!(hosts.outside, [0, 2, 3]);
        assert_eq!((hosts.offset(0), hosts.offset(2)), (0, 2));
        assert_eq!((hosts.host_at(1), hosts.host_at(2)), (2, 0));
    }

    #[test]
    fn a_host_receives_from_each_of_its_sources_one_block_per_rank() {
        // Two sources, each gathered for 3 outside ranks, the last 2 on the
        // receiving host.
        let gathered = [Bytes::from_static(b"abc"), Bytes::from_static(b"def")];
        assert_eq!(&bundle(&gathered, 1, 2, 1)[..], b"bcef");
    }
}
