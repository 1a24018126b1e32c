//! Synthetic traces, made with the format module alone: for the tests and
//! the scale measurement (`autocoll analyze --bench-synthetic 100000x16`).
//!
//! A small simulation plays the collectives' own schedules (those of
//! `coll/`): over a tree, receives from the children in send order
//! (combining each, for reductions), a send to the parent, a receive from
//! it, sends to the children in order; recursive-doubling allreduce by
//! rounds. Each message takes `latency`, each local step `step`; ranks
//! enter at a random lateness up to `jitter`, and one rank can be `delay`ed.
//! A rank's recorded times are its true times plus its clock's `skew`; its
//! header carries the offset estimate `skew + offset_error`.

use std::path::{Path, PathBuf};

use autocoll::observe::Stage;
use autocoll::trace::format::{
    self, Call, ClockOffset, Event, Header, OffsetSample, TreePlace, NO_PEER, NO_TREE,
};
use autocoll::{Algorithm, Collective, Implementation, Tree};

use crate::error::{Error, Result};

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The implementation: a tree for bcast, reduce, allreduce, barrier,
    /// or recursive-doubling allreduce over a power of two.
    pub imp: Implementation,
    /// Ranks.
    pub size: usize,
    /// The root.
    pub root: usize,
    /// Bytes per rank (recorded only).
    pub bytes: u64,
    /// One message's time, ns.
    pub latency: u64,
    /// One local step's time, ns.
    pub step: u64,
    /// Ranks enter up to this late, at random, ns.
    pub jitter: u64,
    /// One rank entering this much later in every call.
    pub delay: Option<(usize, u64)>,
    /// Each rank's clock minus the true time, ns.
    pub skew: Vec<i64>,
    /// The offset estimate's error, ns.
    pub offset_error: i64,
    /// Each rank's host.
    pub hosts: Vec<String>,
    /// Seeds the entries' lateness; names the run.
    pub seed: u64,
}

impl Spec {
    /// A spec with everyone on one host and one clock.
    pub fn new(imp: Implementation, size: usize) -> Spec {
        Spec {
            imp,
            size,
            root: 0,
            bytes: 8,
            latency: 5_000,
            step: 200,
            jitter: 2_000,
            delay: None,
            skew: vec![0; size],
            offset_error: 0,
            hosts: vec!["h0".into(); size],
            seed: 1,
        }
    }

    fn tree(&self) -> Option<Tree> {
        let shape = self.imp.shape()?;
        Some(Tree::build(shape, self.size, self.root, None).expect("a valid tree for the spec"))
    }

    /// Time between calls: every call is over before the next starts.
    fn period(&self) -> u64 {
        let delay = self.delay.map_or(0, |d| d.1);
        self.jitter + delay + (self.size as u64 + 2) * 4 * (self.latency + 4 * self.step)
    }
}

fn ev(time_ns: u64, stage: Stage, peer: Option<usize>, phase: u8, segment: u32) -> Event {
    Event {
        time_ns,
        segment,
        peer: peer.map_or(NO_PEER, |p| p as u16),
        stage,
        phase,
    }
}

/// The true-time events of every rank in one call entering at `enter`.
fn tree_call(op: Collective, tree: &Tree, enter: &[u64], lat: u64, step: u64) -> Vec<Vec<Event>> {
    let p = tree.size();
    let mut out: Vec<Vec<Event>> = enter
        .iter()
        .map(|&e| vec![ev(e, Stage::Enter, None, 0, 0)])
        .collect();
    let mut t = enter.to_vec();
    let down = matches!(
        op,
        Collective::Reduce | Collective::Allreduce | Collective::Barrier
    );
    let up = matches!(
        op,
        Collective::Bcast | Collective::Allreduce | Collective::Barrier
    );
    let combine = op.reduces();
    let (up_phase, up_seg) = match op {
        Collective::Bcast => (0, 0),
        Collective::Barrier => (1, 1),
        _ => (1, 0),
    };
    if down {
        let mut sent = vec![0u64; p];
        for &r in tree.preorder().iter().rev() {
            for &c in tree.children(r) {
                t[r] = t[r].max(sent[c] + lat);
                out[r].push(ev(t[r], Stage::Received, Some(c), 0, 0));
                if combine {
                    t[r] += step;
                    out[r].push(ev(t[r], Stage::Combined, Some(c), 0, 0));
                }
            }
            if let Some(parent) = tree.parent(r) {
                t[r] += step;
                out[r].push(ev(t[r], Stage::Sent, Some(parent), 0, 0));
                sent[r] = t[r];
            }
        }
    }
    if up {
        let mut sent = vec![0u64; p];
        for &r in tree.preorder() {
            if let Some(parent) = tree.parent(r) {
                t[r] = t[r].max(sent[r] + lat);
                out[r].push(ev(t[r], Stage::Received, Some(parent), up_phase, up_seg));
            }
            for &c in tree.children(r) {
                t[r] += step;
                out[r].push(ev(t[r], Stage::Sent, Some(c), up_phase, up_seg));
                sent[c] = t[r];
            }
        }
    }
    for r in 0..p {
        out[r].push(ev(t[r] + step, Stage::Done, None, 0, 0));
    }
    out
}

/// Recursive-doubling allreduce over a power of two.
fn doubling_call(enter: &[u64], lat: u64, step: u64) -> Vec<Vec<Event>> {
    let p = enter.len();
    let mut out: Vec<Vec<Event>> = enter
        .iter()
        .map(|&e| vec![ev(e, Stage::Enter, None, 0, 0)])
        .collect();
    let mut t = enter.to_vec();
    let mut mask = 1;
    while mask < p {
        let mut sent = vec![0u64; p];
        for r in 0..p {
            t[r] += step;
            out[r].push(ev(t[r], Stage::Sent, Some(r ^ mask), 1, mask as u32));
            sent[r] = t[r];
        }
        for r in 0..p {
            t[r] = t[r].max(sent[r ^ mask] + lat);
            out[r].push(ev(t[r], Stage::Received, Some(r ^ mask), 1, mask as u32));
            t[r] += step;
            out[r].push(ev(t[r], Stage::Combined, Some(r ^ mask), 1, mask as u32));
        }
        mask <<= 1;
    }
    for r in 0..p {
        out[r].push(ev(t[r] + step, Stage::Done, None, 0, 0));
    }
    out
}

/// A deterministic random number in 0..n from (seed, call, rank).
fn lateness(seed: u64, call: u64, rank: usize, n: u64) -> u64 {
    let mut x = seed
        ^ call.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (rank as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    if n == 0 {
        0
    } else {
        x % n
    }
}

/// Call `k` of the run: every rank's record, on the ranks' own clocks.
pub fn call(spec: &Spec, tree: Option<&Tree>, k: u64) -> Vec<Call> {
    let base = 1_000_000_000 + k * spec.period();
    let enter: Vec<u64> = (0..spec.size)
        .map(|r| {
            let late = spec.delay.filter(|d| d.0 == r).map_or(0, |d| d.1);
            base + lateness(spec.seed, k, r, spec.jitter) + late
        })
        .collect();
    let events = match (tree, &spec.imp.algorithm) {
        (Some(tree), _) => tree_call(spec.imp.op, tree, &enter, spec.latency, spec.step),
        (None, Algorithm::RecursiveDoubling) => doubling_call(&enter, spec.latency, spec.step),
        (None, other) => panic!("no simulation of {}", other.name()),
    };
    events
        .into_iter()
        .enumerate()
        .map(|(r, evs)| Call {
            seq: k,
            op: spec.imp.op,
            bytes: spec.bytes,
            root: spec.root as u32,
            imp: 0,
            tree: if tree.is_some() { 0 } else { NO_TREE },
            events: evs
                .into_iter()
                .map(|e| Event {
                    time_ns: (e.time_ns as i64 + spec.skew[r]) as u64,
                    ..e
                })
                .collect(),
        })
        .collect()
}

/// Rank `rank`'s header.
pub fn header(spec: &Spec, tree: Option<&Tree>, rank: usize) -> Header {
    let skewed = spec.skew.iter().any(|&s| s != 0);
    let offset = (spec.skew[rank] != 0).then(|| ClockOffset {
        start: OffsetSample {
            at_ns: 0,
            offset_ns: spec.skew[rank] + spec.offset_error,
            rtt_ns: 2_000,
        },
        end: None,
    });
    Header {
        schema: format::SCHEMA.into(),
        run: format!("{:032x}", spec.seed),
        rank: rank as u32,
        size: spec.size as u32,
        host: spec.hosts[rank].clone(),
        transport: "synthetic".into(),
        clock: format!("{:032x}", spec.skew[rank] as u64),
        shared_clock: !skewed,
        offset,
        impls: vec![spec.imp.to_string()],
        trees: tree
            .map(|t| TreePlace {
                parent: t.parent(rank).map(|p| p as u32),
                children: t.children(rank).iter().map(|&c| c as u32).collect(),
            })
            .into_iter()
            .collect(),
        calls: 0,
        events: 0,
        dropped_calls: 0,
        dropped_events: 0,
        capacity_events: 0,
        autocoll: env!("CARGO_PKG_VERSION").into(),
    }
}

/// The path of rank `rank`'s file in `dir`.
pub fn rank_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank:05}.trace"))
}

/// Writes `calls` calls of `spec` into `dir`, one file per rank, rank by
/// rank (each rank's calls simulated again, so that memory holds one
/// rank's file at a time).
pub fn write(dir: &Path, spec: &Spec, calls: u64) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::write(format!("creating {}", dir.display()), e))?;
    let tree = spec.tree();
    for rank in 0..spec.size {
        let mine: Vec<Call> = (0..calls)
            .map(|k| call(spec, tree.as_ref(), k).swap_remove(rank))
            .collect();
        let bytes = format::encode(&header(spec, tree.as_ref(), rank), &mine);
        autocoll::files::write_atomic(&rank_file(dir, rank), &bytes).map_err(Error::Save)?;
    }
    Ok(())
}

/// The spec of the scale measurement: allreduce over a binomial tree,
/// half the ranks on a second host whose clock is 1 ms ahead, the last
/// rank entering every call 10 µs late.
pub fn bench_spec(ranks: usize) -> Spec {
    let imp: Implementation = "allreduce:binomial".parse().expect("a valid id");
    let mut spec = Spec::new(imp, ranks);
    for r in ranks / 2..ranks {
        spec.hosts[r] = "h1".into();
        spec.skew[r] = 1_000_000;
    }
    spec.offset_error = 300;
    spec.delay = Some((ranks - 1, 10_000));
    spec
}
