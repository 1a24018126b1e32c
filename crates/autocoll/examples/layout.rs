//! Where the ranks of a job run, and the tree an implementation builds
//! over them: rank 0 prints every rank's host and switch, then every
//! rank's children in the tree of the implementation id given (default
//! `allreduce:hier`, rooted at rank 0; a second argument names the root).
//! Every rank builds the tree and checks that it is the same as rank 0's.
//!
//! Processes:  `autocoll launch -n 8 --hostfile HOSTS -- target/debug/examples/layout bcast:hier:inner=flat 3`
//! Under MPI:  `mpirun -n 8 target/debug/examples/layout` (built with `--features mpi`)

use autocoll::{Collective, Implementation, Op};

fn main() -> autocoll::Result<()> {
    let mut args = std::env::args().skip(1);
    let id = args.next().unwrap_or_else(|| "allreduce:hier".into());
    let imp: Implementation = id.parse()?;
    let root: usize = match args.next() {
        Some(r) => r
            .parse()
            .map_err(|_| autocoll::Error::Config(format!("root `{r}` is not a rank")))?,
        None => 0,
    };
    let mut comm = autocoll::init()?;
    let shape = imp
        .shape()
        .ok_or_else(|| autocoll::Error::Config(format!("{imp} runs over no tree")))?;
    let root = if imp.op.rooted() { root } else { 0 };
    let tree = comm.tree(shape, root)?;
    // Every rank's parent, summed: equal on every rank when all built the
    // same tree (a rank's own view against the sum of rank 0's).
    let parents: Vec<f64> = (0..comm.size())
        .map(|r| tree.parent(r).map_or(-1.0, |p| p as f64))
        .collect();
    let mut seen = vec![0.0; parents.len()];
    let sum = Implementation::tree(Collective::Allreduce, autocoll::Shape::Binomial, None)?;
    comm.allreduce_with(&sum, &parents, &mut seen, &Op::SUM)?;
    let same = seen
        .iter()
        .zip(&parents)
        .all(|(all, mine)| *all == mine * comm.size() as f64);
    if comm.rank() != 0 {
        return Ok(());
    }
    let layout = comm.layout()?;
    for rank in 0..comm.size() {
        let switch = layout
            .switch(rank)
            .map_or("-", |s| layout.switch_path(s))
            .to_string();
        println!(
            "rank {rank} host {} switch {switch} children {:?}",
            layout.host_name(layout.host(rank)),
            tree.children(rank)
        );
    }
    println!("{imp} root {root}: the same tree on every rank: {same}");
    Ok(())
}
