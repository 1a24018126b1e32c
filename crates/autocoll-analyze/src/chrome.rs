//! `--chrome FILE`: the run as a Chrome trace-event timeline, which
//! Perfetto UI and chrome://tracing open.
//!
//! One process per host (`pid` = 1 + the host's place in the sorted host
//! list, named by an `M` `process_name` event) and one thread per rank
//! (`tid` = rank + 1, named `rank R` by `thread_name`, ordered by
//! `thread_sort_index`). Ids start at 1 because Perfetto takes pid 0 for
//! the kernel's swapper, and its JSON importer merged tid 0 into tid 1
//! before its pull request 2278. Per call and rank, one complete (`X`)
//! slice named by the implementation id, from the rank's entry to its
//! leave, and inside it one slice per stage, from each event to the next,
//! named by what ends it (`receive ← 3`, `combine 3`, `send → 5`,
//! `finish`): the stages tile the call, so slices on one track nest or
//! follow and never overlap (Perfetto moves overlapping slices to other
//! tracks). Every message is a flow arrow from the slice that ends with
//! its send to the one that ends with its receive: `bind_id` (an integer;
//! string ids are read as hex) with `flow_out` and `flow_in`.
//!
//! The stage slices on the call's critical path (see `critical.rs`) carry
//! `"critical": true` in their args, so that Perfetto's query or search
//! finds each call's path.
//!
//! Times are µs from the first call's earliest entry, on the common clock,
//! written with three decimals (whole ns), so that a stage ending a call
//! ends exactly where the call does. The file is written as the calls are
//! read (no call is held) into a temporary file beside FILE and renamed
//! over it at the end.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use autocoll::observe::Stage;
use autocoll::trace::format::Header;

use crate::call::View;
use crate::error::{Error, Result};

/// Beyond this size Perfetto's UI struggles.
const HEAVY_BYTES: u64 = 300 << 20;

/// A finished timeline.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Where it was written.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Timeline {
    /// True when it is larger than Perfetto's UI opens comfortably (a few
    /// hundred MB): a smaller range of calls would serve better.
    pub fn heavy(&self) -> bool {
        self.bytes > HEAVY_BYTES
    }
}

/// The timeline being written.
pub struct Chrome {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<File>,
    events: u64,
    next_flow: u64,
    origin: Option<i64>,
    hosts: Vec<String>,
    finished: bool,
}

/// `ns` as µs with three decimals.
fn micros(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

impl Chrome {
    /// Starts a timeline to be written to `path`.
    pub fn create(path: &Path) -> Result<Chrome> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .ok_or_else(|| Error::NotAFile(path.to_path_buf()))?;
        let tmp = dir.join(format!(
            ".{}.tmp{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = File::create(&tmp)
            .map_err(|e| Error::write(format!("creating {}", tmp.display()), e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")
            .map_err(|e| Error::write(format!("writing {}", tmp.display()), e))?;
        Ok(Chrome {
            path: path.to_path_buf(),
            tmp,
            out,
            events: 0,
            next_flow: 1,
            origin: None,
            hosts: Vec::new(),
            finished: false,
        })
    }

    fn event(&mut self, json: &str) -> Result<()> {
        let sep = if self.events == 0 { "" } else { ",\n" };
        self.events += 1;
        write!(self.out, "{sep}{json}")
            .map_err(|e| Error::write(format!("writing {}", self.tmp.display()), e))
    }

    fn pid(&self, rank_host: &str) -> usize {
        self.hosts
            .iter()
            .position(|h| h == rank_host)
            .map_or(0, |i| i + 1)
    }

    /// The names of hosts and ranks, once.
    fn metadata(&mut self, headers: &[Option<Header>]) -> Result<()> {
        let mut hosts: Vec<String> = headers.iter().flatten().map(|h| h.host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        self.hosts = hosts.clone();
        for (i, h) in hosts.iter().enumerate() {
            self.event(&format!(
                r#"{{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}}"#,
                i + 1,
                quoted(&format!("host {h}"))
            ))?;
        }
        for (rank, h) in headers.iter().enumerate() {
            let Some(h) = h else { continue };
            let (pid, tid) = (self.pid(&h.host), rank + 1);
            self.event(&format!(
                r#"{{"name":"thread_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":"rank {rank}"}}}}"#
            ))?;
            self.event(&format!(
                r#"{{"name":"thread_sort_index","ph":"M","pid":{pid},"tid":{tid},"args":{{"sort_index":{rank}}}}}"#
            ))?;
        }
        Ok(())
    }

    /// The flow id of each paired send and receive, by rank and event, and
    /// whether it is the send.
    fn flows(&mut self, view: &View) -> Vec<Vec<Option<(u64, bool)>>> {
        let mut flows: Vec<Vec<Option<(u64, bool)>>> = view
            .ranks
            .iter()
            .map(|v| vec![None; v.as_ref().map_or(0, |v| v.t.len())])
            .collect();
        for m in &view.messages.paired {
            let id = self.next_flow;
            self.next_flow += 1;
            flows[m.send.rank][m.send.index] = Some((id, true));
            flows[m.recv.rank][m.recv.index] = Some((id, false));
        }
        flows
    }

    /// Writes one call.
    pub(crate) fn add(&mut self, view: &View, headers: &[Option<Header>]) -> Result<()> {
        if self.origin.is_none() {
            self.metadata(headers)?;
            self.origin = view.ranks.iter().flatten().map(|v| v.enter()).min();
        }
        let origin = self.origin.unwrap_or(0);
        let flows = self.flows(view);
        let mut critical: Vec<Vec<bool>> = flows.iter().map(|f| vec![false; f.len()]).collect();
        for step in crate::critical::path(view).unwrap_or_default() {
            critical[step.rank][step.index] = true;
        }
        let name = quoted(view.imp);
        for (rank, v) in view.ranks.iter().enumerate() {
            let Some(v) = v else { continue };
            let host = headers[rank].as_ref().map_or("", |h| h.host.as_str());
            let (pid, tid) = (self.pid(host), rank + 1);
            let at = |ns: i64| micros(ns - origin);
            self.event(&format!(
                r#"{{"name":{name},"cat":"call","ph":"X","pid":{pid},"tid":{tid},"ts":{},"dur":{},"args":{{"call":{},"bytes":{},"root":{},"rank":{rank}}}}}"#,
                at(v.enter()),
                micros(v.done() - v.enter()),
                view.seq,
                view.bytes,
                view.root
            ))?;
            for (i, e) in v.call.events.iter().enumerate().skip(1) {
                let stage = match (e.stage, e.peer()) {
                    (Stage::Received, Some(p)) => format!("receive ← {p}"),
                    (Stage::Combined, Some(p)) => format!("combine {p}"),
                    (Stage::Sent, Some(p)) => format!("send → {p}"),
                    (Stage::Received, None) => "receive".into(),
                    (Stage::Combined, None) => "combine".into(),
                    (Stage::Sent, None) => "send".into(),
                    (Stage::Done | Stage::Enter, _) => "finish".into(),
                };
                let flow = match flows[rank][i] {
                    Some((id, true)) => format!(r#","bind_id":{id},"flow_out":true"#),
                    Some((id, false)) => format!(r#","bind_id":{id},"flow_in":true"#),
                    None => String::new(),
                };
                let on_path = if critical[rank][i] {
                    r#","critical":true"#
                } else {
                    ""
                };
                self.event(&format!(
                    r#"{{"name":{},"cat":"stage","ph":"X","pid":{pid},"tid":{tid},"ts":{},"dur":{}{flow},"args":{{"segment":{},"phase":{}{on_path}}}}}"#,
                    quoted(&stage),
                    at(v.t[i - 1]),
                    micros(v.t[i] - v.t[i - 1]),
                    e.segment,
                    e.phase
                ))?;
            }
        }
        Ok(())
    }

    /// Closes the document and renames it over the target.
    pub fn finish(mut self) -> Result<Timeline> {
        let tmp = self.tmp.clone();
        let io = |e| Error::write(format!("writing {}", tmp.display()), e);
        self.out.write_all(b"\n]}\n").map_err(io)?;
        self.out.flush().map_err(io)?;
        self.out.get_ref().sync_all().map_err(io)?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| {
            let what = format!("renaming {} to {}", self.tmp.display(), self.path.display());
            Error::write(what, e)
        })?;
        self.finished = true;
        let bytes = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        Ok(Timeline {
            path: self.path.clone(),
            bytes,
        })
    }
}

impl Drop for Chrome {
    /// A timeline not finished (the analysis failed) leaves no file.
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
