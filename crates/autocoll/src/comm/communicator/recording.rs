//! Recording on a communicator: its trace and its pattern, started,
//! written and stopped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::Communicator;
use crate::comm::trace_options::{TraceOptions, Tracing};
use crate::error::{Error, Result};
use crate::pattern::counts::Recorder as PatternRecorder;
use crate::pattern::recording::{Recording, Sink};
use crate::trace::recorder::Recorder;

impl Communicator {
    /// Records every later call's stages into a buffer (collective: every
    /// rank calls it); each rank writes `dir/rank-NNNNN.trace` on
    /// [`Self::write_trace`] and when the communicator is dropped. `dir`
    /// is created if missing; one a rank cannot write in is an error on
    /// every rank, naming it. The buffer holds `AUTOCOLL_TRACE_EVENTS`
    /// events (default 1 Mi, 16 MiB) and drops the oldest calls when full.
    /// A recording already on is written first, if it holds any call.
    pub fn trace(&mut self, dir: impl AsRef<Path>) -> Result<()> {
        self.trace_with(dir, TraceOptions::from_env()?)
    }

    /// [`Self::trace`] with the options given (the environment is not read).
    pub fn trace_with(&mut self, dir: impl AsRef<Path>, options: TraceOptions) -> Result<()> {
        if self.tracing.as_ref().is_some_and(Tracing::has_calls) {
            self.write_trace()?;
        }
        // The recording's own collectives are nobody's business.
        let observers = std::mem::take(&mut self.observers);
        let started = Tracing::start(self, dir.as_ref(), &options);
        self.observers = observers;
        self.tracing = Some(started?);
        self.gather_observers();
        Ok(())
    }

    /// Writes this rank's trace file now (atomically) and returns its
    /// path; the recording goes on, and a later write replaces the file.
    /// Collective when the ranks' clocks are not shared (the end offsets
    /// are taken).
    pub fn write_trace(&mut self) -> Result<PathBuf> {
        let Some(mut tracing) = self.tracing.take() else {
            return Err(Error::Config(
                "write_trace: no recording is on (start one with trace(dir))".into(),
            ));
        };
        let written = tracing.write(self);
        self.tracing = Some(tracing);
        written
    }

    /// Writes this rank's trace file (as [`Self::write_trace`]) and ends
    /// the recording: later calls are not recorded, and dropping the
    /// communicator writes nothing. Returns the file's path, or `None`
    /// when no recording was on. A program records one phase of its run
    /// with `trace` before it and `stop_trace` after it.
    pub fn stop_trace(&mut self) -> Result<Option<PathBuf>> {
        if self.tracing.is_none() {
            return Ok(None);
        }
        let written = self.write_trace();
        self.tracing = None;
        self.gather_observers();
        written.map(Some)
    }

    /// The recorder of the recording in progress, if any.
    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.tracing.as_ref().map(|t| &t.recorder)
    }

    /// Counts every later message this rank sends (collective: every rank
    /// calls it with the same path): when the communicator is dropped,
    /// every rank's counts go to rank 0, which writes the job's pattern to
    /// `path` ([`crate::pattern`], atomically). Rank 0 checks now that it
    /// can write there (creating the directory if missing); a path it
    /// cannot write is an error on every rank. Called again, the counts go
    /// on and the new path takes the old one's place.
    pub fn record_pattern(&mut self, path: impl Into<PathBuf>) -> Result<()> {
        let path = path.into();
        self.check_pattern_path(&path)?;
        if let Some(sink) = &mut self.pattern {
            sink.redirect(path);
            return Ok(());
        }
        let recorder = Arc::new(Mutex::new(PatternRecorder::new(self.rank(), self.size())));
        let inner = std::mem::replace(&mut self.transport, super::stand_in());
        self.transport = Box::new(Recording::new(inner, recorder.clone(), None));
        self.pattern = Some(Sink::new(recorder, path));
        Ok(())
    }

    /// This rank's counts of the pattern being recorded, if one is.
    pub fn pattern_recorder(&self) -> Option<&Arc<Mutex<PatternRecorder>>> {
        self.pattern.as_ref().map(Sink::recorder)
    }
}
