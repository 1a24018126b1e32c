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

use autocoll::Collective;

use crate::launch;
use crate::out::say;
use crate::{baseline, Failure};

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
    if let Some(t) = &tree {
        t.check(&ranks, &[op], root)?;
    }
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
    let total: usize = plans
        .iter()
        .map(|(_, pl)| pl.iter().map(|x| x.methods.len()).sum::<usize>())
        .sum();
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrl_c(stop.clone());
    if a.transport == Transport::Tcp && launch::is_rank() {
        return as_rank(&a, &sweep, &opts, race, &stop);
    }
    if a.transport == Transport::Mpi {
        return run_mpi(&a, &sweep, &opts, &stop);
    }
    let bar = progress(total as u64);
    let rows = Arc::new(Mutex::new(Vec::<Row>::new()));
    let sink: Sink = {
        let (bar, rows, only_best) = (bar.clone(), rows.clone(), a.best);
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
    };
    say!("{}", table_header());
    let timeout = Duration::from_secs(a.timeout);
    let hosts = Arc::new(Mutex::new(vec!["localhost".to_string()]));
    let mut outcome = Ok(());
    for (p, plan) in &plans {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        outcome = match a.transport {
            Transport::Local | Transport::Sim => {
                let trace = a.trace.dir(*p, plans.len());
                let ranks = Ranks {
                    p: *p,
                    sim: model.as_ref(),
                };
                let trace = trace.as_deref();
                run_local(ranks, plan, &opts, race, timeout, trace, &stop, &*sink)
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
    finish(&a, op, &rows, hosts, outcome, &stop)
}
