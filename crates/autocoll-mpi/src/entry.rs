//! The C entry points: each builds the call's [`Args`] and hands it on.

use std::ffi::{c_int, c_void};

use autocoll::Collective;
use mpi::ffi::{MPI_Comm, MPI_Datatype, MPI_Op};

use crate::args::{Args, Vectors};
use crate::coll::call;

/// `MPI_Bcast`.
#[no_mangle]
pub extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call(Args::one_type(
        Collective::Bcast,
        buf,
        buf,
        count,
        dtype,
        Args::no_op(),
        root,
        comm,
    ))
}

/// `MPI_Reduce`.
#[no_mangle]
pub extern "C" fn MPI_Reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dtype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call(Args::one_type(
        Collective::Reduce,
        send,
        recv,
        count,
        dtype,
        op,
        root,
        comm,
    ))
}

/// The C entry points of the reductions without a root (allreduce, scan,
/// exscan, reduce-scatter's block form): one signature, one body.
macro_rules! combining {
    ($($name:ident => $op:expr),+) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        #[no_mangle]
        pub extern "C" fn $name(
            send: *const c_void,
            recv: *mut c_void,
            count: c_int,
            dtype: MPI_Datatype,
            op: MPI_Op,
            comm: MPI_Comm,
        ) -> c_int {
            call(Args::one_type($op, send, recv, count, dtype, op, 0, comm))
        }
    )+};
}

combining!(
    MPI_Allreduce => Collective::Allreduce,
    MPI_Scan => Collective::Scan,
    MPI_Exscan => Collective::Exscan,
    MPI_Reduce_scatter_block => Collective::ReduceScatter
);

/// `MPI_Reduce_scatter`.
#[no_mangle]
pub extern "C" fn MPI_Reduce_scatter(
    send: *const c_void,
    recv: *mut c_void,
    counts: *const c_int,
    dtype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    call(Args::counted(send, recv, counts, dtype, op, comm))
}

/// `MPI_Scatter`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Scatter(
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call(Args::two_types(
        Collective::Scatter,
        send,
        scount,
        stype,
        recv,
        rcount,
        rtype,
        root,
        comm,
    ))
}

/// `MPI_Gather`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Gather(
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    call(Args::two_types(
        Collective::Gather,
        send,
        scount,
        stype,
        recv,
        rcount,
        rtype,
        root,
        comm,
    ))
}

/// The C entry points of the collectives without a root whose every rank
/// holds every block: one signature, one body.
macro_rules! rootless {
    ($($name:ident => $op:expr),+) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        #[no_mangle]
        pub extern "C" fn $name(
            send: *const c_void,
            scount: c_int,
            stype: MPI_Datatype,
            recv: *mut c_void,
            rcount: c_int,
            rtype: MPI_Datatype,
            comm: MPI_Comm,
        ) -> c_int {
            call(Args::two_types(
                $op, send, scount, stype, recv, rcount, rtype, 0, comm,
            ))
        }
    )+};
}

rootless!(MPI_Allgather => Collective::Allgather, MPI_Alltoall => Collective::Alltoall);

/// `MPI_Gatherv`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Gatherv(
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let op = Collective::Gatherv;
    let a = Args::two_types(op, send, scount, stype, recv, 0, rtype, root, comm);
    call(Args::varied(a, Vectors::recv(rcounts, rdispls)))
}

/// `MPI_Scatterv`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Scatterv(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcount: c_int,
    rtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let op = Collective::Scatterv;
    let a = Args::two_types(op, send, 0, stype, recv, rcount, rtype, root, comm);
    call(Args::varied(a, Vectors::send(scounts, sdispls)))
}

/// `MPI_Allgatherv`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Allgatherv(
    send: *const c_void,
    scount: c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let op = Collective::Allgatherv;
    let a = Args::two_types(op, send, scount, stype, recv, 0, rtype, 0, comm);
    call(Args::varied(a, Vectors::recv(rcounts, rdispls)))
}

/// `MPI_Alltoallv`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Alltoallv(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stype: MPI_Datatype,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    let op = Collective::Alltoallv;
    let a = Args::two_types(op, send, 0, stype, recv, 0, rtype, 0, comm);
    let v = Vectors {
        scounts,
        sdispls,
        ..Vectors::recv(rcounts, rdispls)
    };
    call(Args::varied(a, v))
}

/// `MPI_Barrier`.
#[no_mangle]
pub extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    let (null, dtype) = (std::ptr::null_mut(), crate::sys::byte_type());
    call(Args::one_type(
        Collective::Barrier,
        null,
        null,
        0,
        dtype,
        Args::no_op(),
        0,
        comm,
    ))
}

/// `MPI_Finalize`: autocoll's states first, while MPI still runs.
#[no_mangle]
pub extern "C" fn MPI_Finalize() -> c_int {
    crate::lifecycle::finalize()
}
