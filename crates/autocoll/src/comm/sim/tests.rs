//! The sim transport's times, worked out by hand from the model (no
//! processor time counted: `cpu_scale` 0, so every figure is exact).

use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::clock::now_ns;
use crate::transport::Transport;
use crate::Implementation;

/// One rank per host, 1 µs latency, 100 ns overhead, 10 ns a byte; links
/// shared evenly, each direction on its own.
fn model() -> Model {
    Model {
        latency_ns: 1_000.0,
        overhead_ns: 100.0,
        gap_ns: 0.0,
        host_ns_per_byte: 10.0,
        local_latency_ns: 50.0,
        local_ns_per_byte: 1.0,
        ranks_per_host: 1,
        hosts_per_switch: 0,
        switch_ns_per_byte: 0.0,
        cpu_scale: 0.0,
        window_bytes: 0.0,
        both_ways: 0.0,
    }
}

/// Every rank's virtual time after `body`.
fn times(n: usize, model: &Model, body: impl Fn(&mut Communicator) + Sync) -> Vec<u64> {
    run(n, model, |mut comm| {
        body(&mut comm);
        now_ns()
    })
}

/// Rank 0 sends `sizes[d - 1]` bytes to each rank `d`, in rank order;
/// the others receive theirs.
fn from_root(comm: &mut Communicator, sizes: &[usize]) {
    match comm.rank() {
        0 => {
            for (d, &size) in sizes.iter().enumerate() {
                comm.send_bytes(d + 1, 7, Bytes::from(vec![0u8; size]))
                    .unwrap();
            }
        }
        _ => drop(comm.recv_bytes(0, 7).unwrap()),
    }
}

#[test]
fn a_message_costs_both_overheads_its_bytes_on_the_links_and_the_latency() {
    let t = times(2, &model(), |comm| from_root(comm, &[1000]));
    // The sender is busy o; the receiver waits for o + 1000·10 + L, then o.
    assert_eq!(t, vec![100, 100 + 10_000 + 1_000 + 100]);
}

#[test]
fn messages_sent_together_share_the_link_and_end_together() {
    // A flat broadcast by hand: the root's three messages (10 µs each
    // alone) share its up link, as TCP's flows do, and all end at 30 µs.
    let t = times(4, &model(), |comm| from_root(comm, &[1000; 3]));
    assert_eq!(t[0], 300);
    for (k, &t) in t.iter().enumerate().skip(1) {
        assert_eq!(t, 100 + 3 * 10_000 + 1_000 + 100, "rank {k}");
    }
}

#[test]
fn a_short_message_sent_with_a_long_one_ends_first() {
    // 1000 and 3000 bytes together: the short one has half the link
    // until it is done (20 µs), the long one then has it all.
    let t = times(3, &model(), |comm| from_root(comm, &[1000, 3000]));
    assert_eq!(t[1], 100 + 20_000 + 1_000 + 100);
    assert_eq!(t[2], 100 + 40_000 + 1_000 + 100);
}

#[test]
fn connections_take_turns_at_a_link_a_window_at_a_time() {
    // Two messages of 2000 bytes (20 µs alone) from one burst, windows of
    // 1000 bytes: the first crosses 0-10 and 20-30 µs after the burst
    // leaves, the second 10-20 and 30-40. Shared evenly, both end at 40.
    let m = Model {
        window_bytes: 1000.0,
        ..model()
    };
    let t = times(3, &m, |comm| from_root(comm, &[2000; 2]));
    assert_eq!(
        t[1..],
        [100 + 30_000 + 1_000 + 100, 100 + 40_000 + 1_000 + 100]
    );
}

#[test]
fn a_link_is_slower_while_the_other_way_carries_data() {
    // An exchange of 1000 bytes (10 µs alone) with both ways 50% slower:
    // each direction's links take 15 µs; one way alone keeps 10.
    let m = Model {
        both_ways: 0.5,
        ..model()
    };
    let exchange = times(2, &m, |comm| {
        let peer = 1 - comm.rank();
        comm.send_bytes(peer, 7, Bytes::from(vec![0u8; 1000]))
            .unwrap();
        drop(comm.recv_bytes(peer, 7).unwrap());
    });
    assert_eq!(exchange, [100 + 15_000 + 1_000 + 100; 2]);
    let one_way = times(2, &m, |comm| from_root(comm, &[1000]));
    assert_eq!(one_way[1], 100 + 10_000 + 1_000 + 100);
}

#[test]
fn two_senders_share_a_down_link_whichever_thread_runs_first() {
    for late in [0, 1] {
        let t = times(3, &model(), |comm| match comm.rank() {
            2 => {
                drop(comm.recv_bytes(0, 7).unwrap());
                drop(comm.recv_bytes(1, 7).unwrap());
            }
            r => {
                if r == late {
                    // The other sender's thread books the link first.
                    std::thread::sleep(Duration::from_millis(20));
                }
                comm.send_bytes(2, 7, Bytes::from(vec![0u8; 1000])).unwrap()
            }
        });
        // Both leave at 100 and share rank 2's down link: both are through
        // at 100 + 20 µs; rank 2 is then busy o for each.
        assert_eq!(
            t[2],
            100 + 2 * 10_000 + 1_000 + 100 + 100,
            "rank {late} late"
        );
    }
}

#[test]
fn a_message_sent_later_by_a_thread_that_ran_late_shares_the_link() {
    // Rank 1 puts four messages for rank 0 on the network at once (its
    // thread never waits); rank 2 sends one only after a message from rank
    // 3, at 1310 ns. It shares rank 0's down link with rank 1's from then
    // (half the link: 20 µs for its 10 µs alone) instead of queueing
    // behind the 40 µs booked before it in real time.
    let got = run(4, &model(), |mut comm| match comm.rank() {
        0 => {
            drop(comm.recv_bytes(2, 7).unwrap());
            let from2 = now_ns();
            (0..4).for_each(|_| drop(comm.recv_bytes(1, 7).unwrap()));
            (from2, now_ns())
        }
        1 => {
            (0..4).for_each(|_| comm.send_bytes(0, 7, Bytes::from(vec![0u8; 1000])).unwrap());
            (0, 0)
        }
        2 => {
            drop(comm.recv_bytes(3, 7).unwrap());
            comm.send_bytes(0, 7, Bytes::from(vec![0u8; 1000])).unwrap();
            (0, 0)
        }
        _ => {
            comm.send_bytes(2, 7, Bytes::from(vec![0u8; 1])).unwrap();
            (0, 0)
        }
    });
    // Rank 2 hears from rank 3 at 100 + 10 + 1000 + 100 and sends at 1310.
    assert_eq!(got[0].0, 1_310 + 2 * 10_000 + 1_000 + 100);
    // The link carried 50 µs of messages from 100 on, without a pause.
    assert_eq!(got[0].1, 100 + 5 * 10_000 + 1_000 + 100);
}

#[test]
fn a_receive_waits_on_while_the_network_makes_progress() {
    // Rank 0 waits for rank 1's last message, which rank 1 sends after ten
    // exchanges with rank 2, 30 ms of real time apart: 300 ms, three times
    // the receive timeout. Events are played all along, so it waits on.
    let got = run(3, &model(), |mut comm| {
        comm.set_timeout(Duration::from_millis(100));
        let one = || Bytes::from(vec![0u8; 1]);
        match comm.rank() {
            0 => comm.recv_bytes(1, 8).map(|b| b.len()),
            1 => (0..10)
                .try_for_each(|_| {
                    std::thread::sleep(Duration::from_millis(30));
                    comm.send_bytes(2, 7, one())?;
                    comm.recv_bytes(2, 7).map(drop)
                })
                .and_then(|()| comm.send_bytes(0, 8, one()))
                .map(|()| 0),
            _ => (0..10)
                .try_for_each(|_| {
                    comm.recv_bytes(1, 7)?;
                    comm.send_bytes(1, 7, one())
                })
                .map(|()| 0),
        }
    });
    assert_eq!(got[0].as_ref().ok(), Some(&1), "{:?}", got[0]);
}

#[test]
fn ranks_of_one_host_talk_through_memory() {
    let m = Model {
        ranks_per_host: 2,
        ..model()
    };
    let t = times(2, &m, |comm| from_root(comm, &[1000]));
    assert_eq!(t[1], 100 + 50 + 1000 + 100);
}

#[test]
fn crossing_switches_books_their_links_too() {
    // Hosts 0 and 1 on switch 0, 2 and 3 on switch 1, 20 ns a byte
    // between switches: a message from 0 to 2 is held back by the slowest
    // link on its way.
    let m = Model {
        hosts_per_switch: 2,
        switch_ns_per_byte: 20.0,
        ..model()
    };
    let t = times(4, &m, |comm| match comm.rank() {
        0 => comm.send_bytes(2, 7, Bytes::from(vec![0u8; 1000])).unwrap(),
        2 => drop(comm.recv_bytes(0, 7).unwrap()),
        _ => {}
    });
    assert_eq!(t[2], 100 + 20_000 + 1_000 + 100);
    let hosts = transports(4, &m)[0].switches();
    assert_eq!(hosts[1], hosts[0]);
    assert_ne!(hosts[2], hosts[0]);
}

#[test]
fn a_binomial_broadcast_of_large_messages_beats_a_flat_one_at_sixteen_ranks() {
    let bcast = |imp: &str| {
        let imp: Implementation = imp.parse().unwrap();
        let t = times(16, &model(), |comm| {
            let mut buf = vec![0u8; 10_000];
            comm.bcast_with(&imp, &mut buf, 0).unwrap();
        });
        *t.iter().max().unwrap()
    };
    let (flat, binomial) = (bcast("bcast:flat"), bcast("bcast:binomial"));
    // Flat: the root's link carries 15 messages of 100 µs together.
    assert_eq!(flat, 100 + 15 * 100_000 + 1_000 + 100);
    // Binomial: every rank's children share its link, so the way to rank
    // 15 takes 4 + 3 + 2 + 1 message times, and some overheads and
    // latencies.
    assert!(
        (10 * 100_000..10 * 100_000 + 10_000).contains(&binomial),
        "{binomial}"
    );
}

#[test]
fn the_same_run_gives_the_same_times() {
    let imp: Implementation = "allreduce:binomial".parse().unwrap();
    let once = || {
        times(8, &model(), |comm| {
            let mine = vec![1.0f64; 512];
            let mut sum = vec![0.0; 512];
            comm.allreduce_with(&imp, &mine, &mut sum, &crate::Op::SUM)
                .unwrap();
        })
    };
    assert_eq!(once(), once());
}

#[test]
fn a_bad_model_file_is_refused_naming_the_file_and_the_field() {
    let dir = std::env::temp_dir().join(format!("autocoll-sim-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.toml");
    std::fs::write(&path, "latency_ns = -3.0\n").unwrap();
    let e = Model::load(&path).unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("latency_ns = -3"), "{e}");
    std::fs::write(&path, "latency = 3.0\n").unwrap();
    let e = Model::load(&path).unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("latency"), "{e}");
    std::fs::write(&path, model().to_toml()).unwrap();
    assert_eq!(Model::load(&path).unwrap(), model());
    std::fs::remove_dir_all(&dir).unwrap();
}
