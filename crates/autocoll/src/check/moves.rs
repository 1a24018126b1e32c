//! The collectives that move bytes without combining them, checked
//! against the serial reference.

use super::case::{Case, Native};
use super::native::{against_native, native_result};
use super::reference::{compare, vsize, Inputs};
use crate::comm::communicator::Communicator;
use crate::ids::Collective;

/// The collectives that move bytes without combining them.
pub(super) fn check_moves(
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
