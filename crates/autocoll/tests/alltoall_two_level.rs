//! `alltoall:two-level` over the layout a communicator is given: it
//! passes `check` on hosts of any size with their ranks in any order, and
//! only the hosts' leaders send across hosts, one message per pair.

use std::sync::{Arc, Mutex};

use autocoll::check::{self, Case, Config};
use autocoll::observe::{Event, Observer, Stage};
use autocoll::{local, Implementation, Layout};

/// Rank r on host `hosts[r]`.
fn layout(hosts: &[usize]) -> Layout {
    Layout::of_hosts(hosts.iter().map(|h| format!("node{h}")).collect()).unwrap()
}

/// One rank; one host; 13 ranks on uneven hosts (4, 1, 3, 5) dealt out of
/// order; two ranks on each of 4 hosts, interleaved; every rank on a host
/// of its own.
fn layouts() -> Vec<Layout> {
    vec![
        layout(&[0]),
        layout(&[0; 5]),
        layout(&[0, 0, 2, 1, 3, 3, 3, 0, 2, 3, 0, 2, 3]),
        layout(&[0, 1, 2, 3, 3, 2, 1, 0]),
        layout(&[0, 1, 2, 3, 4, 5, 6]),
    ]
}

fn two_level() -> Implementation {
    "alltoall:two-level".parse().unwrap()
}

#[test]
fn two_level_passes_check_on_every_layout() {
    let cases: Vec<Case> = [0, 1, 8, 1000, 65536]
        .into_iter()
        .map(|bytes| Case {
            imp: two_level(),
            bytes,
            root: 0,
        })
        .collect();
    for layout in layouts() {
        let p = layout.size();
        let failures = local::run(p, |mut comm| {
            comm.set_layout(layout.clone()).unwrap();
            let mine = check::run(&mut comm, &cases, &Config::default());
            check::collect(&mut comm, mine).unwrap()
        });
        assert_eq!(failures[0], [], "{p} ranks on {:?}", layout.hosts());
    }
}

/// Every message sent: (from, to, phase).
#[derive(Default)]
struct Sends(Mutex<Vec<(usize, usize, u8)>>);

impl Observer for Sends {
    fn event(&self, e: &Event<'_>) {
        if let (Stage::Sent, Some(peer)) = (e.stage, e.peer) {
            self.0.lock().unwrap().push((e.rank, peer, e.phase));
        }
    }
}

#[test]
fn only_leaders_send_across_hosts_one_message_per_pair_of_hosts() {
    let layout = layout(&[0, 0, 2, 1, 3, 3, 3, 0, 2, 3, 0, 2, 3]);
    let sends = Arc::new(Sends::default());
    local::run(layout.size(), |mut comm| {
        comm.set_layout(layout.clone()).unwrap();
        comm.add_observer(sends.clone());
        let send = vec![comm.rank() as u8; 4 * layout.size()];
        let mut recv = vec![0u8; send.len()];
        comm.alltoall_with(&two_level(), &send, &mut recv).unwrap();
    });
    let leaders = [0, 3, 2, 4];
    let mut across: Vec<(usize, usize)> = sends
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|&&(from, to, _)| layout.host(from) != layout.host(to))
        .map(|&(from, to, _)| (from, to))
        .collect();
    across.sort_unstable();
    let mut pairs: Vec<(usize, usize)> = leaders
        .iter()
        .flat_map(|&a| leaders.iter().map(move |&b| (a, b)))
        .filter(|(a, b)| a != b)
        .collect();
    pairs.sort_unstable();
    assert_eq!(across, pairs);
}

#[test]
fn over_one_host_it_sends_each_block_straight_to_its_rank() {
    let sends = Arc::new(Sends::default());
    local::run(4, |mut comm| {
        comm.add_observer(sends.clone());
        let send = vec![comm.rank() as u8; 4 * 3];
        let mut recv = vec![0u8; send.len()];
        comm.alltoall_with(&two_level(), &send, &mut recv).unwrap();
        let want: Vec<u8> = (0..4u8).flat_map(|r| [r; 3]).collect();
        assert_eq!(recv, want);
    });
    let sent = sends.0.lock().unwrap();
    assert_eq!(sent.len(), 4 * 3);
    assert!(sent
        .iter()
        .all(|&(from, to, phase)| from != to && phase == 0));
}
