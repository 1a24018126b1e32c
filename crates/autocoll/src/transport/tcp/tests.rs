//! The TCP transport between threads of one process: real sockets, real
//! set-up, and peers that misbehave on purpose.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::setup::{self, Config};
use super::wire::{self, Header, Hello, Token};
use super::Tcp;
use crate::check::{self, Case};
use crate::error::Error;
use crate::ids::CallSig;
use crate::ids::Collective;
use crate::transport::Tag;
use crate::{Builtin, Communicator, Op};

/// Configurations of an `n`-rank job and rank 0's listener.
fn job(n: usize, timeout: Duration) -> (Vec<Config>, TcpListener) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let root = listener.local_addr().unwrap().to_string();
    let token = Token::random().unwrap();
    let configs = (0..n)
        .map(|r| {
            let mut c = Config::local(r, n, root.clone(), token);
            c.timeout = timeout;
            c
        })
        .collect();
    (configs, listener)
}

fn connect(config: &Config, listener: Option<TcpListener>) -> Communicator {
    let links = match listener {
        Some(l) => setup::establish_on(config, l),
        None => setup::establish(config),
    };
    Communicator::new(Box::new(Tcp::start(config, links.unwrap()).unwrap()))
}

/// Runs `body` on every rank of a job, each rank a thread with sockets.
fn run<R: Send>(
    configs: Vec<Config>,
    listener: TcpListener,
    body: impl Fn(Communicator) -> R + Sync,
) -> Vec<R> {
    let mut listener = Some(listener);
    let body = &body;
    std::thread::scope(|s| {
        let handles: Vec<_> = configs
            .iter()
            .map(|c| {
                let l = if c.rank == 0 { listener.take() } else { None };
                s.spawn(move || body(connect(c, l)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn threads_over_tcp_pass_a_sample_of_the_check_matrix() {
    let (configs, listener) = job(4, Duration::from_secs(20));
    let config = check::Config::default();
    let mut cases = Vec::new();
    for op in Collective::ALL {
        for bytes in [0, 1, 65539] {
            let all = check::all_implementations(op, 4, bytes, 1);
            for imp in all.into_iter().step_by(3) {
                for root in [0, 3] {
                    cases.push(Case {
                        imp: imp.clone(),
                        bytes,
                        root,
                    });
                }
            }
        }
    }
    let failures = run(configs, listener, |mut comm| {
        let mine = check::run(&mut comm, &cases, &config);
        check::collect(&mut comm, mine).unwrap()
    });
    assert_eq!(failures[0], Vec::new(), "{} cases", cases.len());
}

/// Ranks that name their hosts and switches (as `autocoll launch` and the
/// emulated cluster's agent tell them) are laid out by them on every rank,
/// and every collective over `hier` passes `check` across them.
#[test]
fn ranks_exchange_hosts_and_switches_and_hier_follows_them() {
    let (mut configs, listener) = job(6, Duration::from_secs(20));
    let hosts = ["a", "a", "b", "c", "c", "c"];
    let switches = [Some("s0"), Some("s0"), Some("s0/s1"), None, None, None];
    for (c, (host, switch)) in configs.iter_mut().zip(hosts.iter().zip(switches)) {
        c.host = host.to_string();
        c.switch = switch.map(String::from);
    }
    let mut cases = Vec::new();
    for op in Collective::ALL.into_iter().filter(|op| op.over_trees()) {
        let imp = crate::Implementation::tree(op, crate::Shape::Hier(Box::default()), None);
        for root in [0, 4] {
            let bytes = if op == Collective::Barrier { 0 } else { 4099 };
            let root = if op.rooted() { root } else { 0 };
            cases.push(Case {
                imp: imp.as_ref().unwrap().clone(),
                bytes,
                root,
            });
        }
    }
    let outcome = run(configs, listener, |mut comm| {
        let layout = comm.layout().unwrap().clone();
        let mine = check::run(&mut comm, &cases, &check::Config::default());
        (layout, check::collect(&mut comm, mine).unwrap())
    });
    assert_eq!(outcome[0].1, Vec::new());
    for (layout, _) in &outcome {
        assert_eq!(layout.hosts(), hosts);
        let want: Vec<Option<String>> = switches.iter().map(|s| s.map(String::from)).collect();
        assert_eq!(layout.switches(), want);
    }
}

fn bad_hello(token: Token) -> Vec<u8> {
    Hello {
        token,
        clock: crate::clock::clock_id(),
        rank: 1,
        size: 3,
        addr: "127.0.0.1:1".into(),
        host: "intruder".into(),
        switch: String::new(),
    }
    .encode()
    .unwrap()
}

/// True when the far side closed without telling us anything.
fn closed_silently(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 64];
    matches!(stream.read(&mut buf), Ok(0) | Err(_))
}

#[test]
fn peer_without_the_token_is_refused_and_the_job_goes_on() {
    let (configs, listener) = job(3, Duration::from_secs(20));
    let root = listener.local_addr().unwrap();
    // Rank 0 starts first; strangers knock before the real ranks arrive.
    std::thread::scope(|s| {
        let c0 = &configs[0];
        let rank0 = s.spawn(move || {
            let mut comm = connect(c0, Some(listener));
            let mut buf = [7u64; 4];
            comm.bcast(&mut buf, 0).map(|_| buf)
        });
        let mut wrong = TcpStream::connect(root).unwrap();
        wrong.write_all(&bad_hello(Token([0; 16]))).unwrap();
        assert!(closed_silently(&mut wrong), "a wrong token got an answer");
        let mut garbage = TcpStream::connect(root).unwrap();
        garbage.write_all(&[0xFF; 64]).unwrap();
        assert!(closed_silently(&mut garbage), "garbage got an answer");
        let others: Vec<_> = configs[1..]
            .iter()
            .map(|c| {
                s.spawn(move || {
                    let mut comm = connect(c, None);
                    let mut buf = [0u64; 4];
                    comm.bcast(&mut buf, 0).map(|_| buf)
                })
            })
            .collect();
        assert_eq!(rank0.join().unwrap().unwrap(), [7; 4]);
        for other in others {
            assert_eq!(other.join().unwrap().unwrap(), [7; 4]);
        }
    });
}

/// Rank 0 of a 2-rank job in a thread, and a raw socket that joined as
/// rank 1 with the right token: it can then send any bytes it likes.
fn rank0_and_raw_peer(max_frame: u64) -> (std::thread::JoinHandle<Communicator>, TcpStream) {
    let (mut configs, listener) = job(2, Duration::from_secs(10));
    configs[0].max_frame = max_frame;
    let root = listener.local_addr().unwrap();
    let c0 = configs[0].clone();
    let rank0 = std::thread::spawn(move || connect(&c0, Some(listener)));
    let mut raw = TcpStream::connect(root).unwrap();
    let hello = Hello {
        token: configs[1].token,
        clock: crate::clock::clock_id(),
        rank: 1,
        size: 2,
        addr: "127.0.0.1:9".into(),
        host: "127.0.0.1".into(),
        switch: String::new(),
    };
    raw.write_all(&hello.encode().unwrap()).unwrap();
    let mut fixed = [0u8; wire::HELLO_FIXED];
    raw.read_exact(&mut fixed).unwrap();
    let fixed = wire::decode_hello_fixed(&fixed).unwrap();
    let mut rest = vec![0u8; fixed.rest_len()];
    raw.read_exact(&mut rest).unwrap();
    wire::read_table(|b| raw.read_exact(b), 2).unwrap();
    (rank0, raw)
}

fn user_header(src: u32, len: u64) -> [u8; wire::HEADER_LEN] {
    Header {
        src,
        tag: Tag::user(5),
        len,
    }
    .encode()
}

/// Sends `bytes` from the raw rank 1 and returns what rank 0's receive says.
fn rank0_sees(max_frame: u64, bytes: &[u8]) -> Error {
    let (rank0, mut raw) = rank0_and_raw_peer(max_frame);
    let mut comm = rank0.join().unwrap();
    raw.write_all(bytes).unwrap();
    let start = Instant::now();
    let err = comm.recv_bytes(1, 5).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    err
}

fn assert_protocol(err: Error, says: &str) {
    match &err {
        Error::Protocol { peer, reason } => {
            assert!(peer.starts_with("rank 1 (127.0.0.1:9)"), "{err}");
            assert!(reason.contains(says), "{err}");
        }
        other => panic!("expected a protocol error, got {other}"),
    }
}

#[test]
fn frame_with_bad_magic_is_an_error_naming_the_peer() {
    let mut frame = user_header(1, 0);
    frame[0] = b'Z';
    assert_protocol(rank0_sees(1 << 20, &frame), "bad magic");
}

#[test]
fn frame_with_bad_version_is_an_error_naming_the_peer() {
    let mut frame = user_header(1, 0);
    frame[2] = 200;
    assert_protocol(rank0_sees(1 << 20, &frame), "version 200");
}

#[test]
fn frame_above_the_maximum_is_refused_before_allocating() {
    // Allocating u64::MAX / 2 bytes would abort the test process.
    let frame = user_header(1, u64::MAX / 2);
    assert_protocol(rank0_sees(1 << 20, &frame), "above the maximum of 1048576");
}

#[test]
fn frame_from_a_spoofed_source_is_refused() {
    assert_protocol(
        rank0_sees(1 << 20, &user_header(0, 0)),
        "claims to come from rank 0",
    );
}

#[test]
fn frame_that_lies_about_its_length_ends_the_peer() {
    // 512 MiB announced, 3 bytes sent: the buffer grows only as data comes.
    let (rank0, mut raw) = rank0_and_raw_peer(1 << 30);
    let mut comm = rank0.join().unwrap();
    raw.write_all(&user_header(1, 512 << 20)).unwrap();
    raw.write_all(b"abc").unwrap();
    drop(raw);
    match comm.recv_bytes(1, 5).unwrap_err() {
        Error::PeerGone {
            peer: 1, reason, ..
        } => {
            assert!(reason.contains("3 of 536870912 bytes"), "{reason}")
        }
        other => panic!("expected the peer gone, got {other}"),
    }
}

#[test]
fn a_rank_that_ends_fails_the_others_calls_at_once() {
    let (configs, listener) = job(3, Duration::from_secs(30));
    let outcomes = run(configs, listener, |mut comm| {
        if comm.rank() == 2 {
            return None;
        }
        let start = Instant::now();
        let mut buf = [0u8; 16];
        let outcome = comm.bcast(&mut buf, 2);
        Some((outcome, start.elapsed()))
    });
    for (rank, outcome) in outcomes.into_iter().enumerate().take(2) {
        let (result, took) = outcome.unwrap();
        let err = result.unwrap_err();
        assert!(matches!(err, Error::PeerGone { .. }), "rank {rank}: {err}");
        assert!(took < Duration::from_secs(10), "rank {rank} took {took:?}");
    }
}

#[test]
fn a_silent_rank_makes_the_others_time_out() {
    let (configs, listener) = job(3, Duration::from_millis(500));
    let outcomes = run(configs, listener, |mut comm| {
        if comm.rank() == 2 {
            // Alive but silent until the others have given up and left.
            let _ = comm.recv_bytes(0, 99);
            return None;
        }
        let start = Instant::now();
        let outcome = comm.barrier();
        Some((outcome, start.elapsed()))
    });
    for outcome in outcomes.into_iter().take(2) {
        let (result, took) = outcome.unwrap();
        assert!(result.is_err());
        assert!(took < Duration::from_secs(10), "took {took:?}");
    }
}

#[test]
fn mismatched_calls_name_both_ranks_and_both_calls() {
    let (configs, listener) = job(2, Duration::from_secs(10));
    let outcomes = run(configs, listener, |mut comm| {
        let mut buf = [1.0f64; 2];
        if comm.rank() == 0 {
            comm.bcast(&mut buf, 0)
        } else {
            let send = buf;
            comm.reduce(&send, &mut buf, &Op::Builtin(Builtin::Sum), 1)
        }
        .map_err(|e| e.to_string())
    });
    let call = |op, root| {
        CallSig {
            seq: 0,
            op,
            root,
            bytes: 16,
        }
        .to_string()
    };
    let err = outcomes[1].clone().unwrap_err();
    assert!(
        err.contains(&format!("rank 1 is in {}", call(Collective::Reduce, 1))),
        "{err}"
    );
    assert!(
        err.contains(&format!("rank 0 sent for {}", call(Collective::Bcast, 0))),
        "{err}"
    );
}

#[test]
fn exchanging_calls_that_differ_fail_on_both_ranks() {
    let (configs, listener) = job(2, Duration::from_secs(10));
    let errors = run(configs, listener, |mut comm| {
        let send = [1u32; 4];
        let mut recv = [0u32; 8];
        if comm.rank() == 0 {
            comm.allgather(&send, &mut recv)
        } else {
            comm.allreduce(&send, &mut recv[..4], &Op::Builtin(Builtin::Sum))
        }
        .unwrap_err()
        .to_string()
    });
    assert!(
        errors[0].contains("rank 0 is in call #0 allgather")
            && errors[0].contains("rank 1 sent for call #0 allreduce"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("rank 1 is in call #0 allreduce")
            && errors[1].contains("rank 0 sent for call #0 allgather"),
        "{}",
        errors[1]
    );
}

#[test]
fn calls_of_different_lengths_are_reported() {
    let (configs, listener) = job(2, Duration::from_secs(10));
    let errors = run(configs, listener, |mut comm| {
        let mut buf = vec![0u8; 8 + 8 * comm.rank()];
        comm.bcast(&mut buf, 0).err().map(|e| e.to_string())
    });
    let err = errors[1].as_ref().expect("rank 1 must notice");
    assert!(err.contains("bytes=16") && err.contains("bytes=8"), "{err}");
}

#[test]
fn large_messages_and_self_sends_arrive_whole() {
    let (configs, listener) = job(2, Duration::from_secs(20));
    let big: Vec<u8> = (0..9_000_000u32).map(|i| (i % 251) as u8).collect();
    let got = run(configs, listener, |mut comm| {
        let me = comm.rank();
        comm.send_bytes(me, 1, Bytes::from_static(b"me")).unwrap();
        comm.send_bytes(1 - me, 2, Bytes::from(big.clone()))
            .unwrap();
        let mine = comm.recv_bytes(me, 1).unwrap();
        let theirs = comm.recv_bytes(1 - me, 2).unwrap();
        (mine, theirs)
    });
    for (mine, theirs) in got {
        assert_eq!(&mine[..], b"me");
        assert!(theirs[..] == big[..]);
    }
}

#[test]
fn a_frame_is_delivered_while_the_next_is_still_arriving() {
    // A forwarding rank must get segment k while segment k+1 is on the
    // wire; reading on into k+1 serialised every pipeline hop by hop.
    let (rank0, mut raw) = rank0_and_raw_peer(1 << 20);
    let mut comm = rank0.join().unwrap();
    let mut bytes = user_header(1, 3).to_vec();
    bytes.extend_from_slice(b"abc");
    bytes.extend_from_slice(&user_header(1, 1000));
    bytes.extend_from_slice(&[7; 10]);
    raw.write_all(&bytes).unwrap();
    let start = Instant::now();
    assert_eq!(&comm.recv_bytes(1, 5).unwrap()[..], b"abc");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "the first frame waited for the second: {:?}",
        start.elapsed()
    );
    raw.write_all(&[7; 990]).unwrap();
    assert_eq!(&comm.recv_bytes(1, 5).unwrap()[..], &[7; 1000][..]);
}
