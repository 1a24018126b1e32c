//! Starting the ranks of a `tcp` job as processes, as `mpirun` does.
//!
//! The launcher places ranks on hosts (all on 127.0.0.1 without a
//! hostfile; otherwise filling each hostfile line's slots in order), makes
//! a random job token and starts every rank at once. Rank 0 listens on a
//! free port of its host and prints it on a line the launcher takes out of
//! its output; the launcher writes it to the other ranks' stdin, where
//! their `autocoll::init()` waits for it. No port is guessed, so there is
//! no race for one, and it works the same through any agent. Each rank
//! learns its part from `AUTOCOLL_*` environment variables (through
//! `env VAR=VALUE ...` on the command line when an agent such as `ssh`
//! runs it). Every line a rank prints is forwarded with a `[rank N] `
//! prefix. When a rank fails, the others have a second to end on their
//! own (and say why), then are killed; the job's status is the first
//! failed rank's.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::binding::{self, BindTo};
use crate::error::{Error, Result};
use crate::transport::tcp::setup::PORT_LINE;
use crate::transport::tcp::wire::Token;

mod hosts;

pub use hosts::{layout_of, parse_hostfile, place, read_hostfile, HostLine, Place};

/// The words of an agent template with `{host}` replaced, e.g.
/// `ip netns exec {host}` → `["ip", "netns", "exec", "h1"]`. A template
/// without `{host}` is called as ssh is, with the host as its next word
/// (so `ssh` and the emulated cluster's `agent` work as they are, as they
/// do for Open MPI's `plm_rsh_agent`).
pub fn agent_words(template: &str, host: &str) -> Result<Vec<String>> {
    let mut words: Vec<String> = template
        .split_whitespace()
        .map(|w| w.replace("{host}", host))
        .collect();
    if words.is_empty() {
        return Err(Error::Config("the agent template is empty".into()));
    }
    if !template.contains("{host}") {
        words.push(host.to_string());
    }
    Ok(words)
}

/// Which output stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Receives every line a rank prints (with its newline, if it had one).
pub type Sink = Arc<dyn Fn(usize, Stream, &[u8]) + Send + Sync>;

/// The default sink: each line to the same stream here, after `[rank N] `.
pub fn prefixed() -> Sink {
    Arc::new(|rank, stream, line| {
        let mut text = format!("[rank {rank}] ").into_bytes();
        text.extend_from_slice(line);
        if !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        // One write per line, so lines of different ranks never interleave.
        let _ = match stream {
            Stream::Stdout => std::io::stdout().lock().write_all(&text),
            Stream::Stderr => std::io::stderr().lock().write_all(&text),
        };
    })
}

/// A job to launch.
#[derive(Clone, Debug)]
pub struct Job {
    /// Ranks.
    pub ranks: usize,
    /// Hostfile lines; `None` runs every rank on 127.0.0.1.
    pub hosts: Option<Vec<HostLine>>,
    /// Agent template that runs a command on `{host}`, e.g. `ssh {host}`.
    pub agent: Option<String>,
    /// The program every rank runs.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Set-up and receive timeout given to the ranks (`AUTOCOLL_TIMEOUT`).
    pub timeout: Option<Duration>,
    /// Which ranks bind themselves to a core (`AUTOCOLL_BIND_TO`).
    pub bind_to: BindTo,
    /// More variables every rank gets, over the launcher's own
    /// `AUTOCOLL_*` (`autocoll launch --learn`'s state and pattern files).
    pub env: Vec<(String, String)>,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// 0, or the first failing rank's exit code (128 + signal if killed).
    pub code: i32,
    /// The first rank that failed.
    pub failed: Option<usize>,
}

/// A started rank.
struct Rank {
    child: Child,
    output: Vec<JoinHandle<()>>,
    status: Option<ExitStatus>,
    killed: bool,
}

/// The variables that describe one rank of one job: never inherited from
/// the launcher's environment (a launcher started inside a rank has them).
const JOB_VARIABLES: [&str; 10] = [
    "AUTOCOLL_RANK",
    "AUTOCOLL_SIZE",
    "AUTOCOLL_ROOT_ADDR",
    "AUTOCOLL_TOKEN",
    "AUTOCOLL_BIND",
    "AUTOCOLL_HOST",
    "AUTOCOLL_SWITCH",
    "AUTOCOLL_ANNOUNCE",
    "AUTOCOLL_PORT_ON_STDIN",
    binding::VARIABLE,
];

impl Job {
    /// Starts every rank, forwards their output to `sink`, and waits for
    /// all of them (killing the rest once one fails).
    pub fn run(&self, sink: Sink) -> Result<Outcome> {
        if self.ranks == 0 {
            return Err(Error::Config("a job needs at least 1 rank".into()));
        }
        if self.agent.is_some() && self.hosts.is_none() {
            return Err(Error::Config("an agent needs a hostfile".into()));
        }
        let places = place(self.ranks, self.hosts.as_deref())?;
        let token = Token::random().map_err(|e| Error::io("making a job token", e))?;
        let (port_tx, port_rx) = unbounded();
        let root = format!("{}:0", bracket(places[0].addr));
        // Every rank starts at once; the others learn rank 0's port on
        // their stdin as soon as rank 0 prints it.
        let mut ranks = Vec::with_capacity(self.ranks);
        let mut stdins = Vec::new();
        for r in 0..self.ranks {
            let port = (r == 0).then(|| port_tx.clone());
            match self.spawn(r, &places, &root, token, &sink, port) {
                Ok((rank, stdin)) => {
                    ranks.push(rank);
                    stdins.extend(stdin);
                }
                Err(e) => {
                    kill_all(&mut ranks);
                    return Err(e);
                }
            }
        }
        drop(port_tx);
        // Not joined: a killed rank 0's children may keep its output, and
        // so the relay's wait, open after the job is over.
        std::thread::spawn(move || relay_port(&port_rx, stdins));
        Ok(finish(ranks))
    }

    fn env(
        &self,
        rank: usize,
        places: &[Place],
        root: &str,
        token: Token,
    ) -> Vec<(String, String)> {
        // The launcher's own AUTOCOLL_* settings (AUTOCOLL_MAX_FRAME, and
        // the switches of tracing and the like) reach every rank, also
        // through an agent that passes no environment on; the job's own
        // variables below override them.
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("AUTOCOLL_") && !JOB_VARIABLES.contains(&k.as_str()))
            .collect();
        env.extend([
            ("AUTOCOLL_RANK".to_string(), rank.to_string()),
            ("AUTOCOLL_SIZE".into(), self.ranks.to_string()),
            ("AUTOCOLL_ROOT_ADDR".into(), root.to_string()),
            ("AUTOCOLL_TOKEN".into(), token.to_string()),
            ("AUTOCOLL_BIND".into(), places[rank].addr.to_string()),
            ("AUTOCOLL_HOST".into(), places[rank].host.clone()),
            (binding::VARIABLE.into(), self.bind_to.to_string()),
        ]);
        // Without one in the hostfile, the agent may know the switch (the
        // emulated cluster's exports it), so none is set here.
        if let Some(switch) = &places[rank].switch {
            env.push(("AUTOCOLL_SWITCH".into(), switch.clone()));
        }
        if rank == 0 {
            env.push(("AUTOCOLL_ANNOUNCE".into(), "1".into()));
        } else {
            env.push(("AUTOCOLL_PORT_ON_STDIN".into(), "1".into()));
        }
        if let Some(t) = self.timeout {
            env.push(("AUTOCOLL_TIMEOUT".into(), t.as_secs_f64().to_string()));
        }
        env.retain(|(k, _)| !self.env.iter().any(|(mine, _)| mine == k));
        env.extend(self.env.iter().cloned());
        env
    }

    fn command(&self, rank: usize, places: &[Place], root: &str, token: Token) -> Result<Command> {
        let env = self.env(rank, places, root, token);
        let Some(template) = &self.agent else {
            let mut cmd = Command::new(&self.program);
            cmd.args(&self.args).envs(env);
            return Ok(cmd);
        };
        // An agent (ssh) may not pass our environment on: put it on the
        // command line through `env`.
        let words = agent_words(template, &places[rank].host)?;
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]).arg("env");
        cmd.args(env.iter().map(|(k, v)| format!("{k}={v}")));
        cmd.arg(&self.program).args(&self.args);
        Ok(cmd)
    }

    fn spawn(
        &self,
        rank: usize,
        places: &[Place],
        root: &str,
        token: Token,
        sink: &Sink,
        port: Option<Sender<u16>>,
    ) -> Result<(Rank, Option<ChildStdin>)> {
        let mut cmd = self.command(rank, places, root, token)?;
        let stdin = if rank == 0 {
            Stdio::null()
        } else {
            Stdio::piped()
        };
        cmd.stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            Error::io(
                format!(
                    "starting rank {rank} ({})",
                    Path::new(&self.program).display()
                ),
                e,
            )
        })?;
        let out = child.stdout.take().expect("stdout is piped");
        let err = child.stderr.take().expect("stderr is piped");
        let output = vec![
            forward(rank, Stream::Stdout, out, sink.clone(), port),
            forward(rank, Stream::Stderr, err, sink.clone(), None),
        ];
        let stdin = child.stdin.take();
        let rank = Rank {
            child,
            output,
            status: None,
            killed: false,
        };
        Ok((rank, stdin))
    }
}

/// An IPv6 address needs brackets before `:port`.
fn bracket(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Forwards one stream line by line; on rank 0's stdout it takes out the
/// line that announces the port.
fn forward(
    rank: usize,
    stream: Stream,
    from: impl Read + Send + 'static,
    sink: Sink,
    mut port: Option<Sender<u16>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut from = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match from.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if let Some(tx) = &port {
                // The marker may follow text the program printed without
                // a newline; that text is forwarded on its own.
                if let Some((before, p)) = announced_port(&line) {
                    let _ = tx.send(p);
                    port = None;
                    if !before.is_empty() {
                        sink(rank, stream, &before);
                    }
                    continue;
                }
            }
            sink(rank, stream, &line);
        }
    })
}

/// The text before the port marker and the port, if `line` holds one.
fn announced_port(line: &[u8]) -> Option<(Vec<u8>, u16)> {
    let text = std::str::from_utf8(line).ok()?;
    let at = text.find(PORT_LINE)?;
    let port = text[at + PORT_LINE.len()..].trim().parse().ok()?;
    Some((line[..at].to_vec(), port))
}

/// Hands rank 0's port to the other ranks' stdin, then closes it; closes
/// it at once when rank 0 ends without announcing one.
fn relay_port(port: &Receiver<u16>, stdins: Vec<ChildStdin>) {
    if let Ok(p) = port.recv() {
        for mut stdin in stdins {
            // A rank that already ended cannot take it, and needs not.
            let _ = writeln!(stdin, "{p}");
        }
    }
}

impl Rank {
    /// True once the process has ended.
    fn poll(&mut self) -> bool {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status.is_some()
    }
}

fn kill_all(ranks: &mut [Rank]) {
    for rank in ranks.iter_mut() {
        if !rank.poll() {
            // The rank's own children first: an agent (`sh -c`, `ip netns
            // exec`) or a wrapper script runs the program as its child,
            // which killing the agent alone would leave running.
            for pid in descendants(rank.child.id()) {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            rank.killed = rank.child.kill().is_ok();
        }
    }
}

/// Every process below `pid`, as Linux lists children in /proc (empty
/// where it cannot be read). Collected before anything is killed: a killed
/// parent's children move to init and out of reach.
fn descendants(pid: u32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut todo = vec![pid as i32];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in text
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if !found.contains(&child) {
                    found.push(child);
                    todo.push(child);
                }
            }
        }
    }
    found
}

fn code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// How long the other ranks of a job may take to end on their own once one
/// has failed: most fail a moment later with a reason of their own (rank 0
/// says why the job cannot start, the others that rank 0 failed), and
/// killed at once they would lose it.
const GRACE: Duration = Duration::from_secs(1);

/// Waits for every rank; the first to fail decides the outcome, and the
/// others are killed after [`GRACE`] (they would only wait for it until
/// their timeout).
fn finish(mut ranks: Vec<Rank>) -> Outcome {
    let mut outcome = Outcome {
        code: 0,
        failed: None,
    };
    let mut failed_at: Option<Instant> = None;
    loop {
        let mut running = 0;
        for (r, rank) in ranks.iter_mut().enumerate() {
            let was_running = rank.status.is_none();
            if !rank.poll() {
                running += 1;
                continue;
            }
            let status = rank.status.expect("polled");
            if was_running && !status.success() && outcome.failed.is_none() {
                outcome = Outcome {
                    code: code(status),
                    failed: Some(r),
                };
                failed_at = Some(Instant::now());
            }
        }
        if running == 0 {
            break;
        }
        if failed_at.is_some_and(|t| t.elapsed() >= GRACE) {
            kill_all(&mut ranks);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // A killed rank's children may hold its output open; do not wait for them.
    for rank in ranks.into_iter().filter(|r| !r.killed) {
        for t in rank.output {
            let _ = t.join();
        }
    }
    outcome
}

#[cfg(test)]
mod tests;
