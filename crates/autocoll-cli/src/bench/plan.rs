//! The plan of a sweep: every (implementation, size) a rank count runs,
//! with the MPI library's collective first at each size when it is the
//! baseline. Every rank builds the same plan from the same arguments, so
//! the ranks never exchange it; `tune` plans its sweeps here too.

use autocoll::measure::{self, Baseline, Method, Point};
use autocoll::{Collective, Implementation};
use autocoll_tune::row::Row;

use crate::args::Chosen;

/// One point of the sweep on one rank count, with the methods to run.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub subject: Subject,
    pub methods: Vec<Method>,
}

/// What one planned point times.
#[derive(Clone, Debug)]
pub(crate) enum Subject {
    /// One of autocoll's implementations.
    Ours(Point),
    /// The MPI library's collective, with the id its rows carry.
    Library(Baseline, String),
}

impl Subject {
    pub(crate) fn id(&self) -> String {
        match self {
            Subject::Ours(p) => p.imp.to_string(),
            Subject::Library(_, id) => id.clone(),
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        match self {
            Subject::Ours(p) => p.bytes,
            Subject::Library(b, _) => b.bytes,
        }
    }

    /// The row of `m`, a measurement of this on `ranks` ranks.
    pub(crate) fn row(&self, ranks: usize, m: autocoll::measure::Measurement) -> Row {
        let op = self.op().to_string();
        Row::new(&op, self.id(), (self.bytes(), self.root()), ranks, m)
    }

    fn root(&self) -> usize {
        match self {
            Subject::Ours(p) => p.root,
            Subject::Library(b, _) => b.root,
        }
    }

    fn op(&self) -> Collective {
        match self {
            Subject::Ours(p) => p.imp.op,
            Subject::Library(b, _) => b.op,
        }
    }
}

/// Everything every rank needs to build the same plan.
pub(super) struct Sweep<'a> {
    pub(super) op: Collective,
    pub(super) impls: &'a Chosen,
    pub(super) sizes: &'a [usize],
    pub(super) root: usize,
    pub(super) methods: &'a [Method],
    /// The id of the library's rows, when timing it as a baseline.
    pub(super) baseline: Option<String>,
}

/// The sizes in effect: rounded down to whole elements, without repeats.
pub(crate) fn sizes(op: Collective, asked: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &b in asked {
        let b = measure::effective_bytes(op, b);
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// autocoll's implementations only (no baseline), for `tune`.
pub(crate) fn plan_ours(
    op: Collective,
    impls: &Chosen,
    sizes: &[usize],
    root: usize,
    methods: &[Method],
) -> Vec<Planned> {
    plan(&Sweep {
        op,
        impls,
        sizes,
        root,
        methods,
        baseline: None,
    })
}

/// Every (implementation, size) of the sweep on one rank count; with a
/// baseline, the library's collective comes first at each size.
pub(super) fn plan(sweep: &Sweep) -> Vec<Planned> {
    let mut out = Vec::new();
    let root = sweep.root;
    let planned = |subject| Planned {
        subject,
        methods: sweep.methods.to_vec(),
    };
    for &bytes in sweep.sizes {
        if let Some(id) = &sweep.baseline {
            let point = Baseline {
                op: sweep.op,
                bytes,
                root,
            };
            out.push(planned(Subject::Library(point, id.clone())));
        }
        let chosen = sweep.impls.of(sweep.op, || {
            Implementation::all(sweep.op, &segment_sizes(bytes))
        });
        for imp in chosen {
            out.push(planned(Subject::Ours(Point { imp, bytes, root })));
        }
    }
    out
}

/// Powers of two from 1K up to twice the message size.
pub(crate) fn segment_sizes(bytes: usize) -> Vec<usize> {
    std::iter::successors(Some(1024usize), |s| s.checked_mul(2))
        .take_while(|&s| s <= bytes.saturating_mul(2))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sizes_run_from_1k_to_twice_the_message() {
        assert_eq!(segment_sizes(4096), vec![1024, 2048, 4096, 8192]);
        assert_eq!(segment_sizes(100), Vec::<usize>::new());
        assert_eq!(segment_sizes(512), vec![1024]);
    }

    #[test]
    fn reductions_round_to_whole_f64() {
        assert_eq!(
            sizes(Collective::Allreduce, &[1, 15, 16, 17]),
            vec![0, 8, 16]
        );
        assert_eq!(sizes(Collective::Bcast, &[15]), vec![15]);
    }
}
