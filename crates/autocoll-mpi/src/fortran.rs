//! The Fortran entry points (Open MPI's `mpif.h` and `use mpi` bindings
//! call `PMPI_*` from Fortran's own symbols, so wrapping C's misses them).
//! Every name comes in the four manglings compilers use; handles are
//! converted with the MPI library's own `f2c`, and Fortran's `MPI_IN_PLACE` and
//! `MPI_BOTTOM` made C's. (The `mpi_f08` module's entry points are not
//! wrapped: docs/mpi-library.md.)

use std::ffi::{c_int, c_void};

use autocoll::Collective;
use mpi::ffi::{MPI_Comm, MPI_Datatype, MPI_Op};

use crate::args::Args;
use crate::coll::call;
use crate::entry;
use crate::sys;

/// A Fortran `INTEGER` (`MPI_Fint` in Open MPI and MPICH).
type Fint = c_int;

fn comm(f: *const Fint) -> MPI_Comm {
    sys::comm_f2c(int(f))
}

fn dtype(f: *const Fint) -> MPI_Datatype {
    sys::type_f2c(int(f))
}

fn op(f: *const Fint) -> MPI_Op {
    sys::op_f2c(int(f))
}

fn int(f: *const Fint) -> c_int {
    // SAFETY: as above.
    unsafe { *f }
}

fn buf(p: *const c_void) -> *mut c_void {
    sys::from_fortran(p) as *mut c_void
}

fn set(ierr: *mut Fint, code: c_int) {
    if !ierr.is_null() {
        // SAFETY: the program's IERROR argument.
        unsafe { *ierr = code };
    }
}

/// Defines one Fortran entry point under the four manglings.
macro_rules! fortran {
    // `$body` called with `$which` first: one body for the collectives of
    // one signature.
    ($body:ident[$which:expr] $args:tt => $($name:ident),+) => {
        $( fortran!(@which $body [$which] $args $name); )+
    };
    ($body:ident $args:tt => $($name:ident),+) => {
        $( fortran!(@one $body $args $name); )+
    };
    (@one $body:ident ($($arg:ident: $ty:ty),*) $name:ident) => {
        #[no_mangle]
        #[doc(hidden)]
        pub extern "C" fn $name($($arg: $ty),*) {
            $body($($arg),*)
        }
    };
    (@which $body:ident [$which:expr] ($($arg:ident: $ty:ty),*) $name:ident) => {
        #[no_mangle]
        #[doc(hidden)]
        pub extern "C" fn $name($($arg: $ty),*) {
            $body($which, $($arg),*)
        }
    };
}

fn bcast(
    b: *mut c_void,
    n: *const Fint,
    t: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (b, t) = (buf(b), dtype(t));
    let a = Args::one_type(
        Collective::Bcast,
        b,
        b,
        int(n),
        t,
        Args::no_op(),
        int(root),
        comm(c),
    );
    set(ierr, call(a));
}
fortran!(bcast(b: *mut c_void, n: *const Fint, t: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_bcast, mpi_bcast_, mpi_bcast__, MPI_BCAST);

#[allow(clippy::too_many_arguments)]
fn reduce(
    s: *const c_void,
    r: *mut c_void,
    n: *const Fint,
    t: *const Fint,
    o: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let a = Args::one_type(
        Collective::Reduce,
        buf(s),
        buf(r),
        int(n),
        dtype(t),
        op(o),
        int(root),
        comm(c),
    );
    set(ierr, call(a));
}
fortran!(reduce(s: *const c_void, r: *mut c_void, n: *const Fint, t: *const Fint, o: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_reduce, mpi_reduce_, mpi_reduce__, MPI_REDUCE);

/// Allreduce, scan, exscan and reduce-scatter's block form: a reduction
/// without a root.
#[allow(clippy::too_many_arguments)]
fn combining(
    which: Collective,
    s: *const c_void,
    r: *mut c_void,
    n: *const Fint,
    t: *const Fint,
    o: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let a = Args::one_type(which, buf(s), buf(r), int(n), dtype(t), op(o), 0, comm(c));
    set(ierr, call(a));
}
fortran!(combining[Collective::Allreduce] (s: *const c_void, r: *mut c_void, n: *const Fint, t: *const Fint, o: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_allreduce, mpi_allreduce_, mpi_allreduce__, MPI_ALLREDUCE);
fortran!(combining[Collective::Scan] (s: *const c_void, r: *mut c_void, n: *const Fint, t: *const Fint, o: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_scan, mpi_scan_, mpi_scan__, MPI_SCAN);
fortran!(combining[Collective::Exscan] (s: *const c_void, r: *mut c_void, n: *const Fint, t: *const Fint, o: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_exscan, mpi_exscan_, mpi_exscan__, MPI_EXSCAN);
fortran!(combining[Collective::ReduceScatter] (s: *const c_void, r: *mut c_void, n: *const Fint, t: *const Fint, o: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_reduce_scatter_block, mpi_reduce_scatter_block_, mpi_reduce_scatter_block__, MPI_REDUCE_SCATTER_BLOCK);

/// `MPI_REDUCE_SCATTER`: its counts array is Fortran `INTEGER`s, which are
/// C `int`s here.
#[allow(clippy::too_many_arguments)]
fn reduce_scatter(
    s: *const c_void,
    r: *mut c_void,
    counts: *const Fint,
    t: *const Fint,
    o: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let a = Args::counted(buf(s), buf(r), counts, dtype(t), op(o), comm(c));
    set(ierr, call(a));
}
fortran!(reduce_scatter(s: *const c_void, r: *mut c_void, counts: *const Fint, t: *const Fint, o: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_reduce_scatter, mpi_reduce_scatter_, mpi_reduce_scatter__, MPI_REDUCE_SCATTER);

/// Scatter, gather, allgather and alltoall (root 0 for the last two).
#[allow(clippy::too_many_arguments)]
fn blocks(
    which: Collective,
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rc: *const Fint,
    rt: *const Fint,
    root: c_int,
    c: *const Fint,
) -> c_int {
    call(Args::two_types(
        which,
        buf(s),
        int(sc),
        dtype(st),
        buf(r),
        int(rc),
        dtype(rt),
        root,
        comm(c),
    ))
}

#[allow(clippy::too_many_arguments)]
fn scatter(
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rc: *const Fint,
    rt: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    set(
        ierr,
        blocks(Collective::Scatter, s, sc, st, r, rc, rt, int(root), c),
    );
}
fortran!(scatter(s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_scatter, mpi_scatter_, mpi_scatter__, MPI_SCATTER);

#[allow(clippy::too_many_arguments)]
fn gather(
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rc: *const Fint,
    rt: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    set(
        ierr,
        blocks(Collective::Gather, s, sc, st, r, rc, rt, int(root), c),
    );
}
fortran!(gather(s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_gather, mpi_gather_, mpi_gather__, MPI_GATHER);

/// Allgather and alltoall: no root, every rank holds every block.
#[allow(clippy::too_many_arguments)]
fn rootless(
    which: Collective,
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rc: *const Fint,
    rt: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    set(ierr, blocks(which, s, sc, st, r, rc, rt, 0, c));
}
fortran!(rootless[Collective::Allgather] (s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_allgather, mpi_allgather_, mpi_allgather__, MPI_ALLGATHER);
fortran!(rootless[Collective::Alltoall] (s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_alltoall, mpi_alltoall_, mpi_alltoall__, MPI_ALLTOALL);

// The v-forms: counts and displacements are Fortran `INTEGER` arrays,
// C `int`s here, handed to the C entry points as they are.

#[allow(clippy::too_many_arguments)]
fn gatherv(
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rcs: *const Fint,
    rds: *const Fint,
    rt: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (s, st, r, rt) = (buf(s), dtype(st), buf(r), dtype(rt));
    let code = entry::MPI_Gatherv(s, int(sc), st, r, rcs, rds, rt, int(root), comm(c));
    set(ierr, code);
}
fortran!(gatherv(s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rcs: *const Fint, rds: *const Fint, rt: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_gatherv, mpi_gatherv_, mpi_gatherv__, MPI_GATHERV);

#[allow(clippy::too_many_arguments)]
fn scatterv(
    s: *const c_void,
    scs: *const Fint,
    sds: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rc: *const Fint,
    rt: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (s, st, r, rt) = (buf(s), dtype(st), buf(r), dtype(rt));
    let code = entry::MPI_Scatterv(s, scs, sds, st, r, int(rc), rt, int(root), comm(c));
    set(ierr, code);
}
fortran!(scatterv(s: *const c_void, scs: *const Fint, sds: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_scatterv, mpi_scatterv_, mpi_scatterv__, MPI_SCATTERV);

#[allow(clippy::too_many_arguments)]
fn allgatherv(
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rcs: *const Fint,
    rds: *const Fint,
    rt: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (s, st, r, rt) = (buf(s), dtype(st), buf(r), dtype(rt));
    set(
        ierr,
        entry::MPI_Allgatherv(s, int(sc), st, r, rcs, rds, rt, comm(c)),
    );
}
fortran!(allgatherv(s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rcs: *const Fint, rds: *const Fint, rt: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_allgatherv, mpi_allgatherv_, mpi_allgatherv__, MPI_ALLGATHERV);

#[allow(clippy::too_many_arguments)]
fn alltoallv(
    s: *const c_void,
    scs: *const Fint,
    sds: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rcs: *const Fint,
    rds: *const Fint,
    rt: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (s, st, r, rt) = (buf(s), dtype(st), buf(r), dtype(rt));
    set(
        ierr,
        entry::MPI_Alltoallv(s, scs, sds, st, r, rcs, rds, rt, comm(c)),
    );
}
fortran!(alltoallv(s: *const c_void, scs: *const Fint, sds: *const Fint, st: *const Fint, r: *mut c_void, rcs: *const Fint, rds: *const Fint, rt: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_alltoallv, mpi_alltoallv_, mpi_alltoallv__, MPI_ALLTOALLV);

fn barrier(c: *const Fint, ierr: *mut Fint) {
    let (null, byte) = (std::ptr::null_mut(), sys::byte_type());
    let a = Args::one_type(
        Collective::Barrier,
        null,
        null,
        0,
        byte,
        Args::no_op(),
        0,
        comm(c),
    );
    set(ierr, call(a));
}
fortran!(barrier(c: *const Fint, ierr: *mut Fint) => mpi_barrier, mpi_barrier_, mpi_barrier__, MPI_BARRIER);

fn finalize(ierr: *mut Fint) {
    set(ierr, crate::lifecycle::finalize());
}
fortran!(finalize(ierr: *mut Fint) => mpi_finalize, mpi_finalize_, mpi_finalize__, MPI_FINALIZE);
