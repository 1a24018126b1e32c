//! Sub-communicators: `Communicator::split` and `dup` on threads over the
//! local transport, tcp sockets and the simulated network. Every child's
//! results are checked against the serial reference (`check`) while its
//! parent keeps working between the child's calls.

#[path = "support/tcp_threads.rs"]
mod tcp_threads;

use std::time::Duration;

use autocoll::check::{self, Case};
use autocoll::select::lottery::Params;
use autocoll::select::state::{Fingerprint, Shared};
use autocoll::select::Lottery;
use autocoll::sim::Model;
use autocoll::{local, sim, Collective, Communicator, Op};

/// Every collective at two sizes (one implementation in `every` of each
/// collective's), with the last rank as root.
fn cases(ranks: usize, every: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for op in Collective::ALL {
        for bytes in [1, 4099] {
            let all = check::all_implementations(op, ranks, bytes, 1);
            for imp in all.into_iter().step_by(every) {
                cases.push(Case {
                    imp,
                    bytes,
                    root: ranks - 1,
                });
            }
        }
    }
    cases
}

/// The parent's allreduce of its ranks, checked.
fn parent_works(parent: &mut Communicator) {
    let mine = [parent.rank() as u64 + 1];
    let mut sum = [0u64];
    parent.allreduce(&mine, &mut sum, &Op::SUM).unwrap();
    let n = parent.size() as u64;
    assert_eq!(sum[0], n * (n + 1) / 2);
}

/// Runs `cases` on `child`, one at a time with a parent call between
/// them, and returns every rank's failures on the child's rank 0.
fn check_between(
    child: &mut Communicator,
    parent: &mut Communicator,
    cases: &[Case],
) -> Vec<String> {
    let config = check::Config::default();
    let mut mine = Vec::new();
    for case in cases {
        mine.extend(check::run(child, std::slice::from_ref(case), &config));
        parent_works(parent);
    }
    let all = check::collect(child, mine).unwrap();
    all.iter().map(|f| format!("{f:?}")).collect()
}

/// Who each rank of a job is in a child: (the child's rank, its size) or
/// `None`, and the child's failures as its rank 0 saw them.
type Seen = (Option<(usize, usize)>, Vec<String>);

/// Splits `parent` and checks the child with `cases(size, every)`, all
/// children being of `size` ranks; a rank in none makes the parent calls
/// the others make between their cases.
fn split_and_check(
    parent: &mut Communicator,
    color: Option<u32>,
    key: i64,
    size: usize,
    every: usize,
) -> Seen {
    let cases = cases(size, every);
    let child = parent.split(color, key).unwrap();
    let Some(mut child) = child else {
        for _ in &cases {
            parent_works(parent);
        }
        return (None, Vec::new());
    };
    let failures = check_between(&mut child, parent, &cases);
    (Some((child.rank(), child.size())), failures)
}

#[test]
fn halves_run_every_collective_against_the_reference_while_the_parent_works() {
    let seen = local::run(6, |mut parent| {
        let color = (parent.rank() / 3) as u32;
        split_and_check(&mut parent, Some(color), 0, 3, 1)
    });
    for (rank, (place, failures)) in seen.iter().enumerate() {
        assert_eq!(*place, Some((rank % 3, 3)), "rank {rank}");
        assert!(failures.is_empty(), "{failures:?}");
    }
}

#[test]
fn odd_and_even_ranks_are_ordered_by_key_then_by_rank() {
    let seen = local::run(6, |mut parent| {
        let rank = parent.rank();
        // Keys reverse the order; ranks 0 and 2 tie and keep theirs.
        let key = if rank < 3 { 0 } else { -(rank as i64) };
        split_and_check(&mut parent, Some((rank % 2) as u32), key, 3, 3)
    });
    let places: Vec<_> = seen.iter().map(|s| s.0).collect();
    let want = [(1, 3), (2, 3), (2, 3), (1, 3), (0, 3), (0, 3)];
    assert_eq!(places, want.map(Some));
    assert!(seen.iter().all(|s| s.1.is_empty()), "{seen:?}");
}

#[test]
fn undefined_colors_get_no_communicator_and_the_others_go_on() {
    let seen = local::run(5, |mut parent| {
        let rank = parent.rank();
        let color = (rank % 2 == 0).then_some(7);
        split_and_check(&mut parent, color, 0, 3, 4)
    });
    let places: Vec<_> = seen.iter().map(|s| s.0).collect();
    assert_eq!(
        places,
        [Some((0, 3)), None, Some((1, 3)), None, Some((2, 3))]
    );
    assert!(seen.iter().all(|s| s.1.is_empty()), "{seen:?}");
}

/// Rows and columns of a 2×3 grid: every rank is in two children and calls
/// them in turn, with the same call numbers on both.
#[test]
fn calls_on_two_communicators_of_one_rank_interleave_without_crossing() {
    let sums = local::run(6, |mut grid| {
        let rank = grid.rank();
        let mut row = grid.split(Some((rank / 3) as u32), 0).unwrap().unwrap();
        let mut col = grid.split(Some((rank % 3) as u32), 0).unwrap().unwrap();
        let mut out = Vec::new();
        for round in 0..20u64 {
            let (mut r, mut c) = ([0u64], [0u64]);
            row.allreduce(&[rank as u64 + round], &mut r, &Op::SUM)
                .unwrap();
            col.allreduce(&[rank as u64 * round], &mut c, &Op::SUM)
                .unwrap();
            out.push((r[0], c[0]));
        }
        out
    });
    for (rank, got) in sums.iter().enumerate() {
        let row: u64 = if rank < 3 { 3 } else { 12 };
        let col = (rank % 3) as u64 * 2 + 3;
        for (round, &(r, c)) in got.iter().enumerate() {
            let round = round as u64;
            assert_eq!((r, c), (row + 3 * round, col * round), "rank {rank}");
        }
    }
}

#[test]
fn a_dup_keeps_its_messages_apart_from_its_parents() {
    let got = local::run(3, |mut parent| {
        let mut dup = parent.dup().unwrap();
        assert_eq!((dup.rank(), dup.size()), (parent.rank(), parent.size()));
        if parent.rank() == 0 {
            dup.send_bytes(1, 5, "dup".into()).unwrap();
            parent.send_bytes(1, 5, "parent".into()).unwrap();
        }
        // The same call numbers on both: the first calls of each.
        let mut a = [0u32; 3];
        dup.allgather(&[parent.rank() as u32], &mut a).unwrap();
        let mut b = [0u32; 3];
        parent
            .allgather(&[10 + parent.rank() as u32], &mut b)
            .unwrap();
        let got = match parent.rank() {
            1 => {
                let p = parent.recv_bytes(0, 5).unwrap();
                let d = dup.recv_bytes(0, 5).unwrap();
                vec![p, d]
            }
            _ => Vec::new(),
        };
        (a, b, got)
    });
    for (a, b, _) in &got {
        assert_eq!((*a, *b), ([0, 1, 2], [10, 11, 12]));
    }
    assert_eq!(got[1].2, [&b"parent"[..], &b"dup"[..]]);
}

#[test]
fn a_child_of_a_child_runs_every_collective() {
    let seen = local::run(8, |mut world| {
        let rank = world.rank();
        let mut half = world.split(Some((rank / 4) as u32), 0).unwrap().unwrap();
        let color = (half.rank() % 2) as u32;
        let mut quarter = half.split(Some(color), 0).unwrap().unwrap();
        let failures = check_between(&mut quarter, &mut half, &cases(2, 2));
        parent_works(&mut world);
        (quarter.rank(), quarter.size(), failures)
    });
    for (rank, (r, size, failures)) in seen.iter().enumerate() {
        assert_eq!((*r, *size), ((rank % 4) / 2, 2), "rank {rank}");
        assert!(failures.is_empty(), "{failures:?}");
    }
}

#[test]
fn children_run_every_collective_over_tcp_sockets() {
    let seen = tcp_threads::over_tcp(4, Duration::from_secs(20), |mut parent| {
        let rank = parent.rank();
        let (place, failures) = split_and_check(&mut parent, Some((rank % 2) as u32), 0, 2, 2);
        let mut dup = parent.dup().unwrap();
        parent_works(&mut dup);
        (place, failures)
    });
    for (rank, (place, failures)) in seen.iter().enumerate() {
        assert_eq!(*place, Some((rank / 2, 2)));
        assert!(failures.is_empty(), "{failures:?}");
    }
}

#[test]
fn children_run_every_collective_on_the_simulated_network() {
    let model = Model::default();
    let seen = sim::run(4, &model, |mut parent| {
        let color = (parent.rank() / 2) as u32;
        split_and_check(&mut parent, Some(color), 0, 2, 3)
    });
    assert!(
        seen.iter().all(|s| s.0.is_some() && s.1.is_empty()),
        "{seen:?}"
    );
}

/// A dup has its parent's shape: its lottery starts where the parent's got
/// to, and what it learns goes on from there.
#[test]
fn a_lottery_child_starts_from_the_pools_its_shape_learned() {
    let spent = local::run(4, |mut parent| {
        let shared = Shared::default();
        let lottery = Lottery::new(Params::default(), 7).with_shared(shared.clone());
        parent.use_lottery_with(lottery, None);
        let shape = Fingerprint::new(&parent.hosts(), parent.transport_kind())
            .measuring(Params::default().objective)
            .shape();
        for _ in 0..200 {
            parent_works(&mut parent);
        }
        let before: f64 = shared.pools(&shape).values().map(|l| l.spent_s).sum();
        let mut dup = parent.dup().unwrap();
        for _ in 0..3 {
            parent_works(&mut dup);
        }
        drop(dup);
        let after: f64 = shared.pools(&shape).values().map(|l| l.spent_s).sum();
        (before, after)
    });
    let (before, after) = spent[0];
    assert!(before > 0.0, "the parent learned nothing");
    assert!(
        after > before,
        "the dup started from nothing: {before} then {after}"
    );
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-split-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The halves' lotteries save into their parent's state file, under their
/// own shape (two ranks on one host) beside the parent's (four).
#[test]
fn lottery_children_save_their_shape_into_the_parents_state_file() {
    let state = temp_dir("state").join("state.json");
    local::run(4, |mut parent| {
        parent.use_lottery(&state);
        let mut half = parent
            .split(Some((parent.rank() / 2) as u32), 0)
            .unwrap()
            .unwrap();
        for _ in 0..50 {
            parent_works(&mut half);
            parent_works(&mut parent);
        }
    });
    let text = std::fs::read_to_string(&state).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut shapes: Vec<String> = file["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["fingerprint"]["ranks_per_host"].to_string())
        .collect();
    shapes.sort();
    assert_eq!(shapes, ["[2]", "[4]"], "{text}");
}

/// A parent that records a trace has its children record theirs, each in a
/// directory of its own under the parent's.
#[test]
fn children_of_a_traced_parent_record_their_own_traces() {
    let dir = temp_dir("trace");
    local::run(4, |mut parent| {
        parent.trace(&dir).unwrap();
        let color = (parent.rank() % 2) as u32;
        let mut child = parent.split(Some(color), 0).unwrap().unwrap();
        parent_works(&mut child);
    });
    for sub in ["comm-1-r0", "comm-1-r1"] {
        for rank in 0..2 {
            let file = dir.join(sub).join(format!("rank-{rank:05}.trace"));
            assert!(file.exists(), "{} is missing", file.display());
        }
    }
    assert!(dir.join("rank-00003.trace").exists());
}
