//! What the ranks tell: rank 0 of a tcp run hands its rows, races, hosts
//! and notes to the launching process on lines of its output ([`say`],
//! read back by [`run_tcp`]); notes reach the user once however many jobs
//! find the same thing ([`note`]); the progress bar.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::{Arc, Mutex};

use autocoll::measure::{Machines, Method};
use autocoll::Communicator;
use autocoll_tune::race::Saved;
use autocoll_tune::row::Row;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::failure::Failure;
use crate::launch::{self, Placement};
use crate::out::say;

/// Rank 0 of a tcp run hands its reports to the launching process on lines
/// that start with this.
pub(crate) const REPORT_LINE: &[u8] = b"@autocoll-bench ";

/// What rank 0 of a tcp run reports.
#[derive(Serialize, Deserialize)]
pub(crate) enum Report {
    /// The host of every rank.
    Hosts(Vec<String>),
    /// The results of one point.
    Rows(Vec<Row>),
    /// A round of `tune`'s race.
    Race(Box<Saved>),
    /// Something the user should read (a warning).
    Note(String),
}

/// Where rows go: the table, the progress bar and the results.
pub(crate) type Sink = Arc<dyn Fn(Vec<Row>) + Send + Sync>;

/// Where each round's race goes.
pub(crate) type RaceSink = Arc<dyn Fn(Saved) + Send + Sync>;

/// Launches `p` copies of this command over tcp, with `extra` arguments
/// after its own; rank 0's reported rows go to `sink` as they come, its
/// races' rounds to `races`.
pub(crate) fn run_tcp(
    p: usize,
    placement: &Placement,
    timeout: u64,
    extra: &[OsString],
    sink: Sink,
    races: Option<RaceSink>,
    hosts: Arc<Mutex<Vec<String>>>,
) -> anyhow::Result<()> {
    let report = Arc::new(
        move |line: &[u8]| match serde_json::from_slice::<Report>(line) {
            Ok(Report::Rows(rows)) => sink(rows),
            Ok(Report::Race(saved)) => {
                if let Some(races) = &races {
                    races(*saved)
                }
            }
            Ok(Report::Hosts(list)) => *hosts.lock().unwrap_or_else(|e| e.into_inner()) = list,
            Ok(Report::Note(text)) => note_once(&text),
            Err(e) => eprintln!("autocoll: unreadable report from rank 0: {e}"),
        },
    );
    launch::relaunch_self_with(p, placement, timeout, extra, REPORT_LINE, report).map_err(|f| {
        match f {
            Failure::Run(e) => e,
            Failure::Usage(m) => anyhow::anyhow!(m),
        }
    })
}

/// Prints a rank's note unless this process printed it already: `tune`
/// starts a job per point, whose ranks all find the same crowded cores.
fn note_once(text: &str) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if SAID
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(text.to_string())
    {
        eprintln!("autocoll: {text}");
    }
}

/// Prints a report for the launching process (rank 0 of a tcp run).
pub(crate) fn say(report: &Report) {
    let json = serde_json::to_string(report).expect("JSON of plain data");
    say!("{}{json}", String::from_utf8_lossy(REPORT_LINE));
}

/// The job's machines (every rank calls it). Rank 0 says once when they
/// break the premise of one of `methods`, and with `fallback` what it
/// does about it.
pub(crate) fn machines(
    comm: &mut Communicator,
    methods: &[Method],
    fallback: bool,
) -> autocoll::Result<Machines> {
    let found = Machines::of(comm)?;
    if comm.rank() == 0 {
        machine_notes(&found, methods, fallback);
    }
    Ok(found)
}

/// Says when `found` breaks the premise of one of `methods`, and with
/// `fallback` what a race does about it.
pub(crate) fn machine_notes(found: &Machines, methods: &[Method], fallback: bool) {
    if let Some(text) = launch::binding_note(found) {
        note(&text);
    }
    if let Some(text) = found.warning(methods) {
        note(&text);
        if fallback && !found.failing(methods).is_empty() {
            note(&format!(
                "where it keeps too few repetitions, the point is measured with {} instead",
                found.fallback(methods[0])
            ));
        }
    }
}

/// Tells the user `text`: on stderr, or through the launching process
/// when this is a rank of a tcp run.
pub(crate) fn note(text: &str) {
    if launch::is_rank() {
        say(&Report::Note(text.to_string()));
    } else {
        eprintln!("autocoll: {text}");
    }
}

/// A progress bar of `total` results, on stderr.
pub(crate) fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{bar:30} {pos}/{len} results, {elapsed_precise} elapsed, ETA {eta}",
    )
    .expect("a valid progress template");
    bar.set_style(style);
    bar
}
