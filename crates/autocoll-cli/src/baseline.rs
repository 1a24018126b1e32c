//! The MPI library's own collective as a baseline for `bench`: its id in
//! the results, and `--baseline-alg`, which forces one of Open MPI's tuned
//! algorithms for the run.

use autocoll::select::format_bytes;
use autocoll::Collective;

use crate::failure::Failure;

/// An Open MPI tuned algorithm forced for the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forced {
    /// The algorithm's id (1.. as `ompi_info` lists them).
    pub alg: u32,
    /// Its segment size in bytes; Open MPI's default for a forced
    /// algorithm is 0, unsegmented.
    pub seg: Option<usize>,
}

/// The id of the library's collective in bench rows: `<op>:mpi`, or
/// `<op>:mpi:alg=<N>[:seg=<S>]` when Open MPI's algorithm N was forced. It
/// is not an [`autocoll::Implementation`]: nothing but `bench --baseline`
/// can run it.
pub fn id(op: Collective, forced: Option<Forced>) -> String {
    match forced {
        Some(Forced { alg, seg: Some(s) }) => format!("{op}:mpi:alg={alg}:seg={}", format_bytes(s)),
        Some(Forced { alg, seg: None }) => format!("{op}:mpi:alg={alg}"),
        None => format!("{op}:mpi"),
    }
}

/// Open MPI 4.1's tuned algorithms of `op`, by id (index 0 is `ignore`,
/// the library's own choice), as `ompi_info --param coll tuned --level 9`
/// lists them.
pub fn ompi_algorithms(op: Collective) -> &'static [&'static str] {
    match op {
        Collective::Bcast => BCAST,
        Collective::Reduce => REDUCE,
        Collective::Allreduce => ALLREDUCE,
        Collective::Scatter => SCATTER,
        Collective::Gather => GATHER,
        Collective::Allgather => ALLGATHER,
        Collective::Barrier => BARRIER,
        Collective::Alltoall => ALLTOALL,
        Collective::Scan | Collective::Exscan => SCAN,
        Collective::ReduceScatter => REDUCE_SCATTER_BLOCK,
        Collective::Allgatherv => ALLGATHERV,
        Collective::Alltoallv => ALLTOALLV,
        // No tuned algorithms of their own.
        Collective::Gatherv | Collective::Scatterv => &["ignore"],
    }
}

const ALLGATHERV: &[&str] = &["ignore", "default", "bruck", "ring", "neighbor", "two_proc"];
const ALLTOALLV: &[&str] = &["ignore", "basic_linear", "pairwise"];

const BCAST: &[&str] = &[
    "ignore",
    "basic_linear",
    "chain",
    "pipeline",
    "split_binary_tree",
    "binary_tree",
    "binomial",
    "knomial",
    "scatter_allgather",
    "scatter_allgather_ring",
];
const REDUCE: &[&str] = &[
    "ignore",
    "linear",
    "chain",
    "pipeline",
    "binary",
    "binomial",
    "in-order_binary",
    "rabenseifner",
];
const ALLREDUCE: &[&str] = &[
    "ignore",
    "basic_linear",
    "nonoverlapping",
    "recursive_doubling",
    "ring",
    "segmented_ring",
    "rabenseifner",
];
const SCATTER: &[&str] = &["ignore", "basic_linear", "binomial", "linear_nb"];
const GATHER: &[&str] = &["ignore", "basic_linear", "binomial", "linear_sync"];
const ALLGATHER: &[&str] = &[
    "ignore",
    "linear",
    "bruck",
    "recursive_doubling",
    "ring",
    "neighbor",
    "two_proc",
];
const BARRIER: &[&str] = &[
    "ignore",
    "linear",
    "double_ring",
    "recursive_doubling",
    "bruck",
    "two_proc",
    "tree",
];
const ALLTOALL: &[&str] = &[
    "ignore",
    "linear",
    "pairwise",
    "modified_bruck",
    "linear_sync",
    "two_proc",
];
const SCAN: &[&str] = &["ignore", "linear", "recursive_doubling"];
const REDUCE_SCATTER_BLOCK: &[&str] = &[
    "ignore",
    "basic_linear",
    "recursive_doubling",
    "recursive_halving",
    "butterfly",
];

/// The MCA parameters (as `OMPI_MCA_*` environment variables) that make
/// Open MPI's tuned component run algorithm `forced` for `op`, after
/// checking that `op` has such an algorithm.
pub fn mca_env(op: Collective, forced: Forced) -> Result<Vec<(String, String)>, Failure> {
    let alg = forced.alg;
    let names = ompi_algorithms(op);
    let name = autocoll::select::export::mpi_name(op);
    if alg == 0 || alg as usize >= names.len() {
        let known: Vec<String> = names
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, n)| format!("{i} {n}"))
            .collect();
        return Err(Failure::Usage(format!(
            "--baseline-alg {alg}: Open MPI 4.1 has no {op} algorithm {alg} (it has {})",
            known.join(", ")
        )));
    }
    let mut env = vec![
        ("OMPI_MCA_coll_tuned_use_dynamic_rules".into(), "1".into()),
        (
            format!("OMPI_MCA_coll_tuned_{name}_algorithm"),
            alg.to_string(),
        ),
    ];
    if let Some(seg) = forced.seg {
        env.push((
            format!("OMPI_MCA_coll_tuned_{name}_algorithm_segmentsize"),
            seg.to_string(),
        ));
    }
    Ok(env)
}

/// Sets [`mca_env`] in this process's environment, where `MPI_Init` reads
/// MCA parameters, overriding any given to mpirun for the same parameter.
/// Call it before MPI is initialised and before any thread starts (a
/// thread reading the environment while it changes is undefined
/// behaviour in C).
pub fn force(op: Collective, forced: Forced) -> Result<(), Failure> {
    for (key, value) in mca_env(op, forced)? {
        std::env::set_var(key, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_forced_algorithm() {
        assert_eq!(id(Collective::Bcast, None), "bcast:mpi");
        let ring = Forced { alg: 4, seg: None };
        assert_eq!(id(Collective::Allreduce, Some(ring)), "allreduce:mpi:alg=4");
        let pipeline = Forced {
            alg: 3,
            seg: Some(8192),
        };
        assert_eq!(
            id(Collective::Bcast, Some(pipeline)),
            "bcast:mpi:alg=3:seg=8K"
        );
    }

    #[test]
    fn algorithms_are_checked_against_open_mpi_4_1() {
        let forced = Forced {
            alg: 7,
            seg: Some(4096),
        };
        let env = mca_env(Collective::Reduce, forced).ok().unwrap();
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(env[1], pair("OMPI_MCA_coll_tuned_reduce_algorithm", "7"));
        assert_eq!(
            env[2],
            pair("OMPI_MCA_coll_tuned_reduce_algorithm_segmentsize", "4096")
        );
        for (op, bad) in [(Collective::Scatter, 4), (Collective::Bcast, 0)] {
            match mca_env(
                op,
                Forced {
                    alg: bad,
                    seg: None,
                },
            ) {
                Err(Failure::Usage(m)) => assert!(m.contains("1 basic_linear"), "{m}"),
                _ => panic!("{op} algorithm {bad} accepted"),
            }
        }
    }

    #[test]
    fn the_export_ids_name_the_same_algorithms() {
        use autocoll::select::export::ompi_algorithm;
        for op in Collective::ALL {
            for imp in autocoll::Implementation::all(op, &[8192]) {
                let (n, name, _, _) = ompi_algorithm(&imp);
                assert_eq!(ompi_algorithms(op)[n as usize], name, "{imp}");
            }
        }
    }
}
