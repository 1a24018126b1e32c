//! The sweep's progress file kept up to date as results come in
//! ([`autocoll_tune::partial`]), and the progress bar.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use autocoll::measure::Method;
use autocoll::select::format_bytes;
use autocoll_tune::partial::{self, Partial};
use autocoll_tune::race::Saved;
use autocoll_tune::Row;

/// How often at most an unfinished race is written while its job
/// measures. Writing and syncing the file between two rounds slows the
/// next round's first call, so that in a final of two whichever runs
/// first in a round comes out slower. A race is written whenever its job
/// ends, so a job killed outright loses at most this much measuring.
const RACE_WRITE_EVERY: Duration = Duration::from_secs(30);

/// Keeps the results and the unfinished race, saves them after every
/// point and, while a race's job measures, every [`RACE_WRITE_EVERY`]
/// (and at [`Saver::flush`]), and shows progress.
#[derive(Clone)]
pub(super) struct Saver {
    partial: Arc<Mutex<Partial>>,
    path: PathBuf,
    bar: indicatif::ProgressBar,
    /// When this invocation began, and the seconds of those it resumes.
    start: std::time::Instant,
    before: f64,
    /// When the file was last written, and whether a race round came
    /// since.
    written: Arc<Mutex<(std::time::Instant, bool)>>,
    every: Duration,
}

impl Saver {
    pub(super) fn new(mut old: Partial, path: PathBuf, bar: indicatif::ProgressBar) -> Saver {
        old.schema = partial::SCHEMA.into();
        let before = old.elapsed_s;
        let start = std::time::Instant::now();
        Saver {
            partial: Arc::new(Mutex::new(old)),
            path,
            bar,
            start,
            before,
            written: Arc::new(Mutex::new((start, false))),
            every: RACE_WRITE_EVERY,
        }
    }

    /// A point's results: its race, if it had one, is over.
    pub(super) fn rows(&self, batch: Vec<Row>) {
        let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        self.bar.inc(batch.len() as u64);
        if let Some(first) = batch.first() {
            doc.forget_race(&first.op, first.ranks, first.bytes);
        }
        doc.rows.extend(batch);
        self.save(&mut doc);
    }

    /// A round of a race: it replaces the point's earlier rounds.
    pub(super) fn race(&self, saved: Saved) {
        let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        let left = saved.race.contenders().len();
        self.bar.set_message(format!(
            "{} on {} ranks, {}: {left} of {} candidates left after {} rounds",
            saved.op,
            saved.ranks,
            format_bytes(saved.bytes),
            saved.impls.len(),
            saved.race.rounds
        ));
        doc.forget_race(&saved.op, saved.ranks, saved.bytes);
        doc.races.push(saved);
        let due = {
            let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
            written.1 = true;
            written.0.elapsed() >= self.every
        };
        if due {
            self.save(&mut doc);
        }
    }

    /// Writes the rounds not written yet: call it between jobs and at the
    /// end, when nothing measures.
    pub(super) fn flush(&self) {
        let dirty = self.written.lock().unwrap_or_else(|p| p.into_inner()).1;
        if dirty {
            let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
            self.save(&mut doc);
        }
    }

    fn save(&self, doc: &mut Partial) {
        doc.elapsed_s = self.before + self.start.elapsed().as_secs_f64();
        *self.written.lock().unwrap_or_else(|p| p.into_inner()) =
            (std::time::Instant::now(), false);
        let text = serde_json::to_vec(doc).expect("JSON of plain data");
        if let Err(e) = autocoll::files::write_atomic(&self.path, &text) {
            self.bar
                .suspend(|| eprintln!("autocoll: warning: could not save partial results: {e}"));
        }
    }

    /// How far the unfinished race of `op` on `ranks` ranks at `bytes`
    /// got, if one is saved: its method and rounds.
    pub(super) fn progress(
        &self,
        op: &str,
        ranks: usize,
        bytes: usize,
    ) -> Option<(Option<Method>, usize)> {
        let doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        doc.races
            .iter()
            .find(|r| (r.op.as_str(), r.ranks, r.bytes) == (op, ranks, bytes))
            .map(|r| (r.method, r.race.rounds))
    }

    /// The rows, and the seconds spent measuring them (as last saved).
    pub(super) fn take_rows(&self) -> (Vec<Row>, f64) {
        let mut doc = self.partial.lock().unwrap_or_else(|p| p.into_inner());
        (std::mem::take(&mut doc.rows), doc.elapsed_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A race's rounds are kept in memory while its job measures, and
    /// written when the interval has passed or at a flush (between jobs):
    /// a file written between two rounds slowed the next round's first
    /// call.
    #[test]
    fn a_race_is_written_between_jobs_not_after_every_round() {
        use autocoll::measure::race::Race;
        let dir = std::env::temp_dir().join(format!("autocoll-saver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let path = dir.join("sweep.toml.partial.json");
        let bar = indicatif::ProgressBar::hidden();
        let mut saver = Saver::new(Partial::default(), path.clone(), bar);
        saver.every = Duration::from_secs(3600);
        let saved = |rounds: usize| {
            let mut race = Race::new(2);
            race.rounds = rounds;
            Saved {
                op: "bcast".into(),
                ranks: 2,
                bytes: 1024,
                impls: vec!["bcast:flat".into(), "bcast:binomial".into()],
                method: Some(Method::Truth),
                race,
            }
        };
        let rounds = |path: &Path| -> Vec<usize> {
            let doc = partial::load(path).unwrap_or_else(|_| panic!("{} reads", path.display()));
            doc.races.iter().map(|r| r.race.rounds).collect()
        };
        saver.race(saved(1));
        saver.race(saved(2));
        assert!(!path.exists(), "no round written before the interval");
        saver.flush();
        assert_eq!(rounds(&path), [2], "the flush writes the last round");
        saver.every = Duration::ZERO;
        saver.race(saved(3));
        assert_eq!(rounds(&path), [3], "written once the interval has passed");
        std::fs::remove_dir_all(&dir).expect("removed");
    }
}
