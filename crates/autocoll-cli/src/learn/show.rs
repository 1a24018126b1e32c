//! `autocoll learn show DIR`: what a learning directory holds and what
//! each part is expected to save, in a few lines.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use autocoll::pattern::Pattern;
use autocoll::select::state::{read_saved, Learned, Saved};
use autocoll::select::Implementation;

use super::manifest::{Manifest, Origin};
use super::text::{hosts_text, secs, short};
use crate::failure::Failure;
use crate::out::say;

/// Arguments of `autocoll learn`.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # learn over three nights, then look
  autocoll mpirun --learn ~/.autocoll/app -- -n 64 --hostfile hosts ./app
  autocoll learn show ~/.autocoll/app")]
pub struct ShowArgs {
    #[command(subcommand)]
    sub: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// What a --learn directory learned and what each part saves.
    Show {
        /// The directory of `--learn DIR`.
        dir: PathBuf,
    },
}

/// Runs `autocoll learn`.
pub fn run(a: ShowArgs) -> Result<ExitCode, Failure> {
    let Sub::Show { dir } = a.sub;
    let m = Manifest::load(&dir.join("learn.json"))
        .map_err(|e| Failure::Usage(format!("{e:#}")))?
        .ok_or_else(|| {
            Failure::Usage(format!(
                "{}: no learn.json; is it a directory of --learn DIR?",
                dir.display()
            ))
        })?;
    let saved = read_saved(&dir.join("state.json")).map_err(|e| Failure::Run(anyhow!(e)))?;
    for line in lines(&m, &saved, pattern(&dir).as_ref()) {
        say!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn pattern(dir: &Path) -> Option<Pattern> {
    Pattern::read(&dir.join("pattern.json")).ok()
}

/// The summary's lines.
pub fn lines(m: &Manifest, saved: &[Saved], p: Option<&Pattern>) -> Vec<String> {
    let mut out = vec![program_line(m)];
    if !m.hosts.is_empty() {
        out.push(format!(
            "hosts: {} ({})",
            hosts_text(&m.hosts),
            origin_text(m.topology.as_ref())
        ));
    }
    out.push(collectives_line(saved));
    out.push(tables_line(saved));
    out.push(placement_line(m, p));
    out
}

fn program_line(m: &Manifest) -> String {
    let ranks = m
        .ranks
        .map_or("ranks not known yet".into(), |n| format!("{n} ranks"));
    let last = m.runs.last().map_or(String::new(), |r| {
        format!(
            "; the last took {} and ended with status {}",
            secs(r.seconds),
            r.status
        )
    });
    format!(
        "program: {} (sha256 {}), {ranks}, {}; {} runs{last}",
        m.program.path,
        short(&m.program.sha256),
        m.engine,
        m.run_count
    )
}

fn origin_text(origin: Option<&Origin>) -> String {
    match origin {
        Some(Origin::Given(file)) => format!("topology {file}"),
        Some(Origin::Hosts) => "the launcher's hosts, rates assumed".into(),
        Some(Origin::Observed) => "the hosts the ranks ran on, rates assumed".into(),
        None => "no topology".into(),
    }
}

/// What the lottery's picks save against each pool's default: the MPI
/// library's own where it is a candidate, else autocoll's default
/// choice, weighed by the time each pool's calls took.
fn collectives_line(saved: &[Saved]) -> String {
    let pools: Vec<_> = saved.iter().flat_map(|s| &s.pools).collect();
    if pools.is_empty() {
        return "collectives: nothing learned yet".into();
    }
    let (mut spent, mut saved_s, mut best_case) = (0.0, 0.0, None::<(f64, String)>);
    for (key, learned) in &pools {
        let Some((fraction, text)) = saving(key, learned) else {
            continue;
        };
        spent += learned.spent_s;
        saved_s += learned.spent_s * fraction;
        if best_case.as_ref().is_none_or(|(f, _)| fraction > *f) {
            best_case = Some((fraction, text));
        }
    }
    let shapes = match saved.len() {
        1 => "1 communicator shape".to_string(),
        n => format!("{n} communicator shapes"),
    };
    let share = if spent > 0.0 {
        100.0 * saved_s / spent
    } else {
        0.0
    };
    let mut line = format!(
        "collectives: {} pools over {shapes}; the picks take {share:.0}% \
         less time than the defaults over the calls measured",
        pools.len()
    );
    if let Some((_, text)) = best_case {
        line += &format!(" (most: {text})");
    }
    line
}

/// A pool's saving against its default, as a fraction of the default's
/// time, and a line on it; `None` when the default was not measured.
fn saving(key: &autocoll::select::Key, learned: &Learned) -> Option<(f64, String)> {
    let best = learned.best()?;
    let native = Implementation::native(key.op);
    let fallback = autocoll::select::default_for(key.op, key.ranks, 1usize << key.class.min(40));
    let default = learned
        .candidates
        .iter()
        .filter(|c| c.count > 0)
        .find(|c| c.imp == native)
        .or_else(|| {
            learned
                .candidates
                .iter()
                .find(|c| c.count > 0 && c.imp == fallback)
        })?;
    let fraction = (1.0 - best.mean_s / default.mean_s).max(0.0);
    let text = format!(
        "{} on {} ranks, ≤{} bytes: {} {} against {} {}",
        key.op,
        key.ranks,
        1u64 << key.class.min(63),
        best.imp,
        secs(best.mean_s),
        default.imp,
        secs(default.mean_s)
    );
    Some((fraction, text))
}

fn tables_line(saved: &[Saved]) -> String {
    let tables: Vec<String> = saved
        .iter()
        .flat_map(|s| &s.tables)
        .filter_map(|t| {
            let moved = t.table.iter().enumerate().filter(|(i, r)| i != *r).count();
            (moved > 0).then(|| format!("{} on {} ranks ({moved} ranks moved)", t.op, t.ranks))
        })
        .collect();
    match tables.is_empty() {
        true => "broadcast order: no rank has come late enough to move".into(),
        false => format!(
            "broadcast order: {}; late ranks wait where nobody waits for them",
            tables.join(", ")
        ),
    }
}

fn placement_line(m: &Manifest, p: Option<&Pattern>) -> String {
    let traffic = p.map_or(String::new(), |p| {
        let bytes: u64 = p.p2p.iter().map(|e| e.bytes).sum();
        format!(" ({bytes} bytes point-to-point in the last run)")
    });
    match &m.placement {
        Some(pl) => format!(
            "placement: the {} mapping, in force from run {}: point-to-point time estimated at {} \
             against {} for the launcher's own ({:+.0}%){traffic}",
            pl.method,
            pl.since_run,
            secs(pl.estimate_s),
            secs(pl.linear_s),
            100.0 * (pl.estimate_s / pl.linear_s - 1.0)
        ),
        None => format!("placement: the launcher's own; no mapping beats it by more than the estimator's error{traffic}"),
    }
}
