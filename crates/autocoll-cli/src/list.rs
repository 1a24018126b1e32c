//! `autocoll list`: every implementation family with its parameters.

use std::process::ExitCode;

use autocoll::Collective;

use crate::args;
use crate::failure::Failure;
use crate::out::say;

/// Arguments of `autocoll list`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # every family of every collective, with its parameters
  autocoll list
  # allreduce's only
  autocoll list --op allreduce")]
pub struct Args {
    /// Only this collective (or `all`).
    #[arg(long, default_value = "all")]
    op: String,
}

/// The width of the ids' column.
const WIDTH: usize = 46;

/// Tree shapes: name, parameters (with their `:`), what it is.
const TREES: [(&str, &str, &str); 9] = [
    (
        "flat",
        "",
        "the root sends to every rank (the paper's sequential tree)",
    ),
    ("chain", "", "rank i sends to rank i+1"),
    ("backward-chain", "", "rank i sends to rank i-1"),
    ("binary", "", "heap-numbered, two children per rank"),
    ("kary", ":k=<fan-out>", "heap-numbered, k children per rank"),
    ("binomial", "", "largest subtree first; ceil(log2 P) rounds"),
    ("knomial", ":k=<radix>", "binomial generalised to radix k"),
    (
        "user",
        ":parents=<p0.p1...>",
        "explicit parent position of each position (from the root); --tree-file",
    ),
    (
        "hier",
        "[:inner=<level>][:outer=<level>][:top=<level>]",
        "a host's ranks under a leader, host leaders under their switch's, switch leaders at the top",
    ),
];

/// What a level of `hier` may be; left out, a level is binomial.
const LEVELS: &str =
    "flat, chain, backward-chain, binary, kary<k>, binomial, knomial<k> (default binomial)";

fn named(op: Collective, name: &str) -> &'static str {
    match name {
        "recursive-doubling" if op.scans() => {
            "round j: send what is combined so far to rank+2^j, combine rank-2^j's (log2 P rounds)"
        }
        "linear" if op.scans() => {
            "a pipeline along the ranks: each segment from rank-1, combined, on to rank+1"
        }
        "ring" if op == Collective::ReduceScatter => {
            "step s: pass block rank-s-1's partial result on to rank+1, add to rank-s-2's (P-1 steps)"
        }
        "pairwise" if op == Collective::ReduceScatter => {
            "step s: send block rank+s to its rank, combine block rank from rank-s (P-1 steps)"
        }
        "recursive-halving" => {
            "round j: keep the half of the blocks with this rank's, combine the partner's copy (log2 P rounds)"
        }
        "ring" if op.regular() == Collective::Allgather => {
            "P-1 shifts around a ring; with seg, each segment passed on as it arrives"
        }
        "ring" => "reduce-scatter then allgather around a ring",
        "recursive-doubling" => "log2 P pairwise exchanges of everything held",
        "rabenseifner" => "reduce-scatter by recursive halving, allgather by recursive doubling",
        "dissemination" => "round j: signal rank+2^j, wait for rank-2^j",
        "pairwise" => "step s: send to rank+s, receive from rank-s (P-1 steps)",
        "bruck" => "round j: the blocks whose distance has bit j go to rank+2^j (log2 P rounds)",
        "two-level" => {
            "blocks to other hosts via each host's leader, one message per pair of hosts"
        }
        "linear" => {
            "each block straight to its rank, at most k sends ahead of the receives (default 32)"
        }
        _ => "",
    }
}

fn over_trees(op: Collective) -> Option<&'static str> {
    Some(match op {
        Collective::Bcast => "segmented pipeline from the root",
        Collective::Reduce => "segmented pipeline to the root, combining on the way",
        Collective::Scatter => "each rank forwards its subtree's blocks",
        Collective::Gather => "each rank sends up its subtree's blocks",
        Collective::Allreduce => "reduce then bcast over the tree",
        Collective::Allgather => "gather then bcast over the tree",
        Collective::Barrier => "fan-in then fan-out over the tree",
        Collective::ReduceScatter => "reduce the whole vector, then scatter its blocks",
        Collective::Scatterv => "each rank forwards its subtree's block sizes, then its blocks",
        Collective::Gatherv => "each rank sends up its subtree's blocks, ended by a short segment",
        Collective::Allgatherv => "gather then bcast over the tree",
        Collective::Alltoall | Collective::Alltoallv | Collective::Scan | Collective::Exscan => {
            return None
        }
    })
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    for op in args::ops(&a.op)? {
        let Some(trees) = over_trees(op) else {
            say!("{op}  (no trees)");
            list_named(op);
            continue;
        };
        say!("{op}  (trees: {trees})");
        let seg = if op == Collective::Barrier {
            ""
        } else {
            "[:seg=<bytes>]"
        };
        for (shape, params, what) in TREES {
            let id = format!("{op}:{shape}{params}{seg}");
            if id.len() < WIDTH {
                say!("  {id:<WIDTH$} {what}");
            } else {
                // An id too wide for its column has its line to itself.
                say!("  {id}");
                say!("  {:<WIDTH$} {what}", "");
            }
        }
        say!("  {:<WIDTH$} <level>: {LEVELS}", "");
        list_named(op);
    }
    Ok(ExitCode::SUCCESS)
}

fn list_named(op: Collective) {
    for alg in op.named_algorithms() {
        let params = match alg {
            autocoll::Algorithm::Linear(_) if op.scans() => "[:seg=<bytes>]",
            autocoll::Algorithm::Linear(_) => "[:k=<window>]",
            autocoll::Algorithm::Ring if op.regular() == Collective::Allgather => "[:seg=<bytes>]",
            _ => "",
        };
        let id = format!("{op}:{}{params}", alg.name());
        say!("  {id:<WIDTH$} {}", named(op, alg.name()));
    }
}
