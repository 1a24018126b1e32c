//! A collective call's arguments: as the program gave them ([`Args`]) and
//! as bytes for this rank ([`Layout`]).

use std::ffi::{c_int, c_void};

use autocoll::Collective;
use mpi::ffi::{MPI_Comm, MPI_Datatype, MPI_Op};

/// A call's arguments as the program gave them (C handles; Fortran's
/// converted, its `MPI_IN_PLACE` and `MPI_BOTTOM` made C's).
#[derive(Clone, Copy, Debug)]
pub struct Args {
    /// The collective.
    pub op: Collective,
    /// The send buffer (bcast's buffer is `recv`).
    pub send: *const c_void,
    /// Send count and type.
    pub scount: c_int,
    /// Send datatype.
    pub stype: MPI_Datatype,
    /// The receive buffer.
    pub recv: *mut c_void,
    /// Receive count.
    pub rcount: c_int,
    /// Receive datatype.
    pub rtype: MPI_Datatype,
    /// The reduction (the collectives that combine only).
    pub mpi_op: MPI_Op,
    /// `MPI_Reduce_scatter`'s receive counts, one per rank (null for
    /// every other call).
    pub counts: *const c_int,
    /// The root (rooted collectives only).
    pub root: c_int,
    /// The program's communicator.
    pub comm: MPI_Comm,
}

impl Args {
    /// No reduction (the collectives that combine nothing).
    pub fn no_op() -> MPI_Op {
        crate::sys::op_null()
    }

    /// Arguments of a call with one datatype (bcast, barrier and the
    /// reductions).
    #[allow(clippy::too_many_arguments)]
    pub fn one_type(
        op: Collective,
        send: *const c_void,
        recv: *mut c_void,
        count: c_int,
        dtype: MPI_Datatype,
        mpi_op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> Args {
        Args {
            op,
            send,
            scount: count,
            stype: dtype,
            recv,
            rcount: count,
            rtype: dtype,
            mpi_op,
            counts: std::ptr::null(),
            root,
            comm,
        }
    }

    /// `MPI_Reduce_scatter`'s arguments: its counts stand for one count
    /// (`coll::call_counted` reads them) until the counts form runs.
    pub fn counted(
        send: *const c_void,
        recv: *mut c_void,
        counts: *const c_int,
        dtype: MPI_Datatype,
        mpi_op: MPI_Op,
        comm: MPI_Comm,
    ) -> Args {
        Args {
            counts,
            ..Self::one_type(
                Collective::ReduceScatter,
                send,
                recv,
                0,
                dtype,
                mpi_op,
                0,
                comm,
            )
        }
    }

    /// Arguments of scatter, gather, allgather and alltoall.
    #[allow(clippy::too_many_arguments)]
    pub fn two_types(
        op: Collective,
        send: *const c_void,
        scount: c_int,
        stype: MPI_Datatype,
        recv: *mut c_void,
        rcount: c_int,
        rtype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) -> Args {
        Args {
            op,
            send,
            scount,
            stype,
            recv,
            rcount,
            rtype,
            mpi_op: Self::no_op(),
            counts: std::ptr::null(),
            root,
            comm,
        }
    }
}

/// The call in bytes, for this rank.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// This rank and the communicator's size.
    pub rank: usize,
    /// The number of ranks.
    pub size: usize,
    /// The root (0 where there is none).
    pub root: usize,
    /// Bytes per rank (a rank's block for scatter, gather, allgather,
    /// alltoall).
    pub bytes: usize,
    /// Bytes per element of the datatype that reductions combine.
    pub elem: usize,
}
