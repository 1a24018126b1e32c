//! Validation of implementations against a serial reference.
//!
//! Every rank makes up every rank's input from the seed, so it can compute
//! the result it must end with on its own, without trusting any collective.
//! The same code runs on every transport: each rank checks itself, and
//! [`collect`] brings the failures to rank 0. `autocoll check` and the
//! test suites run it; given a [`Native`] library (an MPI library's own
//! collectives) it also requires that library's result, bit for bit.

use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::clock::now_ns;
use crate::coll::op::{Builtin, Op};
use crate::comm::communicator::Communicator;
use crate::ids::Collective;
use crate::select::{Algorithm, Implementation};

mod cases;
mod reference;
pub use cases::{all_implementations, user_tree};
use reference::{compare, mix, Inputs, Sample};

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

/// Runs every case on this rank, in order, and returns what went wrong here.
pub fn run(comm: &mut Communicator, cases: &[Case], config: &Config) -> Vec<Failure> {
    run_compared(comm, cases, config, None)
}

/// [`run`], and with `native` also runs every data-moving and reducing case
/// through that library on the same inputs and requires its result to be
/// bit-equal to autocoll's. (Floats compare exactly too: the inputs are
/// small whole numbers.) The library's call comes first, so that every
/// rank makes it even when autocoll's call fails on some rank.
pub fn run_compared(
    comm: &mut Communicator,
    cases: &[Case],
    config: &Config,
    native: Option<&dyn Native>,
) -> Vec<Failure> {
    cases
        .iter()
        .enumerate()
        .filter_map(|(i, case)| {
            let outcome = run_case(comm, case, config, i as u64, native);
            outcome.err().map(|reason| Failure {
                imp: case.imp.to_string(),
                ranks: comm.size(),
                bytes: case.bytes,
                root: case.root,
                rank: comm.rank(),
                reason,
            })
        })
        .collect()
}

/// Runs one case and compares this rank's result with the reference (and,
/// given `native`, with that library's).
pub fn run_case(
    comm: &mut Communicator,
    case: &Case,
    config: &Config,
    index: u64,
    native: Option<&dyn Native>,
) -> Result<(), String> {
    let inputs = Inputs {
        seed: mix(config.seed ^ mix(index)),
        p: comm.size(),
        me: comm.rank(),
    };
    let op = case.imp.op;
    if op == Collective::Barrier {
        return check_barrier(comm, case, index);
    }
    if !op.reduces() {
        return check_moves(comm, case, &inputs, native);
    }
    macro_rules! typed {
        ($($d:ident => $t:ty),*) => {
            match config.dtype { $(Dtype::$d => check_reduce::<$t>(comm, case, &inputs, config, native),)* }
        };
    }
    typed!(I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64, F32 => f32, F64 => f64)
}

/// Sends every rank's failures to rank 0, which returns them all (in rank
/// order); other ranks return an empty list.
pub fn collect(comm: &mut Communicator, mine: Vec<Failure>) -> crate::error::Result<Vec<Failure>> {
    const TAG: u64 = 0xC4EC;
    if comm.rank() != 0 {
        let text = serde_json::to_vec(&mine).expect("failures serialise");
        comm.send_bytes(0, TAG, Bytes::from(text))?;
        return Ok(Vec::new());
    }
    let mut all = mine;
    for src in 1..comm.size() {
        let text = comm.recv_bytes(src, TAG)?;
        let theirs: Vec<Failure> =
            serde_json::from_slice(&text).map_err(|e| crate::error::Error::Protocol {
                peer: format!("rank {src}"),
                reason: format!("unreadable check report: {e}"),
            })?;
        all.extend(theirs);
    }
    Ok(all)
}

/// The native library's result for the same call, run before autocoll's.
fn native_result(
    native: Option<&dyn Native>,
    op: Collective,
    mut buf: Vec<u8>,
    call: impl FnOnce(&dyn Native, &mut [u8]) -> crate::error::Result<()>,
) -> Result<Option<(String, Vec<u8>)>, String> {
    let Some(lib) = native else {
        return Ok(None);
    };
    let name = lib.name(op);
    call(lib, &mut buf).map_err(|e| format!("{name}: {e}"))?;
    Ok(Some((name, buf)))
}

/// Requires autocoll's result (`got`, already checked against the
/// reference) to be bit-equal to the native library's.
fn against_native(native: Option<(String, Vec<u8>)>, got: &[u8]) -> Result<(), String> {
    match native {
        None => Ok(()),
        Some((name, theirs)) => compare(&format!("autocoll vs {name} result"), got, &theirs),
    }
}

/// The collectives that move bytes without combining them.
fn check_moves(
    comm: &mut Communicator,
    case: &Case,
    inputs: &Inputs,
    native: Option<&dyn Native>,
) -> Result<(), String> {
    let moving = Moving {
        comm,
        case,
        inputs,
        native,
    };
    match case.imp.op {
        Collective::Bcast => moving.bcast(),
        Collective::Scatter => moving.scatter(),
        Collective::Gather => moving.gather(),
        Collective::Allgather => moving.allgather(),
        Collective::Alltoall => moving.alltoall(),
        Collective::Gatherv => moving.gatherv(),
        Collective::Scatterv => moving.scatterv(),
        Collective::Allgatherv => moving.allgatherv(),
        Collective::Alltoallv => moving.alltoallv(),
        other => Err(format!("{other} is not a data-moving collective")),
    }
}

/// One case of a data-moving collective on this rank, with the inputs
/// and the native library it is checked against.
struct Moving<'a> {
    comm: &'a mut Communicator,
    case: &'a Case,
    inputs: &'a Inputs,
    native: Option<&'a dyn Native>,
}

impl Moving<'_> {
    /// Every rank ends with the root's input.
    fn bcast(self) -> Result<(), String> {
        let (imp, root, n) = (&self.case.imp, self.case.root, self.case.bytes);
        let mut buf = if self.inputs.me == root {
            self.inputs.values::<u8>(root, 0..n)
        } else {
            vec![0u8; n]
        };
        let theirs = native_result(self.native, imp.op, buf.clone(), |lib, b| {
            lib.bcast(b, root)
        })?;
        self.comm
            .bcast_with(imp, &mut buf, root)
            .map_err(|e| e.to_string())?;
        compare("bcast result", &buf, &self.inputs.values::<u8>(root, 0..n))?;
        against_native(theirs, &buf)
    }

    /// Every rank ends with its own block of the root's input.
    fn scatter(self) -> Result<(), String> {
        let (imp, root, n) = (&self.case.imp, self.case.root, self.case.bytes);
        let (p, me) = (self.inputs.p, self.inputs.me);
        let send = if me == root {
            self.inputs.values::<u8>(root, 0..p * n)
        } else {
            Vec::new()
        };
        let mut recv = vec![0u8; n];
        let theirs = native_result(self.native, imp.op, recv.clone(), |lib, r| {
            lib.scatter(&send, r, root)
        })?;
        self.comm
            .scatter_with(imp, &send, &mut recv, root)
            .map_err(|e| e.to_string())?;
        let want = self.inputs.values::<u8>(root, me * n..(me + 1) * n);
        compare("scatter block", &recv, &want)?;
        against_native(theirs, &recv)
    }

    /// The root ends with every rank's block, in rank order.
    fn gather(self) -> Result<(), String> {
        let (imp, root, n) = (&self.case.imp, self.case.root, self.case.bytes);
        let (p, me) = (self.inputs.p, self.inputs.me);
        let send = self.inputs.values::<u8>(me, 0..n);
        let mut recv = if me == root {
            vec![0u8; p * n]
        } else {
            Vec::new()
        };
        let theirs = native_result(self.native, imp.op, recv.clone(), |lib, r| {
            lib.gather(&send, r, root)
        })?;
        self.comm
            .gather_with(imp, &send, &mut recv, root)
            .map_err(|e| e.to_string())?;
        if me != root {
            return Ok(());
        }
        compare("gather result", &recv, &self.inputs.blocks(n))?;
        against_native(theirs, &recv)
    }

    /// Every rank ends with every rank's block, in rank order.
    fn allgather(self) -> Result<(), String> {
        let (imp, n) = (&self.case.imp, self.case.bytes);
        let send = self.inputs.values::<u8>(self.inputs.me, 0..n);
        let mut recv = vec![0u8; self.inputs.p * n];
        let theirs = native_result(self.native, imp.op, recv.clone(), |lib, r| {
            lib.allgather(&send, r)
        })?;
        self.comm
            .allgather_with(imp, &send, &mut recv)
            .map_err(|e| e.to_string())?;
        compare("allgather result", &recv, &self.inputs.blocks(n))?;
        against_native(theirs, &recv)
    }

    /// Every rank ends with block `me` of every rank's input, in rank
    /// order.
    fn alltoall(self) -> Result<(), String> {
        let (imp, n) = (&self.case.imp, self.case.bytes);
        let (p, me) = (self.inputs.p, self.inputs.me);
        let send = self.inputs.values::<u8>(me, 0..p * n);
        let mut recv = vec![0u8; p * n];
        let theirs = native_result(self.native, imp.op, recv.clone(), |lib, r| {
            lib.alltoall(&send, r)
        })?;
        self.comm
            .alltoall_with(imp, &send, &mut recv)
            .map_err(|e| e.to_string())?;
        let want: Vec<u8> = (0..p)
            .flat_map(|r| self.inputs.values::<u8>(r, me * n..(me + 1) * n))
            .collect();
        compare("alltoall result", &recv, &want)?;
        against_native(theirs, &recv)
    }
}

/// The v-forms' block sizes for `n` bytes: none, half, once and one and
/// a half times `n`, in turn by `k`, so that every case has empty and
/// uneven blocks.
fn vsize(n: usize, k: usize) -> usize {
    n * (k % 4) / 2
}

impl Moving<'_> {
    /// Rank i's block in gatherv, scatterv and allgatherv.
    fn sizes(&self) -> Vec<usize> {
        let shift = self.case.root + 1;
        (0..self.inputs.p)
            .map(|i| vsize(self.case.bytes, i + shift))
            .collect()
    }

    /// What rank `from` sends rank `to` in alltoallv, and where in its
    /// input it starts.
    fn pair(&self, from: usize, to: usize) -> (usize, usize) {
        let n = self.case.bytes;
        let start = (0..to).map(|j| vsize(n, from + 2 * j)).sum();
        (start, vsize(n, from + 2 * to))
    }

    /// The root ends with every rank's block, packed in rank order.
    fn gatherv(self) -> Result<(), String> {
        let (imp, root, me) = (&self.case.imp, self.case.root, self.inputs.me);
        let sizes = self.sizes();
        let send = self.inputs.values::<u8>(me, 0..sizes[me]);
        let want: Vec<u8> = (0..self.inputs.p)
            .flat_map(|r| self.inputs.values::<u8>(r, 0..sizes[r]))
            .collect();
        let mut recv = vec![0u8; if me == root { want.len() } else { 0 }];
        let counts = if me == root { sizes } else { Vec::new() };
        let theirs = self.native_varied(&send, &recv, (&[], &counts))?;
        self.comm
            .gatherv_with(imp, &send, &mut recv, &counts, root)
            .map_err(|e| e.to_string())?;
        if me != root {
            return Ok(());
        }
        compare("gatherv result", &recv, &want)?;
        against_native(theirs, &recv)
    }

    /// Every rank ends with its own block of the root's input.
    fn scatterv(self) -> Result<(), String> {
        let (imp, root, me) = (&self.case.imp, self.case.root, self.inputs.me);
        let sizes = self.sizes();
        let start: usize = sizes[..me].iter().sum();
        let (send, counts) = match me == root {
            true => (
                self.inputs.values::<u8>(root, 0..sizes.iter().sum()),
                sizes.clone(),
            ),
            false => (Vec::new(), Vec::new()),
        };
        let mut recv = vec![0u8; sizes[me]];
        let theirs = self.native_varied(&send, &recv, (&counts, &[]))?;
        self.comm
            .scatterv_with(imp, &send, &counts, &mut recv, root)
            .map_err(|e| e.to_string())?;
        let want = self.inputs.values::<u8>(root, start..start + sizes[me]);
        compare("scatterv block", &recv, &want)?;
        against_native(theirs, &recv)
    }

    /// Every rank ends with every rank's block, packed in rank order.
    fn allgatherv(self) -> Result<(), String> {
        let (imp, me) = (&self.case.imp, self.inputs.me);
        let sizes = self.sizes();
        let send = self.inputs.values::<u8>(me, 0..sizes[me]);
        let want: Vec<u8> = (0..self.inputs.p)
            .flat_map(|r| self.inputs.values::<u8>(r, 0..sizes[r]))
            .collect();
        let mut recv = vec![0u8; want.len()];
        let theirs = self.native_varied(&send, &recv, (&[], &sizes))?;
        self.comm
            .allgatherv_with(imp, &send, &mut recv, &sizes)
            .map_err(|e| e.to_string())?;
        compare("allgatherv result", &recv, &want)?;
        against_native(theirs, &recv)
    }

    /// Every rank ends with what each rank sent it, packed in rank order.
    fn alltoallv(self) -> Result<(), String> {
        let (imp, p, me) = (&self.case.imp, self.inputs.p, self.inputs.me);
        let out: Vec<usize> = (0..p).map(|j| self.pair(me, j).1).collect();
        let into: Vec<usize> = (0..p).map(|i| self.pair(i, me).1).collect();
        let send = self.inputs.values::<u8>(me, 0..out.iter().sum());
        let want: Vec<u8> = (0..p)
            .flat_map(|i| {
                let (start, len) = self.pair(i, me);
                self.inputs.values::<u8>(i, start..start + len)
            })
            .collect();
        let mut recv = vec![0u8; want.len()];
        let theirs = self.native_varied(&send, &recv, (&out, &into))?;
        self.comm
            .alltoallv_with(imp, &send, &out, &mut recv, &into)
            .map_err(|e| e.to_string())?;
        compare("alltoallv result", &recv, &want)?;
        against_native(theirs, &recv)
    }

    /// The native library's v-form on the same inputs, before autocoll's.
    fn native_varied(
        &self,
        send: &[u8],
        recv: &[u8],
        sizes: (&[usize], &[usize]),
    ) -> Result<Option<(String, Vec<u8>)>, String> {
        let (op, root) = (self.case.imp.op, self.case.root);
        native_result(self.native, op, recv.to_vec(), |lib, r| {
            lib.varied(op, (send, r), sizes, root)
        })
    }
}

fn check_reduce<T: Sample>(
    comm: &mut Communicator,
    case: &Case,
    inputs: &Inputs,
    config: &Config,
    native: Option<&dyn Native>,
) -> Result<(), String> {
    let (p, me, root) = (inputs.p, inputs.me, case.root);
    let n = case.bytes / size_of::<T>();
    let op = Op::<T>::Builtin(config.reduce);
    // Reduce-scatter: every rank sends P blocks and gets block `me`.
    let (len, mine) = match case.imp.op {
        Collective::ReduceScatter => (p * n, me * n..(me + 1) * n),
        _ => (n, 0..n),
    };
    let send = inputs.values::<T>(me, 0..len);
    let rooted = case.imp.op == Collective::Reduce;
    let mut recv = if rooted && me != root {
        Vec::new()
    } else {
        vec![T::zeroed(); n]
    };
    let theirs = native_reduce(native, case, config, &send, recv.len())?;
    let imp = &case.imp;
    let outcome = match imp.op {
        Collective::Reduce => comm.reduce_with(imp, &send, &mut recv, &op, root),
        Collective::Scan => comm.scan_with(imp, &send, &mut recv, &op),
        Collective::Exscan => comm.exscan_with(imp, &send, &mut recv, &op),
        Collective::ReduceScatter => comm.reduce_scatter_with(imp, &send, &mut recv, &op),
        _ => comm.allreduce_with(imp, &send, &mut recv, &op),
    };
    outcome.map_err(|e| e.to_string())?;
    // Which ranks' inputs the result combines: MPI leaves exscan's at
    // rank 0 undefined (autocoll leaves it untouched).
    let upto = match imp.op {
        Collective::Scan => me + 1,
        Collective::Exscan => me,
        _ => p,
    };
    if rooted && me != root || upto == 0 {
        return Ok(());
    }
    let mut want = inputs.values::<T>(0, mine.clone());
    for r in 1..upto {
        op.apply(&mut want, &inputs.values::<T>(r, mine.clone()));
    }
    compare(&format!("{} result", case.imp.op), &recv, &want)?;
    let theirs = theirs.map(|(name, r)| (name, bytemuck::cast_slice::<T, u8>(&r).to_vec()));
    against_native(theirs, bytemuck::cast_slice(&recv))?;
    match imp.op {
        Collective::ReduceScatter => check_reduce_scatter_counts::<T>(comm, case, inputs, &op),
        _ => Ok(()),
    }
}

/// Reduce-scatter's counts form, after its block form in the same case:
/// block i holds none, half, once or one and a half times the case's
/// count, in turn, and every rank's block is checked.
fn check_reduce_scatter_counts<T: Sample>(
    comm: &mut Communicator,
    case: &Case,
    inputs: &Inputs,
    op: &Op<T>,
) -> Result<(), String> {
    let (p, me) = (inputs.p, inputs.me);
    let n = case.bytes / size_of::<T>();
    let counts: Vec<usize> = (0..p).map(|i| vsize(n, i + 1)).collect();
    let start: usize = counts[..me].iter().sum();
    let mine = start..start + counts[me];
    let send = inputs.values::<T>(me, 0..counts.iter().sum());
    let mut recv = vec![T::zeroed(); counts[me]];
    comm.reduce_scatter_counts_with(&case.imp, &send, &mut recv, &counts, op)
        .map_err(|e| e.to_string())?;
    let mut want = inputs.values::<T>(0, mine.clone());
    for r in 1..p {
        op.apply(&mut want, &inputs.values::<T>(r, mine.clone()));
    }
    compare("reduce-scatter counts-form result", &recv, &want)
}

/// The native library's reduction of `send` (typed buffers, so that the
/// library sees aligned elements).
fn native_reduce<T: Sample>(
    native: Option<&dyn Native>,
    case: &Case,
    config: &Config,
    send: &[T],
    recv_len: usize,
) -> Result<Option<(String, Vec<T>)>, String> {
    let Some(lib) = native else {
        return Ok(None);
    };
    let name = lib.name(case.imp.op);
    let mut recv = vec![T::zeroed(); recv_len];
    let (s, r) = (
        bytemuck::cast_slice(send),
        bytemuck::cast_slice_mut(&mut recv),
    );
    let (dtype, op) = (config.dtype, config.reduce);
    let outcome = match case.imp.op {
        Collective::Reduce => lib.reduce(dtype, op, s, r, case.root),
        Collective::Scan => lib.scan(dtype, op, s, r, false),
        Collective::Exscan => lib.scan(dtype, op, s, r, true),
        Collective::ReduceScatter => lib.reduce_scatter(dtype, op, s, r),
        _ => lib.allreduce(dtype, op, s, r),
    };
    outcome.map_err(|e| format!("{name}: {e}"))?;
    Ok(Some((name, recv)))
}

/// A barrier is right when no rank leaves before the last one entered. One
/// rank enters late on purpose; the ranks then swap their enter and leave
/// times (on the shared monotonic clock) with a ring allgather.
fn check_barrier(comm: &mut Communicator, case: &Case, index: u64) -> Result<(), String> {
    let p = comm.size();
    let late = index as usize % p;
    if comm.rank() == late && p > 1 {
        std::thread::sleep(Duration::from_millis(2));
    }
    let enter = now_ns();
    comm.barrier_with(&case.imp).map_err(|e| e.to_string())?;
    let leave = now_ns();
    if !comm.shared_clock() {
        return Ok(());
    }
    let mut times = vec![0u64; 2 * p];
    let ring = Implementation {
        op: Collective::Allgather,
        algorithm: Algorithm::Ring,
        seg: None,
    };
    comm.allgather_with(&ring, &[enter, leave], &mut times)
        .map_err(|e| format!("exchanging barrier times: {e}"))?;
    let (last, last_enter) = (0..p)
        .map(|r| (r, times[2 * r]))
        .max_by_key(|&(_, t)| t)
        .unwrap_or((0, 0));
    if leave < last_enter {
        return Err(format!(
            "left the barrier {:.3} ms before rank {last} entered it",
            (last_enter - leave) as f64 / 1e6
        ));
    }
    Ok(())
}
