//! One collective call: check what the library can do with it, then run
//! it with the selector's choice or hand it to `PMPI_<Op>` unchanged.
//!
//! Every decision to pass a call through is taken from arguments that MPI
//! requires every rank to agree on (communicator, type signatures, op,
//! root, and a reduction's datatype): a call that one rank passed through
//! and another ran would hang. A layout only some ranks use is packed
//! (`buffers::Buffers`), never a reason to pass.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use autocoll::comm::RawCall;
use autocoll::{Algorithm, Collective, Implementation};
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

use crate::args::{Args, Layout, Plan};
use crate::boundary::{self, Outcome};
use crate::buffers::Buffers;
use crate::config::Select;
use crate::stats::Reason;
use crate::sys::{self, OpKind};

/// Runs one call, never unwinding into C.
pub fn call(args: Args) -> c_int {
    boundary::guarded(args.op, || native(&args), || run(&args))
}

/// The call as the MPI library would run it, untouched.
pub fn native(a: &Args) -> c_int {
    // SAFETY: the program's own arguments, handed on unchanged to the MPI
    // library's profiling entry point of the same call.
    unsafe {
        match a.op {
            Collective::Bcast => ffi::PMPI_Bcast(a.recv, a.rcount, a.rtype, a.root, a.comm),
            Collective::Reduce => {
                ffi::PMPI_Reduce(a.send, a.recv, a.rcount, a.rtype, a.mpi_op, a.root, a.comm)
            }
            Collective::Allreduce => {
                ffi::PMPI_Allreduce(a.send, a.recv, a.rcount, a.rtype, a.mpi_op, a.comm)
            }
            Collective::Scatter => ffi::PMPI_Scatter(
                a.send, a.scount, a.stype, a.recv, a.rcount, a.rtype, a.root, a.comm,
            ),
            Collective::Gather => ffi::PMPI_Gather(
                a.send, a.scount, a.stype, a.recv, a.rcount, a.rtype, a.root, a.comm,
            ),
            Collective::Allgather => {
                ffi::PMPI_Allgather(a.send, a.scount, a.stype, a.recv, a.rcount, a.rtype, a.comm)
            }
            Collective::Barrier => ffi::PMPI_Barrier(a.comm),
            Collective::Alltoall => {
                ffi::PMPI_Alltoall(a.send, a.scount, a.stype, a.recv, a.rcount, a.rtype, a.comm)
            }
            Collective::Scan => ffi::PMPI_Scan(a.send, a.recv, a.rcount, a.rtype, a.mpi_op, a.comm),
            Collective::Exscan => {
                ffi::PMPI_Exscan(a.send, a.recv, a.rcount, a.rtype, a.mpi_op, a.comm)
            }
            Collective::ReduceScatter if a.counts.is_null() => {
                ffi::PMPI_Reduce_scatter_block(a.send, a.recv, a.rcount, a.rtype, a.mpi_op, a.comm)
            }
            Collective::ReduceScatter => {
                ffi::PMPI_Reduce_scatter(a.send, a.recv, a.counts, a.rtype, a.mpi_op, a.comm)
            }
            _ => native_varied(a),
        }
    }
}

/// A v-form as the MPI library would run it.
fn native_varied(a: &Args) -> c_int {
    // SAFETY: as in `native`.
    unsafe {
        match a.op {
            Collective::Gatherv => ffi::PMPI_Gatherv(
                a.send,
                a.scount,
                a.stype,
                a.recv,
                a.v.rcounts,
                a.v.rdispls,
                a.rtype,
                a.root,
                a.comm,
            ),
            Collective::Scatterv => ffi::PMPI_Scatterv(
                a.send,
                a.v.scounts,
                a.v.sdispls,
                a.stype,
                a.recv,
                a.rcount,
                a.rtype,
                a.root,
                a.comm,
            ),
            Collective::Allgatherv => ffi::PMPI_Allgatherv(
                a.send,
                a.scount,
                a.stype,
                a.recv,
                a.v.rcounts,
                a.v.rdispls,
                a.rtype,
                a.comm,
            ),
            _ => ffi::PMPI_Alltoallv(
                a.send,
                a.v.scounts,
                a.v.sdispls,
                a.stype,
                a.recv,
                a.v.rcounts,
                a.v.rdispls,
                a.rtype,
                a.comm,
            ),
        }
    }
}

fn run(a: &Args) -> Outcome {
    let lottery = matches!(crate::boundary::config().select, Select::Lottery(_));
    if lottery && a.op.varies() && a.op != Collective::Allgatherv {
        return Outcome::Pass(Reason::SizesUnshared);
    }
    let known = crate::state::known(a.comm);
    let layout = match plan(a, known.as_ref().map(|k| (k.rank, k.size))) {
        Ok(Plan::Nothing) => return Outcome::Done(sys::SUCCESS),
        Ok(Plan::Run(layout)) => layout,
        Err(reason) => return Outcome::Pass(reason),
    };
    let found = match known {
        Some(known) => Some(known.state),
        None => crate::state::of(a.comm, layout.rank, layout.size),
    };
    let Some(state) = found else {
        return Outcome::Pass(Reason::Unavailable);
    };
    let mut state = state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let imp = match state.comm.choose(a.op, layout.bytes) {
        Ok(imp) => imp,
        Err(e) => return Outcome::Done(boundary::failed(a.comm, &e)),
    };
    boundary::with_stats(|s| s.ran(&imp));
    let code = match imp.algorithm {
        Algorithm::Native => state.comm.run_native(&imp, layout.bytes, || native(a)),
        _ => execute(&mut state.comm, &imp, a, layout),
    };
    Outcome::Done(code)
}

/// Runs `imp` over the call's bytes; the reduction goes through
/// `MPI_Reduce_local`, so every op MPI knows works, with MPI's own code.
fn execute(
    comm: &mut autocoll::Communicator,
    imp: &Implementation,
    a: &Args,
    layout: Layout,
) -> c_int {
    // SAFETY: `plan` checked the call's arguments (the program promises
    // the memory its datatypes describe is there).
    let made = unsafe {
        match a.op.varies() {
            true => crate::varied::buffers(a, layout),
            false => Buffers::new(a, layout),
        }
    };
    let mut buffers = match made {
        Ok(buffers) => buffers,
        Err(code) => return sys::raise(a.comm, code),
    };
    let reducer = Reducer::new(a.rtype, a.mpi_op, layout.elem);
    let combine = |acc: &mut [u8], inc: &[u8]| reducer.combine(acc, inc);
    let parts = buffers.parts();
    let raw = RawCall {
        op: a.op,
        root: layout.root,
        bytes: layout.bytes,
        elem: layout.elem,
        send: parts.send,
        recv: parts.recv,
        combine: a
            .op
            .reduces()
            .then_some(&combine as &autocoll::comm::RawCombine),
        send_sizes: parts.send_sizes,
        recv_sizes: parts.recv_sizes,
    };
    if let Err(e) = comm.run_raw(imp, raw) {
        return boundary::failed(a.comm, &e);
    }
    if let Some(code) = reducer.error() {
        return sys::raise(a.comm, code);
    }
    match buffers.finish() {
        Ok(()) => sys::SUCCESS,
        Err(code) => sys::raise(a.comm, code),
    }
}

/// Checks a call and lays it out in bytes, or says why MPI must have it.
/// `known` is this rank and the size of a communicator already checked
/// (an intracommunicator with a state).
pub fn plan(a: &Args, known: Option<(usize, usize)>) -> Result<Plan, Reason> {
    let (rank, size) = rank_size(a.comm, known)?;
    let root = match a.op.rooted() {
        true if a.root < 0 || a.root as usize >= size => return Err(Reason::Invalid),
        true => a.root as usize,
        false => 0,
    };
    if a.op.varies() {
        return crate::varied::plan(a, rank, size, root);
    }
    if a.op == Collective::ReduceScatter && !a.counts.is_null() {
        return counted(a, rank, size);
    }
    if a.op == Collective::Barrier {
        return Ok(Plan::Run(Layout {
            rank,
            size,
            root,
            bytes: 0,
            elem: 1,
        }));
    }
    let at_root = rank == root;
    let (bytes, elem) = match a.op {
        Collective::Bcast => block(a.recv, a.rcount, a.rtype, false, false)?,
        Collective::Reduce
        | Collective::Allreduce
        | Collective::Scan
        | Collective::Exscan
        | Collective::ReduceScatter => reduction(a, at_root)?,
        Collective::Scatter => blocks(a, at_root, Side::Send)?,
        Collective::Gather => blocks(a, at_root, Side::Recv)?,
        Collective::Allgather | Collective::Alltoall => blocks(a, true, Side::Recv)?,
        Collective::Barrier
        | Collective::Gatherv
        | Collective::Scatterv
        | Collective::Allgatherv
        | Collective::Alltoallv => unreachable!("handled above"),
    };
    if bytes == 0 {
        return Ok(Plan::Nothing);
    }
    if a.op.scans() && bytes < crate::stats::SHORT_SCAN {
        return Err(Reason::ShortScan);
    }
    if bytes
        .checked_mul(size)
        .is_none_or(|all| all > i32::MAX as usize)
    {
        return Err(Reason::TooLarge);
    }
    Ok(Plan::Run(Layout {
        rank,
        size,
        root,
        bytes,
        elem,
    }))
}

/// `MPI_Reduce_scatter`, the counts form: every rank has every count, so
/// every rank decides alike; the checks are the block form's, on this
/// rank's block.
fn counted(a: &Args, rank: usize, size: usize) -> Result<Plan, Reason> {
    // SAFETY: MPI requires one count per rank.
    let counts = unsafe { std::slice::from_raw_parts(a.counts, size) };
    if counts.iter().any(|&c| c < 0) {
        return Err(Reason::Invalid);
    }
    let (_, elem) = reduction(
        &Args {
            rcount: counts[rank],
            ..*a
        },
        false,
    )?;
    let sizes: Vec<usize> = counts.iter().map(|&c| c as usize * elem).collect();
    match sizes.iter().sum::<usize>() {
        0 => Ok(Plan::Nothing),
        all if all > i32::MAX as usize => Err(Reason::TooLarge),
        _ => Ok(Plan::Run(Layout {
            rank,
            size,
            root: 0,
            bytes: Collective::ReduceScatter.agreed_bytes(&sizes),
            elem,
        })),
    }
}

/// This rank and the size of `comm`: `known` for a communicator already
/// checked, else asked of MPI, an intercommunicator refused.
fn rank_size(comm: MPI_Comm, known: Option<(usize, usize)>) -> Result<(usize, usize), Reason> {
    let invalid = |_code: c_int| Reason::Invalid;
    match known {
        Some(known) => Ok(known),
        None if sys::is_inter(comm).map_err(invalid)? => Err(Reason::Intercomm),
        None => sys::rank_size(comm).map_err(invalid),
    }
}

/// The bytes (the type signature's: every rank agrees on them) and the
/// element size of `count` elements of `dtype` at `buf`. A side that is
/// not one block (or lies at `MPI_BOTTOM`) is packed and unpacked around
/// the call ([`Buffers`]): passing it through would leave the ranks that
/// describe their data as one block waiting in autocoll's algorithm.
/// Only a reduction needs its elements as one block of its datatype.
fn block(
    buf: *const c_void,
    count: c_int,
    dtype: MPI_Datatype,
    in_place_ok: bool,
    combines: bool,
) -> Result<(usize, usize), Reason> {
    if sys::is_in_place(buf) && !in_place_ok || count < 0 {
        return Err(Reason::Invalid);
    }
    let info = sys::type_info(dtype).map_err(|_| Reason::Invalid)?;
    if combines && sys::is_bottom(buf) {
        return Err(Reason::Bottom);
    }
    if combines && !info.contiguous {
        return Err(Reason::NonContiguous);
    }
    let bytes = (count as usize)
        .checked_mul(info.size)
        .ok_or(Reason::TooLarge)?;
    // Segments of a reduction never split an element; elsewhere ranks may
    // describe the same bytes with types of different sizes.
    Ok((bytes, if combines { info.size.max(1) } else { 1 }))
}

/// The reductions: one datatype, one op, the receive side's layout (the
/// send side is the same type, `count` elements or, for reduce-scatter,
/// one such block per rank).
fn reduction(a: &Args, at_root: bool) -> Result<(usize, usize), Reason> {
    match sys::op_kind(a.mpi_op).map_err(|_| Reason::Invalid)? {
        OpKind::Commutative => {}
        OpKind::NonCommutative => return Err(Reason::NonCommutative),
        OpKind::Invalid => return Err(Reason::Invalid),
    }
    let receives = !a.op.rooted() || at_root;
    let layout = block(a.send, a.rcount, a.rtype, receives, true)?;
    if receives {
        block(a.recv, a.rcount, a.rtype, false, true)?;
    }
    Ok(layout)
}

/// Which side of a scatter or gather the root holds every block of.
#[derive(PartialEq)]
enum Side {
    Send,
    Recv,
}

/// Scatter, gather, allgather and alltoall: one rank's block, checked
/// against the blocks of the side that holds them all (at the root, or
/// everywhere). Alltoall's send side holds all blocks too, but its block
/// is described as one rank's.
fn blocks(a: &Args, holds_all: bool, all: Side) -> Result<(usize, usize), Reason> {
    let (mine, mine_count, mine_type, theirs, their_count, their_type) = match all {
        Side::Send => (
            a.recv as *const c_void,
            a.rcount,
            a.rtype,
            a.send,
            a.scount,
            a.stype,
        ),
        Side::Recv => (
            a.send,
            a.scount,
            a.stype,
            a.recv as *const c_void,
            a.rcount,
            a.rtype,
        ),
    };
    if !holds_all {
        return block(mine, mine_count, mine_type, false, false);
    }
    let (bytes, elem) = block(theirs, their_count, their_type, false, false)?;
    if sys::is_in_place(mine) {
        return Ok((bytes, elem));
    }
    let (own, _) = block(mine, mine_count, mine_type, false, false)?;
    if own != bytes {
        return Err(Reason::Differing);
    }
    Ok((bytes, elem))
}

/// Combines with `MPI_Reduce_local`, keeping the first error it returns.
struct Reducer {
    dtype: MPI_Datatype,
    op: MPI_Op,
    elem: usize,
    error: AtomicI32,
}

// SAFETY: the handles are only passed to MPI_Reduce_local, on the thread
// that made the call (the algorithms run on the caller's thread); `Sync`
// is asked for by the algorithms' signature, not used.
unsafe impl Sync for Reducer {}

impl Reducer {
    fn new(dtype: MPI_Datatype, op: MPI_Op, elem: usize) -> Reducer {
        Reducer {
            dtype,
            op,
            elem,
            error: AtomicI32::new(sys::SUCCESS),
        }
    }

    /// `acc ← acc ⊕ inc`; the op is commutative (checked in `plan`), so
    /// MPI's `inoutbuf ← inbuf ⊕ inoutbuf` gives the same.
    fn combine(&self, acc: &mut [u8], inc: &[u8]) {
        let count = (acc.len() / self.elem) as c_int;
        // Segments land anywhere in a received buffer; MPI's reduction
        // kernels may assume their type's alignment.
        let mut acc_copy = Aligned::of(acc);
        let inc_copy = Aligned::of(inc);
        let acc_ptr = acc_copy.as_mut().map_or(acc.as_mut_ptr(), |c| c.ptr_mut());
        let inc_ptr = inc_copy.as_ref().map_or(inc.as_ptr(), |c| c.ptr());
        // SAFETY: both buffers hold `count` elements of the call's
        // datatype (its size is `elem`), aligned to 16 bytes or copied.
        let code = unsafe {
            ffi::PMPI_Reduce_local(inc_ptr.cast(), acc_ptr.cast(), count, self.dtype, self.op)
        };
        if code != sys::SUCCESS {
            let _ = self.error.compare_exchange(
                sys::SUCCESS,
                code,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        if let Some(copy) = acc_copy {
            acc.copy_from_slice(copy.bytes(acc.len()));
        }
    }

    fn error(&self) -> Option<c_int> {
        let code = self.error.load(Ordering::Relaxed);
        (code != sys::SUCCESS).then_some(code)
    }
}

/// A 16-byte-aligned copy of a misaligned buffer.
struct Aligned(Vec<u128>);

impl Aligned {
    fn of(bytes: &[u8]) -> Option<Aligned> {
        if bytes.as_ptr().align_offset(16) == 0 {
            return None;
        }
        let mut words = vec![0u128; bytes.len().div_ceil(16)];
        bytemuck::cast_slice_mut::<u128, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        Some(Aligned(words))
    }

    fn ptr(&self) -> *const u8 {
        self.0.as_ptr().cast()
    }

    fn ptr_mut(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }

    fn bytes(&self, len: usize) -> &[u8] {
        &bytemuck::cast_slice::<u128, u8>(&self.0)[..len]
    }
}
