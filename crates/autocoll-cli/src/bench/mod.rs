//! `autocoll bench`: time implementations across rank counts and sizes with
//! the methods of `autocoll::measure`.
//!
//! Every rank runs [`rank_main`] over the same plan; rank 0 reports each
//! finished point through a sink (table, progress bar, results). With the
//! local transport the ranks are threads of this process; a process-based
//! transport runs the same function in every launched process (tcp: this
//! command launches them; mpi: mpirun did, and every process is a rank).
//!
//! With `--baseline` (mpi only) each size also times the MPI library's own
//! collective, `<op>:mpi`, with the same method, before autocoll's
//! implementations of that size: interleaved, so that a drift of the
//! machine over the run affects both alike.
//!
//! This file holds the wiring; `args` holds the arguments and their
//! checks, `plan` builds the points of the sweep, `run` runs them on every
//! rank, `report` carries what ranks tell the user and the launching
//! process, and `rows` prints and writes the results.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use autocoll::measure::race::Rule;
use autocoll::measure::{Method, Options};
use autocoll::sim::Model;
use autocoll::Collective;
use indicatif::ProgressBar;

use crate::baseline;
use crate::failure::Failure;
use crate::launch;
use crate::out::say;

mod args;
mod best;
mod plan;
mod report;
mod rows;
mod run;

pub use args::Args;
use args::{check_baseline, check_options, is_mpi_rank, methods};
pub(crate) use args::{check_placement, check_sweep, refuse_mpi, refuse_sim, ModelArg, Transport};
pub(crate) use autocoll_tune::row::Row;
pub(crate) use best::Told;
use plan::{plan, Sweep};
pub(crate) use plan::{plan_ours, sizes, Planned, Subject};
pub(crate) use report::{progress, run_tcp, say, RaceSink, Report, Sink};
pub(crate) use rows::parse_json;
use rows::{finish, table_header, table_line};
use run::{as_rank, run_mpi};
pub(crate) use run::{every_rank_ok, install_ctrl_c, run_local, Ranks};

/// Runs `autocoll bench` with the arguments `a`.
pub fn run(mut a: Args) -> Result<ExitCode, Failure> {
    let op: Collective =
        a.op.parse()
            .map_err(|e| Failure::Usage(format!("--op: {e}")))?;
    let tree = crate::args::TreeFile::load(&a.tree)?;
    if let Some(t) = &tree {
        a.ranks.get_or_insert_with(|| t.size().to_string());
        a.root.get_or_insert(t.root());
    }
    let root = a.root.unwrap_or(0);
    let forced = check_baseline(&a, op)?;
    if let (Some(forced), true) = (forced, is_mpi_rank(&a)) {
        // Before any thread starts (the Ctrl-C handler's) and before MPI_Init.
        baseline::force(op, forced)?;
    }
    let methods = methods(&a.method, a.compare_truth)?;
    let ranks = crate::args::ranks(a.ranks.as_deref().unwrap_or("4"))?;
    let sizes = sizes(op, &crate::args::bytes(&a.bytes, a.step)?);
    let impls = crate::args::Chosen::new(a.imp.as_deref(), tree.as_ref(), &[op])?;
    check_points(&a, op, &impls, &ranks, tree.as_ref())?;
    check_options(&a)?;
    a.trace.check()?;
    let model = a.model.load(a.transport)?;
    let opts = a.stats.options();
    let race = best::race_of(&a, &methods)?;
    let sweep = Sweep {
        op,
        impls: &impls,
        sizes: &sizes,
        root,
        methods: &methods,
        baseline: a.baseline.then(|| baseline::id(op, forced)),
    };
    let plans: Vec<(usize, Vec<Planned>)> = ranks.iter().map(|&p| (p, plan(&sweep))).collect();
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrl_c(stop.clone());
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&a, &sweep, &opts, race, &stop);
    }
    if a.transport == Transport::Mpi {
        return run_mpi(&a, &sweep, &opts, &stop);
    }
    run_plans(&a, op, &plans, model.as_ref(), &opts, race, &stop)
}

/// Refuses implementations of another collective than `op`, and a root
/// or a tree file that does not fit the rank counts.
fn check_points(
    a: &Args,
    op: Collective,
    impls: &crate::args::Chosen,
    ranks: &[usize],
    tree: Option<&crate::args::TreeFile>,
) -> Result<(), Failure> {
    let root = a.root.unwrap_or(0);
    if let Some(bad) = impls.named.iter().find(|i| i.op != op) {
        return Err(Failure::Usage(format!(
            "--impl {bad} is not an implementation of --op {op}"
        )));
    }
    // Under mpi the job's size is known once MPI has started (run_mpi).
    if op.rooted() && a.transport != Transport::Mpi {
        if let Some(&p) = ranks.iter().find(|&&p| root >= p) {
            return Err(Failure::Usage(format!(
                "--root {root} is not a rank of a {p}-rank job"
            )));
        }
    }
    if let Some(t) = tree {
        t.check(ranks, &[op], root)?;
    }
    Ok(())
}

/// Runs every rank count's plan from this process (threads, or a tcp job
/// it launches), showing rank 0's rows as they come, then writes the
/// outputs of those that finished.
fn run_plans(
    a: &Args,
    op: Collective,
    plans: &[(usize, Vec<Planned>)],
    model: Option<&Model>,
    opts: &Options,
    race: Option<(Method, Rule)>,
    stop: &AtomicBool,
) -> Result<ExitCode, Failure> {
    let total: usize = plans
        .iter()
        .map(|(_, pl)| pl.iter().map(|x| x.methods.len()).sum::<usize>())
        .sum();
    let bar = progress(total as u64);
    let rows = Arc::new(Mutex::new(Vec::<Row>::new()));
    let sink = table_sink(bar.clone(), rows.clone(), a.best);
    say!("{}", table_header());
    let timeout = Duration::from_secs(a.timeout);
    let hosts = Arc::new(Mutex::new(vec!["localhost".to_string()]));
    let mut outcome = Ok(());
    for (p, plan) in plans {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        outcome = match a.transport {
            Transport::Local | Transport::Sim => {
                let trace = a.trace.dir(*p, plans.len());
                let ranks = Ranks { p: *p, sim: model };
                let trace = trace.as_deref();
                run_local(ranks, plan, opts, race, timeout, trace, stop, &*sink)
            }
            Transport::Tcp => run_tcp(
                *p,
                &a.placement,
                a.timeout,
                &[],
                sink.clone(),
                None,
                hosts.clone(),
            ),
            Transport::Mpi => unreachable!("mpi runs returned above"),
        };
        if outcome.is_err() {
            break;
        }
    }
    bar.finish_and_clear();
    let rows = std::mem::take(&mut *rows.lock().unwrap_or_else(|p| p.into_inner()));
    let hosts = hosts.lock().unwrap_or_else(|p| p.into_inner()).clone();
    finish(a, op, &rows, hosts, outcome, stop)
}

/// Where a point's rows go: a table line each (only the winner's with
/// `only_best`), a step of the bar, and into `rows`.
fn table_sink(bar: ProgressBar, rows: Arc<Mutex<Vec<Row>>>, only_best: bool) -> Sink {
    Arc::new(move |batch: Vec<Row>| {
        // The table goes to stdout, the bar to stderr (hidden when it
        // is not a terminal); suspending the bar keeps the two apart.
        bar.suspend(|| {
            let shown: Vec<&Row> = match only_best {
                true => best::winner(&batch).into_iter().collect(),
                false => batch.iter().collect(),
            };
            for row in shown {
                say!("{}", table_line(row));
            }
        });
        bar.inc(batch.len() as u64);
        rows.lock().unwrap_or_else(|p| p.into_inner()).extend(batch);
    })
}
