//! Issue 17: the balancer over real ranks. One rank comes late to every
//! broadcast; the balancer moves it down the tree while every rank holds
//! the same table after every call and every call's result matches the
//! serial reference (`check`'s comparison), on threads and over tcp; the
//! table is kept in the lottery's state file and restored on every rank.

use std::time::Duration;

use autocoll::balance::{Mode, Params, Status};
use autocoll::check::{self, Case};
use autocoll::select::lottery::{Key, Pool};
use autocoll::select::state::{Fingerprint, Learned, Store, TableEntry};
use autocoll::{local, Collective, Communicator, Implementation, Shape, Tree};

#[path = "support/tcp_threads.rs"]
mod tcp_threads;
use tcp_threads::over_tcp;

/// How late the late rank comes: far above the thresholds, and above
/// what a thread waits for a core while the other tests of this file run
/// beside it (at 3 ms, a CI run saw the late rank keep its children).
const LATE: Duration = Duration::from_millis(10);

/// The cases a job runs in turn: broadcasts of one shape, unsegmented and
/// segmented, mostly from rank 0, and a reduction (which the balancer
/// leaves alone).
fn cases() -> Vec<Case> {
    let case = |id: &str, root| Case {
        imp: id.parse::<Implementation>().unwrap(),
        bytes: 3000,
        root,
    };
    vec![
        case("bcast:binomial", 0),
        case("bcast:binomial:seg=512", 0),
        case("reduce:binomial", 0),
        case("bcast:binomial", 0),
        case("bcast:binomial:seg=1K", 2),
    ]
}

/// What a rank saw: bcast's table after every call, and the balancer's
/// status at the end.
type Seen = (Vec<Vec<usize>>, Status);

/// Every rank: `calls` cases, rank `late` late to each; every result
/// checked against the serial reference.
fn run_balanced(comm: &mut Communicator, late: usize, calls: usize, mode: Mode) -> Seen {
    let params = Params {
        mode,
        period: 4,
        ..Params::default()
    };
    comm.use_balancer(params).unwrap();
    let cases = cases();
    let config = check::Config::default();
    let mut tables = Vec::new();
    let barrier: Implementation = "barrier:dissemination".parse().unwrap();
    for i in 0..calls {
        // Aligned starts, as in the paper's experiment: the late rank is
        // late by its load, not by the calls before.
        comm.barrier_with(&barrier).unwrap();
        if comm.rank() == late {
            std::thread::sleep(LATE);
        }
        let case = &cases[i % cases.len()];
        if let Err(why) = check::run_case(comm, case, &config, i as u64, None) {
            panic!("rank {} call {i} {}: {why}", comm.rank(), case.imp);
        }
        assert_eq!(
            comm.virtual_ranks(Collective::Reduce),
            None,
            "reduce keeps its table"
        );
        let table = comm.virtual_ranks(Collective::Bcast).unwrap().to_vec();
        tables.push(table);
    }
    let status = comm.balancer().unwrap().status(Collective::Bcast).unwrap();
    (tables, status)
}

/// Every rank saw the same table after every call, the table changed,
/// and the late rank ended at a leaf of the broadcasts from rank 0.
fn check_agreement(seen: &[Seen], late: usize) {
    let (first, status) = &seen[0];
    for (rank, (tables, _)) in seen.iter().enumerate() {
        assert_eq!(tables, first, "rank {rank}'s tables differ from rank 0's");
    }
    assert!(status.changes > 0, "the table never changed: {status:?}");
    let last = first.last().unwrap();
    let tree = Tree::build(&Shape::Binomial, last.len(), 0, Some(last)).unwrap();
    assert!(
        tree.children(late).is_empty(),
        "rank {late} still has children {:?} under {last:?}",
        tree.children(late)
    );
}

/// The first receiver of rank 0's binomial tree (the paper's late rank).
fn first_receiver(size: usize) -> usize {
    Tree::build(&Shape::Binomial, size, 0, None)
        .unwrap()
        .children(0)[0]
}

#[test]
fn all_ranks_change_the_table_at_the_same_call_and_results_stay_right() {
    for mode in [Mode::Swap, Mode::Sort] {
        let late = first_receiver(7);
        let seen = local::run(7, |mut comm| run_balanced(&mut comm, late, 60, mode));
        check_agreement(&seen, late);
    }
}

#[test]
fn over_tcp_the_reports_arrive_and_the_ranks_agree() {
    let late = first_receiver(6);
    let seen = over_tcp(6, Duration::from_secs(20), |mut comm| {
        run_balanced(&mut comm, late, 60, Mode::Swap)
    });
    check_agreement(&seen, late);
}

fn temp_state(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-bal-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.json");
    let _ = std::fs::remove_file(&path);
    path
}

#[test]
fn with_the_lottery_the_table_is_kept_and_restored_on_every_rank() {
    let state = temp_state("restore");
    let late = first_receiver(7);
    let learned = local::run(7, |mut comm| {
        comm.use_lottery(&state);
        run_balanced(&mut comm, late, 40, Mode::Swap);
        // Plain calls: the lottery picks the tree, the balancer its order.
        let mut buf = vec![comm.rank() as u8; 100];
        for _ in 0..30 {
            comm.bcast(&mut buf, 0).unwrap();
            assert!(buf.iter().all(|&b| b == 0));
        }
        comm.virtual_ranks(Collective::Bcast).unwrap().to_vec()
    });
    assert!(learned.iter().all(|t| t == &learned[0]));
    let again = local::run(7, |mut comm| {
        comm.use_lottery(&state);
        comm.use_balancer(Params::default()).unwrap();
        let mut buf = [0u8; 8];
        comm.bcast_with(&"bcast:binomial".parse().unwrap(), &mut buf, 0)
            .unwrap();
        comm.balancer().unwrap().status(Collective::Bcast).unwrap()
    });
    for (rank, status) in again.iter().enumerate() {
        assert!(status.restored, "rank {rank}: {status:?}");
        assert_eq!(status.table, learned[0], "rank {rank}");
    }
}

#[test]
fn state_files_without_tables_still_load_and_saves_keep_both() {
    let state = temp_state("compat");
    let fingerprint = Fingerprint::new(&["a".to_string(), "a".to_string()], "local");
    // A file as the lottery wrote it before the balancer: no `tables`.
    let old = serde_json::json!({
        "schema": "autocoll.lottery/1",
        "runs": [{"fingerprint": fingerprint, "pools": []}],
    });
    std::fs::write(&state, serde_json::to_vec(&old).unwrap()).unwrap();
    let mut store = Store::new(&state, fingerprint.clone(), true);
    assert!(store.load().is_empty());
    assert!(store.load_tables().is_empty());
    let entry = TableEntry {
        op: Collective::Bcast,
        ranks: 2,
        table: vec![1, 0],
    };
    store.save_tables(std::slice::from_ref(&entry)).unwrap();
    let key = Key::of(Collective::Bcast, 2, 64);
    let pool = Pool::new(vec!["bcast:chain".parse().unwrap()]);
    store
        .save(&[(key, Learned::of(&pool))].into_iter().collect())
        .unwrap();
    let reread = Store::new(&state, fingerprint, true);
    assert_eq!(reread.load_tables(), [entry]);
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(
        text.contains("bcast:chain"),
        "the lottery's save kept its pool: {text}"
    );
}
