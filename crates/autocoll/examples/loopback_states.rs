//! One MiB over loopback TCP, timed outside autocoll: a sender thread
//! writes it, a receiver thread reads it whole and answers with a byte.
//! Each placement of the two threads on the processors (both on one, one
//! each, left to the scheduler) runs in turn, round after round, so that
//! the machine's moods hit all alike. On the 2-core virtual machine this
//! project is measured on, the same transfer takes about 130 µs or about
//! 300 µs, by turns, whatever autocoll does: the two states `truth` found
//! in `reduce` and `bcast` at 1 MiB on 2 ranks (docs/measurement.md).
//!
//! `cargo run --release -p autocoll --example loopback_states [ROUNDS]`

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use autocoll::measure::Summary;
use rustix::thread::{sched_setaffinity, CpuSet};

const BYTES: usize = 1 << 20;
/// Transfers a placement gets in a round.
const CALLS: usize = 300;
/// Transfers averaged into one repetition, as `truth` keeps ten calls.
const REP: usize = 10;

fn main() -> std::io::Result<()> {
    let rounds: usize = match std::env::args().nth(1) {
        None => 4,
        Some(a) => match a.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("loopback_states: ROUNDS must be a positive count, not '{a}'");
                std::process::exit(2);
            }
        },
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut places: Vec<(Option<usize>, Option<usize>)> = vec![(None, None)];
    for a in 0..cpus.min(2) {
        for b in 0..cpus.min(2) {
            places.push((Some(a), Some(b)));
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); places.len()];
    for _ in 0..rounds {
        for (k, &(a, b)) in places.iter().enumerate() {
            times[k].extend(transfers(a, b)?);
        }
    }
    println!("sender receiver   call median   rep median  fastest rep  reps within 1.5x of it");
    for (k, &(a, b)) in places.iter().enumerate() {
        report(a, b, &times[k]);
    }
    Ok(())
}

/// `CALLS` timed transfers (µs) with the sender on `a` and the receiver on
/// `b` (None: where the scheduler puts it), after ten untimed.
fn transfers(a: Option<usize>, b: Option<usize>) -> std::io::Result<Vec<f64>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let receiver = std::thread::spawn(move || -> std::io::Result<()> {
        pin(b)?;
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; BYTES];
        loop {
            match s.read_exact(&mut buf) {
                Ok(()) => s.write_all(b"x")?,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    });
    pin(a)?;
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let data = vec![7u8; BYTES];
    let mut ack = [0u8; 1];
    let mut out = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 10 {
        let t = Instant::now();
        s.write_all(&data)?;
        s.read_exact(&mut ack)?;
        if i >= 10 {
            out.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    drop(s);
    pin(None)?;
    receiver.join().expect("the receiver does not panic")?;
    Ok(out)
}

/// Binds the calling thread to processor `cpu`, or frees it.
fn pin(cpu: Option<usize>) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    match cpu {
        Some(c) => set.set(c),
        None => (0..n).for_each(|c| set.set(c)),
    }
    sched_setaffinity(None, &set)?;
    Ok(())
}

fn report(a: Option<usize>, b: Option<usize>, calls: &[f64]) {
    let reps: Vec<f64> = calls
        .chunks(REP)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let fastest = reps.iter().copied().fold(f64::INFINITY, f64::min);
    let near = reps.iter().filter(|&&r| r < 1.5 * fastest).count();
    let place = |c: Option<usize>| c.map_or("any".to_string(), |c| format!("cpu {c}"));
    println!(
        "{:>6} {:>8} {:>10.0} µs {:>9.0} µs {:>9.0} µs   {near} of {}",
        place(a),
        place(b),
        Summary::of(calls).median,
        Summary::of(&reps).median,
        fastest,
        reps.len()
    );
}
