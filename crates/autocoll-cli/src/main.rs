//! The `autocoll` command.
//!
//! Each subcommand lives in a file of its own; this file only parses the
//! command line and maps outcomes to exit codes: 0 success, 1 a failed
//! check or run, 2 bad arguments or input.

#![deny(missing_docs)]

mod adapt;
mod analyze;
mod args;
mod balance;
mod baseline;
mod bench;
mod check;
mod cluster;
mod compare;
mod failure;
mod heap;
mod launch;
mod learn;
mod list;
mod map;
mod mpirun;
mod out;
mod plot;
mod sim;
mod traced;
mod tune;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use failure::Failure;

/// Self-tuning collective communication: check, measure and tune
/// broadcast, reduce, scatter, gather, allreduce, allgather and barrier.
#[derive(Parser)]
#[command(name = "autocoll", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate implementations against a serial reference.
    Check(check::Args),
    /// Start a program as the ranks of a tcp job, as mpirun does.
    Launch(launch::Args),
    /// List every implementation family and its parameters.
    List(list::Args),
    /// Bring an emulated cluster (namespaces, bridges, tbf) up or down.
    Cluster(cluster::Args),
    /// Time implementations across rank counts and message sizes.
    Bench(bench::Args),
    /// Sweep implementations and write the fastest per point as a tuning
    /// file (and Open MPI / MPICH rules files).
    Tune(tune::Args),
    /// Run the lottery against every fixed candidate (the paper's Figure 7/8).
    Adapt(adapt::Args),
    /// The balancer against the identity table under a late rank (Soga et
    /// al.'s experiment).
    Balance(balance::Args),
    /// autocoll against the MPI library on an emulated cluster: one report.
    Compare(compare::Args),
    /// What happened inside the collectives of a traced run: tree nodes,
    /// links, load imbalance, wait states, critical paths, timelines.
    Analyze(analyze::Args),
    /// Print the path of libautocoll_mpi.so, the MPI interposition library.
    LibPath(mpirun::PathArgs),
    /// Run an unmodified Open MPI program under mpirun with autocoll's
    /// collectives preloaded in place of the MPI library's.
    Mpirun(mpirun::Args),
    /// What a `--learn DIR` of mpirun or launch learned across runs.
    Learn(learn::ShowArgs),
    /// Place ranks on the machine's topology from the program's pattern:
    /// estimated costs and rankfiles, machinefiles, hostfiles.
    Map(map::Args),
    /// The sim transport's model: fit it to a cluster's bench runs,
    /// compare its predictions with what the cluster measured.
    Sim(sim::Args),
}

fn main() -> ExitCode {
    heap::steady();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Check(a) => check::run(a),
        Command::Launch(a) => launch::run(a),
        Command::List(a) => list::run(a),
        Command::Cluster(a) => cluster::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Adapt(a) => adapt::run(a),
        Command::Balance(a) => balance::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Analyze(a) => analyze::run(a),
        Command::LibPath(a) => mpirun::run_path(a),
        Command::Mpirun(a) => mpirun::run(a),
        Command::Learn(a) => learn::run_show(a),
        Command::Map(a) => map::run(a),
        Command::Sim(a) => sim::run(a),
    };
    match outcome {
        Ok(code) => code,
        Err(Failure::Usage(msg)) => {
            eprintln!("autocoll: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("autocoll: {e:#}");
            ExitCode::from(1)
        }
    }
}
