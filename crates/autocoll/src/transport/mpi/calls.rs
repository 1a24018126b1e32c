//! MPI calls the transport makes outside its messages: names, the
//! environment, request handles and error codes.

use std::ffi::c_int;

use mpi::ffi;

use crate::error::{Error, Result};

/// Open MPI's and MPICH's `MPI_MAX_PROCESSOR_NAME`.
const NAME_MAX: usize = 256;

/// True once `MPI_Finalize` has run (then no handle may be freed).
pub(super) fn finalized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time.
    unsafe { ffi::PMPI_Finalized(&mut flag) };
    flag != 0
}

/// This process's `MPI_Get_processor_name`.
pub(super) fn processor_name() -> Result<String> {
    let mut buf = vec![0u8; NAME_MAX + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` has room for MPI_MAX_PROCESSOR_NAME characters and
    // the terminating zero.
    let code = unsafe { ffi::PMPI_Get_processor_name(buf.as_mut_ptr().cast(), &mut len) };
    mpi_ok("PMPI_Get_processor_name", code)?;
    buf.truncate(len.max(0) as usize);
    String::from_utf8(buf)
        .map_err(|e| Error::Config(format!("MPI processor name is not UTF-8: {e}")))
}

/// A variable of the environment, empty when not set. Never an error:
/// every rank must reach the collective that follows.
pub(super) fn env_text(name: &str) -> String {
    std::env::var_os(name)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every rank's `text` (cut at [`NAME_MAX`] bytes), by rank.
pub(super) fn all_texts(comm: ffi::MPI_Comm, size: usize, text: &str) -> Result<Vec<String>> {
    let mut mine = [0u8; NAME_MAX];
    let len = text.len().min(NAME_MAX);
    mine[..len].copy_from_slice(&text.as_bytes()[..len]);
    let mut all = vec![0u8; NAME_MAX * size];
    // SAFETY: `mine` holds NAME_MAX bytes and `all` NAME_MAX per rank of
    // the live communicator `comm`.
    let code = unsafe {
        ffi::PMPI_Allgather(
            mine.as_ptr().cast(),
            NAME_MAX as c_int,
            ffi::RSMPI_UINT8_T,
            all.as_mut_ptr().cast(),
            NAME_MAX as c_int,
            ffi::RSMPI_UINT8_T,
            comm,
        )
    };
    mpi_ok("PMPI_Allgather", code)?;
    Ok(all
        .chunks(NAME_MAX)
        .map(|c| {
            let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect())
}

/// MPI's null request.
pub(super) fn request_null() -> ffi::MPI_Request {
    // SAFETY: a constant the MPI shim library defines; reading it has no
    // side effect.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// `code` as a result of `call`.
pub(super) fn mpi_ok(call: &'static str, code: c_int) -> Result<()> {
    if code == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(Error::Mpi { call, code })
    }
}
