//! Jobs of processes started by `mpirun`, over the [`mpi`](crate::transport::mpi)
//! transport (cargo feature `mpi`): [`world`] builds their communicator,
//! [`Library`] the MPI library's own collectives beside it.

use std::sync::Arc;

use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::environment::{Threading, Universe};
use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator as _, CommunicatorCollectives, Root};
use mpi::Count;

use crate::check::{Dtype, Native};
use crate::coll::op::Builtin;
use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::ids::Collective;

/// Moved to [`crate::transport::mpi`]; the old path kept for the other crates.
pub use crate::transport::mpi::{under_mpirun, Mpi, INLINE_MAX};

/// Initialises MPI and returns the communicator of every process that
/// `mpirun` started (`MPI_COMM_WORLD`). Call it once per process; MPI is
/// finalised when the communicator is dropped.
pub fn world() -> Result<Communicator> {
    Ok(world_with_library()?.0)
}

/// [`world`], and the MPI library's own collectives over the same
/// processes (to compare with, or to time beside, autocoll's). MPI is
/// finalised when both are dropped.
pub fn world_with_library() -> Result<(Communicator, Library)> {
    let (universe, level) =
        mpi::initialize_with_threading(Threading::Multiple).ok_or_else(|| {
            Error::Config(
                "MPI is already initialised in this process: call mpi::world() once".into(),
            )
        })?;
    if level != Threading::Multiple {
        return Err(Error::Config(format!(
            "the MPI library offers thread level {level:?}; the mpi transport needs MPI_THREAD_MULTIPLE"
        )));
    }
    let session = Arc::new(universe);
    // SAFETY: MPI is initialised (above) with MPI_THREAD_MULTIPLE, and the
    // session, kept in the transport, outlives its communicator.
    let mut transport = unsafe { Mpi::on(ffi::RSMPI_COMM_WORLD)? };
    transport._session = Some(session.clone());
    let library = Library {
        world: SimpleCommunicator::world(),
        _session: session,
    };
    let mut comm = Communicator::new(Box::new(transport));
    crate::comm::tracing::from_env(&mut comm)?;
    crate::comm::balancing::from_env(&mut comm)?;
    Ok((comm, library))
}

/// The MPI library's own collectives on `MPI_COMM_WORLD`: what `check`
/// compares autocoll's results with, and what benchmarks time beside them.
///
/// A call whose per-rank count is zero returns at once on every rank (the
/// count is the same on all of them): an empty Rust slice points at
/// address 1, which Open MPI takes for `MPI_IN_PLACE`, and such a call
/// would move nothing anyway.
pub struct Library {
    world: SimpleCommunicator,
    _session: Arc<Universe>,
}

impl Library {
    fn root(&self, root: usize) -> mpi::topology::Process<'_> {
        self.world.process_at_rank(root as mpi::Rank)
    }

    fn is(&self, root: usize) -> bool {
        self.world.rank() as usize == root
    }

    fn reduce_as<T: Equivalence + bytemuck::Pod>(
        &self,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        to: To,
    ) -> Result<()> {
        let send: &[T] = cast(send)?;
        let op = system_op(op);
        match to {
            To::All => self.world.all_reduce_into(send, cast_mut::<T>(recv)?, op),
            To::Root(r) if self.is(r) => {
                self.root(r)
                    .reduce_into_root(send, cast_mut::<T>(recv)?, op)
            }
            To::Root(r) => self.root(r).reduce_into(send, op),
            To::Prefix => self.world.scan_into(send, cast_mut::<T>(recv)?, op),
            To::Before => self
                .world
                .exclusive_scan_into(send, cast_mut::<T>(recv)?, op),
            To::Blocks => self
                .world
                .reduce_scatter_block_into(send, cast_mut::<T>(recv)?, op),
        }
        Ok(())
    }

    fn reduce_typed(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        to: To,
    ) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        match dtype {
            Dtype::I8 => self.reduce_as::<i8>(op, send, recv, to),
            Dtype::I16 => self.reduce_as::<i16>(op, send, recv, to),
            Dtype::I32 => self.reduce_as::<i32>(op, send, recv, to),
            Dtype::I64 => self.reduce_as::<i64>(op, send, recv, to),
            Dtype::U8 => self.reduce_as::<u8>(op, send, recv, to),
            Dtype::U16 => self.reduce_as::<u16>(op, send, recv, to),
            Dtype::U32 => self.reduce_as::<u32>(op, send, recv, to),
            Dtype::U64 => self.reduce_as::<u64>(op, send, recv, to),
            Dtype::F32 => self.reduce_as::<f32>(op, send, recv, to),
            Dtype::F64 => self.reduce_as::<f64>(op, send, recv, to),
        }
    }
}

/// Where a reduction's result goes.
#[derive(Clone, Copy)]
enum To {
    All,
    Root(usize),
    /// Ranks 0..=r to rank r (scan).
    Prefix,
    /// Ranks 0..r to rank r (exscan).
    Before,
    /// Block r of every rank's to rank r (reduce-scatter).
    Blocks,
}

fn cast<T: bytemuck::Pod>(bytes: &[u8]) -> Result<&[T]> {
    bytemuck::try_cast_slice(bytes).map_err(|e| {
        Error::Config(format!(
            "reduction buffer is not a slice of {}: {e}",
            std::any::type_name::<T>()
        ))
    })
}

fn cast_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [T]> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| {
        Error::Config(format!(
            "reduction buffer is not a slice of {}: {e}",
            std::any::type_name::<T>()
        ))
    })
}

fn system_op(op: Builtin) -> SystemOperation {
    match op {
        Builtin::Sum => SystemOperation::sum(),
        Builtin::Prod => SystemOperation::product(),
        Builtin::Min => SystemOperation::min(),
        Builtin::Max => SystemOperation::max(),
        Builtin::Band => SystemOperation::bitwise_and(),
        Builtin::Bor => SystemOperation::bitwise_or(),
        Builtin::Bxor => SystemOperation::bitwise_xor(),
    }
}

impl Native for Library {
    fn name(&self, op: Collective) -> String {
        let call = match op {
            Collective::Bcast => "Bcast",
            Collective::Reduce => "Reduce",
            Collective::Scatter => "Scatter",
            Collective::Gather => "Gather",
            Collective::Allreduce => "Allreduce",
            Collective::Allgather => "Allgather",
            Collective::Barrier => "Barrier",
            Collective::Alltoall => "Alltoall",
            Collective::Scan => "Scan",
            Collective::Exscan => "Exscan",
            Collective::ReduceScatter => "Reduce_scatter_block",
            Collective::Gatherv => "Gatherv",
            Collective::Scatterv => "Scatterv",
            Collective::Allgatherv => "Allgatherv",
            Collective::Alltoallv => "Alltoallv",
        };
        format!("MPI_{call}")
    }

    fn bcast(&self, buf: &mut [u8], root: usize) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.root(root).broadcast_into(buf);
        Ok(())
    }

    fn scatter(&self, send: &[u8], recv: &mut [u8], root: usize) -> Result<()> {
        if recv.is_empty() {
            return Ok(());
        }
        match self.is(root) {
            true => self.root(root).scatter_into_root(send, recv),
            false => self.root(root).scatter_into(recv),
        }
        Ok(())
    }

    fn gather(&self, send: &[u8], recv: &mut [u8], root: usize) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        match self.is(root) {
            true => self.root(root).gather_into_root(send, recv),
            false => self.root(root).gather_into(send),
        }
        Ok(())
    }

    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        self.world.all_gather_into(send, recv);
        Ok(())
    }

    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        if send.is_empty() {
            return Ok(());
        }
        self.world.all_to_all_into(send, recv);
        Ok(())
    }

    fn reduce(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        root: usize,
    ) -> Result<()> {
        self.reduce_typed(dtype, op, send, recv, To::Root(root))
    }

    fn allreduce(&self, dtype: Dtype, op: Builtin, send: &[u8], recv: &mut [u8]) -> Result<()> {
        self.reduce_typed(dtype, op, send, recv, To::All)
    }

    fn scan(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        exclusive: bool,
    ) -> Result<()> {
        let to = if exclusive { To::Before } else { To::Prefix };
        self.reduce_typed(dtype, op, send, recv, to)
    }

    fn reduce_scatter(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<()> {
        self.reduce_typed(dtype, op, send, recv, To::Blocks)
    }

    fn varied(
        &self,
        op: Collective,
        (send, recv): (&[u8], &mut [u8]),
        (out, into): (&[usize], &[usize]),
        root: usize,
    ) -> Result<()> {
        // An empty slice's address is dangling, 1 here: Open MPI's
        // MPI_IN_PLACE. Empty blocks get an address of their own.
        let (spare_out, mut spare_in) = ([0u8; 1], [0u8; 1]);
        let send = if send.is_empty() {
            &spare_out[..0]
        } else {
            send
        };
        let recv = if recv.is_empty() {
            &mut spare_in[..0]
        } else {
            recv
        };
        let (at, here) = (self.root(root), self.is(root));
        match op {
            Collective::Gatherv if here => {
                at.gather_varcount_into_root(send, &mut parts_mut(recv, into)?)
            }
            Collective::Gatherv => at.gather_varcount_into(send),
            Collective::Scatterv if here => at.scatter_varcount_into_root(&parts(send, out)?, recv),
            Collective::Scatterv => at.scatter_varcount_into(recv),
            Collective::Allgatherv => self
                .world
                .all_gather_varcount_into(send, &mut parts_mut(recv, into)?),
            _ => self
                .world
                .all_to_all_varcount_into(&parts(send, out)?, &mut parts_mut(recv, into)?),
        }
        Ok(())
    }

    fn barrier(&self) -> Result<()> {
        self.world.barrier();
        Ok(())
    }
}

/// MPI's counts and displacements of blocks packed in rank order.
fn counts_displs(sizes: &[usize]) -> Result<(Vec<Count>, Vec<Count>)> {
    let count = |n: usize| {
        Count::try_from(n).map_err(|_| Error::Config(format!("{n} bytes exceed an MPI count")))
    };
    let counts = sizes
        .iter()
        .map(|&n| count(n))
        .collect::<Result<Vec<_>>>()?;
    let mut displs = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for &n in sizes {
        displs.push(count(at)?);
        at += n;
    }
    Ok((counts, displs))
}

fn parts<'b>(
    buf: &'b [u8],
    sizes: &[usize],
) -> Result<Partition<'b, [u8], Vec<Count>, Vec<Count>>> {
    let (counts, displs) = counts_displs(sizes)?;
    Ok(Partition::new(buf, counts, displs))
}

fn parts_mut<'b>(
    buf: &'b mut [u8],
    sizes: &[usize],
) -> Result<PartitionMut<'b, [u8], Vec<Count>, Vec<Count>>> {
    let (counts, displs) = counts_displs(sizes)?;
    Ok(PartitionMut::new(buf, counts, displs))
}
