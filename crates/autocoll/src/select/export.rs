//! A tuning [`Table`] as the selection files Open MPI and MPICH read.
//!
//! **Open MPI** (`coll_tuned_dynamic_rules_filename`, classic format): the
//! number of collectives; per collective its COLLTYPE id, the number of
//! communicator-size sections, and per section its size, the number of
//! message-size rules and `msg_size alg faninout segsize` lines (the first
//! size 0, then ascending). Open MPI 4.1 uses, for a communicator of P
//! ranks, the last section whose size is ≤ P, and in it the last rule whose
//! size is ≤ the message's. Its message size is bytes per rank for bcast,
//! reduce and allreduce, P × bytes per rank for allgather (so allgather
//! gets a section per communicator size), and (4.1 counts
//! the type's size, not the count) P for gather and scatter of bytes: so
//! gather and scatter can only be told apart by communicator size, and get
//! the winner of the largest message measured. Format 2 adds Open MPI
//! ≥ 5.0.7's `rule-file-version-2` header and a fifth field (max requests,
//! 0 = default).
//!
//! **MPICH** (`MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE`): nested
//! `"collective=…"`, `"comm_type=intra"`, `"comm_size<=N"`,
//! `"avg_msg_size<=N"` (bcast, reduce, allreduce: bytes per rank) or
//! `"total_msg_size<=N"` (allgather, gather, scatter: all ranks' bytes,
//! taken at the section's largest size) keys ending in
//! `"algorithm=MPIR_<Op>_intra_<name>"`.
//! MPICH 4.0 offers few blocking algorithms; each winner maps to the nearest
//! one, guarded by the conditions MPICH's own file uses (built-in op, count
//! ≥ the next power of two) where the algorithm needs them. Every blocking
//! collective gets an entry, since MPICH needs a match for each.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{json, Map, Value};

use super::implementation::{Algorithm, Implementation};
use super::table::{Rule, Table};
use crate::ids::Collective;
use crate::tree::Shape;

/// Open MPI's COLLTYPE id of a collective.
pub fn ompi_coll_id(op: Collective) -> u32 {
    match op {
        Collective::Allgather => 0,
        Collective::Allreduce => 2,
        Collective::Alltoall => 3,
        Collective::Barrier => 6,
        Collective::Exscan => 8,
        Collective::Scan => 14,
        Collective::Bcast => 7,
        Collective::Gather => 9,
        Collective::Reduce => 11,
        Collective::ReduceScatter => 13,
        Collective::Scatter => 15,
        Collective::Allgatherv => 1,
        Collective::Alltoallv => 4,
        Collective::Gatherv => 10,
        Collective::Scatterv => 16,
    }
}

/// Whether Open MPI 4.1's tuned component reads rules for `op`: it has no
/// algorithms of its own for gatherv and scatterv.
pub fn ompi_tunes(op: Collective) -> bool {
    !matches!(op, Collective::Gatherv | Collective::Scatterv)
}

/// The Open MPI 4.1 tuned algorithm nearest to `imp`: (id, name, faninout,
/// segment size). Names are those of `ompi_info --param coll tuned`.
pub fn ompi_algorithm(imp: &Implementation) -> (u32, &'static str, usize, usize) {
    let seg = imp.seg.unwrap_or(0);
    let shape = imp.shape();
    let flat = shape == Some(&Shape::Flat);
    let chain = matches!(shape, Some(Shape::Chain | Shape::BackwardChain));
    let (id, name, fan) = match (imp.op, &imp.algorithm) {
        // Algorithm 0 hands the call back to Open MPI's own decision.
        (_, Algorithm::Native) => (0, "ignore", 0),
        (Collective::Bcast, _) if flat => (1, "basic_linear", 0),
        (Collective::Bcast, _) if chain => (3, "pipeline", 0),
        (Collective::Bcast, Algorithm::Tree(Shape::Binary | Shape::Kary(_))) => {
            (5, "binary_tree", 0)
        }
        (Collective::Bcast, Algorithm::Tree(Shape::Knomial(k))) => (7, "knomial", *k),
        (Collective::Bcast, _) => (6, "binomial", 0),
        (Collective::Reduce, _) if flat => (1, "linear", 0),
        (Collective::Reduce, _) if chain => (3, "pipeline", 0),
        (Collective::Reduce, Algorithm::Tree(Shape::Binary | Shape::Kary(_))) => (4, "binary", 0),
        (Collective::Reduce, _) => (5, "binomial", 0),
        (Collective::Allreduce, Algorithm::Ring) => (4, "ring", 0),
        (Collective::Allreduce, Algorithm::RecursiveDoubling) => (3, "recursive_doubling", 0),
        (Collective::Allreduce, Algorithm::Rabenseifner) => (6, "rabenseifner", 0),
        (Collective::Allreduce, _) if flat => (1, "basic_linear", 0),
        (Collective::Allreduce, _) => (2, "nonoverlapping", 0),
        (Collective::Allgather, Algorithm::Ring) => (4, "ring", 0),
        (Collective::Allgather, Algorithm::RecursiveDoubling) => (3, "recursive_doubling", 0),
        (Collective::Allgather, _) => (1, "linear", 0),
        (Collective::Scatter | Collective::Gather, _) if flat => (1, "basic_linear", 0),
        (Collective::Scatter | Collective::Gather, _) => (2, "binomial", 0),
        (Collective::Barrier, Algorithm::Dissemination) => (4, "bruck", 0),
        (Collective::Barrier, _) if flat => (1, "linear", 0),
        (Collective::Barrier, _) => (6, "tree", 0),
        (Collective::Alltoall, Algorithm::Bruck) => (3, "modified_bruck", 0),
        (Collective::Alltoall, Algorithm::Linear(_)) => (4, "linear_sync", 0),
        (Collective::Alltoall, _) => (2, "pairwise", 0),
        (Collective::Scan | Collective::Exscan, Algorithm::RecursiveDoubling) => {
            (2, "recursive_doubling", 0)
        }
        (Collective::Scan | Collective::Exscan, _) => (1, "linear", 0),
        // The block form's algorithms: no ring or pairwise; butterfly is
        // the one that also sends each block's share once.
        (Collective::ReduceScatter, Algorithm::Tree(_)) => (1, "basic_linear", 0),
        (Collective::ReduceScatter, Algorithm::RecursiveHalving) => (3, "recursive_halving", 0),
        (Collective::ReduceScatter, Algorithm::RecursiveDoubling) => (2, "recursive_doubling", 0),
        (Collective::ReduceScatter, _) => (4, "butterfly", 0),
        (Collective::Allgatherv, Algorithm::Ring) => (3, "ring", 0),
        (Collective::Allgatherv, Algorithm::RecursiveDoubling) => (2, "bruck", 0),
        (Collective::Allgatherv, _) => (1, "default", 0),
        (Collective::Alltoallv, Algorithm::Linear(_)) => (1, "basic_linear", 0),
        (Collective::Alltoallv, _) => (2, "pairwise", 0),
        (Collective::Gatherv | Collective::Scatterv, _) => (0, "ignore", 0),
    };
    let seg = match (imp.op, id) {
        (Collective::Bcast | Collective::Reduce, 2..=7) => seg,
        _ => 0,
    };
    (id, name, fan, seg)
}

/// The outstanding requests an Open MPI algorithm may keep (format 2's
/// last field): `alltoall:linear`'s `k` for `linear_sync`, else 0, Open
/// MPI's "no limit" (as linear's default window is on the sizes a rules
/// file is tuned for).
fn ompi_max_requests(imp: &Implementation) -> usize {
    match (imp.op, &imp.algorithm) {
        (Collective::Alltoall, Algorithm::Linear(Some(k))) => *k,
        _ => 0,
    }
}

/// The message size Open MPI 4.1 computes for `bytes` per rank on `ranks`.
pub fn ompi_msg_size(op: Collective, ranks: usize, bytes: usize) -> usize {
    match op {
        Collective::Bcast | Collective::Reduce | Collective::Allreduce => bytes,
        // 4.1 counts the datatype's size times P for these, not the count.
        Collective::Scan | Collective::Exscan => ranks,
        Collective::Allgather | Collective::Alltoall | Collective::ReduceScatter => ranks * bytes,
        Collective::Gather | Collective::Scatter => ranks,
        Collective::Allgatherv => ranks * bytes,
        // 4.1 decides alltoallv without a size.
        Collective::Barrier
        | Collective::Alltoallv
        | Collective::Gatherv
        | Collective::Scatterv => 0,
    }
}

/// The table as an Open MPI dynamic rules file; `version` 1 (classic, read
/// by 4.1) or 2 (with the header and max-requests field of ≥ 5.0.7).
pub fn to_ompi(table: &Table, version: u32) -> String {
    let ops: Vec<Collective> = Collective::ALL
        .into_iter()
        .filter(|op| ompi_tunes(*op) && table.rules.iter().any(|r| r.op == *op))
        .collect();
    let mut out = String::new();
    if version >= 2 {
        out.push_str("rule-file-version-2\n");
    }
    let _ = writeln!(
        out,
        "# Open MPI coll_tuned dynamic rules written by autocoll {}",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, "{} # collectives", ops.len());
    for op in ops {
        let rules: Vec<&Rule> = table.rules.iter().filter(|r| r.op == op).collect();
        let sizes = ompi_sizes(&rules, op);
        let _ = writeln!(
            out,
            "{} # {op}\n{} # communicator sizes",
            ompi_coll_id(op),
            sizes.len()
        );
        for p in sizes {
            let lines = ompi_section(&rules, op, p);
            let _ = writeln!(
                out,
                "{p} # communicator size\n{} # message sizes",
                lines.len()
            );
            for (msg, imp) in lines {
                let (alg, name, fan, seg) = ompi_algorithm(imp);
                let extra = match version {
                    1 => String::new(),
                    _ => format!(" {}", ompi_max_requests(imp)),
                };
                let _ = writeln!(out, "{msg} {alg} {fan} {seg}{extra} # {name} <- {imp}");
            }
        }
    }
    out
}

/// The communicator sizes that start a section. Allgather's and
/// alltoall's message size grows with P, so their byte boundaries hold
/// for one size only: each gets a section per size (up to a bound;
/// beyond, the range's first size).
fn ompi_sizes(rules: &[&Rule], op: Collective) -> BTreeSet<usize> {
    const MOST: usize = 1024;
    let grows = matches!(
        op,
        Collective::Allgather
            | Collective::Allgatherv
            | Collective::Alltoall
            | Collective::ReduceScatter
    );
    let every = |r: &Rule| grows && r.ranks.end() - r.ranks.start() < MOST;
    rules
        .iter()
        .flat_map(|r| {
            if every(r) {
                r.ranks.clone()
            } else {
                *r.ranks.start()..=*r.ranks.start()
            }
        })
        .collect()
}

/// The rules of one communicator size as (Open MPI message size, winner),
/// the first at 0, ascending, neighbours with the same winner merged.
fn ompi_section<'a>(
    rules: &[&'a Rule],
    op: Collective,
    p: usize,
) -> Vec<(usize, &'a Implementation)> {
    let mut here: Vec<&Rule> = rules
        .iter()
        .copied()
        .filter(|r| r.ranks.contains(&p))
        .collect();
    here.sort_by_key(|r| *r.bytes.start());
    if matches!(
        op,
        Collective::Gather
            | Collective::Scatter
            | Collective::Barrier
            | Collective::Scan
            | Collective::Exscan
    ) {
        // One rule per size: the winner at the largest message measured.
        return here.last().map(|r| vec![(0, &r.imp)]).unwrap_or_default();
    }
    let mut lines: Vec<(usize, &Implementation)> = Vec::new();
    for r in here {
        let msg = if lines.is_empty() {
            0
        } else {
            ompi_msg_size(op, p, *r.bytes.start())
        };
        if lines.last().map(|l| ompi_algorithm(l.1)) != Some(ompi_algorithm(&r.imp)) {
            lines.push((msg, &r.imp));
        }
    }
    lines
}

/// MPICH 4.0's nearest blocking algorithm to `imp`, as the JSON subtree
/// that selects it (with the guards the algorithm needs).
pub fn mpich_algorithm(imp: &Implementation) -> Value {
    let pick = mpich_pick;
    let large =
        imp.seg.is_some() || matches!(imp.shape(), Some(Shape::Chain | Shape::BackwardChain));
    // MPICH's reduce-scatter based algorithms want a built-in op and at
    // least a power of two of elements; its own file falls back like this.
    let guarded = |big: &str, small: &str| {
        json!({
            "is_op_built_in=yes": { "count<pow2": pick(small), "count=any": pick(big) },
            "is_op_built_in=no": pick(small),
        })
    };
    match (imp.op, &imp.algorithm) {
        (Collective::Bcast, _) if large => pick("Bcast_intra_scatter_ring_allgather"),
        (Collective::Bcast, _) => pick("Bcast_intra_binomial"),
        (Collective::Reduce, _) if large => guarded(
            "Reduce_intra_reduce_scatter_gather",
            "Reduce_intra_binomial",
        ),
        (Collective::Reduce, _) => pick("Reduce_intra_binomial"),
        (Collective::Allreduce, Algorithm::RecursiveDoubling) => {
            pick("Allreduce_intra_recursive_doubling")
        }
        (Collective::Allreduce, Algorithm::Tree(_)) if !large => {
            pick("Allreduce_intra_recursive_doubling")
        }
        (Collective::Allreduce, _) => guarded(
            "Allreduce_intra_reduce_scatter_allgather",
            "Allreduce_intra_recursive_doubling",
        ),
        (Collective::Allgather, Algorithm::Ring) => pick("Allgather_intra_ring"),
        (Collective::Allgather, Algorithm::RecursiveDoubling) => {
            pick("Allgather_intra_recursive_doubling")
        }
        (Collective::Allgather, _) => pick("Allgather_intra_brucks"),
        (Collective::Gather, _) => pick("Gather_intra_binomial"),
        (Collective::Scatter, _) => pick("Scatter_intra_binomial"),
        (Collective::Barrier, _) => pick("Barrier_intra_dissemination"),
        // MPICH 4.0's only intra algorithms for them (and `Scan_intra_smp`).
        (Collective::Scan, _) => pick("Scan_intra_recursive_doubling"),
        (Collective::Exscan, _) => pick("Exscan_intra_recursive_doubling"),
        (Collective::Alltoall, alg) => mpich_alltoall("Alltoall", alg),
        (Collective::ReduceScatter, alg) => mpich_reduce_scatter(alg),
        (Collective::Allgatherv, Algorithm::Ring) => pick("Allgatherv_intra_ring"),
        (Collective::Allgatherv, Algorithm::RecursiveDoubling) => {
            pick("Allgatherv_intra_recursive_doubling")
        }
        (Collective::Allgatherv, _) => pick("Allgatherv_intra_brucks"),
        (Collective::Alltoallv, alg) => mpich_alltoall("Alltoallv", alg),
        // MPICH 4.0's only algorithms for them.
        (Collective::Gatherv, _) => pick("Gatherv_allcomm_linear"),
        (Collective::Scatterv, _) => pick("Scatterv_allcomm_linear"),
    }
}

/// The JSON leaf that selects MPICH's `MPIR_<name>`.
fn mpich_pick(name: &str) -> Value {
    json!({ format!("algorithm=MPIR_{name}"): {} })
}

/// MPICH's alltoall algorithms but one refuse `MPI_IN_PLACE`; alltoallv
/// (`op`) has only that one and `scattered`.
fn mpich_alltoall(op: &str, alg: &Algorithm) -> Value {
    let name = match (op, alg) {
        ("Alltoall", Algorithm::Bruck) => "brucks",
        (_, Algorithm::Linear(_)) | ("Alltoallv", _) => "scattered",
        _ => "pairwise",
    };
    json!({
        "is_sendbuf_inplace=yes": mpich_pick(&format!("{op}_intra_pairwise_sendrecv_replace")),
        "is_sendbuf_inplace=no": mpich_pick(&format!("{op}_intra_{name}")),
    })
}

/// MPICH's pairwise and recursive halving need a commutative op.
fn mpich_reduce_scatter(alg: &Algorithm) -> Value {
    let name = match alg {
        Algorithm::Ring | Algorithm::Pairwise => "pairwise",
        Algorithm::Tree(_) => "recursive_doubling",
        _ => "recursive_halving",
    };
    json!({
        "is_commutative=yes": mpich_pick(&format!("Reduce_scatter_block_intra_{name}")),
        "is_commutative=no": mpich_pick("Reduce_scatter_block_intra_recursive_doubling"),
    })
}

/// The collective's name in the MPI libraries: Open MPI's MCA parameters
/// and functions, MPICH's selection keys (the id's name, but the block
/// form of reduce-scatter).
pub fn mpi_name(op: Collective) -> &'static str {
    match op {
        Collective::ReduceScatter => "reduce_scatter_block",
        op => op.name(),
    }
}

/// The table as an MPICH collective-selection JSON file.
pub fn to_mpich(table: &Table) -> String {
    let mut root = Map::new();
    for op in Collective::ALL {
        let rules: Vec<&Rule> = table.rules.iter().filter(|r| r.op == op).collect();
        let intra = if rules.is_empty() {
            mpich_default(op)
        } else {
            mpich_intra(&rules, op)
        };
        root.insert(
            format!("collective={}", mpi_name(op)),
            json!({ "comm_type=intra": intra, "comm_type=inter": mpich_inter(op) }),
        );
    }
    for (name, entry) in mpich_untuned() {
        root.insert(format!("collective={name}"), entry);
    }
    serde_json::to_string_pretty(&Value::Object(root)).expect("JSON of plain values") + "\n"
}

/// How MPICH keys a collective's message size: bytes per rank
/// (`avg_msg_size`), all ranks' bytes (`total_msg_size`), or not at all.
fn mpich_size_key(op: Collective) -> Option<&'static str> {
    match op {
        Collective::Bcast | Collective::Reduce | Collective::Allreduce | Collective::Alltoall => {
            Some("avg_msg_size")
        }
        Collective::Allgather
        | Collective::Allgatherv
        | Collective::Gather
        | Collective::Scatter
        | Collective::ReduceScatter => Some("total_msg_size"),
        Collective::Barrier
        | Collective::Scan
        | Collective::Exscan
        | Collective::Gatherv
        | Collective::Scatterv
        | Collective::Alltoallv => None,
    }
}

fn mpich_intra(rules: &[&Rule], op: Collective) -> Value {
    let mut tops: Vec<usize> = rules.iter().map(|r| *r.ranks.end()).collect();
    tops.sort_unstable();
    tops.dedup();
    let mut by_size = Map::new();
    for top in tops {
        let mut here: Vec<&&Rule> = rules.iter().filter(|r| *r.ranks.end() == top).collect();
        here.sort_by_key(|r| *r.bytes.end());
        let largest = here.last().expect("a size has rules");
        let choice = match mpich_size_key(op) {
            None => mpich_algorithm(&largest.imp),
            Some(key) => {
                // A total is P × bytes per rank; the section's largest P
                // stands for all of its sizes.
                let scale = if key == "total_msg_size" { top } else { 1 };
                let mut by_msg = Map::new();
                for r in &here {
                    by_msg.insert(
                        format!("{key}<={}", r.bytes.end().saturating_mul(scale)),
                        mpich_algorithm(&r.imp),
                    );
                }
                by_msg.insert(format!("{key}=any"), mpich_algorithm(&largest.imp));
                Value::Object(by_msg)
            }
        };
        by_size.insert(format!("comm_size<={top}"), choice);
    }
    by_size.insert("comm_size=any".into(), mpich_default(op));
    Value::Object(by_size)
}

/// What MPICH does for a collective we have no rule for.
fn mpich_default(op: Collective) -> Value {
    let d = mpich_pick;
    match op {
        Collective::Bcast => d("Bcast_intra_binomial"),
        Collective::Reduce => d("Reduce_intra_binomial"),
        Collective::Allreduce => d("Allreduce_intra_recursive_doubling"),
        Collective::Allgather => d("Allgather_intra_ring"),
        Collective::Gather => d("Gather_intra_binomial"),
        Collective::Scatter => d("Scatter_intra_binomial"),
        Collective::Barrier => d("Barrier_intra_dissemination"),
        Collective::Allgatherv => d("Allgatherv_intra_ring"),
        Collective::Gatherv
        | Collective::Scatterv
        | Collective::Alltoallv
        | Collective::Alltoall
        | Collective::Scan
        | Collective::Exscan
        | Collective::ReduceScatter => mpich_algorithm(&Implementation::native(op)),
    }
}

fn mpich_inter(op: Collective) -> Value {
    let name = match op {
        Collective::Bcast => "Bcast_inter_remote_send_local_bcast",
        Collective::Reduce => "Reduce_inter_local_reduce_remote_send",
        Collective::Allreduce => "Allreduce_inter_reduce_exchange_bcast",
        Collective::Allgather => "Allgather_inter_local_gather_remote_bcast",
        Collective::Gather => "Gather_inter_linear",
        Collective::Scatter => "Scatter_inter_linear",
        Collective::Barrier => "Barrier_inter_bcast",
        Collective::Alltoall => "Alltoall_inter_pairwise_exchange",
        // No scan on an intercommunicator: MPI forbids it.
        Collective::Scan => "Scan_intra_recursive_doubling",
        Collective::Exscan => "Exscan_intra_recursive_doubling",
        Collective::ReduceScatter => "Reduce_scatter_block_inter_remote_reduce_local_scatter",
        Collective::Allgatherv => "Allgatherv_inter_remote_gather_local_bcast",
        Collective::Alltoallv => "Alltoallv_inter_pairwise_exchange",
        Collective::Gatherv => "Gatherv_allcomm_linear",
        Collective::Scatterv => "Scatterv_allcomm_linear",
    };
    mpich_pick(name)
}

/// The blocking collectives autocoll does not tune, with algorithms MPICH
/// 4.0 accepts for every argument (in-place and non-commutative included).
fn mpich_untuned() -> Vec<(&'static str, Value)> {
    let a = mpich_pick;
    let alltoall = |op: &str, scattered: &str| {
        json!({
            "comm_type=intra": {
                "is_sendbuf_inplace=yes": a(&format!("{op}_intra_pairwise_sendrecv_replace")),
                "is_sendbuf_inplace=no": a(&format!("{op}_intra_{scattered}")),
            },
            "comm_type=inter": a(&format!("{op}_inter_pairwise_exchange")),
        })
    };
    let reduce_scatter = |op: &str| {
        json!({
            "comm_type=intra": {
                "is_commutative=yes": a(&format!("{op}_intra_recursive_halving")),
                "is_commutative=no": a(&format!("{op}_intra_recursive_doubling")),
            },
            "comm_type=inter": a(&format!("{op}_inter_remote_reduce_local_scatter")),
        })
    };
    vec![
        ("alltoallw", alltoall("Alltoallw", "scattered")),
        ("reduce_scatter", reduce_scatter("Reduce_scatter")),
        ("neighbor_allgather", a("Neighbor_allgather_allcomm_nb")),
        ("neighbor_allgatherv", a("Neighbor_allgatherv_allcomm_nb")),
        ("neighbor_alltoall", a("Neighbor_alltoall_allcomm_nb")),
        ("neighbor_alltoallv", a("Neighbor_alltoallv_allcomm_nb")),
        ("neighbor_alltoallw", a("Neighbor_alltoallw_allcomm_nb")),
    ]
}

#[cfg(test)]
mod tests;
