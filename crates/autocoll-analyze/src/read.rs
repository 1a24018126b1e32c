//! Reading a run's directory: every rank's file opened and checked, then
//! read in lockstep, one call (the records of all ranks) at a time.
//!
//! The files are refused, each error naming the file, when they are not
//! of one run (run id, size, a rank held twice, a call that differs between
//! ranks), cut short (the length the header promises is checked before
//! anything is read) or damaged (the reader checks every record, the
//! counts and the checksum). A rank without a file is a warning: the
//! analysis goes on with the others. A call that some files hold and
//! others do not (the flight recorder dropped it) is left out and counted.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use autocoll::trace::format::{Call, Header, Reader, CALL_BYTES, EVENT_BYTES, TRAILER_BYTES};

use crate::error::{Error, Result};

/// One rank's open file.
struct RankFile {
    path: PathBuf,
    reader: Reader<BufReader<File>>,
    head: Option<Call>,
}

/// The records of one call, by rank; `None` where the rank has no file.
pub struct CallSet {
    /// The call's number.
    pub seq: u64,
    /// Rank r's record at index r.
    pub calls: Vec<Option<Call>>,
}

/// The open files of one run.
pub struct TraceSet {
    dir: PathBuf,
    files: Vec<Option<RankFile>>,
    headers: Vec<Option<Header>>,
    /// Ranks without a file.
    pub missing: Vec<usize>,
    /// What the reader warns about (missing ranks, dropped calls).
    pub warnings: Vec<String>,
    /// Calls left out because some files do not hold them.
    pub left_out: u64,
}

impl TraceSet {
    /// Opens every `*.trace` file in `dir` and checks that they are one
    /// run's.
    pub fn open(dir: &Path) -> Result<TraceSet> {
        let paths = trace_files(dir)?;
        let mut opened: Vec<(PathBuf, Reader<BufReader<File>>)> = Vec::new();
        for path in paths {
            check_length(&path)?;
            let reader = open(&path)?;
            if let Some((first, r0)) = opened.first() {
                same_run(&path, reader.header(), first, r0.header())?;
            }
            opened.push((path, reader));
        }
        let size = opened[0].1.header().size as usize;
        let mut files: Vec<Option<RankFile>> = (0..size).map(|_| None).collect();
        let mut headers = vec![None; size];
        for (path, reader) in opened {
            let rank = reader.header().rank as usize;
            if let Some(other) = &files[rank] {
                return Err(Error::BadFiles(format!(
                    "{} and {} both hold rank {rank}",
                    other.path.display(),
                    path.display()
                )));
            }
            headers[rank] = Some(reader.header().clone());
            files[rank] = Some(RankFile {
                path,
                reader,
                head: None,
            });
        }
        let mut set = TraceSet {
            dir: dir.to_path_buf(),
            files,
            headers,
            missing: Vec::new(),
            warnings: Vec::new(),
            left_out: 0,
        };
        set.note_missing_and_dropped();
        for file in set.files.iter_mut().flatten() {
            file.head = file.reader.next_call()?;
        }
        Ok(set)
    }

    /// Each rank's header; `None` where the rank has no file.
    pub fn headers(&self) -> &[Option<Header>] {
        &self.headers
    }

    /// The directory read.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Each rank's file, where it has one.
    pub fn paths(&self) -> Vec<Option<&Path>> {
        self.files
            .iter()
            .map(|f| f.as_ref().map(|f| f.path.as_path()))
            .collect()
    }

    fn note_missing_and_dropped(&mut self) {
        for (rank, file) in self.files.iter().enumerate() {
            match file {
                None => {
                    self.missing.push(rank);
                    self.warnings.push(format!(
                        "rank {rank} has no file in {} (rank-{rank:05}.trace): it is analysed around; its tree node, its links, its wait states and its steps on the critical path are missing",
                        self.dir.display()
                    ));
                }
                Some(f) => {
                    let h = f.reader.header();
                    if h.dropped_calls > 0 {
                        self.warnings.push(format!(
                            "{}: the recorder's buffer was full and dropped the oldest {} calls ({} events)",
                            f.path.display(),
                            h.dropped_calls,
                            h.dropped_events
                        ));
                    }
                }
            }
        }
    }

    /// The next call that every file holds, or `None` at the end.
    pub fn next(&mut self) -> Result<Option<CallSet>> {
        loop {
            let Some(seq) = self
                .files
                .iter()
                .flatten()
                .filter_map(|f| f.head.as_ref().map(|c| c.seq))
                .min()
            else {
                return Ok(None);
            };
            let size = self.files.len();
            let mut calls: Vec<Option<Call>> = (0..size).map(|_| None).collect();
            let mut complete = true;
            for (rank, file) in self.files.iter_mut().enumerate() {
                let Some(file) = file else { continue };
                if file.head.as_ref().map(|c| c.seq) != Some(seq) {
                    complete = false;
                    continue;
                }
                let next = file.reader.next_call()?;
                if let Some(n) = &next {
                    if n.seq <= seq {
                        return Err(Error::BadFiles(format!(
                            "{}: call {} follows call {seq}: the calls are out of order (damaged file)",
                            file.path.display(),
                            n.seq
                        )));
                    }
                }
                calls[rank] = std::mem::replace(&mut file.head, next);
            }
            if !complete {
                self.left_out += 1;
                continue;
            }
            self.check_alike(seq, &calls)?;
            return Ok(Some(CallSet { seq, calls }));
        }
    }

    /// Every rank's record of a call must name the same call.
    fn check_alike(&self, seq: u64, calls: &[Option<Call>]) -> Result<()> {
        let describe = |rank: usize, call: &Call| {
            let header = self.headers[rank]
                .as_ref()
                .expect("a rank with a call has a header");
            let imp = &header.impls[call.imp as usize];
            format!("`{imp}`, {} bytes, root {}", call.bytes, call.root)
        };
        let mut first: Option<(usize, String)> = None;
        for (rank, call) in calls.iter().enumerate() {
            let Some(call) = call else { continue };
            let this = describe(rank, call);
            match &first {
                None => first = Some((rank, this)),
                Some((r0, that)) if *that != this => {
                    let path = |r: usize| {
                        self.files[r]
                            .as_ref()
                            .map(|f| f.path.display().to_string())
                            .unwrap_or_default()
                    };
                    return Err(Error::BadFiles(format!(
                        "{}: call {seq} is {this} here but {that} in {}: the files are not of one run",
                        path(rank),
                        path(*r0)
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Opens one file with a 256 KiB buffer: the reader's own 1 MiB, times
/// the ranks, would be most of the analysis's memory.
fn open(path: &Path) -> Result<Reader<BufReader<File>>> {
    let file = File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    Ok(Reader::new(
        path,
        BufReader::with_capacity(256 << 10, file),
    )?)
}

/// The `*.trace` files of `dir`, by name.
fn trace_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let reading = |e| Error::io(format!("reading the directory {}", dir.display()), e);
    let entries = std::fs::read_dir(dir).map_err(reading)?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(reading)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".trace") && !name.starts_with('.') {
            paths.push(entry.path());
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(Error::BadFiles(format!(
            "{}: no trace files (rank-NNNNN.trace) in this directory",
            dir.display()
        )));
    }
    Ok(paths)
}

/// Refuses a file shorter or longer than its header says, before reading
/// its records: a file cut short is found at once, not at its end.
fn check_length(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let reading = |e| Error::io(format!("reading {}", path.display()), e);
    let len = file.metadata().map_err(reading)?.len();
    // Up to the first newline, at most 64 MiB, as the reader reads it.
    let mut line = Vec::new();
    BufReader::new(file)
        .take(64 << 20)
        .read_until(b'\n', &mut line)
        .map_err(reading)?;
    // A file without a header line is left to the reader, which names it.
    let Ok(header) = serde_json::from_slice::<Header>(line.strip_suffix(b"\n").unwrap_or(&line))
    else {
        return Ok(());
    };
    let expected = (line.len() as u64)
        .saturating_add(header.calls.saturating_mul(CALL_BYTES as u64))
        .saturating_add(header.events.saturating_mul(EVENT_BYTES as u64))
        .saturating_add(TRAILER_BYTES as u64);
    if len < expected {
        return Err(Error::BadFiles(format!(
            "{}: cut short: its header counts {} calls and {} events, {expected} bytes in all, but the file holds {len}",
            path.display(),
            header.calls,
            header.events
        )));
    }
    if len > expected {
        return Err(Error::BadFiles(format!(
            "{}: {} bytes more than its header's {} calls and {} events need: damaged",
            path.display(),
            len - expected,
            header.calls,
            header.events
        )));
    }
    Ok(())
}

/// Refuses `path` when its header is not of the run of `first`'s.
fn same_run(path: &Path, header: &Header, first: &Path, h0: &Header) -> Result<()> {
    let (p, f) = (path.display(), first.display());
    if header.run != h0.run {
        return Err(Error::BadFiles(format!(
            "{p}: run {}, but {f} is of run {}: files of different runs (keep one run's files in the directory)",
            header.run,
            h0.run
        )));
    }
    if header.size != h0.size {
        return Err(Error::BadFiles(format!(
            "{p}: a {}-rank run, but {f} is of a {}-rank run",
            header.size, h0.size
        )));
    }
    Ok(())
}
