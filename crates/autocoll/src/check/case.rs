//! What `check` runs and reports: a case, the element type and settings
//! of a run, a failure, and the MPI library's own collectives to compare
//! with.

use serde::{Deserialize, Serialize};

use crate::coll::op::Builtin;
use crate::ids::Collective;
use crate::select::Implementation;

/// One implementation run once at one size and root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// What runs.
    pub imp: Implementation,
    /// Bytes per rank (rounded down to whole elements by the run).
    pub bytes: usize,
    /// The root, for rooted collectives.
    pub root: usize,
}

/// The element type reductions are checked with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Dtype {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
}

impl Dtype {
    /// All element types.
    pub const ALL: [Dtype; 10] = [
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
        Dtype::F32,
        Dtype::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::U64 | Dtype::F64 => 8,
        }
    }

    /// The type's name.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::I8 => "i8",
            Dtype::I16 => "i16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        }
    }
}

impl std::str::FromStr for Dtype {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Dtype::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown element type `{s}` (i8..i64, u8..u64, f32, f64)"))
    }
}

/// What the data of a check run looks like.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Seed of the pseudo-random inputs.
    pub seed: u64,
    /// Element type of reductions (data movers always use bytes).
    pub dtype: Dtype,
    /// The reduction.
    pub reduce: Builtin,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 1,
            dtype: Dtype::F64,
            reduce: Builtin::Sum,
        }
    }
}

impl Config {
    /// Bytes per element of `op`'s data.
    pub fn elem(&self, op: Collective) -> usize {
        if op.reduces() {
            self.dtype.size()
        } else {
            1
        }
    }
}

/// A case that went wrong on one rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The implementation's id.
    #[serde(rename = "impl")]
    pub imp: String,
    /// Communicator size.
    pub ranks: usize,
    /// Bytes per rank.
    pub bytes: usize,
    /// Root.
    pub root: usize,
    /// The rank that saw it.
    pub rank: usize,
    /// What was wrong.
    pub reason: String,
}

/// A second implementation of the collectives, byte for byte, that `check`
/// compares autocoll's results with: an MPI library's own
/// (`autocoll::comm::mpi::Library`). Every rank makes the same calls in the
/// same order; reductions say their element type.
pub trait Native {
    /// The library's name for `op`, e.g. `MPI_Bcast`.
    fn name(&self, op: Collective) -> String;
    /// Broadcasts `buf` from `root`.
    fn bcast(&self, buf: &mut [u8], root: usize) -> crate::error::Result<()>;
    /// Scatters `send` (read at `root`) into every rank's `recv`.
    fn scatter(&self, send: &[u8], recv: &mut [u8], root: usize) -> crate::error::Result<()>;
    /// Gathers every rank's `send` into `recv` at `root`.
    fn gather(&self, send: &[u8], recv: &mut [u8], root: usize) -> crate::error::Result<()>;
    /// Gathers every rank's `send` into every rank's `recv`.
    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> crate::error::Result<()>;
    /// Sends block j of `send` to rank j; block i of `recv` from rank i.
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> crate::error::Result<()>;
    /// Reduces elements of `dtype` with `op` into `recv` at `root`.
    fn reduce(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        root: usize,
    ) -> crate::error::Result<()>;
    /// Reduces elements of `dtype` with `op` into every rank's `recv`.
    fn allreduce(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
    ) -> crate::error::Result<()>;
    /// Combines elements of `dtype` with `op` into every rank's `recv`
    /// over the ranks before it (`exclusive`) or up to it.
    fn scan(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
        exclusive: bool,
    ) -> crate::error::Result<()>;
    /// Combines every rank's `send` (one block per rank) with `op` and
    /// gives each rank its block in `recv`.
    fn reduce_scatter(
        &self,
        dtype: Dtype,
        op: Builtin,
        send: &[u8],
        recv: &mut [u8],
    ) -> crate::error::Result<()>;
    /// A v-form (`Collective::varies`): blocks packed in rank order,
    /// their sizes in bytes on the side that sends to every rank
    /// (`sizes.0`) and the side that receives from every rank
    /// (`sizes.1`), where this rank has them (else empty).
    fn varied(
        &self,
        op: Collective,
        bufs: (&[u8], &mut [u8]),
        sizes: (&[usize], &[usize]),
        root: usize,
    ) -> crate::error::Result<()>;
    /// Returns once every rank has called it.
    fn barrier(&self) -> crate::error::Result<()>;
}
