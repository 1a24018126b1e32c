//! The point-to-point send calls, wrapped to count them for
//! `AUTOCOLL_PATTERN` ([`crate::pattern`]); each hands its arguments on to
//! `PMPI_*` unchanged. Without `AUTOCOLL_PATTERN` a send costs one check.

use std::ffi::{c_int, c_void};

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Request, MPI_Status};

use crate::pattern;

/// Blocking sends: counted, then sent.
macro_rules! blocking {
    ($($name:ident => $pmpi:ident),+) => {$(
        #[doc = concat!("`", stringify!($name), "`, counted.")]
        #[no_mangle]
        pub extern "C" fn $name(
            buf: *const c_void, count: c_int, dtype: MPI_Datatype,
            dest: c_int, tag: c_int, comm: MPI_Comm,
        ) -> c_int {
            pattern::send(count, dtype, dest, comm);
            // SAFETY: the program's arguments, handed on unchanged.
            unsafe { ffi::$pmpi(buf, count, dtype, dest, tag, comm) }
        }
    )+};
}

blocking!(MPI_Send => PMPI_Send, MPI_Ssend => PMPI_Ssend, MPI_Bsend => PMPI_Bsend, MPI_Rsend => PMPI_Rsend);

/// Nonblocking sends: counted when started.
macro_rules! nonblocking {
    ($($name:ident => $pmpi:ident),+) => {$(
        #[doc = concat!("`", stringify!($name), "`, counted.")]
        #[no_mangle]
        pub extern "C" fn $name(
            buf: *const c_void, count: c_int, dtype: MPI_Datatype,
            dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request,
        ) -> c_int {
            pattern::send(count, dtype, dest, comm);
            // SAFETY: the program's arguments, handed on unchanged.
            unsafe { ffi::$pmpi(buf, count, dtype, dest, tag, comm, request) }
        }
    )+};
}

nonblocking!(MPI_Isend => PMPI_Isend, MPI_Issend => PMPI_Issend, MPI_Ibsend => PMPI_Ibsend, MPI_Irsend => PMPI_Irsend);

/// Persistent sends: remembered by request, counted at each start.
macro_rules! persistent {
    ($($name:ident => $pmpi:ident),+) => {$(
        #[doc = concat!("`", stringify!($name), "`, counted at each start.")]
        #[no_mangle]
        pub extern "C" fn $name(
            buf: *const c_void, count: c_int, dtype: MPI_Datatype,
            dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request,
        ) -> c_int {
            // SAFETY: the program's arguments, handed on unchanged.
            let code = unsafe { ffi::$pmpi(buf, count, dtype, dest, tag, comm, request) };
            if code == ffi::MPI_SUCCESS as c_int && !request.is_null() {
                // SAFETY: MPI wrote the new request.
                pattern::persistent(count, dtype, dest, comm, unsafe { *request });
            }
            code
        }
    )+};
}

persistent!(
    MPI_Send_init => PMPI_Send_init,
    MPI_Ssend_init => PMPI_Ssend_init,
    MPI_Bsend_init => PMPI_Bsend_init,
    MPI_Rsend_init => PMPI_Rsend_init
);

/// `MPI_Start`: a persistent send counts each time it starts.
#[no_mangle]
pub extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    if !request.is_null() {
        // SAFETY: the program's request.
        pattern::start(std::slice::from_ref(unsafe { &*request }));
    }
    // SAFETY: the program's argument, handed on unchanged.
    unsafe { ffi::PMPI_Start(request) }
}

/// `MPI_Startall`.
#[no_mangle]
pub extern "C" fn MPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    if count > 0 && !requests.is_null() {
        // SAFETY: the program passes `count` requests.
        pattern::start(unsafe { std::slice::from_raw_parts(requests, count as usize) });
    }
    // SAFETY: the program's arguments, handed on unchanged.
    unsafe { ffi::PMPI_Startall(count, requests) }
}

/// `MPI_Request_free`: a freed persistent request is forgotten (MPI may
/// reuse its handle).
#[no_mangle]
pub extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    if !request.is_null() {
        // SAFETY: the program's request.
        pattern::free(unsafe { *request });
    }
    // SAFETY: the program's argument, handed on unchanged.
    unsafe { ffi::PMPI_Request_free(request) }
}

/// `MPI_Sendrecv`: its send is counted.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    pattern::send(sendcount, sendtype, dest, comm);
    // SAFETY: the program's arguments, handed on unchanged.
    unsafe {
        ffi::PMPI_Sendrecv(
            sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
            recvtag, comm, status,
        )
    }
}

/// `MPI_Sendrecv_replace`: its send is counted.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    dtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    pattern::send(count, dtype, dest, comm);
    // SAFETY: the program's arguments, handed on unchanged.
    unsafe {
        ffi::PMPI_Sendrecv_replace(
            buf, count, dtype, dest, sendtag, source, recvtag, comm, status,
        )
    }
}
