//! The mappers at scale (greedy and the estimator on 1024 ranks
//! and 10^5 communicating pairs in under a second or two; the search
//! within its budget; against Scotch). A top switch over 8 switches
//! (1 Gbit/s uplinks) of 8 hosts each (100 Mbit/s), 16 processing elements
//! a host. Two patterns: 10^5 random ordered pairs with 1–49 messages of
//! 64 B, 1 KiB or 64 KiB; a 3-D halo of 16 × 8 × 8 ranks (10 messages of
//! 64 KiB to each neighbour). Scotch (`scotch_gmap`) runs when installed.
//!
//! `cargo bench -p autocoll-map --bench scale` prints, per step, the
//! median and range over 5 runs; `-- --quick` runs once.

use std::time::{Duration, Instant};

use autocoll::select::lottery::Rng;
use autocoll_map::search::Budget;
use autocoll_map::{Element, Estimator, Link, Topology, Traffic};

fn element(name: String, parent: Option<usize>, link: Option<f64>, pes: usize) -> Element {
    Element {
        name,
        parent,
        link: link.map(Link::flat),
        max: None,
        pes,
        pe_link: (pes > 0).then(|| Link::flat(2e9)),
        addr: None,
        host: None,
    }
}

fn topology() -> Topology {
    let mut e = vec![element("top".into(), None, None, 0)];
    for s in 0..8 {
        e.push(element(format!("s{s}"), Some(0), Some(125e6), 0));
    }
    for h in 0..64 {
        e.push(element(format!("h{h}"), Some(1 + h % 8), Some(12.5e6), 16));
    }
    Topology::new("scale", e).unwrap()
}

fn traffic(ranks: usize, pairs: usize) -> Traffic {
    let mut rng = Rng::new(7);
    let mut seen = std::collections::HashSet::new();
    let mut t = Traffic::new(ranks);
    let below = |rng: &mut Rng, n: usize| ((rng.uniform() * n as f64) as usize).min(n - 1);
    while seen.len() < pairs {
        let (a, b) = (below(&mut rng, ranks), below(&mut rng, ranks));
        if a != b && seen.insert((a, b)) {
            let count = 1 + below(&mut rng, 49) as u64;
            let bytes = [64.0, 1024.0, 65536.0][below(&mut rng, 3)];
            t.add(a, b, bytes, count);
        }
    }
    t
}

/// A 3-D halo of 16 × 8 × 8 ranks, x fastest.
fn halo3d() -> Traffic {
    let (sx, sy, sz) = (16, 8, 8);
    let mut t = Traffic::new(sx * sy * sz);
    for z in 0..sz {
        for y in 0..sy {
            for x in 0..sx {
                let r = x + sx * (y + sy * z);
                let mut to = |xx: usize, yy: usize, zz: usize| {
                    t.add(r, xx + sx * (yy + sy * zz), 65536.0, 10)
                };
                if x > 0 {
                    to(x - 1, y, z);
                }
                if x + 1 < sx {
                    to(x + 1, y, z);
                }
                if y > 0 {
                    to(x, y - 1, z);
                }
                if y + 1 < sy {
                    to(x, y + 1, z);
                }
                if z > 0 {
                    to(x, y, z - 1);
                }
                if z + 1 < sz {
                    to(x, y, z + 1);
                }
            }
        }
    }
    t
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<40} median {:>9.2} ms  [{:.2}–{:.2}] over {}",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len()
    );
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let began = Instant::now();
    let out = f();
    (out, began.elapsed())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 1 } else { 5 };
    let t = topology();
    println!(
        "random: 1024 ranks, 100000 pairs, {} processing elements",
        t.pe_count()
    );
    scale(&t, &traffic(1024, 100_000), runs);
    println!("halo3d: 16 x 8 x 8 ranks");
    scale(&t, &halo3d(), runs);
}

fn scale(t: &Topology, traffic: &Traffic, runs: usize) {
    let (t, traffic) = (t, traffic);
    let estimator = Estimator::new(t);
    let linear = autocoll_map::linear(1024, t).unwrap();
    let mut greedy_t = Vec::new();
    let mut estimate_t = Vec::new();
    let mut search_t = Vec::new();
    let mut costs = None;
    for _ in 0..runs {
        let (g, d) = timed(|| autocoll_map::greedy(t, traffic).unwrap());
        greedy_t.push(d);
        let (c, d) = timed(|| estimator.cost(traffic, &g));
        estimate_t.push(d);
        let budget = Budget {
            evaluations: usize::MAX,
            time: Duration::from_secs(1),
            seed: 1,
        };
        let (s, d) = timed(|| autocoll_map::search(t, traffic, &g, budget).unwrap());
        search_t.push(d);
        costs = Some((
            estimator.cost(traffic, &linear),
            c,
            estimator.cost(traffic, &s),
        ));
    }
    report("greedy", greedy_t);
    report("estimator, one evaluation", estimate_t);
    report("search, budget 1 s", search_t);
    let (l, g, s) = costs.unwrap();
    println!("estimated: linear {l:.3} s, greedy {g:.3} s, search {s:.3} s");
    scotch(t, traffic, &estimator, runs);
}

/// Scotch on the same inputs, when `scotch_gmap` is installed.
fn scotch(t: &Topology, traffic: &Traffic, estimator: &Estimator, runs: usize) {
    let dir = std::env::temp_dir().join(format!("autocoll-map-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut times = Vec::new();
    let mut cost = None;
    for _ in 0..runs {
        match timed(|| autocoll_map::scotch(t, traffic, &dir)) {
            (Ok((m, _)), d) => {
                times.push(d);
                cost = Some(estimator.cost(traffic, &m));
            }
            (Err(e), _) => {
                println!("scotch: {e}");
                break;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(c) = cost {
        report("scotch_gmap (files, run, read back)", times);
        println!("estimated: scotch {c:.3} s");
    }
}
