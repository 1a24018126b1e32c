//! Racing and judging candidates, and tuning tables: the logic of
//! `autocoll tune` and `autocoll bench --best`, usable from Rust.
//!
//! The words it uses (race, final, duel, settle, across, decided late)
//! are defined once in the glossary of `docs/tuning.md`.
//!
//! Layers, each using only those above it in this list:
//! - [`mark`]: a raced row's part in its race;
//! - [`row`]: a measured [`Row`], the unit every other part reads;
//! - [`race`]: a point's candidates raced on a communicator, the slower
//!   dropped ([`autocoll::measure::race`] decides; this runs it over a
//!   sweep and marks each row with its part);
//! - [`table`]: each point's winner, and the winners as a tuning
//!   [`autocoll::select::Table`] (which exports Open MPI and MPICH rules);
//! - [`across`]: a final settled in jobs of its own;
//! - [`judge`]: one sweep's winners judged by another's figures, and a
//!   duel's jobs pooled;
//! - [`partial`]: a sweep's progress file.
//!
//! Everything but [`race::run`] is pure; nothing prints. Progress and
//! notes leave a race through [`race::Report`].
//!
//! ```
//! use std::sync::Mutex;
//!
//! use autocoll::measure::{Method, Options, Point};
//! use autocoll_tune::race::{self, Report, Setup};
//! use autocoll_tune::{table, Row};
//!
//! struct Keep(Mutex<Vec<Row>>);
//! impl Report for Keep {
//!     fn rows(&self, rows: Vec<Row>) {
//!         self.0.lock().unwrap().extend(rows);
//!     }
//! }
//!
//! // Two broadcasts of 1K on two threads, raced.
//! let heat: Vec<Point> = ["bcast:flat", "bcast:chain"]
//!     .iter()
//!     .map(|id| Point { imp: id.parse().unwrap(), bytes: 1024, root: 0 })
//!     .collect();
//! let heats = [heat];
//! let stop = std::sync::atomic::AtomicBool::new(false);
//! let setup = Setup {
//!     heats: &heats,
//!     method: Method::Barrier,
//!     opts: Options { calls: 2, warmup: 1, ..Options::default() },
//!     rule: race::rule(0.02, None, 6, 0, false)?,
//!     saved: &[],
//!     stop: &stop,
//!     quiet: true,
//!     per_job: 0,
//! };
//! let kept = Keep(Mutex::new(Vec::new()));
//! for outcome in autocoll::local::run(2, |mut comm| race::run(&mut comm, &setup, &kept)) {
//!     outcome?;
//! }
//! let rows = kept.0.into_inner().unwrap();
//! assert_eq!(rows.len(), 2, "a row per candidate");
//! let tuned = table::table_of(&rows)?;
//! assert_eq!(tuned.rules.len(), 1, "one winner at the one point");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod across;
mod error;
pub mod judge;
pub mod mark;
pub mod partial;
pub mod race;
pub mod row;
pub mod table;

pub use error::Error;
pub use row::Row;
