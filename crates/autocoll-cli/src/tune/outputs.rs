//! What `tune` writes at the end: the tuning file, Open MPI and MPICH
//! rules, the figures, and a summary on standard output.

use std::path::PathBuf;

use anyhow::Context;
use autocoll::select::{export, format_bytes};
use autocoll_tune::partial;
use autocoll_tune::table::{summary, table_of, winners};
use autocoll_tune::Row;

use super::args::Args;
use crate::failure::Failure;
use crate::out::say;
use crate::plot;

/// The tuning file, the exports and the figures `a` asks for, and the
/// table and flagged winners on standard output.
pub(super) fn write_outputs(a: &Args, rows: &[Row]) -> Result<(), Failure> {
    let table = table_of(rows).map_err(|e| Failure::Run(e.into()))?;
    let write = |path: &PathBuf, data: &[u8], what: &str| {
        autocoll::files::write_atomic(path, data)
            .with_context(|| format!("writing {what} {}", path.display()))
            .map_err(Failure::Run)
    };
    let comment = format!(
        "Written by `autocoll tune` from {} measurements ({} points).\n\
         Fastest implementation per (op, ranks, bytes) by median time; neighbouring\n\
         sizes and rank counts with the same winner are merged into ranges.",
        rows.len(),
        winners(rows).len()
    );
    write(&a.out, table.to_toml(&comment).as_bytes(), "--out")?;
    say!("{}", summary(&table));
    for ((op, ranks, bytes), r) in winners(rows).iter().filter(|(_, r)| !r.flags.is_empty()) {
        say!(
            "flagged: {op} on {ranks} ranks at {}: {} ({}, {})",
            format_bytes(*bytes),
            r.imp,
            r.method,
            r.flag_text()
        );
    }
    let carried = rows
        .iter()
        .filter(|r| r.race.as_ref().is_some_and(|m| m.same_as.is_some()))
        .count();
    if carried > 0 {
        say!(
            "raced {} of {} candidates: the other {carried} send the same messages as one raced \
             at their point (\"same_as\" in {})",
            rows.len() - carried,
            rows.len(),
            partial::path_beside(&a.out).display()
        );
    }
    if let Some(path) = &a.export_ompi {
        write(
            path,
            export::to_ompi(&table, a.ompi_format).as_bytes(),
            "--export-ompi",
        )?;
    }
    if let Some(path) = &a.export_mpich {
        write(path, export::to_mpich(&table).as_bytes(), "--export-mpich")?;
    }
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("making --plot directory {}", dir.display()))
            .map_err(Failure::Run)?;
        for (name, svg) in
            plot::tune_figures(rows).map_err(|e| Failure::Run(anyhow::anyhow!("plot: {e}")))?
        {
            write(&dir.join(name), svg.as_bytes(), "--plot")?;
        }
    }
    Ok(())
}
