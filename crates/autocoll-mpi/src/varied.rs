//! The v-forms (gatherv, scatterv, allgatherv, alltoallv): their checks
//! and their buffers.
//!
//! A rank knows only what MPI gives it: a gatherv's or scatterv's counts
//! at the root, an alltoallv's own row and column. So nothing about the
//! sizes decides a pass-through (a rank that passed while the others ran
//! would hang them), and the selector's key is what every rank knows
//! (`Collective::agreed_bytes`). Each side's blocks are packed in rank
//! order around the call, whatever the displacements and datatypes, so
//! the algorithms see blocks laid end to end.

use std::ffi::{c_int, c_void};

use autocoll::Collective;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

use crate::args::{Args, Layout, Plan};
use crate::buffers::{pack, Buffers, Desc, Side};
use crate::stats::Reason;
use crate::sys;

/// One side's blocks as the program gives them: a count and a
/// displacement (in elements of `dtype`) per rank.
struct Vector {
    buf: *mut c_void,
    counts: *const c_int,
    displs: *const c_int,
    dtype: MPI_Datatype,
}

impl Vector {
    fn send(a: &Args) -> Vector {
        Vector {
            buf: a.send as *mut c_void,
            counts: a.v.scounts,
            displs: a.v.sdispls,
            dtype: a.stype,
        }
    }

    fn recv(a: &Args) -> Vector {
        Vector {
            buf: a.recv,
            counts: a.v.rcounts,
            displs: a.v.rdispls,
            dtype: a.rtype,
        }
    }

    /// The counts and displacements, which MPI requires one per rank.
    fn lists(&self, size: usize) -> Result<(&[c_int], &[c_int]), Reason> {
        if self.counts.is_null() || self.displs.is_null() {
            return Err(Reason::Invalid);
        }
        // SAFETY: MPI requires one count and one displacement per rank.
        unsafe {
            Ok((
                std::slice::from_raw_parts(self.counts, size),
                std::slice::from_raw_parts(self.displs, size),
            ))
        }
    }

    /// Each rank's block in bytes.
    fn sizes(&self, size: usize) -> Result<Vec<usize>, Reason> {
        let (counts, _) = self.lists(size)?;
        let info = sys::type_info(self.dtype).map_err(|_| Reason::Invalid)?;
        counts
            .iter()
            .map(|&c| match c {
                c if c < 0 => Err(Reason::Invalid),
                c => Ok(c as usize * info.size),
            })
            .collect()
    }

    /// Where each rank's block starts, and its count.
    fn blocks(&self, size: usize) -> Result<Vec<(*mut c_void, c_int)>, c_int> {
        let (counts, displs) = self.lists(size).map_err(|_| sys::err_arg())?;
        let extent = sys::type_info(self.dtype)?.extent;
        let at = |d: c_int| self.buf.wrapping_byte_offset(d as isize * extent);
        Ok(displs
            .iter()
            .zip(counts)
            .map(|(&d, &c)| (at(d), c))
            .collect())
    }

    /// The blocks packed in rank order, from the program's memory when
    /// `fill`, and their sizes; unpacked after the call into place.
    fn spread(&self, size: usize, fill: bool, comm: MPI_Comm) -> Result<(Side, Vec<usize>), c_int> {
        let sizes = self.sizes(size).map_err(|_| sys::err_arg())?;
        let blocks = self.blocks(size)?;
        let mut data = Vec::with_capacity(sizes.iter().sum());
        for (&(buf, count), &len) in blocks.iter().zip(&sizes) {
            match fill {
                true => data.extend(pack(&desc_at(buf, count, self.dtype, len), comm)?),
                false => data.resize(data.len() + len, 0),
            }
        }
        let dtype = self.dtype;
        Ok((
            Side::Spread {
                data,
                blocks,
                dtype,
            },
            sizes,
        ))
    }
}

fn desc_at(buf: *mut c_void, count: c_int, dtype: MPI_Datatype, len: usize) -> Desc {
    Desc {
        buf,
        count,
        dtype,
        len,
    }
}

/// One rank's own block: `count` elements of `dtype` at `buf`.
fn own(buf: *const c_void, count: c_int, dtype: MPI_Datatype) -> Result<Desc, Reason> {
    if count < 0 || sys::is_in_place(buf) {
        return Err(Reason::Invalid);
    }
    let info = sys::type_info(dtype).map_err(|_| Reason::Invalid)?;
    Ok(desc_at(
        buf as *mut c_void,
        count,
        dtype,
        count as usize * info.size,
    ))
}

/// Checks a v-form's arguments where this rank has them.
pub fn plan(a: &Args, rank: usize, size: usize, root: usize) -> Result<Plan, Reason> {
    let at_root = rank == root;
    let in_place = sys::is_in_place(a.send);
    let run = |bytes| {
        Plan::Run(Layout {
            rank,
            size,
            root,
            bytes,
            elem: 1,
        })
    };
    let differs = |mine: Desc, theirs: usize| match mine.len == theirs {
        true => Ok(()),
        false => Err(Reason::Differing),
    };
    match a.op {
        Collective::Gatherv if at_root => {
            let all = Vector::recv(a).sizes(size)?;
            if !in_place {
                differs(own(a.send, a.scount, a.stype)?, all[rank])?;
            }
            Ok(run(0))
        }
        Collective::Gatherv => own(a.send, a.scount, a.stype).map(|_| run(0)),
        Collective::Scatterv if at_root => {
            let all = Vector::send(a).sizes(size)?;
            if !sys::is_in_place(a.recv) {
                differs(own(a.recv, a.rcount, a.rtype)?, all[rank])?;
            }
            Ok(run(0))
        }
        Collective::Scatterv => own(a.recv, a.rcount, a.rtype).map(|_| run(0)),
        Collective::Allgatherv => {
            let all = Vector::recv(a).sizes(size)?;
            if !in_place {
                differs(own(a.send, a.scount, a.stype)?, all[rank])?;
            }
            match all.iter().sum::<usize>() {
                0 => Ok(Plan::Nothing),
                _ => Ok(run(a.op.agreed_bytes(&all))),
            }
        }
        _ => {
            let into = Vector::recv(a).sizes(size)?;
            if !in_place && Vector::send(a).sizes(size)?[rank] != into[rank] {
                return Err(Reason::Differing);
            }
            Ok(run(0))
        }
    }
}

/// A v-form's buffers on this rank.
///
/// # Safety
/// As `Buffers::new`: `plan` passed the call.
pub unsafe fn buffers(a: &Args, l: Layout) -> Result<Buffers, c_int> {
    let (size, comm) = (l.size, a.comm);
    let in_place = sys::is_in_place(a.send);
    let theirs = |buf, count, dtype| own(buf, count, dtype).map_err(|_| sys::err_arg());
    let none = Vec::new;
    let (send, recv, sizes) = match a.op {
        Collective::Gatherv if l.rank != l.root => {
            let send = Side::read(theirs(a.send, a.scount, a.stype)?, comm)?;
            (send, Side::Empty, (none(), none()))
        }
        Collective::Gatherv | Collective::Allgatherv => {
            let (recv, into) = Vector::recv(a).spread(size, false, comm)?;
            let send = match in_place {
                true => own_in_place(a, l.rank, size)?,
                false => Side::read(theirs(a.send, a.scount, a.stype)?, comm)?,
            };
            (send, recv, (none(), into))
        }
        Collective::Scatterv if l.rank != l.root => {
            let recv = Side::write(theirs(a.recv, a.rcount, a.rtype)?, comm)?;
            (Side::Empty, recv, (none(), none()))
        }
        Collective::Scatterv => {
            let (send, out) = Vector::send(a).spread(size, true, comm)?;
            let recv = match sys::is_in_place(a.recv) {
                true => Side::Owned(vec![0; out[l.rank]]),
                false => Side::write(theirs(a.recv, a.rcount, a.rtype)?, comm)?,
            };
            (send, recv, (out, none()))
        }
        _ => {
            let (recv, into) = Vector::recv(a).spread(size, in_place, comm)?;
            let (send, out) = match in_place {
                true => (recv.copy(), into.clone()),
                false => Vector::send(a).spread(size, true, comm)?,
            };
            (send, recv, (out, into))
        }
    };
    Ok(Buffers::of(send, recv, comm, sizes))
}

/// An in-place rank's own block, read from its place in the receive side.
fn own_in_place(a: &Args, rank: usize, size: usize) -> Result<Side, c_int> {
    let recv = Vector::recv(a);
    let (at, count) = recv.blocks(size)?[rank];
    let len = recv.sizes(size).map_err(|_| sys::err_arg())?[rank];
    Side::read(desc_at(at, count, a.rtype, len), a.comm)
}
