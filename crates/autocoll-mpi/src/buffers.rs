//! A call's buffers as the byte slices autocoll's algorithms take, with
//! `MPI_IN_PLACE` resolved per operation as the standard defines it:
//! allreduce and allgather on any rank, reduce and gather at the root's
//! send buffer, scatter at the root's receive buffer.

use autocoll::Collective;

use crate::coll::{Args, Layout};
use crate::sys;

/// The two sides of one call on this rank.
pub struct Buffers {
    send: Side,
    recv: Side,
}

enum Side {
    /// Nothing on this rank.
    Empty,
    /// The program's memory.
    Raw(*mut u8, usize),
    /// A copy (the data an in-place call sends) or scratch (what an
    /// in-place root receives and already holds).
    Owned(Vec<u8>),
}

impl Buffers {
    /// # Safety
    /// Each buffer the call uses on this rank must hold its bytes as one
    /// block (`coll::plan` checked the types), and nothing else may touch
    /// them during the call.
    pub unsafe fn new(a: &Args, l: Layout) -> Buffers {
        let at_root = l.rank == l.root;
        let all = l.bytes * l.size;
        let send_raw = |len| Side::Raw(a.send as *mut u8, len);
        let recv_raw = |len| Side::Raw(a.recv.cast(), len);
        let in_place = sys::is_in_place(a.send);
        // What an in-place rank sends: its own data, read from `recv`.
        let own = |offset: usize| {
            // SAFETY: `recv` holds `offset + bytes` bytes (the caller's promise).
            let mine =
                unsafe { std::slice::from_raw_parts(a.recv.cast::<u8>().add(offset), l.bytes) };
            Side::Owned(mine.to_vec())
        };
        let (send, recv) = match a.op {
            Collective::Bcast => (Side::Empty, recv_raw(l.bytes)),
            Collective::Reduce | Collective::Allreduce => {
                let receives = a.op == Collective::Allreduce || at_root;
                let send = if in_place { own(0) } else { send_raw(l.bytes) };
                (
                    send,
                    if receives {
                        recv_raw(l.bytes)
                    } else {
                        Side::Empty
                    },
                )
            }
            Collective::Scatter if at_root => {
                let recv = match sys::is_in_place(a.recv) {
                    true => Side::Owned(vec![0; l.bytes]),
                    false => recv_raw(l.bytes),
                };
                (send_raw(all), recv)
            }
            Collective::Scatter => (Side::Empty, recv_raw(l.bytes)),
            Collective::Gather if at_root => {
                let send = if in_place {
                    own(l.rank * l.bytes)
                } else {
                    send_raw(l.bytes)
                };
                (send, recv_raw(all))
            }
            Collective::Gather => (send_raw(l.bytes), Side::Empty),
            Collective::Allgather => {
                let send = if in_place {
                    own(l.rank * l.bytes)
                } else {
                    send_raw(l.bytes)
                };
                (send, recv_raw(all))
            }
            Collective::Barrier => (Side::Empty, Side::Empty),
        };
        Buffers { send, recv }
    }

    /// The send side read-only and the receive side writable.
    pub fn slices(&mut self) -> (&[u8], &mut [u8]) {
        let send: &[u8] = match &self.send {
            Side::Empty => &[],
            // SAFETY: `new`'s caller promised `len` bytes at `p`.
            Side::Raw(p, len) => unsafe { std::slice::from_raw_parts(*p, *len) },
            Side::Owned(v) => v,
        };
        let recv: &mut [u8] = match &mut self.recv {
            Side::Empty => &mut [],
            // SAFETY: as above, and the program does not read them during
            // the call (MPI forbids it).
            Side::Raw(p, len) => unsafe { std::slice::from_raw_parts_mut(*p, *len) },
            Side::Owned(v) => v,
        };
        (send, recv)
    }
}
