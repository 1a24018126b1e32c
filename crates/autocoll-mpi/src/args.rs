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
    /// A v-form's counts and displacements.
    pub v: Vectors,
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
            v: Vectors::none(),
            root,
            comm,
        }
    }

    /// `MPI_Reduce_scatter`'s arguments: a count per rank, no count of
    /// its own.
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
            v: Vectors::none(),
            root,
            comm,
        }
    }

    /// A v-form's arguments: `two_types`' with the per-rank counts and
    /// displacements of the sides that have them.
    pub fn varied(two_types: Args, v: Vectors) -> Args {
        Args { v, ..two_types }
    }
}

/// A v-form's per-rank counts and displacements, in elements of their
/// side's datatype; null where the call has none (one count of its own).
#[derive(Clone, Copy, Debug)]
pub struct Vectors {
    /// Send counts (scatterv, alltoallv).
    pub scounts: *const c_int,
    /// Send displacements.
    pub sdispls: *const c_int,
    /// Receive counts (gatherv, allgatherv, alltoallv).
    pub rcounts: *const c_int,
    /// Receive displacements.
    pub rdispls: *const c_int,
}

impl Vectors {
    /// No vectors: the regular forms.
    pub fn none() -> Vectors {
        let null = std::ptr::null();
        Vectors {
            scounts: null,
            sdispls: null,
            rcounts: null,
            rdispls: null,
        }
    }

    /// The send side's counts and displacements.
    pub fn send(scounts: *const c_int, sdispls: *const c_int) -> Vectors {
        Vectors {
            scounts,
            sdispls,
            ..Vectors::none()
        }
    }

    /// The receive side's counts and displacements.
    pub fn recv(rcounts: *const c_int, rdispls: *const c_int) -> Vectors {
        Vectors {
            rcounts,
            rdispls,
            ..Vectors::none()
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

/// What the checks made of a call.
pub enum Plan {
    /// Nothing to move: every rank returns at once.
    Nothing,
    /// Run by the selector's choice over these bytes.
    Run(Layout),
}
