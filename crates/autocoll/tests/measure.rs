//! Every method on every collective, and the paper's slow-forwarder
//! property of OL_i.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use autocoll::measure::{self, Measurement, Method, Options, Point};
use autocoll::observe::{Event, Observer, Stage};
use autocoll::{local, Communicator, Implementation};

/// The tests of this file time things: running them one at a time keeps
/// them from loading the machine for each other.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `body` on every rank of a `p`-rank local job and returns rank 0's
/// answer. (ol-i against truth over real processes and links is
/// `crates/autocoll-cli/tests/bench_accuracy.rs`.)
fn run_job<R: Send>(p: usize, body: impl Fn(&mut Communicator) -> Option<R> + Sync) -> R {
    local::run(p, |mut comm| body(&mut comm))
        .into_iter()
        .next()
        .flatten()
        .expect("rank 0 returns the measurements")
}

fn point(id: &str, bytes: usize) -> Point {
    Point {
        imp: id.parse::<Implementation>().unwrap(),
        bytes,
        root: 0,
    }
}

fn measure_all(
    p: usize,
    points: &[Point],
    methods: &[Method],
    opts: Options,
) -> Vec<Vec<Measurement>> {
    run_job(p, |comm| {
        // Every rank runs every point; only rank 0 has measurements.
        let mut out = Vec::new();
        for pt in points {
            // Collect every method first: collecting into an Option would
            // stop other ranks at their first `None`.
            let row: Vec<Option<Measurement>> = methods
                .iter()
                .map(|&m| {
                    measure::run_point(comm, pt, m, &opts)
                        .unwrap_or_else(|e| panic!("rank {} {} {m}: {e}", comm.rank(), pt.imp))
                })
                .collect();
            out.push(row.into_iter().collect::<Option<Vec<_>>>());
        }
        out.into_iter().collect()
    })
}

/// Sleeps on one rank whenever a segment of the measured call arrives,
/// before that rank forwards it.
struct SlowForwarder {
    imp: Implementation,
    delay: Duration,
}

impl Observer for SlowForwarder {
    fn event(&self, event: &Event<'_>) {
        if event.stage == Stage::Received && *event.imp == self.imp {
            std::thread::sleep(self.delay);
        }
    }
}

/// A chain rank that forwards late delays OL_i of itself and every rank
/// after it by the delay, and no rank before it.
#[test]
fn slow_forwarder_delays_ol_i_from_its_rank_on() {
    let _serial = serial();
    const P: usize = 5;
    const SLOW: usize = 2;
    // Far above the noise of a loaded machine: with 20 ms, a base run
    // slowed by 3 ms of builds beside it left a growth of 17 ms, under
    // the 0.9 × delay the test asks for.
    let delay = Duration::from_millis(50);
    let pt = point("bcast:chain", 4096);
    let opts = Options {
        calls: 4,
        warmup: 1,
        min_reps: 2,
        max_reps: 2,
        rse: 0.03,
        ..Options::default()
    };
    let ol_i = |slow: bool| {
        let pt = pt.clone();
        run_job(P, move |comm| {
            if slow && comm.rank() == SLOW {
                comm.set_observer(Some(Arc::new(SlowForwarder {
                    imp: pt.imp.clone(),
                    delay,
                })));
            }
            let m = measure::run_point(comm, &pt, Method::OlI, &opts).unwrap()?;
            m.ol_i
        })
    };
    let base = ol_i(false);
    let slow = ol_i(true);
    let d = delay.as_secs_f64();
    for i in 1..P {
        let grew = slow[i] - base[i];
        eprintln!(
            "rank {i}: OL_i {:.3} ms -> {:.3} ms",
            base[i] * 1e3,
            slow[i] * 1e3
        );
        if i < SLOW {
            // Sleep overshoot never reaches these ranks: allow only noise.
            assert!(
                grew < d / 4.0,
                "rank {i} before the slow rank grew {grew} s"
            );
        } else {
            // A sleep never ends early; on a loaded machine it may end late.
            assert!(
                grew > 0.9 * d && grew < 2.0 * d,
                "rank {i} grew {grew} s, expected about {d} s"
            );
        }
    }
}

/// Each method returns what it promises, at every rank count from 1, for
/// every collective, with a root other than 0.
#[test]
fn every_method_runs_every_collective() {
    let _serial = serial();
    let opts = Options {
        calls: 2,
        warmup: 1,
        min_reps: 1,
        max_reps: 2,
        rse: 0.5,
        ..Options::default()
    };
    let ids = [
        "bcast:binomial",
        "reduce:binomial:seg=1K",
        "scatter:binary",
        "gather:flat",
        "allreduce:ring",
        "allgather:recursive-doubling",
        "barrier:dissemination",
    ];
    for p in [1, 3] {
        let points: Vec<Point> = ids
            .iter()
            .map(|id| Point {
                root: p - 1,
                ..point(id, 4096)
            })
            .collect();
        let got = measure_all(p, &points, &Method::ALL, opts);
        for (pt, row) in points.iter().zip(&got) {
            for m in row {
                // Truth may discard every call of so short a run when the
                // ranks outnumber the cores; it must then say so.
                if m.method == Method::Truth && m.reps == 0 {
                    assert!(m.discarded > 0 && m.summary.median.is_nan());
                    continue;
                }
                assert!(m.reps >= 1, "{} {}: no repetition", pt.imp, m.method);
                assert!(m.summary.median > 0.0, "{} {}", pt.imp, m.method);
                assert_eq!(m.raw.len(), m.reps);
                let ol = m.ol_i.as_ref().map(Vec::len);
                let want = (m.method == Method::OlI).then_some(p);
                assert_eq!(ol, want, "{} {}", pt.imp, m.method);
            }
        }
    }
}

/// A local transport that says its ranks run on two hosts with two clocks.
struct TwoHosts(autocoll::comm::local::Local);

impl autocoll::Transport for TwoHosts {
    fn rank(&self) -> usize {
        self.0.rank()
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn send(
        &mut self,
        dest: usize,
        tag: autocoll::comm::Tag,
        data: bytes::Bytes,
    ) -> autocoll::Result<()> {
        self.0.send(dest, tag, data)
    }
    fn recv(&mut self, src: usize, tag: autocoll::comm::Tag) -> autocoll::Result<bytes::Bytes> {
        self.0.recv(src, tag)
    }
    fn try_recv(
        &mut self,
        src: usize,
        tag: autocoll::comm::Tag,
    ) -> autocoll::Result<Option<bytes::Bytes>> {
        self.0.try_recv(src, tag)
    }
    fn kind(&self) -> &'static str {
        "two-hosts"
    }
    fn shared_clock(&self) -> bool {
        false
    }
    fn set_timeout(&mut self, timeout: Duration) {
        self.0.set_timeout(timeout)
    }
    fn hosts(&self) -> Vec<String> {
        (0..self.size()).map(|r| format!("node{}", r % 2)).collect()
    }
}

#[test]
fn truth_is_refused_without_a_shared_clock_and_names_the_hosts() {
    let outcomes: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = autocoll::comm::local::transports(2)
            .into_iter()
            .map(|t| {
                s.spawn(move || {
                    let mut comm = Communicator::new(Box::new(TwoHosts(t)));
                    let err = measure::run_point(
                        &mut comm,
                        &point("bcast:binomial", 64),
                        Method::Truth,
                        &Options::default(),
                    )
                    .expect_err("truth must be refused");
                    err.to_string()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for msg in outcomes {
        assert!(
            msg.contains("one monotonic clock") && msg.contains("node0, node1"),
            "{msg}"
        );
    }
}

/// Issue 20: methods measured together take turns round by round, so that
/// drift hits all of them alike; each round holds one repetition of every
/// method still measuring, and each method's repetitions are its column.
#[test]
fn methods_measured_together_take_turns_round_by_round() {
    let _s = serial();
    // rse 0 is never reached: every method runs to max_reps.
    let opts = Options {
        calls: 2,
        warmup: 1,
        min_reps: 3,
        max_reps: 6,
        rse: 0.0,
        ..Options::default()
    };
    let p = point("bcast:flat", 1024);
    let methods = [Method::Barrier, Method::SendLatency];
    let run = run_job(2, |comm| {
        measure::run_methods(comm, &p, &methods, &opts, 7).unwrap()
    });
    assert_eq!(run.rounds.len(), 6);
    assert!(run.rounds.iter().flatten().all(Option::is_some));
    for (i, (m, method)) in run.measurements.iter().zip(methods).enumerate() {
        assert_eq!(m.method, method);
        assert_eq!(m.reps, 6);
        let column: Vec<f64> = run.rounds.iter().filter_map(|r| r[i]).collect();
        assert_eq!(column, m.raw);
    }
    assert_eq!(run.paired_errors(1, 0).len(), 6);
}

/// Issue 20: errors pair only rounds where both methods kept a repetition.
#[test]
fn paired_errors_skip_rounds_either_method_lacks() {
    let run = measure::Interleaved {
        measurements: Vec::new(),
        rounds: vec![
            vec![Some(1.1), Some(1.0)],
            vec![None, Some(1.0)],
            vec![Some(2.0), Some(1.0)],
            vec![Some(3.0), None],
        ],
    };
    let errors = run.paired_errors(0, 1);
    assert_eq!(errors.len(), 2);
    assert!((errors[0] - 0.1).abs() < 1e-12 && (errors[1] - 1.0).abs() < 1e-12);
}
