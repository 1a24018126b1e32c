//! Issue 2's correctness matrix on the local transport: every collective ×
//! every implementation family × P ∈ {1, 2, 3, 5, 8, 13} × byte lengths
//! {0, 1, 7, 4096, 65539, 1 MiB + 3} × segments {none, 1K, 64K} × roots
//! {0, P−1, P/2}. Each rank checks its own result against a serial
//! reference computed from the seed (see `autocoll::check`).

use autocoll::check::{self, user_tree, Case, Config, Dtype};
use autocoll::{local, Algorithm, Builtin, Collective, Implementation, Shape};

const SIZES: [usize; 6] = [1, 2, 3, 5, 8, 13];
const BYTES: [usize; 6] = [0, 1, 7, 4096, 65539, (1 << 20) + 3];
const SEGS: [Option<usize>; 3] = [None, Some(1024), Some(64 * 1024)];

fn shapes(p: usize) -> Vec<Shape> {
    vec![
        Shape::Flat,
        Shape::Chain,
        Shape::BackwardChain,
        Shape::Binary,
        Shape::Kary(3),
        Shape::Binomial,
        Shape::Knomial(3),
        user_tree(p, 99),
    ]
}

fn implementations(op: Collective, p: usize) -> Vec<Implementation> {
    let segs: &[Option<usize>] = if op == Collective::Barrier {
        &[None]
    } else {
        &SEGS
    };
    let mut out = Vec::new();
    for shape in shapes(p) {
        for &seg in segs {
            out.push(Implementation::tree(op, shape.clone(), seg).unwrap());
        }
    }
    for alg in op.named_algorithms() {
        out.push(Implementation::new(op, alg.clone(), None).unwrap());
    }
    out
}

fn roots(op: Collective, p: usize) -> Vec<usize> {
    if !op.rooted() {
        return vec![0];
    }
    let mut r = vec![0, p - 1, p / 2];
    r.sort_unstable();
    r.dedup();
    r
}

fn cases(op: Collective, p: usize) -> Vec<Case> {
    let bytes: &[usize] = if op == Collective::Barrier {
        &[0]
    } else {
        &BYTES
    };
    let mut out = Vec::new();
    for imp in implementations(op, p) {
        for &b in bytes {
            for root in roots(op, p) {
                out.push(Case {
                    imp: imp.clone(),
                    bytes: b,
                    root,
                });
            }
        }
    }
    out
}

fn run_matrix(op: Collective, config: Config) {
    let mut total = 0;
    for p in SIZES {
        let cases = cases(op, p);
        total += cases.len();
        let failures: Vec<_> = local::run(p, |mut comm| check::run(&mut comm, &cases, &config))
            .into_iter()
            .flatten()
            .collect();
        assert!(
            failures.is_empty(),
            "{op} on {p} ranks: {:#?}",
            &failures[..failures.len().min(5)]
        );
    }
    assert!(total > 0);
}

#[test]
fn bcast_matrix() {
    run_matrix(Collective::Bcast, Config::default());
}

#[test]
fn reduce_matrix() {
    run_matrix(Collective::Reduce, Config::default());
}

#[test]
fn scatter_matrix() {
    run_matrix(Collective::Scatter, Config::default());
}

#[test]
fn gather_matrix() {
    run_matrix(Collective::Gather, Config::default());
}

#[test]
fn allreduce_matrix() {
    run_matrix(Collective::Allreduce, Config::default());
}

#[test]
fn allgather_matrix() {
    run_matrix(Collective::Allgather, Config::default());
}

#[test]
fn barrier_matrix() {
    run_matrix(Collective::Barrier, Config::default());
}

/// Every element type with every reduction it has, through every allreduce
/// algorithm and a segmented reduce, at sizes that do not split evenly.
#[test]
fn every_type_and_reduction() {
    let mut cases = Vec::new();
    for alg in [
        Algorithm::Ring,
        Algorithm::RecursiveDoubling,
        Algorithm::Rabenseifner,
    ] {
        cases.push(Implementation::new(Collective::Allreduce, alg, None).unwrap());
    }
    cases.push(Implementation::tree(Collective::Allreduce, Shape::Knomial(3), Some(64)).unwrap());
    cases.push(Implementation::tree(Collective::Reduce, Shape::Binary, Some(40)).unwrap());
    for dtype in Dtype::ALL {
        for reduce in Builtin::ALL {
            let float = matches!(dtype, Dtype::F32 | Dtype::F64);
            if float && matches!(reduce, Builtin::Band | Builtin::Bor | Builtin::Bxor) {
                continue;
            }
            let config = Config {
                seed: 7,
                dtype,
                reduce,
            };
            let list: Vec<Case> = cases
                .iter()
                .flat_map(|imp| {
                    [0, 8, 1000].map(|bytes| Case {
                        imp: imp.clone(),
                        bytes,
                        root: 2,
                    })
                })
                .collect();
            for p in [3, 6] {
                let failures: Vec<_> =
                    local::run(p, |mut comm| check::run(&mut comm, &list, &config))
                        .into_iter()
                        .flatten()
                        .collect();
                assert!(
                    failures.is_empty(),
                    "{dtype:?} {reduce:?} p={p}: {failures:#?}"
                );
            }
        }
    }
}
