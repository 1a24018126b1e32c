//! Selectors on real ranks: the lottery keeps every rank on the same
//! implementation, its state survives runs, other programs' saves and
//! corrupt files; a tuning table picks what it says.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use autocoll::observe::{Event, Observer, Stage};
use autocoll::select::lottery::{Objective, Params, Pool};
use autocoll::select::state::{Fingerprint, Learned, Shared, Store};
use autocoll::select::{Fold, Group, Lottery, Table};
use autocoll::{local, Collective, Communicator, Implementation, Op};

#[derive(Default)]
struct Calls(Mutex<Vec<(usize, u64, String)>>);

impl Observer for Calls {
    fn event(&self, e: &Event<'_>) {
        if e.stage == Stage::Enter {
            self.0
                .lock()
                .unwrap()
                .push((e.rank, e.sig.seq, e.imp.to_string()));
        }
    }
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-sel-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("state.json")
}

/// The implementations rank 0 ran in a 3-rank job of `calls` allreduces
/// of 50 KB, its selector set by `setup` on every rank.
fn rank0_allreduces(calls: usize, setup: impl Fn(&mut Communicator) + Sync) -> Vec<String> {
    let seen = Arc::new(Calls::default());
    local::run(3, |mut comm| {
        setup(&mut comm);
        comm.set_observer(Some(seen.clone()));
        for _ in 0..calls {
            let mut out = vec![0.0f64; 6250];
            comm.allreduce(&[1.0f64; 6250], &mut out, &Op::SUM).unwrap();
        }
    });
    let calls = seen.0.lock().unwrap();
    calls
        .iter()
        .filter(|c| c.0 == 0 && c.2.starts_with("allreduce"))
        .map(|c| c.2.clone())
        .collect()
}

#[test]
fn every_rank_runs_the_lottery_s_choice_and_gets_right_results() {
    let calls = Arc::new(Calls::default());
    local::run(5, |mut comm| {
        comm.set_observer(Some(calls.clone()));
        comm.set_selector(Box::new(Lottery::new(
            Params::default(),
            comm.rank() as u64 * 977,
        )));
        for i in 0..150u32 {
            let mut buf = vec![if comm.rank() == 2 { i } else { 0 }; 40_000];
            comm.bcast(&mut buf, 2).unwrap();
            assert!(buf.iter().all(|&v| v == i));
            let mut sum = [0u64; 3];
            comm.allreduce(&[comm.rank() as u64; 3], &mut sum, &Op::SUM)
                .unwrap();
            assert_eq!(sum, [10; 3]);
        }
    });
    let calls = calls.0.lock().unwrap();
    let of = |rank: usize| -> Vec<(u64, String)> {
        calls
            .iter()
            .filter(|c| c.0 == rank)
            .map(|c| (c.1, c.2.clone()))
            .collect()
    };
    let first = of(0);
    let distinct: std::collections::BTreeSet<_> = first.iter().map(|c| &c.1).collect();
    assert!(distinct.len() > 5, "the lottery explored: {distinct:?}");
    for rank in 1..5 {
        assert_eq!(
            of(rank),
            first,
            "rank {rank} ran other implementations than rank 0"
        );
    }
}

fn pool_with(ids: &[(&str, f64, u32)]) -> Learned {
    let mut pool = Pool::new(ids.iter().map(|(id, _, _)| id.parse().unwrap()).collect());
    for (stats, &(_, mean, count)) in pool.candidates.iter_mut().zip(ids) {
        stats.mean_s = mean;
        stats.count = count;
    }
    Learned::of(&pool)
}

fn key(op: Collective, ranks: usize, bytes: usize) -> autocoll::select::lottery::Key {
    autocoll::select::lottery::Key::of(op, ranks, bytes)
}

#[test]
fn state_round_trips_and_merges_with_another_programs_save() {
    let path = temp("merge");
    let fp = Fingerprint::new(&["a".into(), "a".into(), "b".into()], "local");
    let k1 = key(Collective::Bcast, 3, 1000);
    let k2 = key(Collective::Reduce, 3, 1000);
    let mut first = BTreeMap::new();
    first.insert(
        k1,
        pool_with(&[("bcast:chain", 1.0, 10), ("bcast:flat", 2.0, 3)]),
    );
    Store::new(&path, fp.clone(), true).save(&first).unwrap();
    // Two programs load that; one learns about flat, the other about chain
    // and reduce, and they save one after the other.
    let mut a = Store::new(&path, fp.clone(), true);
    let mut b = Store::new(&path, fp.clone(), true);
    a.load();
    b.load();
    let mut a_pools = first.clone();
    a_pools.insert(
        k1,
        pool_with(&[("bcast:chain", 1.0, 10), ("bcast:flat", 2.5, 4)]),
    );
    let mut b_pools = first.clone();
    b_pools.insert(
        k1,
        pool_with(&[("bcast:chain", 0.9, 11), ("bcast:flat", 2.0, 3)]),
    );
    b_pools.insert(k2, pool_with(&[("reduce:binomial", 3.0, 4)]));
    a.save(&a_pools).unwrap();
    b.save(&b_pools).unwrap();
    let loaded = Store::new(&path, fp.clone(), true).load();
    let bcast = &loaded[&k1].candidates;
    assert_eq!((bcast[0].mean_s, bcast[0].count), (0.9, 11), "b's chain");
    assert_eq!(
        (bcast[1].mean_s, bcast[1].count),
        (2.5, 4),
        "a's flat survives b's save"
    );
    assert_eq!(loaded[&k2].candidates[0].imp.to_string(), "reduce:binomial");
    // Another fingerprint sees nothing of it, an inactive store neither.
    let other = Fingerprint::new(&["c".into()], "tcp");
    assert!(Store::new(&path, other, true).load().is_empty());
    assert!(Store::new(&path, fp.clone(), false).load().is_empty());
    // Nor does a lottery that minimises another measure of the same job.
    let mean = fp.measuring(Objective::Mean);
    assert!(Store::new(&path, mean, true).load().is_empty());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn the_group_folds_the_ranks_values_to_rank0_by_maximum_or_mean() {
    local::run(4, |mut comm| {
        let r = comm.rank() as f64;
        for (how, want) in [
            (Fold::Max, [3.0, 30.0]),
            (Fold::Mean, [1.5, 15.0]),
            (Fold::Min, [0.0, 0.0]),
        ] {
            let mut v = [r, 10.0 * r];
            comm.fold_to_rank0(&mut v, how).unwrap();
            let expected = if comm.rank() == 0 {
                want
            } else {
                [r, 10.0 * r]
            };
            assert_eq!(v, expected, "{how:?} on rank {}", comm.rank());
        }
    });
}

#[test]
fn corrupt_truncated_or_foreign_state_starts_afresh() {
    let path = temp("corrupt");
    let fp = Fingerprint::new(&["a".into()], "local");
    let mut store = Store::new(&path, fp, true);
    let mut pools = BTreeMap::new();
    pools.insert(
        key(Collective::Bcast, 1, 8),
        pool_with(&[("bcast:chain", 1.0, 10)]),
    );
    store.save(&pools).unwrap();
    let good = std::fs::read(&path).unwrap();
    let bad: [&[u8]; 4] = [
        &good[..good.len() / 2],
        b"\x00\xffnot json",
        br#"{"schema":"someone.else/3","runs":[]}"#,
        b"",
    ];
    for text in bad {
        std::fs::write(&path, text).unwrap();
        assert!(store.load().is_empty());
        store.save(&pools).unwrap();
        assert_eq!(
            store.load().len(),
            1,
            "a save over a bad file writes a good one"
        );
        let aside = path.with_file_name("state.json.corrupt");
        assert_eq!(std::fs::read(&aside).unwrap(), text, "the bad file is kept");
    }
    assert!(path.with_file_name("state.json.lock").exists());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A run resumes every candidate the file knows with its count cut to
/// `min_tries`; a candidate it then never measures keeps the file's count
/// and average at the next save (they were once overwritten by the cut
/// count: 52 tries became 3).
#[test]
fn a_resumed_candidate_the_run_never_measured_keeps_the_file_s_statistics() {
    let path = temp("resumed");
    let fp = Fingerprint::new(&["a".into()], "local");
    let k = key(Collective::Bcast, 4, 1000);
    let mut earlier = BTreeMap::new();
    earlier.insert(
        k,
        pool_with(&[("bcast:chain", 1.0, 52), ("bcast:flat", 2.0, 40)]),
    );
    Store::new(&path, fp.clone(), true).save(&earlier).unwrap();
    let mut store = Store::new(&path, fp.clone(), true);
    let known = store.load();
    let params = Params::default();
    let mut pool = Pool::new(vec![
        "bcast:chain".parse().unwrap(),
        "bcast:flat".parse().unwrap(),
    ]);
    pool.resume(&known[&k].candidates, &params);
    assert_eq!(pool.candidates[0].count, params.min_tries);
    pool.settle(1, &[2.5], &params);
    let mut now = BTreeMap::new();
    now.insert(k, Learned::of(&pool));
    store.save(&now).unwrap();
    let saved = Store::new(&path, fp, true).load();
    let (chain, flat) = (&saved[&k].candidates[0], &saved[&k].candidates[1]);
    assert_eq!(
        (chain.mean_s, chain.count),
        (1.0, 52),
        "chain was not measured"
    );
    assert_eq!(flat.count, params.min_tries + 1, "flat was: {flat:?}");
    assert!(flat.mean_s > 2.0);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A run without a saved state starts with a warm-up that tries every
/// candidate once, in its first |Z| tries of two calls each; a run that
/// loads a state skips it and lets the best hold for several calls at once.
#[test]
fn a_saved_state_is_picked_up_by_the_next_run() {
    let path = temp("next-run");
    // Allreduce: the lottery's own agreement uses a small reduce and bcast.
    let z =
        autocoll::select::lottery::default_candidates(Collective::Allreduce, 3, 50_000, 1).len();
    let run = |calls: usize| -> Vec<String> {
        rank0_allreduces(calls, |comm| {
            let fp = Fingerprint::new(&comm.hosts(), comm.transport_kind());
            let store = Store::new(&path, fp, comm.rank() == 0);
            // No drift restarts here: this test is about memory, not change.
            let params = Params {
                drift_ratio: f64::INFINITY,
                ..Params::default()
            };
            comm.set_selector(Box::new(Lottery::new(params, 11).with_store(store)));
        })
    };
    let distinct = |calls: &[String]| {
        calls
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    // A try's first call, after a switch, is not learned from.
    let warm_up = z * autocoll::select::lottery::TRY_CALLS as usize;
    let first = run(150);
    assert_eq!(
        distinct(&first[..warm_up]),
        z,
        "a fresh run warms up on every candidate: {first:?}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("autocoll.lottery/1") && text.contains("allreduce:"),
        "{text}"
    );
    let second = run(warm_up + 10);
    assert!(
        distinct(&second[..warm_up]) < z,
        "the second run started from the saved state: {second:?}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_table_picks_its_rules_and_defaults_elsewhere() {
    let text = "schema = \"autocoll.tuning/1\"\n[[rule]]\nop = \"bcast\"\nranks = \"1..4\"\nbytes = \"0..1M\"\nimpl = \"bcast:chain:seg=1K\"\n";
    let table = Table::parse(text, "inline").unwrap();
    let calls = Arc::new(Calls::default());
    local::run(4, |mut comm| {
        comm.set_observer(Some(calls.clone()));
        comm.set_selector(Box::new(table.clone()));
        comm.bcast(&mut [0u8; 100], 0).unwrap();
        comm.bcast(&mut vec![0u8; 2 << 20], 0).unwrap();
    });
    let seen: Vec<String> = calls
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.0 == 0)
        .map(|c| c.2.clone())
        .collect();
    let default: Implementation = autocoll::select::default_for(Collective::Bcast, 4, 2 << 20);
    assert_eq!(
        seen,
        vec!["bcast:chain:seg=1K".to_string(), default.to_string()]
    );
}

/// The allreduces rank 0 ran in a 3-rank job of `calls` calls whose
/// lottery shares what it learns through `shared`, if given.
fn allreduces_with(shared: Option<&Shared>, calls: usize) -> Vec<String> {
    rank0_allreduces(calls, |comm| {
        let mut lottery = Lottery::new(Params::default(), 7);
        if let Some(shared) = shared {
            lottery = lottery.with_shared(shared.clone());
        }
        comm.use_lottery_with(lottery, None);
    })
}

#[test]
fn a_new_communicator_starts_where_the_last_one_of_its_shape_got_to() {
    let z =
        autocoll::select::lottery::default_candidates(Collective::Allreduce, 3, 50_000, 1).len();
    let warm_up = z * autocoll::select::lottery::TRY_CALLS as usize;
    let distinct = |calls: &[String]| calls.iter().collect::<BTreeSet<_>>().len();
    let shared = Shared::default();
    let first = allreduces_with(Some(&shared), 150);
    assert_eq!(distinct(&first[..warm_up]), z, "{first:?}");
    // No state file: the next communicator of the shape, in the same
    // process, resumes from the first one's pools.
    let second = allreduces_with(Some(&shared), warm_up);
    assert!(distinct(&second) < z, "{second:?}");
    let alone = allreduces_with(None, warm_up);
    assert_eq!(distinct(&alone), z, "without sharing it warms up again");
}

#[test]
fn communicators_share_by_the_placement_of_their_ranks_not_by_host_names() {
    let shape = |hosts: &[&str], transport: &str| {
        let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        Fingerprint::new(&hosts, transport).shape()
    };
    // Two ranks a host, in blocks: the same shape on other hosts.
    assert_eq!(
        shape(&["a", "a", "b", "b"], "mpi"),
        shape(&["c", "c", "d", "d"], "mpi")
    );
    // Ranks dealt round-robin over the hosts lie otherwise.
    assert_ne!(
        shape(&["a", "a", "b", "b"], "mpi"),
        shape(&["a", "b", "a", "b"], "mpi")
    );
    // Another size, another transport: other shapes.
    assert_ne!(shape(&["a", "a"], "mpi"), shape(&["a", "a", "a"], "mpi"));
    assert_ne!(shape(&["a", "b"], "mpi"), shape(&["a", "b"], "tcp"));
    // A file written before placements were kept reads as blocks.
    let mut old = Fingerprint::new(&["a".into(), "a".into(), "b".into()], "tcp");
    let blocks = old.shape();
    old.placement.clear();
    assert_eq!(old.shape(), blocks);
}

#[test]
fn the_budget_s_accounts_add_up_over_programs_saving_in_turn() {
    let path = temp("accounts");
    let fp = Fingerprint::new(&["a".into(), "b".into()], "mpi");
    let k = key(Collective::Bcast, 2, 1 << 20);
    let with = |spent_s: f64, lost_s: f64| {
        let mut l = pool_with(&[("bcast:chain", 1.0, 3)]);
        (l.spent_s, l.lost_s) = (spent_s, lost_s);
        BTreeMap::from([(k, l)])
    };
    Store::new(&path, fp.clone(), true)
        .save(&with(10.0, 0.1))
        .unwrap();
    // Two programs start from the file's 10 s, and add 5 s and 2 s.
    let mut a = Store::new(&path, fp.clone(), true);
    let mut b = Store::new(&path, fp.clone(), true);
    assert_eq!(a.load()[&k].spent_s, 10.0);
    b.load();
    a.save(&with(15.0, 0.2)).unwrap();
    b.save(&with(12.0, 0.1)).unwrap();
    let both = Store::new(&path, fp, true).load();
    assert_eq!((both[&k].spent_s, both[&k].lost_s), (17.0, 0.2));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn calls_fewer_than_a_hold_are_learnt_from_when_the_communicator_ends() {
    let shared = Shared::default();
    let budgeted = Params {
        budget: Some(autocoll::select::lottery::Budget::default()),
        ..Params::default()
    };
    local::run(3, |mut comm| {
        let lottery = Lottery::new(budgeted.clone(), 5)
            .with_incumbent(|op, _, _| {
                Implementation::tree(op, autocoll::Shape::Binomial, None).ok()
            })
            .with_shared(shared.clone());
        comm.use_lottery_with(lottery, None);
        for _ in 0..10 {
            comm.bcast(&mut [1u8; 100], 0).unwrap();
        }
    });
    let hosts = vec!["localhost".to_string(); 3];
    let shape = Fingerprint::new(&hosts, "local").shape();
    let learned = shared.pools(&shape);
    let pool = &learned[&key(Collective::Bcast, 3, 100)];
    // The first call came after the draw message that began the hold; the
    // other nine are learnt from, and all ten are in the budget's account.
    let binomial = pool
        .candidates
        .iter()
        .find(|s| s.imp.to_string() == "bcast:binomial");
    assert_eq!(binomial.map(|s| s.count), Some(9), "{pool:?}");
    assert!(pool.spent_s > 0.0);
}
