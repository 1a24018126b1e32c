//! The Fortran entry points (Open MPI's `mpif.h` and `use mpi` bindings
//! call `PMPI_*` from Fortran's own symbols, so wrapping C's misses them).
//! Every name comes in the four manglings compilers use; handles are
//! converted with `PMPI_*_f2c`, and Fortran's `MPI_IN_PLACE` and
//! `MPI_BOTTOM` made C's. (The `mpi_f08` module's entry points are not
//! wrapped: docs/mpi-library.md.)

use std::ffi::{c_int, c_void};

use autocoll::Collective;
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

use crate::coll::{call, Args};
use crate::sys;

/// A Fortran `INTEGER` (Open MPI's `MPI_Fint`).
type Fint = c_int;

fn comm(f: *const Fint) -> MPI_Comm {
    // SAFETY: Fortran passes every argument by reference.
    unsafe { ffi::PMPI_Comm_f2c(*f) }
}

fn dtype(f: *const Fint) -> MPI_Datatype {
    // SAFETY: as above.
    unsafe { ffi::PMPI_Type_f2c(*f) }
}

fn op(f: *const Fint) -> MPI_Op {
    // SAFETY: as above.
    unsafe { ffi::PMPI_Op_f2c(*f) }
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

#[allow(clippy::too_many_arguments)]
fn args(
    op_: Collective,
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    mpi_op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> Args {
    Args {
        op: op_,
        send,
        scount,
        stype,
        recv,
        rcount,
        rtype,
        mpi_op,
        root,
        comm,
    }
}

fn no_op() -> MPI_Op {
    MPI_Op(std::ptr::null_mut())
}

/// Defines one Fortran entry point under the four manglings.
macro_rules! fortran {
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
}

fn bcast(
    b: *mut c_void,
    count: *const Fint,
    t: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let b = buf(b);
    let (t, c) = (dtype(t), comm(c));
    let code = call(args(
        Collective::Bcast,
        b,
        int(count),
        t,
        b,
        int(count),
        t,
        no_op(),
        int(root),
        c,
    ));
    set(ierr, code);
}
fortran!(bcast(b: *mut c_void, count: *const Fint, t: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_bcast, mpi_bcast_, mpi_bcast__, MPI_BCAST);

#[allow(clippy::too_many_arguments)]
fn reduce(
    s: *const c_void,
    r: *mut c_void,
    count: *const Fint,
    t: *const Fint,
    o: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (s, r, t) = (buf(s), buf(r), dtype(t));
    let code = call(args(
        Collective::Reduce,
        s,
        int(count),
        t,
        r,
        int(count),
        t,
        op(o),
        int(root),
        comm(c),
    ));
    set(ierr, code);
}
fortran!(reduce(s: *const c_void, r: *mut c_void, count: *const Fint, t: *const Fint, o: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_reduce, mpi_reduce_, mpi_reduce__, MPI_REDUCE);

fn allreduce(
    s: *const c_void,
    r: *mut c_void,
    count: *const Fint,
    t: *const Fint,
    o: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let (s, r, t) = (buf(s), buf(r), dtype(t));
    let code = call(args(
        Collective::Allreduce,
        s,
        int(count),
        t,
        r,
        int(count),
        t,
        op(o),
        0,
        comm(c),
    ));
    set(ierr, code);
}
fortran!(allreduce(s: *const c_void, r: *mut c_void, count: *const Fint, t: *const Fint, o: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_allreduce, mpi_allreduce_, mpi_allreduce__, MPI_ALLREDUCE);

#[allow(clippy::too_many_arguments)]
fn rooted(
    which: Collective,
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
    let a = args(
        which,
        buf(s),
        int(sc),
        dtype(st),
        buf(r),
        int(rc),
        dtype(rt),
        no_op(),
        int(root),
        comm(c),
    );
    set(ierr, call(a));
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
    rooted(Collective::Scatter, s, sc, st, r, rc, rt, root, c, ierr);
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
    rooted(Collective::Gather, s, sc, st, r, rc, rt, root, c, ierr);
}
fortran!(gather(s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, root: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_gather, mpi_gather_, mpi_gather__, MPI_GATHER);

#[allow(clippy::too_many_arguments)]
fn allgather(
    s: *const c_void,
    sc: *const Fint,
    st: *const Fint,
    r: *mut c_void,
    rc: *const Fint,
    rt: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    let zero: Fint = 0;
    rooted(Collective::Allgather, s, sc, st, r, rc, rt, &zero, c, ierr);
}
fortran!(allgather(s: *const c_void, sc: *const Fint, st: *const Fint, r: *mut c_void, rc: *const Fint, rt: *const Fint, c: *const Fint, ierr: *mut Fint)
    => mpi_allgather, mpi_allgather_, mpi_allgather__, MPI_ALLGATHER);

fn barrier(c: *const Fint, ierr: *mut Fint) {
    let null = std::ptr::null_mut();
    let a = args(
        Collective::Barrier,
        null,
        0,
        sys::byte_type(),
        null,
        0,
        sys::byte_type(),
        no_op(),
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
