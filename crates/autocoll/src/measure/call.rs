//! One call of the collective under test, with buffers made once.

use crate::check::{Dtype, Native};
use crate::coll::op::{Builtin, Op};
use crate::comm::communicator::Communicator;
use crate::error::Result;
use crate::ids::Collective;
use crate::select::{Algorithm, Implementation};
use crate::tree::Shape;

/// The buffers of one rank, sized for any root so that methods which
/// rotate the root (`rounds`) need no reallocation.
enum Buffers {
    /// Data movers carry bytes.
    Bytes { send: Vec<u8>, recv: Vec<u8> },
    /// Reductions combine `f64` sums.
    F64 { send: Vec<f64>, recv: Vec<f64> },
    /// The v-forms' blocks of `bytes` on average, made at the first call
    /// (they depend on the rank).
    Varied { bytes: usize, made: Option<Varied> },
}

/// A v-form's buffers and block sizes on one rank: the block rank i sends
/// rank j is [`vary`]`(bytes, i + j)` for alltoallv, rank i's block is
/// `vary(bytes, i)` for the others.
struct Varied {
    send: Vec<u8>,
    recv: Vec<u8>,
    send_counts: Vec<usize>,
    recv_counts: Vec<usize>,
}

/// Half, once or one and a half times `bytes`, in turn by `k`: the v-forms'
/// blocks in benchmarks, `bytes` on average.
pub fn vary(bytes: usize, k: usize) -> usize {
    bytes * (1 + k % 3) / 2
}

impl Varied {
    fn new(op: Collective, bytes: usize, size: usize, rank: usize) -> Varied {
        let shift = if op == Collective::Alltoallv { rank } else { 0 };
        let all: Vec<usize> = (0..size).map(|i| vary(bytes, i + shift)).collect();
        let mine = vec![1; vary(bytes, rank)];
        let total = all.iter().sum();
        let (send, send_counts, recv, recv_counts) = match op {
            Collective::Scatterv => (vec![1; total], all, mine, Vec::new()),
            Collective::Alltoallv => (vec![1; total], all.clone(), vec![0; total], all),
            _ => (mine, Vec::new(), vec![0; total], all),
        };
        Varied {
            send,
            recv,
            send_counts,
            recv_counts,
        }
    }

    /// One call of `op`, with `imp` or, without, the selector's choice.
    fn call(
        &mut self,
        comm: &mut Communicator,
        op: Collective,
        imp: Option<&Implementation>,
        root: usize,
    ) -> Result<()> {
        let Varied {
            send,
            recv,
            send_counts: out,
            recv_counts: into,
        } = self;
        match (op, imp) {
            (Collective::Gatherv, Some(imp)) => comm.gatherv_with(imp, send, recv, into, root),
            (Collective::Gatherv, None) => comm.gatherv(send, recv, into, root),
            (Collective::Scatterv, Some(imp)) => comm.scatterv_with(imp, send, out, recv, root),
            (Collective::Scatterv, None) => comm.scatterv(send, out, recv, root),
            (Collective::Allgatherv, Some(imp)) => comm.allgatherv_with(imp, send, recv, into),
            (Collective::Allgatherv, None) => comm.allgatherv(send, recv, into),
            (_, Some(imp)) => comm.alltoallv_with(imp, send, out, recv, into),
            (_, None) => comm.alltoallv(send, out, recv, into),
        }
    }
}

/// Whose collective is called.
pub enum Target<'a> {
    /// One of autocoll's implementations.
    Ours(Implementation),
    /// The library behind the transport (the MPI library's own
    /// collectives), timed as a baseline.
    Library(Collective, &'a dyn Native),
}

impl Target<'_> {
    /// The collective.
    pub fn op(&self) -> Collective {
        match self {
            Target::Ours(imp) => imp.op,
            Target::Library(op, _) => *op,
        }
    }
}

/// Makes calls of one implementation at one message size, with buffers
/// made once (so that timing loops time the call, not allocation).
pub struct Caller<'a> {
    target: Target<'a>,
    bufs: Buffers,
    sum: Op<f64>,
}

/// Bytes per rank actually carried: `bytes` rounded down to whole elements
/// of the collective's element type (`f64` for reductions, bytes otherwise).
pub fn effective_bytes(op: Collective, bytes: usize) -> usize {
    match op {
        Collective::Barrier => 0,
        op if op.reduces() => bytes / 8 * 8,
        _ => bytes,
    }
}

impl Caller<'static> {
    /// Buffers for autocoll's `imp` with `bytes` per rank on `size` ranks.
    pub fn of(imp: &Implementation, bytes: usize, size: usize) -> Caller<'static> {
        Caller::new(Target::Ours(imp.clone()), bytes, size)
    }
}

impl<'a> Caller<'a> {
    /// The collective it calls.
    pub fn op(&self) -> Collective {
        self.target.op()
    }

    /// Buffers for `target` with `bytes` per rank on `size` ranks.
    pub fn new(target: Target<'a>, bytes: usize, size: usize) -> Caller<'a> {
        let n = effective_bytes(target.op(), bytes);
        let bufs = match target.op() {
            Collective::Reduce | Collective::Allreduce | Collective::Scan | Collective::Exscan => {
                Buffers::F64 {
                    send: vec![1.0; n / 8],
                    recv: vec![0.0; n / 8],
                }
            }
            Collective::ReduceScatter => Buffers::F64 {
                send: vec![1.0; n * size / 8],
                recv: vec![0.0; n / 8],
            },
            Collective::Scatter => Buffers::Bytes {
                send: vec![1; n * size],
                recv: vec![0; n],
            },
            Collective::Gather | Collective::Allgather => Buffers::Bytes {
                send: vec![1; n],
                recv: vec![0; n * size],
            },
            Collective::Alltoall => Buffers::Bytes {
                send: vec![1; n * size],
                recv: vec![0; n * size],
            },
            Collective::Bcast | Collective::Barrier => Buffers::Bytes {
                send: Vec::new(),
                recv: vec![1; n],
            },
            Collective::Gatherv
            | Collective::Scatterv
            | Collective::Allgatherv
            | Collective::Alltoallv => Buffers::Varied {
                bytes: n,
                made: None,
            },
        };
        Caller {
            target,
            bufs,
            sum: Op::Builtin(Builtin::Sum),
        }
    }

    /// Calls `target` from now on, with the same buffers: a race's
    /// candidates share one set. `target` must be of the same collective.
    pub fn set_target(&mut self, target: Target<'a>) {
        debug_assert_eq!(target.op(), self.target.op(), "buffers fit one collective");
        self.target = target;
    }

    /// One call with `root` (ignored by rootless collectives).
    pub fn call(&mut self, comm: &mut Communicator, root: usize) -> Result<()> {
        let op = self.op();
        if let Buffers::Varied { bytes, made } = &mut self.bufs {
            made.get_or_insert_with(|| Varied::new(op, *bytes, comm.size(), comm.rank()));
        }
        let imp = match &self.target {
            Target::Ours(imp) => imp,
            Target::Library(op, library) => {
                return call_library(*op, *library, &mut self.bufs, root)
            }
        };
        match (&mut self.bufs, imp.op) {
            (Buffers::Varied { made: Some(v), .. }, op) => v.call(comm, op, Some(imp), root),
            (Buffers::Bytes { recv, .. }, Collective::Bcast) => comm.bcast_with(imp, recv, root),
            (Buffers::Bytes { send, recv }, Collective::Scatter) => {
                comm.scatter_with(imp, send, recv, root)
            }
            (Buffers::Bytes { send, recv }, Collective::Gather) => {
                comm.gather_with(imp, send, recv, root)
            }
            (Buffers::Bytes { send, recv }, Collective::Allgather) => {
                comm.allgather_with(imp, send, recv)
            }
            (Buffers::Bytes { send, recv }, Collective::Alltoall) => {
                comm.alltoall_with(imp, send, recv)
            }
            (Buffers::F64 { send, recv }, Collective::Reduce) => {
                comm.reduce_with(imp, send, recv, &self.sum, root)
            }
            (Buffers::F64 { send, recv }, Collective::Allreduce) => {
                comm.allreduce_with(imp, send, recv, &self.sum)
            }
            (Buffers::F64 { send, recv }, Collective::Scan) => {
                comm.scan_with(imp, send, recv, &self.sum)
            }
            (Buffers::F64 { send, recv }, Collective::Exscan) => {
                comm.exscan_with(imp, send, recv, &self.sum)
            }
            (Buffers::F64 { send, recv }, Collective::ReduceScatter) => {
                comm.reduce_scatter_with(imp, send, recv, &self.sum)
            }
            (_, _) => comm.barrier_with(imp),
        }
    }

    /// One call of the same collective and size through the communicator's
    /// selector instead of the fixed implementation (`autocoll adapt` times
    /// the lottery against the fixed candidates with the same buffers).
    pub fn call_selected(&mut self, comm: &mut Communicator, root: usize) -> Result<()> {
        match (&mut self.bufs, self.target.op()) {
            (Buffers::Varied { bytes, made }, op) => {
                let varied =
                    made.get_or_insert_with(|| Varied::new(op, *bytes, comm.size(), comm.rank()));
                varied.call(comm, op, None, root)
            }
            (Buffers::Bytes { recv, .. }, Collective::Bcast) => comm.bcast(recv, root),
            (Buffers::Bytes { send, recv }, Collective::Scatter) => comm.scatter(send, recv, root),
            (Buffers::Bytes { send, recv }, Collective::Gather) => comm.gather(send, recv, root),
            (Buffers::Bytes { send, recv }, Collective::Allgather) => comm.allgather(send, recv),
            (Buffers::Bytes { send, recv }, Collective::Alltoall) => comm.alltoall(send, recv),
            (Buffers::F64 { send, recv }, Collective::Reduce) => {
                comm.reduce(send, recv, &self.sum, root)
            }
            (Buffers::F64 { send, recv }, Collective::Allreduce) => {
                comm.allreduce(send, recv, &self.sum)
            }
            (Buffers::F64 { send, recv }, Collective::Scan) => comm.scan(send, recv, &self.sum),
            (Buffers::F64 { send, recv }, Collective::Exscan) => comm.exscan(send, recv, &self.sum),
            (Buffers::F64 { send, recv }, Collective::ReduceScatter) => {
                comm.reduce_scatter(send, recv, &self.sum)
            }
            (_, _) => comm.barrier(),
        }
    }
}

/// One call of the library's own collective on the same buffers (the
/// reductions sum `f64`, as autocoll's do).
fn call_library(
    op: Collective,
    library: &dyn Native,
    bufs: &mut Buffers,
    root: usize,
) -> Result<()> {
    let sum = Builtin::Sum;
    match (bufs, op) {
        (Buffers::Bytes { recv, .. }, Collective::Bcast) => library.bcast(recv, root),
        (Buffers::Bytes { send, recv }, Collective::Scatter) => library.scatter(send, recv, root),
        (Buffers::Bytes { send, recv }, Collective::Gather) => library.gather(send, recv, root),
        (Buffers::Bytes { send, recv }, Collective::Allgather) => library.allgather(send, recv),
        (Buffers::Bytes { send, recv }, Collective::Alltoall) => library.alltoall(send, recv),
        (Buffers::F64 { send, recv }, Collective::Reduce) => library.reduce(
            Dtype::F64,
            sum,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
            root,
        ),
        (Buffers::F64 { send, recv }, Collective::Allreduce) => library.allreduce(
            Dtype::F64,
            sum,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
        ),
        (Buffers::F64 { send, recv }, op @ (Collective::Scan | Collective::Exscan)) => library
            .scan(
                Dtype::F64,
                sum,
                bytemuck::cast_slice(send),
                bytemuck::cast_slice_mut(recv),
                op == Collective::Exscan,
            ),
        (Buffers::F64 { send, recv }, Collective::ReduceScatter) => library.reduce_scatter(
            Dtype::F64,
            sum,
            bytemuck::cast_slice(send),
            bytemuck::cast_slice_mut(recv),
        ),
        (Buffers::Varied { made: Some(v), .. }, op) => {
            let sizes = (&v.send_counts[..], &v.recv_counts[..]);
            library.varied(op, (&v.send, &mut v.recv), sizes, root)
        }
        (_, _) => library.barrier(),
    }
}

/// The implementation the harness uses for its own control messages: the
/// leader's decisions reach every rank through it.
pub(crate) fn control_bcast() -> Implementation {
    Implementation {
        op: Collective::Bcast,
        algorithm: Algorithm::Tree(Shape::Binomial),
        seg: None,
    }
}

/// The barrier that separates repetitions and the `barrier` method's calls.
pub(crate) fn separating_barrier() -> Implementation {
    Implementation {
        op: Collective::Barrier,
        algorithm: Algorithm::Dissemination,
        seg: None,
    }
}

/// The gather that brings `truth`'s clock readings to the leader.
pub(crate) fn times_gather() -> Implementation {
    Implementation {
        op: Collective::Gather,
        algorithm: Algorithm::Tree(Shape::Flat),
        seg: None,
    }
}

/// Every rank's `words`, in rank order, on every rank: the harness's own
/// exchange, outside any selector or balancer. By recursive doubling:
/// P log P messages, where a ring sends P (P − 1), a million at 1024
/// simulated ranks.
pub(crate) fn allgather_words(comm: &mut Communicator, words: &[u64]) -> Result<Vec<u64>> {
    let imp = Implementation {
        op: Collective::Allgather,
        algorithm: Algorithm::RecursiveDoubling,
        seg: None,
    };
    let mut all = vec![0u64; words.len() * comm.size()];
    comm.unbalanced(|c| c.allgather_with(&imp, words, &mut all))?;
    Ok(all)
}
