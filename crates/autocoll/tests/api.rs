//! The communicator's contract: observer stages, argument errors, lost
//! peers, virtual ranks, and a checker that does catch wrong data.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use autocoll::check::{self, Case, Config};
use autocoll::comm::{local, Tag, Transport};
use autocoll::observe::{Event, Observer, Stage};
use autocoll::{Communicator, Error, Implementation, Op};
use bytes::Bytes;

/// (rank, stage, segment, peer) of one event.
type Seen = (usize, Stage, u32, Option<usize>);

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Seen>>,
}

impl Observer for Recorder {
    fn event(&self, e: &Event<'_>) {
        self.events
            .lock()
            .unwrap()
            .push((e.rank, e.stage, e.segment, e.peer));
    }
}

fn imp(id: &str) -> Implementation {
    id.parse().unwrap()
}

#[test]
fn observer_sees_every_segment_received_then_forwarded() {
    let rec = Arc::new(Recorder::default());
    local::run(4, |mut comm| {
        comm.set_observer(Some(rec.clone()));
        let mut buf = vec![comm.rank() as u8; 4096];
        comm.bcast_with(&imp("bcast:chain:seg=1K"), &mut buf, 0)
            .unwrap();
    });
    let events = rec.events.lock().unwrap();
    for rank in 0..4 {
        let mine: Vec<_> = events
            .iter()
            .filter(|e| e.0 == rank)
            .map(|e| (e.1, e.2, e.3))
            .collect();
        assert_eq!(mine.first(), Some(&(Stage::Enter, 0, None)));
        assert_eq!(mine.last(), Some(&(Stage::Done, 0, None)));
        let mut expect = vec![(Stage::Enter, 0, None)];
        for k in 0..4 {
            if rank > 0 {
                expect.push((Stage::Received, k, Some(rank - 1)));
            }
            if rank < 3 {
                expect.push((Stage::Sent, k, Some(rank + 1)));
            }
        }
        expect.push((Stage::Done, 0, None));
        assert_eq!(mine, expect, "rank {rank}");
    }
}

#[test]
fn observer_sees_combines_in_reduce() {
    let rec = Arc::new(Recorder::default());
    local::run(3, |mut comm| {
        comm.set_observer(Some(rec.clone()));
        let send = [1.0f64; 16];
        let mut recv = [0.0f64; 16];
        comm.reduce_with(&imp("reduce:flat"), &send, &mut recv, &Op::SUM, 0)
            .unwrap();
        if comm.rank() == 0 {
            assert_eq!(recv, [3.0; 16]);
        }
    });
    let events = rec.events.lock().unwrap();
    let combined: Vec<_> = events
        .iter()
        .filter(|e| e.1 == Stage::Combined)
        .map(|e| (e.0, e.3))
        .collect();
    assert_eq!(combined, vec![(0, Some(1)), (0, Some(2))]);
}

#[test]
fn plain_calls_use_the_selector_and_agree() {
    let out = local::run(5, |mut comm| {
        let me = comm.rank();
        let mut buf = vec![0u32; 100_000];
        if me == 3 {
            buf.iter_mut().enumerate().for_each(|(i, v)| *v = i as u32);
        }
        comm.bcast(&mut buf, 3).unwrap();
        let mut sum = vec![0i64; 7];
        comm.allreduce(&[me as i64; 7], &mut sum, &Op::SUM).unwrap();
        let mut all = vec![0u16; 5];
        comm.allgather(&[me as u16], &mut all).unwrap();
        comm.barrier().unwrap();
        (buf[99_999], sum[6], all)
    });
    for (last, sum, all) in out {
        assert_eq!((last, sum, all), (99_999, 10, vec![0, 1, 2, 3, 4]));
    }
}

#[test]
fn bad_arguments_are_errors_on_the_rank_that_made_them() {
    local::run(1, |mut comm| {
        let err = comm
            .bcast_with(&imp("reduce:chain"), &mut [0u8; 4], 0)
            .unwrap_err();
        assert!(matches!(err, Error::WrongOp { .. }), "{err}");
        let err = comm
            .bcast_with(&imp("bcast:chain"), &mut [0u8; 4], 1)
            .unwrap_err();
        assert!(err.to_string().contains("rank 1 is out of range"), "{err}");
        let err = comm
            .allreduce(&[1i32; 4], &mut [0i32; 3], &Op::SUM)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("allreduce receive buffer holds 3 elements, the call needs 4"),
            "{err}"
        );
        let err = comm.scatter(&[0u8; 3], &mut [0u8; 2], 0).unwrap_err();
        assert!(
            matches!(
                err,
                Error::BufferSize {
                    expected: 2,
                    got: 3,
                    ..
                }
            ),
            "{err}"
        );
        let band = Op::<f32>::Builtin(autocoll::Builtin::Band);
        let err = comm.allreduce(&[1f32], &mut [0f32], &band).unwrap_err();
        assert!(
            err.to_string().contains("band is not defined for f32"),
            "{err}"
        );
        let err = comm.set_virtual_ranks(Some(vec![1])).unwrap_err();
        assert!(err.to_string().contains("not a permutation"), "{err}");
    });
}

#[test]
fn a_rank_that_ends_fails_its_peers_waits_at_once() {
    let start = Instant::now();
    let out = local::run(3, |mut comm| {
        comm.set_timeout(Duration::from_secs(20));
        if comm.rank() == 2 {
            return None; // leaves without taking part
        }
        let mut buf = [0u8; 8];
        Some(comm.bcast_with(&imp("bcast:chain"), &mut buf, 1))
    });
    let err = out[0].as_ref().unwrap().as_ref().unwrap_err();
    assert!(err.to_string().contains("rank 2 is gone"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "waited for the timeout"
    );
}

#[test]
fn a_silent_peer_times_out_with_the_call_named() {
    let out = local::run(2, |mut comm| {
        comm.set_timeout(Duration::from_millis(200));
        if comm.rank() == 1 {
            std::thread::sleep(Duration::from_millis(600));
            return None;
        }
        Some(comm.barrier_with(&imp("barrier:flat")))
    });
    let err = out[0].as_ref().unwrap().as_ref().unwrap_err().to_string();
    assert!(
        err.contains("no message from rank 1") && err.contains("barrier"),
        "{err}"
    );
}

#[test]
fn virtual_ranks_reorder_trees_but_not_results() {
    let cases: Vec<Case> = [
        "bcast:chain:seg=1K",
        "scatter:binomial",
        "gather:kary:k=3",
        "reduce:binary:seg=512",
    ]
    .iter()
    .flat_map(|id| {
        [0, 3].map(|root| Case {
            imp: imp(id),
            bytes: 5000,
            root,
        })
    })
    .collect();
    let failures = local::run(6, |mut comm| {
        comm.set_virtual_ranks(Some(vec![4, 2, 0, 5, 1, 3]))
            .unwrap();
        let tree = comm.tree(&autocoll::Shape::Chain, 0).unwrap();
        assert_eq!(tree.subtree(0), &[0, 5, 1, 3, 4, 2]);
        check::run(&mut comm, &cases, &Config::default())
    });
    assert!(failures.iter().all(Vec::is_empty), "{failures:?}");
}

/// Flips one bit of the first non-empty payload it delivers.
struct Corrupting {
    inner: local::Local,
    done: bool,
}

impl Transport for Corrupting {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> autocoll::Result<()> {
        self.inner.send(dest, tag, data)
    }
    fn recv(&mut self, src: usize, tag: Tag) -> autocoll::Result<Bytes> {
        let data = self.inner.recv(src, tag)?;
        if self.done || data.is_empty() {
            return Ok(data);
        }
        self.done = true;
        let mut bad = data.to_vec();
        bad[data.len() / 2] ^= 0x10;
        Ok(bad.into())
    }
    fn try_recv(&mut self, src: usize, tag: Tag) -> autocoll::Result<Option<Bytes>> {
        self.inner.try_recv(src, tag)
    }
    fn kind(&self) -> &'static str {
        "corrupting"
    }
    fn shared_clock(&self) -> bool {
        true
    }
    fn set_timeout(&mut self, t: Duration) {
        self.inner.set_timeout(t)
    }
    fn hosts(&self) -> Vec<String> {
        self.inner.hosts()
    }
}

#[test]
fn check_reports_a_corrupted_payload_on_the_ranks_that_got_it() {
    for id in [
        "bcast:chain",
        "allreduce:ring",
        "gather:binomial:seg=1K",
        "allgather:recursive-doubling",
    ] {
        let case = Case {
            imp: imp(id),
            bytes: 4096,
            root: 0,
        };
        let transports = local::transports(4);
        let failures: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = transports
                .into_iter()
                .map(|t| {
                    let case = case.clone();
                    s.spawn(move || {
                        let bad = t.rank() == 3 || (id.starts_with("gather") && t.rank() == 0);
                        let transport: Box<dyn Transport> = if bad {
                            Box::new(Corrupting {
                                inner: t,
                                done: false,
                            })
                        } else {
                            Box::new(t)
                        };
                        let mut comm = Communicator::new(transport);
                        check::run(&mut comm, &[case], &Config::default())
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert!(!failures.is_empty(), "{id}: corruption went unnoticed");
        assert!(
            failures.iter().all(|f| f.reason.contains("wrong")),
            "{id}: {failures:?}"
        );
    }
}
