//! The few MPI facts the library needs, each through `PMPI_*`: what a
//! datatype's bytes look like, what an op promises, what the shim's
//! constants are, and how an error reaches the program's handler.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op};

extern "C" {
    static autocoll_in_place: *const c_void;
    static autocoll_bottom: *const c_void;
    static autocoll_err_other: c_int;
    static autocoll_err_arg: c_int;
    static autocoll_op_replace: MPI_Op;
    static autocoll_op_no_op: MPI_Op;
    static autocoll_op_null: MPI_Op;
    fn autocoll_create_keyval(delete: Option<DeleteFn>, keyval: *mut c_int) -> c_int;
    fn autocoll_comm_f2c(f: c_int) -> MPI_Comm;
    fn autocoll_type_f2c(f: c_int) -> MPI_Datatype;
    fn autocoll_op_f2c(f: c_int) -> MPI_Op;
    /// The addresses Fortran passes for `MPI_IN_PLACE` and `MPI_BOTTOM`
    /// (null without Fortran).
    fn autocoll_fortran_in_place() -> *const c_void;
    fn autocoll_fortran_bottom() -> *const c_void;
}

/// A communicator attribute's delete callback.
pub type DeleteFn = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void) -> c_int;

/// `MPI_SUCCESS`.
pub const SUCCESS: c_int = ffi::MPI_SUCCESS as c_int;

/// `MPI_ERR_OTHER`: what a failure of autocoll's own returns.
pub fn err_other() -> c_int {
    // SAFETY: a constant of the shim.
    unsafe { autocoll_err_other }
}

/// `MPI_ERR_ARG`.
pub fn err_arg() -> c_int {
    // SAFETY: a constant of the shim.
    unsafe { autocoll_err_arg }
}

/// True for C's `MPI_IN_PLACE`.
pub fn is_in_place(p: *const c_void) -> bool {
    // SAFETY: a constant of the shim.
    p == unsafe { autocoll_in_place }
}

/// True for C's `MPI_BOTTOM`.
pub fn is_bottom(p: *const c_void) -> bool {
    // SAFETY: a constant of the shim.
    p == unsafe { autocoll_bottom }
}

/// C's `MPI_IN_PLACE`.
pub fn in_place() -> *const c_void {
    // SAFETY: a constant of the shim.
    unsafe { autocoll_in_place }
}

/// C's `MPI_BOTTOM`.
pub fn bottom() -> *const c_void {
    // SAFETY: a constant of the shim.
    unsafe { autocoll_bottom }
}

/// Fortran's `MPI_IN_PLACE` and `MPI_BOTTOM` as C's: Fortran passes the
/// address of a common block, which C's collectives would take for data.
pub fn from_fortran(p: *const c_void) -> *const c_void {
    // SAFETY: functions of the shim, without arguments.
    let (place, bot) = unsafe { (autocoll_fortran_in_place(), autocoll_fortran_bottom()) };
    match p {
        p if !p.is_null() && p == place => in_place(),
        p if !p.is_null() && p == bot => bottom(),
        p => p,
    }
}

/// The MPI library's `MPI_OP_NULL`.
pub fn op_null() -> MPI_Op {
    // SAFETY: a constant of the shim.
    unsafe { autocoll_op_null }
}

/// A Fortran communicator handle as C's.
pub fn comm_f2c(f: c_int) -> MPI_Comm {
    // SAFETY: the shim hands `f` to the MPI library's own conversion.
    unsafe { autocoll_comm_f2c(f) }
}

/// A Fortran datatype handle as C's.
pub fn type_f2c(f: c_int) -> MPI_Datatype {
    // SAFETY: as above.
    unsafe { autocoll_type_f2c(f) }
}

/// A Fortran op handle as C's.
pub fn op_f2c(f: c_int) -> MPI_Op {
    // SAFETY: as above.
    unsafe { autocoll_op_f2c(f) }
}

/// Creates the attribute key under which each communicator's state is
/// found, with `delete` called when the communicator is freed.
pub fn create_keyval(delete: DeleteFn) -> Result<c_int, c_int> {
    let mut keyval: c_int = 0;
    // SAFETY: the shim passes MPI_COMM_NULL_COPY_FN and `delete`, a
    // function of this library, to PMPI_Comm_create_keyval.
    let code = unsafe { autocoll_create_keyval(Some(delete), &mut keyval) };
    ok(code).map(|()| keyval)
}

/// `Ok` for `MPI_SUCCESS`, else the code.
pub fn ok(code: c_int) -> Result<(), c_int> {
    if code == SUCCESS {
        Ok(())
    } else {
        Err(code)
    }
}

/// What the library needs of a datatype.
#[derive(Clone, Copy, Debug)]
pub struct TypeInfo {
    /// Bytes of data in one element (`MPI_Type_size`).
    pub size: usize,
    /// True when one element is `size` bytes from its address on, with
    /// nothing between elements: count elements are then `count × size`
    /// bytes of one block.
    pub contiguous: bool,
    /// Bytes from one element to the next (`MPI_Type_get_extent`): a
    /// displacement of d elements lies d × extent bytes on.
    pub extent: isize,
}

/// `MPI_Type_size` and whether the type is one block: a zero lower bound
/// and true lower bound, and an extent and true extent equal to its size.
/// (A resized or strided type fails one of them; a contiguous type of a
/// predefined one passes all.)
pub fn type_info(dtype: MPI_Datatype) -> Result<TypeInfo, c_int> {
    let mut size: c_int = 0;
    let (mut lb, mut extent, mut true_lb, mut true_extent) = (0, 0, 0, 0);
    // SAFETY: `dtype` is the caller's handle; MPI checks it and returns
    // an error code for an invalid one. Outputs are plain integers.
    unsafe {
        ok(ffi::PMPI_Type_size(dtype, &mut size))?;
        ok(ffi::PMPI_Type_get_extent(dtype, &mut lb, &mut extent))?;
        ok(ffi::PMPI_Type_get_true_extent(
            dtype,
            &mut true_lb,
            &mut true_extent,
        ))?;
    }
    let size = usize::try_from(size).map_err(|_| err_arg())?;
    let contiguous = lb == 0
        && true_lb == 0
        && extent as i128 == size as i128
        && true_extent as i128 == size as i128;
    // MPI_Aint is isize in one MPI's bindings and i64 in another's.
    #[allow(clippy::unnecessary_cast)]
    let extent = extent as isize;
    Ok(TypeInfo {
        size,
        contiguous,
        extent,
    })
}

/// How an op may be applied by autocoll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Any order of combining gives MPI's result (all predefined ops, and
    /// user ops created commutative).
    Commutative,
    /// A user op that MPI must apply in rank order.
    NonCommutative,
    /// `MPI_REPLACE` and `MPI_NO_OP`: one-sided only, invalid here.
    Invalid,
}

/// What `op` promises.
pub fn op_kind(op: MPI_Op) -> Result<OpKind, c_int> {
    // SAFETY: constants of the shim.
    let (replace, no_op) = unsafe { (autocoll_op_replace, autocoll_op_no_op) };
    if op == replace || op == no_op {
        return Ok(OpKind::Invalid);
    }
    let mut commute: c_int = 0;
    // SAFETY: `op` is the caller's handle; MPI checks it.
    ok(unsafe { ffi::PMPI_Op_commutative(op, &mut commute) })?;
    Ok(match commute {
        0 => OpKind::NonCommutative,
        _ => OpKind::Commutative,
    })
}

/// True for an intercommunicator.
pub fn is_inter(comm: MPI_Comm) -> Result<bool, c_int> {
    let mut flag: c_int = 0;
    // SAFETY: `comm` is the caller's handle; MPI checks it.
    ok(unsafe { ffi::PMPI_Comm_test_inter(comm, &mut flag) })?;
    Ok(flag != 0)
}

/// This rank and the size of `comm`.
pub fn rank_size(comm: MPI_Comm) -> Result<(usize, usize), c_int> {
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: `comm` is the caller's handle; MPI checks it.
    unsafe {
        ok(ffi::PMPI_Comm_rank(comm, &mut rank))?;
        ok(ffi::PMPI_Comm_size(comm, &mut size))?;
    }
    Ok((rank as usize, size as usize))
}

/// Hands `code` to the communicator's error handler, as MPI does for its
/// own errors (the default handler aborts the job), and returns it.
pub fn raise(comm: MPI_Comm, code: c_int) -> c_int {
    // SAFETY: `comm` was valid for the call that failed.
    unsafe { ffi::PMPI_Comm_call_errhandler(comm, code) };
    code
}

/// True once `MPI_Finalize` has run, or before `MPI_Init`.
pub fn unavailable() -> bool {
    // MPI stays initialised once it is: one call less on every collective.
    static INITIALIZED: AtomicBool = AtomicBool::new(false);
    if !INITIALIZED.load(Ordering::Relaxed) {
        let mut init: c_int = 0;
        // SAFETY: may be called at any time.
        unsafe { ffi::PMPI_Initialized(&mut init) };
        if init == 0 {
            return true;
        }
        INITIALIZED.store(true, Ordering::Relaxed);
    }
    let mut fin: c_int = 0;
    // SAFETY: may be called at any time.
    unsafe { ffi::PMPI_Finalized(&mut fin) };
    fin != 0
}

/// `MPI_COMM_WORLD`.
pub fn world() -> MPI_Comm {
    // SAFETY: a constant of rsmpi's shim.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

/// `MPI_BYTE`-like filler for calls that carry no data.
pub fn byte_type() -> MPI_Datatype {
    // SAFETY: a constant of rsmpi's shim.
    unsafe { ffi::RSMPI_UINT8_T }
}
