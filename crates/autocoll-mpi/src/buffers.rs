//! A call's buffers as the byte slices autocoll's algorithms take.
//!
//! `MPI_IN_PLACE` is resolved per operation as the standard defines it:
//! allreduce, allgather, alltoall, scan, exscan and reduce-scatter on any
//! rank, reduce and gather at the root's send buffer, scatter at the
//! root's receive buffer. A side that is not one block of memory (a vector type, a struct with holes, data at
//! `MPI_BOTTOM`) is packed with `MPI_Pack` into a scratch buffer before the
//! call and, where the call writes it, unpacked after: the algorithms see
//! the type signature's bytes, which every rank agrees on whatever
//! datatypes it describes them with.

use std::ffi::{c_int, c_void};

use autocoll::Collective;
use mpi::ffi::{self, MPI_Comm, MPI_Datatype};

use crate::args::{Args, Layout};
use crate::sys;

/// The two sides of one call on this rank.
pub struct Buffers {
    send: Side,
    recv: Side,
    comm: MPI_Comm,
    /// A v-form's block sizes in bytes where this rank knows them.
    sizes: (Vec<usize>, Vec<usize>),
}

/// One call's buffers as the algorithms take them.
pub struct Parts<'a> {
    /// What this rank sends.
    pub send: &'a [u8],
    /// Where it receives.
    pub recv: &'a mut [u8],
    /// A v-form's block sizes on the side that sends to every rank.
    pub send_sizes: &'a [usize],
    /// A v-form's block sizes on the side that receives from every rank.
    pub recv_sizes: &'a [usize],
}

pub(crate) enum Side {
    /// Nothing on this rank.
    Empty,
    /// The program's memory, one block.
    Raw(*mut u8, usize),
    /// A copy: packed data this rank sends, or scratch an in-place root
    /// receives into and already holds.
    Owned(Vec<u8>),
    /// Packed from the program's memory, unpacked into it after the call.
    Packed {
        data: Vec<u8>,
        buf: *mut c_void,
        count: c_int,
        dtype: MPI_Datatype,
    },
    /// A v-form's blocks, each at its displacement, packed in rank order
    /// and unpacked into their places after the call.
    Spread {
        data: Vec<u8>,
        blocks: Vec<(*mut c_void, c_int)>,
        dtype: MPI_Datatype,
    },
}

/// One side as the program describes it.
pub(crate) struct Desc {
    /// Where the data is.
    pub buf: *mut c_void,
    /// How many elements.
    pub count: c_int,
    /// Of which datatype.
    pub dtype: MPI_Datatype,
    /// Its bytes (the signature's).
    pub len: usize,
}

impl Buffers {
    /// # Safety
    /// The call's arguments passed `coll::plan`; the memory the datatypes
    /// describe is the program's, and nothing else touches it during the
    /// call (MPI forbids it).
    pub unsafe fn new(a: &Args, l: Layout) -> Result<Buffers, c_int> {
        let at_root = l.rank == l.root;
        let in_place = sys::is_in_place(a.send);
        let p = Program { a, l };
        let (send, recv) = match a.op {
            Collective::Bcast => (Side::Empty, p.writes(1)?),
            // Exscan's result at rank 0 is undefined and its buffer may be
            // anything: scratch takes what the algorithm (never) writes.
            Collective::Exscan if l.rank == 0 && !in_place => {
                (p.reads(1)?, Side::Owned(vec![0; l.bytes]))
            }
            Collective::Reduce | Collective::Allreduce | Collective::Scan | Collective::Exscan => {
                let out = match !a.op.rooted() || at_root {
                    true => p.writes(1)?,
                    false => Side::Empty,
                };
                p.input(out, 0, 1, in_place)?
            }
            Collective::Scatter if at_root => {
                let out = match sys::is_in_place(a.recv) {
                    true => Side::Owned(vec![0; l.bytes]),
                    false => p.writes(1)?,
                };
                (p.reads(l.size)?, out)
            }
            Collective::Scatter => (Side::Empty, p.writes(1)?),
            Collective::Gather if !at_root => (p.reads(1)?, Side::Empty),
            Collective::Gather | Collective::Allgather => {
                p.input(p.writes(l.size)?, l.rank, 1, in_place)?
            }
            Collective::Alltoall => p.input(p.writes(l.size)?, 0, l.size, in_place)?,
            // In place, the receive buffer holds every rank's block of the
            // input and gets the result in its first.
            Collective::ReduceScatter if !a.counts.is_null() => p.counted(in_place)?,
            Collective::ReduceScatter if in_place => {
                (p.writes(l.size)?.own(0, l.size * l.bytes), p.writes(1)?)
            }
            Collective::ReduceScatter => (p.reads(l.size)?, p.writes(1)?),
            Collective::Barrier
            | Collective::Gatherv
            | Collective::Scatterv
            | Collective::Allgatherv
            | Collective::Alltoallv => (Side::Empty, Side::Empty),
        };
        let sizes = match a.op {
            Collective::ReduceScatter => p.counts().iter().map(|&c| c * l.elem).collect(),
            _ => Vec::new(),
        };
        Ok(Buffers::of(send, recv, a.comm, (Vec::new(), sizes)))
    }

    /// The buffers of these sides, with a v-form's block sizes.
    pub(crate) fn of(
        send: Side,
        recv: Side,
        comm: MPI_Comm,
        sizes: (Vec<usize>, Vec<usize>),
    ) -> Buffers {
        Buffers {
            send,
            recv,
            comm,
            sizes,
        }
    }

    /// The send side read-only, the receive side writable, and a
    /// v-form's block sizes.
    pub fn parts(&mut self) -> Parts<'_> {
        Parts {
            send: self.send.bytes(),
            recv: self.recv.bytes_mut(),
            send_sizes: &self.sizes.0,
            recv_sizes: &self.sizes.1,
        }
    }

    /// Unpacks what the call wrote into a packed side.
    pub fn finish(self) -> Result<(), c_int> {
        let mut position: c_int = 0;
        match &self.recv {
            Side::Packed {
                data,
                buf,
                count,
                dtype,
            } => unpack(data, &mut position, (*buf, *count), *dtype, self.comm),
            Side::Spread {
                data,
                blocks,
                dtype,
            } => blocks
                .iter()
                .try_for_each(|&block| unpack(data, &mut position, block, *dtype, self.comm)),
            _ => Ok(()),
        }
    }
}

/// `MPI_Unpack` of `count` elements from `data` at `position` on.
fn unpack(
    data: &[u8],
    position: &mut c_int,
    (buf, count): (*mut c_void, c_int),
    dtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<(), c_int> {
    // SAFETY: `data` holds what `MPI_Pack` made of the call's elements of
    // `dtype`; `buf` is where the program keeps `count` of them.
    let code = unsafe {
        ffi::PMPI_Unpack(
            data.as_ptr().cast(),
            data.len() as c_int,
            position,
            buf,
            count,
            dtype,
            comm,
        )
    };
    sys::ok(code)
}

/// The program's arguments to one call, read in rank blocks.
struct Program<'a> {
    a: &'a Args,
    l: Layout,
}

impl Program<'_> {
    /// `blocks` rank blocks of the send side (a root's whole side is every
    /// rank's block, in rank order; `plan` bounded its size).
    fn reads(&self, blocks: usize) -> Result<Side, c_int> {
        let d = Desc {
            buf: self.a.send as *mut c_void,
            count: self.a.scount * blocks as c_int,
            dtype: self.a.stype,
            len: self.l.bytes * blocks,
        };
        Side::read(d, self.a.comm)
    }

    /// `blocks` rank blocks of the receive side.
    fn writes(&self, blocks: usize) -> Result<Side, c_int> {
        let d = Desc {
            buf: self.a.recv,
            count: self.a.rcount * blocks as c_int,
            dtype: self.a.rtype,
            len: self.l.bytes * blocks,
        };
        Side::write(d, self.a.comm)
    }

    /// Reduce-scatter's counts, one per rank (none in the block form).
    fn counts(&self) -> Vec<usize> {
        if self.a.counts.is_null() {
            return Vec::new();
        }
        // SAFETY: `plan` read the same counts, one per rank.
        let counts = unsafe { std::slice::from_raw_parts(self.a.counts, self.l.size) };
        counts.iter().map(|&c| c as usize).collect()
    }

    /// Reduce-scatter's counts form: the whole vector in, this rank's
    /// block out (in place, both in the receive buffer, the block first).
    fn counted(&self, in_place: bool) -> Result<(Side, Side), c_int> {
        let (a, counts) = (self.a, self.counts());
        let side = |buf: *mut c_void, count: usize| Desc {
            buf,
            count: count as c_int,
            dtype: a.rtype,
            len: count * self.l.elem,
        };
        let total = counts.iter().sum();
        let recv = Side::write(side(a.recv, counts[self.l.rank]), a.comm)?;
        let send = match in_place {
            true => Side::write(side(a.recv, total), a.comm)?.own(0, total * self.l.elem),
            false => Side::read(side(a.send as *mut c_void, total), a.comm)?,
        };
        Ok((send, recv))
    }

    /// The input beside `out`: in place, a copy of `blocks` blocks of `out`
    /// from block `at` on; else `blocks` blocks of the send side.
    fn input(
        &self,
        out: Side,
        at: usize,
        blocks: usize,
        in_place: bool,
    ) -> Result<(Side, Side), c_int> {
        let input = match in_place {
            true => out.own(at * self.l.bytes, blocks * self.l.bytes),
            false => self.reads(blocks)?,
        };
        Ok((input, out))
    }
}

impl Side {
    /// A side the call only reads.
    pub(crate) fn read(d: Desc, comm: MPI_Comm) -> Result<Side, c_int> {
        match one_block(&d)? {
            true => Ok(Side::Raw(d.buf.cast(), d.len)),
            false => pack(&d, comm).map(Side::Owned),
        }
    }

    /// A side the call writes (and, at a root or in place, reads first).
    pub(crate) fn write(d: Desc, comm: MPI_Comm) -> Result<Side, c_int> {
        if one_block(&d)? {
            return Ok(Side::Raw(d.buf.cast(), d.len));
        }
        let data = pack(&d, comm)?;
        Ok(Side::Packed {
            data,
            buf: d.buf,
            count: d.count,
            dtype: d.dtype,
        })
    }

    /// A copy of its bytes: what an in-place alltoallv sends.
    pub(crate) fn copy(&self) -> Side {
        Side::Owned(self.bytes().to_vec())
    }

    /// A copy of `len` bytes from `offset` on: what an in-place rank sends.
    fn own(&self, offset: usize, len: usize) -> Side {
        Side::Owned(self.bytes()[offset..offset + len].to_vec())
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Side::Empty => &[],
            // SAFETY: `Buffers::new`'s caller promised `len` bytes at `p`.
            Side::Raw(p, len) => unsafe { std::slice::from_raw_parts(*p, *len) },
            Side::Owned(v) | Side::Packed { data: v, .. } | Side::Spread { data: v, .. } => v,
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Side::Empty => &mut [],
            // SAFETY: as in `bytes`; the program does not read them during
            // the call.
            Side::Raw(p, len) => unsafe { std::slice::from_raw_parts_mut(*p, *len) },
            Side::Owned(v) | Side::Packed { data: v, .. } | Side::Spread { data: v, .. } => v,
        }
    }
}

/// True when the side's bytes lie as one block from its address on.
fn one_block(d: &Desc) -> Result<bool, c_int> {
    Ok(sys::type_info(d.dtype)?.contiguous && !sys::is_bottom(d.buf))
}

/// `MPI_Pack` of the side: its signature's bytes, in order.
pub(crate) fn pack(d: &Desc, comm: MPI_Comm) -> Result<Vec<u8>, c_int> {
    let mut room: c_int = 0;
    // SAFETY: MPI checks the type; `room` is an output.
    sys::ok(unsafe { ffi::PMPI_Pack_size(d.count, d.dtype, comm, &mut room) })?;
    let mut data = vec![0u8; (room.max(0) as usize).max(d.len)];
    let mut position: c_int = 0;
    // SAFETY: `data` has the room MPI asked for; `buf` holds `count`
    // elements of `dtype` (the program's promise).
    let code = unsafe {
        ffi::PMPI_Pack(
            d.buf,
            d.count,
            d.dtype,
            data.as_mut_ptr().cast(),
            data.len() as c_int,
            &mut position,
            comm,
        )
    };
    sys::ok(code)?;
    // On one machine a packed element is its signature's bytes; anything
    // else (a heterogeneous job) is not what the algorithms expect.
    if position as usize != d.len {
        return Err(sys::err_other());
    }
    data.truncate(d.len);
    Ok(data)
}
