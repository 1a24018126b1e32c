//! Ping-pong over the tcp transport against a plain blocking TCP socket
//! ping-pong, measured side by side in one run, and the start-up time of a
//! 64-rank job on this host.
//!
//! `cargo bench -p autocoll --bench tcp_pingpong` prints one table. Each
//! size runs in alternating rounds (plain, autocoll, plain, ...) and the
//! median round of each is reported, so a busy machine hurts both alike.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use autocoll::comm::tcp::{setup, wire::Token, Config, Tcp};
use autocoll::launch::{self, Job, Stream};
use autocoll::measure::stats::median;
use autocoll::Communicator;
use bytes::Bytes;

const ROUNDS: usize = 7;
const STARTUP_RANKS: usize = 64;

fn main() {
    if std::env::var_os("AUTOCOLL_RANK").is_some() {
        return startup_rank();
    }
    println!("ping-pong on loopback, one-way time per message (median of {ROUNDS} rounds)");
    println!(
        "{:>9} {:>12} {:>12} {:>7}",
        "bytes", "plain µs", "autocoll µs", "ratio"
    );
    for (bytes, iters) in [(1, 20_000), (64 << 10, 2_000), (4 << 20, 100)] {
        let (plain, ours) = compare(bytes, iters);
        println!(
            "{bytes:>9} {:>12.2} {:>12.2} {:>7.2}",
            plain * 1e6,
            ours * 1e6,
            ours / plain
        );
        if bytes == 4 << 20 {
            let (pb, ob) = (bytes as f64 / plain / 1e6, bytes as f64 / ours / 1e6);
            println!(
                "bandwidth at 4 MiB: plain {pb:.0} MB/s, autocoll {ob:.0} MB/s, ratio {:.2}",
                ob / pb
            );
        }
    }
    let mut starts: Vec<f64> = (0..3).map(|_| startup()).collect();
    starts.sort_by(f64::total_cmp);
    println!(
        "{STARTUP_RANKS}-rank job start-up (launch to all connected, 3 runs): median {:.3} s, max {:.3} s",
        starts[1], starts[2]
    );
}

/// Median one-way seconds per message: plain socket, then autocoll.
fn compare(bytes: usize, iters: usize) -> (f64, f64) {
    let mut plain = Vec::new();
    let mut ours = Vec::new();
    let (mut a, mut b) = plain_pair();
    let (mut c0, mut c1) = autocoll_pair();
    for _ in 0..ROUNDS {
        plain.push(plain_round(&mut a, &mut b, bytes, iters));
        ours.push(autocoll_round(&mut c0, &mut c1, bytes, iters));
    }
    (median(&plain), median(&ours))
}

fn plain_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (b, _) = listener.accept().unwrap();
    a.set_nodelay(true).unwrap();
    b.set_nodelay(true).unwrap();
    (a, b)
}

fn plain_round(a: &mut TcpStream, b: &mut TcpStream, bytes: usize, iters: usize) -> f64 {
    let mut echo = b.try_clone().unwrap();
    let server = std::thread::spawn(move || {
        let mut buf = vec![0u8; bytes];
        for _ in 0..iters {
            echo.read_exact(&mut buf).unwrap();
            echo.write_all(&buf).unwrap();
        }
    });
    let out = vec![1u8; bytes];
    let mut back = vec![0u8; bytes];
    let start = Instant::now();
    for _ in 0..iters {
        a.write_all(&out).unwrap();
        a.read_exact(&mut back).unwrap();
    }
    let took = start.elapsed().as_secs_f64();
    server.join().unwrap();
    took / iters as f64 / 2.0
}

fn autocoll_pair() -> (Communicator, Communicator) {
    let token = Token::random().unwrap();
    let mut c0 = Config::local(0, 2, "127.0.0.1:0".into(), token);
    let listener = setup::bind(&c0).unwrap();
    c0.root = listener.local_addr().unwrap().to_string();
    let c1 = Config::local(1, 2, c0.root.clone(), token);
    let one = std::thread::spawn(move || Tcp::connect(&c1).unwrap());
    let zero = Tcp::connect_on(&c0, listener).unwrap();
    (
        Communicator::new(Box::new(zero)),
        Communicator::new(Box::new(one.join().unwrap())),
    )
}

fn autocoll_round(c0: &mut Communicator, c1: &mut Communicator, bytes: usize, iters: usize) -> f64 {
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..iters {
                let got = c1.recv_bytes(0, 1).unwrap();
                c1.send_bytes(0, 1, got).unwrap();
            }
        });
        let out = Bytes::from(vec![1u8; bytes]);
        let start = Instant::now();
        for _ in 0..iters {
            c0.send_bytes(1, 1, out.clone()).unwrap();
            c0.recv_bytes(1, 1).unwrap();
        }
        start.elapsed().as_secs_f64() / iters as f64 / 2.0
    })
}

/// Seconds from launching 64 copies of this program to rank 0 leaving a
/// barrier (so every connection is made).
fn startup() -> f64 {
    let job = Job {
        ranks: STARTUP_RANKS,
        hosts: None,
        agent: None,
        program: std::env::current_exe().unwrap().into(),
        args: Vec::new(),
        timeout: Some(Duration::from_secs(30)),
        bind_to: autocoll::binding::BindTo::Auto,
        env: Vec::new(),
    };
    let seen = Arc::new(Mutex::new(None));
    let keep = seen.clone();
    let forward = launch::prefixed();
    let sink: launch::Sink = Arc::new(move |rank, stream, line| {
        match std::str::from_utf8(line)
            .ok()
            .and_then(|l| l.strip_prefix("STARTED "))
        {
            Some(ns) if rank == 0 && stream == Stream::Stdout => {
                *keep.lock().unwrap() = ns.trim().parse::<u64>().ok()
            }
            _ => forward(rank, stream, line),
        }
    });
    let t0 = autocoll::clock::now_ns();
    let outcome = job.run(sink).unwrap();
    assert_eq!(outcome.code, 0, "the start-up job failed");
    let done = seen.lock().unwrap().expect("rank 0 reported");
    (done - t0) as f64 / 1e9
}

/// One rank of the start-up job: rank 0 prints the shared monotonic clock
/// once the barrier shows every rank connected.
fn startup_rank() {
    let mut comm = autocoll::init().unwrap();
    comm.barrier().unwrap();
    if comm.rank() == 0 {
        println!("STARTED {}", autocoll::clock::now_ns());
    }
}
