//! An SOR-style iteration that lets the lottery pick its collectives: a 1-D
//! Laplace problem split over the ranks, relaxed with successive
//! over-relaxation; every step exchanges boundary values by broadcast from
//! rank 0 (the "parameters" a solver re-reads) and tests convergence with
//! an allreduce of the residual. The one line that turns on the lottery,
//! with what it learns kept in a state file for the next run, is
//! `comm.use_lottery(...)`.
//!
//! Local threads: `cargo run -p autocoll --example sor -- 4`
//! Processes:     `autocoll launch -n 4 -- target/debug/examples/sor`

use autocoll::{Communicator, Op};

/// Points per rank.
const LOCAL: usize = 32;
/// Over-relaxation factor.
const OMEGA: f64 = 1.5;
/// Stop when the largest change of a step falls below this.
const TOLERANCE: f64 = 1e-6;
/// Steps at most.
const MAX_STEPS: usize = 20_000;

fn solve(mut comm: Communicator, state: &str) -> autocoll::Result<(usize, f64)> {
    comm.use_lottery(state); // the one line: Lottery, remembered across runs
    let (rank, size) = (comm.rank(), comm.size());
    // Fixed ends: u = 0 at the left of the domain, u = 1 at the right.
    let mut u = vec![0.0f64; LOCAL + 2];
    if rank == size - 1 {
        u[LOCAL + 1] = 1.0;
    }
    let mut params = vec![OMEGA; 512]; // 4K of solver parameters per step
    let mut edges = vec![0.0f64; 2 * size];
    for step in 1..=MAX_STEPS {
        comm.bcast(&mut params, 0)?;
        let omega = params[0];
        // Halo exchange through an allgather of every rank's two edges.
        let mine = [u[1], u[LOCAL]];
        comm.allgather(&mine, &mut edges)?;
        if rank > 0 {
            u[0] = edges[2 * (rank - 1) + 1];
        }
        if rank + 1 < size {
            u[LOCAL + 1] = edges[2 * (rank + 1)];
        }
        let mut change = 0.0f64;
        for i in 1..=LOCAL {
            let new = (1.0 - omega) * u[i] + omega * 0.5 * (u[i - 1] + u[i + 1]);
            change = change.max((new - u[i]).abs());
            u[i] = new;
        }
        let mut worst = [0.0];
        comm.allreduce(&[change], &mut worst, &Op::MAX)?;
        if worst[0] < TOLERANCE {
            return Ok((step, worst[0]));
        }
    }
    Ok((MAX_STEPS, f64::NAN))
}

fn main() {
    let state = std::env::temp_dir().join("autocoll-sor-state.json");
    let state = state.to_string_lossy().into_owned();
    let launched = std::env::var_os("AUTOCOLL_RANK").is_some();
    let outcome = if launched {
        let comm = autocoll::init().expect("joining the job");
        let rank = comm.rank();
        solve(comm, &state).map(|r| (rank == 0).then_some(r))
    } else {
        let ranks: usize = std::env::args()
            .nth(1)
            .and_then(|a| a.parse().ok())
            .unwrap_or(4);
        let all = autocoll::local::run(ranks, |comm| solve(comm, &state));
        all.into_iter().next().expect("at least one rank").map(Some)
    };
    match outcome {
        Ok(Some((steps, change))) => {
            println!(
                "stopped after {steps} steps (last change {change:.2e}); lottery state in {state}"
            )
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("sor: {e}");
            std::process::exit(1);
        }
    }
}
