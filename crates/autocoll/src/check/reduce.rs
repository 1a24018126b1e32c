//! The reducing collectives, checked against the serial reference for
//! each element type.

use super::case::{Case, Config, Native};
use super::native::against_native;
use super::reference::{compare, vsize, Inputs, Sample};
use crate::coll::op::Op;
use crate::comm::communicator::Communicator;
use crate::ids::Collective;

pub(super) fn check_reduce<T: Sample>(
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
