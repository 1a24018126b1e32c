use super::*;

#[test]
fn the_native_candidate_is_op_colon_mpi_and_takes_no_parameters() {
    for op in Collective::ALL {
        let imp: Implementation = format!("{op}:mpi").parse().unwrap();
        assert_eq!(imp, Implementation::native(op));
        assert_eq!(imp.to_string(), format!("{op}:mpi"));
    }
    assert!("bcast:mpi:seg=1K".parse::<Implementation>().is_err());
    assert!("bcast:mpi:k=2".parse::<Implementation>().is_err());
}
use proptest::prelude::*;

/// The shapes a level of `hier` may take.
fn level() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Flat),
        Just(Shape::Chain),
        Just(Shape::BackwardChain),
        Just(Shape::Binary),
        (2usize..64).prop_map(Shape::Kary),
        Just(Shape::Binomial),
        (2usize..64).prop_map(Shape::Knomial),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        level(),
        (level(), level(), level()).prop_map(|(inner, outer, top)| Shape::Hier(Box::new(Hier {
            inner,
            outer,
            top
        }))),
        proptest::collection::vec(0usize..100, 1..20).prop_map(|mut v| {
            v[0] = 0;
            Shape::User(v)
        }),
    ]
}

fn implementation() -> impl Strategy<Value = Implementation> {
    let op = proptest::sample::select(Collective::ALL.to_vec());
    let seg = prop_oneof![Just(None), (1usize..1 << 26).prop_map(Some)];
    (op, shape(), seg, 0usize..4, 1usize..64).prop_map(|(op, shape, seg, named, k)| {
        let algs = op.named_algorithms();
        if op.regular() == Collective::Alltoall && named == 0 {
            return Implementation {
                op,
                algorithm: Algorithm::Linear(Some(k)),
                seg: None,
            };
        }
        if op.scans() && named == 0 {
            return Implementation {
                op,
                algorithm: Algorithm::Linear(None),
                seg,
            };
        }
        if named > 0 && !algs.is_empty() {
            let algorithm = algs[named % algs.len()].clone();
            return Implementation {
                op,
                algorithm,
                seg: None,
            };
        }
        let seg = if op == Collective::Barrier { None } else { seg };
        Implementation {
            op,
            algorithm: Algorithm::Tree(shape),
            seg,
        }
    })
}

proptest! {
    #[test]
    fn print_then_parse_round_trips(imp in implementation()) {
        let text = imp.to_string();
        let back: Implementation = text.parse().unwrap();
        prop_assert_eq!(&back, &imp);
        prop_assert_eq!(back.to_string(), text);
    }
}

#[test]
fn examples_from_the_docs_parse() {
    for id in [
        "bcast:binomial",
        "bcast:chain:seg=16K",
        "bcast:knomial:k=4:seg=64K",
        "scatter:binary:seg=4K",
        "allreduce:binomial:seg=64K",
        "barrier:binomial",
        "allreduce:ring",
        "allreduce:recursive-doubling",
        "allreduce:rabenseifner",
        "allgather:ring",
        "allgather:recursive-doubling",
        "barrier:dissemination",
        "gather:user:parents=0.0.1.1",
        "allreduce:hier:inner=flat:outer=binomial:top=binomial:seg=16K",
        "bcast:hier:inner=knomial4:outer=kary3:top=backward-chain",
        "barrier:hier:inner=binomial:outer=binomial:top=binomial",
    ] {
        let imp: Implementation = id.parse().unwrap();
        assert_eq!(imp.to_string(), id);
    }
    let imp: Implementation = "bcast:knomial:seg=1m:k=3".parse().unwrap();
    assert_eq!(imp.to_string(), "bcast:knomial:k=3:seg=1M");
    let imp: Implementation = "reduce:chain:seg=1000".parse().unwrap();
    assert_eq!(imp.seg, Some(1000));
    // Levels left out are binomial; printing names all three.
    let imp: Implementation = "allreduce:hier:seg=16K:outer=chain".parse().unwrap();
    assert_eq!(
        imp.to_string(),
        "allreduce:hier:inner=binomial:outer=chain:top=binomial:seg=16K"
    );
}

#[test]
fn bad_ids_say_what_is_wrong() {
    for (id, says) in [
        ("", "unknown collective"),
        ("bcst:chain", "unknown collective `bcst`"),
        ("bcast", "missing the algorithm"),
        ("bcast:ring", "bcast has no algorithm `ring`"),
        ("bcast:tree", "unknown algorithm `tree`"),
        ("bcast:kary", "kary needs k"),
        ("bcast:kary:k=1", "k must be at least 2"),
        ("bcast:binomial:k=2", "takes no k"),
        ("bcast:chain:seg=0", "at least one byte"),
        ("bcast:chain:seg=4Q", "unknown size suffix"),
        ("bcast:chain:seg=abc", "not a byte count"),
        ("bcast:chain:seg=1K:seg=2K", "given twice"),
        ("bcast:chain:depth=3", "unknown parameter `depth`"),
        ("bcast:chain:seg", "not key=value"),
        ("allreduce:ring:seg=1K", "takes no segment size"),
        ("barrier:chain:seg=1K", "no data to segment"),
        ("bcast:user", "user needs parents"),
        ("bcast:user:parents=0.x", "not a position"),
        ("bcast:chain:seg=99999999999999999999G", "too large"),
        ("bcast:chain:seg=17179869184G", "too large"),
        ("bcast:hier:inner=user", "not a level shape"),
        ("bcast:hier:inner=hier", "not a level shape"),
        ("bcast:hier:outer=kary", "kary needs its k, e.g. kary4"),
        ("bcast:hier:outer=kary1", "k >= 2"),
        ("bcast:hier:top=binomial2", "binomial takes no k"),
        (
            "bcast:hier:top=knomial99999999999999999999999",
            "k is too large",
        ),
        ("bcast:hier:inner=flat:inner=chain", "given twice"),
        ("bcast:binomial:inner=flat", "takes no inner, outer or top"),
        ("bcast:hier:k=2", "takes no k"),
    ] {
        let err = id.parse::<Implementation>().unwrap_err().to_string();
        assert!(err.contains(says), "`{id}` gave `{err}`, expected `{says}`");
    }
}

#[test]
fn all_lists_every_family() {
    let bcast = Implementation::all(Collective::Bcast, &[1024]);
    assert_eq!(bcast.len(), 16);
    let barrier = Implementation::all(Collective::Barrier, &[1024]);
    assert_eq!(barrier.len(), 9);
    assert!(barrier.iter().all(|i| i.seg.is_none()));
    let allreduce = Implementation::all(Collective::Allreduce, &[]);
    assert_eq!(allreduce.len(), 11);
    assert!(allreduce
        .iter()
        .any(|i| i.to_string() == "allreduce:hier:inner=binomial:outer=binomial:top=binomial"));
}
