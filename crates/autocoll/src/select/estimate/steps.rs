//! A plan's steps: every rank's sends and receives, in the order the code
//! under `coll` issues them.

/// One step of a rank's program.
#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
    Send { to: usize, bytes: usize },
    Recv { from: usize },
}

/// Every rank's sends and receives, in the order its code issues them.
pub(super) struct Plan {
    pub(super) ops: Vec<Vec<Op>>,
}

impl Plan {
    pub(super) fn send(&mut self, from: usize, to: usize, bytes: usize) {
        self.ops[from].push(Op::Send { to, bytes });
    }

    pub(super) fn recv(&mut self, at: usize, from: usize) {
        self.ops[at].push(Op::Recv { from });
    }
}

/// The lengths of the segments of a `total`-byte message.
pub(super) fn pieces(total: usize, seg: usize) -> impl Iterator<Item = usize> {
    let seg = seg.max(1);
    (0..total.div_ceil(seg)).map(move |k| seg.min(total - k * seg))
}
