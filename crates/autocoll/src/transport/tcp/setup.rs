//! How the ranks of a TCP job find each other.
//!
//! Rank 0 listens on the address the launcher gave it; every other rank
//! listens on its own host's address (a free port) and registers with
//! rank 0: a [`Hello`] carrying the job token, its rank and that address.
//! Rank 0 checks the token, answers with its own hello, and once all ranks
//! are in, sends each the [`Table`] of addresses; that connection then
//! carries the pair's messages. Every other pair connects from the higher
//! rank to the lower one with the same exchange of hellos.
//!
//! A connection that does not prove the token is logged and dropped, and
//! the listener keeps accepting: a stray or hostile client cannot stop the
//! job. A rank answers a hello only after checking its token, so the token
//! is never told to a stranger. The listener closes once the job is
//! connected.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};

use super::wire::{self, Entry, Hello, Table, Token, HELLO_FIXED};
use crate::error::{Error, Result};
use crate::transport::DEFAULT_TIMEOUT;

/// The line rank 0 prints so that a launcher learns its port.
pub const PORT_LINE: &str = "@autocoll-port ";

/// Frames above this many bytes are refused unless `AUTOCOLL_MAX_FRAME` says
/// otherwise.
pub const DEFAULT_MAX_FRAME: u64 = 1 << 30;

/// Everything a rank needs to join a TCP job.
#[derive(Clone, Debug)]
pub struct Config {
    /// This rank.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// Rank 0's address (`host:port`); rank 0 listens there, port 0 picks one.
    pub root: String,
    /// The job's secret.
    pub token: Token,
    /// The address this rank listens on (rank 0 uses `root`'s).
    pub bind: IpAddr,
    /// The name of this rank's host.
    pub host: String,
    /// The path of its host's switch, when the job knows it
    /// (`AUTOCOLL_SWITCH`, see [`crate::layout`]).
    pub switch: Option<String>,
    /// How long set-up and every receive may wait.
    pub timeout: Duration,
    /// The largest frame accepted or sent.
    pub max_frame: u64,
    /// Rank 0 prints [`PORT_LINE`] and its port on stdout once it listens.
    pub announce: bool,
}

impl Config {
    /// A configuration for one rank of a job on this host.
    pub fn local(rank: usize, size: usize, root: String, token: Token) -> Config {
        Config {
            rank,
            size,
            root,
            token,
            bind: IpAddr::from([127, 0, 0, 1]),
            host: "127.0.0.1".into(),
            switch: None,
            timeout: DEFAULT_TIMEOUT,
            max_frame: DEFAULT_MAX_FRAME,
            announce: false,
        }
    }

    /// Reads the job from the `AUTOCOLL_*` environment variables, or
    /// `None` when `AUTOCOLL_RANK` is not set (not started by a launcher).
    pub fn from_env() -> Result<Option<Config>> {
        let Some(rank) = var("AUTOCOLL_RANK")? else {
            return Ok(None);
        };
        let rank: usize = parse("AUTOCOLL_RANK", &rank)?;
        let size: usize = parse("AUTOCOLL_SIZE", &need("AUTOCOLL_SIZE")?)?;
        if rank >= size {
            return Err(Error::Config(format!(
                "AUTOCOLL_RANK={rank} is not below AUTOCOLL_SIZE={size}"
            )));
        }
        let root = need("AUTOCOLL_ROOT_ADDR")?;
        let token = Token::parse(&need("AUTOCOLL_TOKEN")?)
            .map_err(|e| Error::Config(format!("AUTOCOLL_TOKEN: {e}")))?;
        let mut config = Config::local(rank, size, root, token);
        if let Some(bind) = var("AUTOCOLL_BIND")? {
            config.bind = parse("AUTOCOLL_BIND", &bind)?;
            config.host = bind;
        }
        if let Some(host) = var("AUTOCOLL_HOST")?.filter(|h| !h.is_empty()) {
            config.host = host;
        }
        config.switch = var("AUTOCOLL_SWITCH")?.filter(|s| !s.is_empty());
        if let Some(secs) = var("AUTOCOLL_TIMEOUT")? {
            config.timeout = parse_secs(&secs)?;
        }
        if let Some(max) = var("AUTOCOLL_MAX_FRAME")? {
            let bytes = crate::ids::parse_bytes(&max)
                .map_err(|e| Error::Config(format!("AUTOCOLL_MAX_FRAME: {e}")))?;
            config.max_frame = bytes as u64;
        }
        config.announce = var("AUTOCOLL_ANNOUNCE")?.is_some_and(|v| v == "1");
        if var("AUTOCOLL_PORT_ON_STDIN")?.is_some_and(|v| v == "1") {
            let port = port_from_stdin(config.timeout)?;
            let host = config.root.rsplit_once(':').map_or("", |(h, _)| h);
            config.root = format!("{host}:{port}");
        }
        Ok(Some(config))
    }

    fn hello(&self, addr: SocketAddr) -> Hello {
        Hello {
            token: self.token,
            clock: crate::clock::clock_id(),
            rank: self.rank as u32,
            size: self.size as u32,
            addr: addr.to_string(),
            host: self.host.clone(),
            switch: self.switch.clone().unwrap_or_default(),
        }
    }
}

/// Reads the line on which the launcher passes rank 0's port.
fn port_from_stdin(timeout: Duration) -> Result<u16> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = tx.send(std::io::stdin().read_line(&mut line).map(|_| line));
    });
    let line = match rx.recv_timeout(timeout) {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => return Err(Error::io("reading rank 0's port from stdin", e)),
        Err(_) => {
            return Err(Error::Config(format!(
                "the launcher sent no port for rank 0 within {timeout:?}"
            )))
        }
    };
    line.trim().parse().map_err(|_| {
        Error::Config(format!(
            "the launcher sent `{}` for rank 0's port (did rank 0 end early?)",
            line.trim()
        ))
    })
}

fn var(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(Error::Config(format!("{name} is not valid UTF-8")))
        }
    }
}

fn need(name: &str) -> Result<String> {
    var(name)?.ok_or_else(|| {
        Error::Config(format!(
            "{name} is not set (AUTOCOLL_RANK is, so a launcher must set both)"
        ))
    })
}

fn parse<T: std::str::FromStr>(name: &str, text: &str) -> Result<T> {
    text.trim()
        .parse()
        .map_err(|_| Error::Config(format!("{name}=`{text}` is not valid")))
}

/// Seconds, possibly fractional, as in `AUTOCOLL_TIMEOUT=2.5`.
pub fn parse_secs(text: &str) -> Result<Duration> {
    let secs: f64 = parse("AUTOCOLL_TIMEOUT", text)?;
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Error::Config(format!("AUTOCOLL_TIMEOUT=`{text}` is not a positive time")))
}

/// The connections of one rank, indexed by peer rank (`None` for itself).
pub struct Links {
    /// One stream per peer.
    pub streams: Vec<Option<TcpStream>>,
    /// Every rank's listening address.
    pub addrs: Vec<String>,
    /// Every rank's host name.
    pub hosts: Vec<String>,
    /// Every rank's switch, when known.
    pub switches: Vec<Option<String>>,
    /// Every rank's clock identity.
    pub clocks: Vec<[u8; 16]>,
}

/// Binds this rank's listener: rank 0 on `root`, the others on `bind`.
pub fn bind(config: &Config) -> Result<TcpListener> {
    let addr = if config.rank == 0 {
        resolve(&config.root)?
    } else {
        SocketAddr::new(config.bind, 0)
    };
    TcpListener::bind(addr)
        .map_err(|e| Error::io(format!("rank {}: listening on {addr}", config.rank), e))
}

fn resolve(addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .map_err(|e| Error::io(format!("resolving `{addr}`"), e))?
        .next()
        .ok_or_else(|| Error::Config(format!("`{addr}` resolves to no address")))
}

/// Binds, meets the other ranks and connects to all of them.
pub fn establish(config: &Config) -> Result<Links> {
    establish_on(config, bind(config)?)
}

/// [`establish`] on a listener the caller bound (tests bind rank 0's first
/// to learn its port).
pub fn establish_on(config: &Config, listener: TcpListener) -> Result<Links> {
    if config.size == 1 {
        return Ok(Links {
            streams: vec![None],
            addrs: vec![config.root.clone()],
            hosts: vec![config.host.clone()],
            switches: vec![config.switch.clone()],
            clocks: vec![crate::clock::clock_id()],
        });
    }
    let deadline = Instant::now() + config.timeout;
    let local = listener
        .local_addr()
        .map_err(|e| Error::io("reading the listener's address", e))?;
    if config.rank == 0 && config.announce {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{PORT_LINE}{}", local.port());
        let _ = out.flush();
    }
    let me = config.hello(local);
    let acceptor = Acceptor::start(listener, config, me.clone())?;
    let outcome = if config.rank == 0 {
        root_side(config, &acceptor, deadline)
    } else {
        other_side(config, &me, &acceptor, deadline)
    };
    acceptor.stop();
    let links = outcome?;
    for stream in links.streams.iter().flatten() {
        tune(stream, config).map_err(|e| Error::io("setting socket options", e))?;
    }
    Ok(links)
}

fn tune(stream: &TcpStream, config: &Config) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    // Reads wait for data only inside a frame that has begun (poll says
    // when one has): a peer that stalls there is cut off after the timeout.
    stream.set_read_timeout(Some(config.timeout))?;
    // Writers may wait as long as a peer takes to read; `Drop` bounds it.
    stream.set_write_timeout(None)
}

/// Rank 0: waits for every rank to register, then tells each the table.
fn root_side(config: &Config, acceptor: &Acceptor, deadline: Instant) -> Result<Links> {
    let mut joined = vec![None; config.size];
    let mut streams: Vec<Option<TcpStream>> = (0..config.size).map(|_| None).collect();
    joined[0] = Some(acceptor.me.clone());
    let mut missing = config.size - 1;
    while missing > 0 {
        let (hello, stream) = acceptor.next(config, deadline, &streams)?;
        let r = hello.rank as usize;
        joined[r] = Some(hello);
        streams[r] = Some(stream);
        missing -= 1;
    }
    let joined: Vec<Hello> = joined.into_iter().flatten().collect();
    let table = Table {
        ranks: joined
            .iter()
            .map(|h| Entry {
                addr: h.addr.clone(),
                host: h.host.clone(),
                switch: h.switch.clone(),
                clock: h.clock,
            })
            .collect(),
    };
    let bytes = table.encode().map_err(Error::Config)?;
    for (r, stream) in streams.iter().enumerate().skip(1) {
        let mut stream = stream.as_ref().expect("every rank joined");
        stream
            .write_all(&bytes)
            .map_err(|e| Error::io(format!("rank 0: sending the address table to rank {r}"), e))?;
    }
    Ok(links(streams, table))
}

fn links(streams: Vec<Option<TcpStream>>, table: Table) -> Links {
    let mut links = Links {
        streams,
        addrs: Vec::new(),
        hosts: Vec::new(),
        switches: Vec::new(),
        clocks: Vec::new(),
    };
    for entry in table.ranks {
        links.addrs.push(entry.addr);
        links.hosts.push(entry.host);
        links
            .switches
            .push(Some(entry.switch).filter(|s| !s.is_empty()));
        links.clocks.push(entry.clock);
    }
    links
}

/// Any other rank: registers with rank 0, connects to the lower ranks and
/// accepts the higher ones.
fn other_side(
    config: &Config,
    me: &Hello,
    acceptor: &Acceptor,
    deadline: Instant,
) -> Result<Links> {
    let root = resolve(&config.root)?;
    let mut to_root = connect(root, deadline, config)?;
    greet(&mut to_root, me, 0, config)?;
    let table = wire::read_table(|buf| to_root.read_exact(buf), config.size).map_err(|reason| {
        Error::Protocol {
            peer: format!("rank 0 ({root})"),
            reason,
        }
    })?;
    let mut streams: Vec<Option<TcpStream>> = (0..config.size).map(|_| None).collect();
    streams[0] = Some(to_root);
    for (lower, entry) in table.ranks.iter().enumerate().take(config.rank).skip(1) {
        let addr = resolve(&entry.addr)?;
        let mut stream = connect(addr, deadline, config)?;
        greet(&mut stream, me, lower, config)?;
        streams[lower] = Some(stream);
    }
    for _ in config.rank + 1..config.size {
        let (hello, stream) = acceptor.next(config, deadline, &streams)?;
        streams[hello.rank as usize] = Some(stream);
    }
    Ok(links(streams, table))
}

/// Connects, retrying while nobody listens yet (rank 0 may start last).
fn connect(addr: SocketAddr, deadline: Instant, config: &Config) -> Result<TcpStream> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match TcpStream::connect_timeout(&addr, left.max(Duration::from_millis(1))) {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() >= deadline => {
                return Err(Error::io(
                    format!(
                        "rank {}: connecting to {addr} within {:?}",
                        config.rank, config.timeout
                    ),
                    e,
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Sends our hello and checks the answer comes from rank `want` of this job.
fn greet(stream: &mut TcpStream, me: &Hello, want: usize, config: &Config) -> Result<()> {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let name = format!("rank {want} ({peer})");
    stream
        .set_read_timeout(Some(config.timeout))
        .map_err(|e| Error::io("setting a read timeout", e))?;
    let bytes = me.encode().map_err(Error::Config)?;
    stream
        .write_all(&bytes)
        .map_err(|e| Error::io(format!("rank {}: greeting {name}", config.rank), e))?;
    let reply = read_hello(stream).map_err(|reason| Error::Protocol {
        peer: name.clone(),
        reason,
    })?;
    let problem = if reply.token != config.token {
        Some("it answered with another job's token".to_string())
    } else if reply.rank as usize != want || reply.size as usize != config.size {
        Some(format!(
            "it answered as rank {} of {}, expected rank {want} of {}",
            reply.rank, reply.size, config.size
        ))
    } else {
        None
    };
    match problem {
        Some(reason) => Err(Error::Protocol { peer: name, reason }),
        None => Ok(()),
    }
}

/// Reads one hello, trusting none of its lengths.
fn read_hello(stream: &mut TcpStream) -> std::result::Result<Hello, String> {
    let mut fixed = [0u8; HELLO_FIXED];
    stream
        .read_exact(&mut fixed)
        .map_err(|e| format!("no complete hello: {e}"))?;
    let fixed = wire::decode_hello_fixed(&fixed)?;
    let mut rest = vec![0u8; fixed.rest_len()];
    stream
        .read_exact(&mut rest)
        .map_err(|e| format!("no complete hello: {e}"))?;
    wire::decode_hello_rest(fixed, &rest)
}

/// Accepts connections on a thread of its own, checks each one's hello on
/// another, and hands over the ones that prove the token.
struct Acceptor {
    me: Hello,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    joined: Receiver<(Hello, TcpStream)>,
    thread: JoinHandle<()>,
}

impl Acceptor {
    fn start(listener: TcpListener, config: &Config, me: Hello) -> Result<Acceptor> {
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the listener's address", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, joined) = unbounded();
        let (config, stop2, me2) = (config.clone(), stop.clone(), me.clone());
        let thread = std::thread::Builder::new()
            .name("tcp-accept".into())
            .spawn(move || accept_loop(&listener, &config, &me2, &stop2, &tx))
            .map_err(|e| Error::io("starting the accept thread", e))?;
        Ok(Acceptor {
            me,
            addr,
            stop,
            joined,
            thread,
        })
    }

    /// The next peer that proved the token and is not yet connected.
    fn next(
        &self,
        config: &Config,
        deadline: Instant,
        have: &[Option<TcpStream>],
    ) -> Result<(Hello, TcpStream)> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.joined.recv_timeout(left) {
                Ok((hello, stream)) if have[hello.rank as usize].is_some() => {
                    refused(
                        config,
                        &stream,
                        &format!("rank {} is already connected", hello.rank),
                    );
                }
                Ok(joined) => return Ok(joined),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    let missing: Vec<String> = (0..config.size)
                        .filter(|&r| r != config.rank && have[r].is_none())
                        .map(|r| r.to_string())
                        .collect();
                    return Err(Error::Config(format!(
                        "rank {}: ranks {} did not connect within {:?}",
                        config.rank,
                        missing.join(","),
                        config.timeout
                    )));
                }
            }
        }
    }

    /// Closes the listener: wakes the accept call with a connection of our own.
    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => IpAddr::from([127, 0, 0, 1]),
                SocketAddr::V6(_) => IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
            });
        }
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
            let _ = self.thread.join();
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    config: &Config,
    me: &Hello,
    stop: &AtomicBool,
    tx: &Sender<(Hello, TcpStream)>,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let (config, me, tx) = (config.clone(), me.clone(), tx.clone());
        // A client that connects and stays silent only holds its own thread.
        let _ = std::thread::Builder::new()
            .name("tcp-hello".into())
            .spawn(move || match admit(stream, &config, &me) {
                Ok(joined) => {
                    let _ = tx.send(joined);
                }
                Err((stream, reason)) => refused(&config, &stream, &reason),
            });
    }
}

fn refused(config: &Config, stream: &TcpStream, reason: &str) {
    let from = stream
        .peer_addr()
        .map_or_else(|_| "an unknown address".to_string(), |a| a.to_string());
    eprintln!(
        "autocoll: rank {} refused a connection from {from}: {reason}",
        config.rank
    );
}

/// Checks a connecting peer's hello and answers it with ours.
fn admit(
    mut stream: TcpStream,
    config: &Config,
    me: &Hello,
) -> std::result::Result<(Hello, TcpStream), (TcpStream, String)> {
    if let Err(e) = stream.set_read_timeout(Some(config.timeout)) {
        return Err((stream, format!("setting a read timeout: {e}")));
    }
    let hello = match read_hello(&mut stream) {
        Ok(hello) => hello,
        Err(reason) => return Err((stream, reason)),
    };
    if let Some(reason) = unwelcome(&hello, config) {
        return Err((stream, reason));
    }
    let reply = me.encode().and_then(|bytes| {
        stream
            .write_all(&bytes)
            .map_err(|e| format!("answering its hello: {e}"))
    });
    match reply {
        Ok(()) => Ok((hello, stream)),
        Err(reason) => Err((stream, reason)),
    }
}

/// Why a hello is refused: wrong job, wrong size, or a rank that should not
/// connect to this one (only higher ranks connect to lower ones).
fn unwelcome(hello: &Hello, config: &Config) -> Option<String> {
    if hello.token != config.token {
        return Some("it did not present this job's token".into());
    }
    if hello.size as usize != config.size {
        return Some(format!(
            "it belongs to a job of {} ranks, this one has {}",
            hello.size, config.size
        ));
    }
    if (hello.rank as usize) <= config.rank || hello.rank as usize >= config.size {
        return Some(format!(
            "rank {} does not connect to rank {}",
            hello.rank, config.rank
        ));
    }
    None
}
