//! What happened inside the collectives of a traced run, for every
//! collective and algorithm: Bongo, Anshus and Bjørndalen's analysis of a
//! collective's spanning tree (latencies, arrival and departure orders,
//! serialization, timemaps), Scalasca's wait states, Faraj et al.'s
//! arrival patterns, load imbalance and its source, and each call's
//! critical path.
//!
//! It reads the trace files that autocoll's tracer writes (one
//! `rank-NNNNN.trace` per rank, see `autocoll::trace::format`) and returns
//! an `autocoll.analysis/1` document ([`Report`]) from which the outputs
//! are drawn: a Chrome trace-event timeline ([`chrome`]), the timemap
//! ([`timemap`]), the serialization plot ([`serialization`]) and the
//! comparison of two runs ([`compare`]), all as values or files; it prints
//! nothing.
//!
//! The modules, bottom to top: `stats` (running statistics in bounded
//! memory), `read` (the rank files, read in lockstep one call at a time),
//! `clocks` and `call` (one call on one clock), the kinds of analysis
//! (`nodes` per tree node, `paths` a rank's path to the root and back,
//! `links`, `waits` for wait states and arrival patterns, `critical`,
//! `classes`, `imbalance`, `breakdown`), `group` (the calls counted into
//! running statistics per (implementation, bytes, root): memory grows with
//! groups, ranks and links, not with calls), [`result`] (the document),
//! then the outputs drawn from it ([`plot`] holds what every plot shares).
//! [`synthetic`] makes traces without a recorder, for tests and the scale
//! measurement.
//!
//! ```
//! use autocoll_analyze::{analyse, synthetic, Options};
//!
//! // Eight ranks of an allreduce over a binomial tree; rank 5 enters
//! // every call 50 µs late.
//! let dir = std::env::temp_dir().join(format!("autocoll-analyze-doc-{}", std::process::id()));
//! let mut spec = synthetic::Spec::new("allreduce:binomial".parse()?, 8);
//! spec.delay = Some((5, 50_000));
//! synthetic::write(&dir, &spec, 20)?;
//!
//! let report = analyse(&dir, &Options::default(), None)?;
//! let group = &report.groups[0];
//! let imbalance = group.load_imbalance.as_ref().expect("a late rank");
//! println!("{}: {}", group.imp, imbalance.sentence);
//! assert_eq!(imbalance.source, Some(5));
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod breakdown;
mod call;
pub mod chrome;
mod classes;
mod clocks;
pub mod compare;
mod critical;
mod error;
mod group;
mod imbalance;
mod links;
mod nodes;
mod paths;
pub mod plot;
mod read;
pub mod result;
pub mod serialization;
mod stats;
pub mod synthetic;
#[cfg(test)]
mod tests;
pub mod timemap;
mod waits;

use std::ops::Range;
use std::path::Path;

pub use chrome::{Chrome, Timeline};
pub use classes::ranges;
pub use error::{Error, Result};
pub use result::Report;
pub use stats::us;

use call::View;
use clocks::Clocks;
use group::Analysis;
use read::TraceSet;

/// What the analysis of one directory needs besides its files.
#[derive(Clone, Debug)]
pub struct Options {
    /// The calls analysed, by number.
    pub calls: Range<u64>,
    /// Ranks are in one class when no stage's mean differs by more than
    /// this share of the mean call time.
    pub tolerance: f64,
}

impl Default for Options {
    /// Every call; ranks within 10% of the mean call time alike.
    fn default() -> Self {
        Options {
            calls: 0..u64::MAX,
            tolerance: 0.1,
        }
    }
}

/// Reads and analyses one run's directory, feeding `chrome` as it goes.
/// Bad trace files are the input's errors ([`Error::is_input`]), each
/// naming its file.
pub fn analyse(dir: &Path, options: &Options, mut chrome: Option<&mut Chrome>) -> Result<Report> {
    let mut set = TraceSet::open(dir)?;
    let clocks = Clocks::new(set.headers());
    let headers = set.headers().to_vec();
    let mut analysis = Analysis::default();
    while let Some(calls) = set.next()? {
        if !options.calls.contains(&calls.seq) {
            continue;
        }
        let view = View::new(&calls.calls, &headers, &clocks);
        analysis.add(&view);
        if let Some(c) = chrome.as_deref_mut() {
            c.add(&view, &headers)?;
        }
    }
    if analysis.calls == 0 {
        return Err(Error::NoCalls {
            dir: dir.to_path_buf(),
            within: options.calls != (0..u64::MAX),
        });
    }
    Ok(result::report(&set, &clocks, analysis, options.tolerance))
}
