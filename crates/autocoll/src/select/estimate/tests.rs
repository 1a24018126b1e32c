use super::*;
use crate::select::key::default_candidates;

fn hosts(n: usize) -> Layout {
    Layout::of_hosts((0..n).map(|h| format!("h{h}")).collect()).unwrap()
}

fn of(id: &str, layout: &Layout, bytes: usize) -> Cost {
    let imp: Implementation = id.parse().unwrap();
    cost(&imp, layout, bytes).unwrap_or_else(|| panic!("{id} has no cost"))
}

/// The emulated cluster of 8 hosts on 100 Mbit/s links.
fn star8() -> Link {
    Link::from_ns(21_427.0 + 2.0 * 10_714.0, 84.235, 0.438)
}

fn seconds(id: &str, bytes: usize) -> f64 {
    star8().time(&of(id, &hosts(8), bytes))
}

#[test]
fn bcast_link_bytes_are_what_the_root_sends_out_of_its_host() {
    let eight = hosts(8);
    assert_eq!(of("bcast:flat", &eight, 1000).link_bytes, 7000.0);
    assert_eq!(of("bcast:binomial", &eight, 1000).link_bytes, 3000.0);
    assert_eq!(of("bcast:chain", &eight, 1000).link_bytes, 1000.0);
}

#[test]
fn an_unsegmented_chain_pays_its_message_at_every_hop() {
    let chain = of("bcast:chain", &hosts(8), 1000);
    assert_eq!((chain.rounds, chain.path_link_bytes), (7.0, 7000.0));
    let flat = of("bcast:flat", &hosts(8), 1000);
    assert_eq!((flat.rounds, flat.path_link_bytes), (7.0, 7000.0));
    let binomial = of("bcast:binomial", &hosts(8), 1000);
    assert_eq!((binomial.rounds, binomial.path_link_bytes), (3.0, 3000.0));
}

#[test]
fn a_segmented_chain_takes_depth_plus_segments_minus_one_steps() {
    let chain = of("bcast:chain:seg=1K", &hosts(8), 16 * 1024);
    assert_eq!(chain.rounds, 7.0 + 16.0 - 1.0);
    assert_eq!(chain.path_link_bytes, (7.0 + 16.0 - 1.0) * 1024.0);
    assert_eq!(chain.link_bytes, 16.0 * 1024.0);
}

#[test]
fn ring_and_recursive_doubling_allgather_carry_seven_blocks_per_link() {
    let eight = hosts(8);
    let ring = of("allgather:ring", &eight, 100);
    assert_eq!((ring.link_bytes, ring.rounds), (700.0, 7.0));
    let doubling = of("allgather:recursive-doubling", &eight, 100);
    assert_eq!((doubling.link_bytes, doubling.rounds), (700.0, 3.0));
    // Gather then a broadcast of all 8 blocks to 7 hosts.
    let flat = of("allgather:flat", &eight, 100);
    assert_eq!(flat.link_bytes, 7.0 * 800.0);
}

#[test]
fn ranks_on_one_host_use_no_link() {
    let one = Layout::one_host(8);
    for id in ["bcast:binomial", "allgather:ring", "allreduce:rabenseifner"] {
        let c = of(id, &one, 4096);
        assert_eq!((c.link_bytes, c.path_link_bytes), (0.0, 0.0), "{id}");
        assert!(c.local_bytes > 0.0 && c.path_local_bytes > 0.0, "{id}");
    }
}

#[test]
fn hier_sends_one_copy_per_host_over_the_links() {
    let two = Layout::of_hosts(
        ["a", "a", "a", "a", "b", "b", "b", "b"]
            .map(String::from)
            .to_vec(),
    )
    .unwrap();
    let hier = of("bcast:hier", &two, 1000);
    assert_eq!(hier.link_bytes, 1000.0);
    let flat = of("bcast:flat", &two, 1000);
    assert_eq!(flat.link_bytes, 4000.0);
}

#[test]
fn two_level_alltoall_carries_what_pairwise_does_over_each_link() {
    let four_by_two = Layout::of_hosts((0..8).map(|r| format!("h{}", r / 2)).collect()).unwrap();
    // Each host's link carries its 2 ranks' blocks for the 6 ranks away.
    for id in ["alltoall:two-level", "alltoall:pairwise"] {
        assert_eq!(of(id, &four_by_two, 1000).link_bytes, 12_000.0, "{id}");
    }
    let one = of("alltoall:two-level", &Layout::one_host(8), 1000);
    assert_eq!((one.link_bytes, one.local_bytes), (0.0, 7000.0));
}

#[test]
fn on_star8_ring_allgather_of_one_mebibyte_is_three_times_faster_than_flat() {
    let ring = seconds("allgather:ring", 1 << 20);
    let flat = seconds("allgather:flat", 1 << 20);
    assert!(flat > 3.0 * ring, "ring {ring} s, flat {flat} s");
    let chain = seconds("allgather:chain", 1 << 20);
    assert!(chain > 3.0 * ring, "ring {ring} s, chain {chain} s");
}

#[test]
fn on_star8_unsegmented_flat_and_chain_bcast_of_one_mebibyte_lag_a_segmented_binomial() {
    let segmented = seconds("bcast:binomial:seg=64K", 1 << 20);
    for id in ["bcast:flat", "bcast:chain"] {
        let t = seconds(id, 1 << 20);
        assert!(
            t > 2.0 * segmented,
            "{id} {t} s, binomial:seg=64K {segmented} s"
        );
    }
}

#[test]
fn on_star8_small_messages_favour_shallow_trees() {
    let binomial = seconds("bcast:binomial", 8);
    let chain = seconds("bcast:chain", 8);
    assert!(binomial < chain, "binomial {binomial} s, chain {chain} s");
    for bytes in [1, 1024] {
        let binomial = seconds("bcast:binomial", bytes);
        assert!(binomial < seconds("bcast:chain", bytes), "{bytes} B");
        assert!(binomial < seconds("bcast:flat", bytes), "{bytes} B");
    }
}

#[test]
fn many_segments_extrapolate_to_what_tracing_them_all_gives() {
    let eight = hosts(8);
    for id in [
        "bcast:binomial:seg=1K",
        "allgather:chain:seg=1K",
        "scatter:binary:seg=1K",
    ] {
        let imp: Implementation = id.parse().unwrap();
        let bytes = 256 * 1024;
        let all = trace(&imp, &eight, bytes, 1024).unwrap();
        let guess = cost(&imp, &eight, bytes).unwrap();
        let (a, b) = (star8().time(&all), star8().time(&guess));
        assert!(
            (a - b).abs() < 0.02 * a,
            "{id}: traced {a} s, extrapolated {b} s"
        );
    }
}

#[test]
fn barriers_cost_rounds_and_no_bytes() {
    let d = of("barrier:dissemination", &hosts(8), 0);
    assert_eq!(
        d,
        Cost {
            rounds: 3.0,
            ..Cost::default()
        }
    );
    let tree = of("barrier:binomial", &hosts(8), 0);
    assert_eq!((tree.rounds, tree.link_bytes), (6.0, 0.0));
}

#[test]
fn the_mpi_librarys_own_algorithm_has_no_cost() {
    for op in Collective::ALL {
        assert_eq!(cost(&Implementation::native(op), &hosts(8), 1024), None);
    }
}

#[test]
fn every_default_candidate_has_a_cost_on_one_host_and_on_eight() {
    for layout in [Layout::one_host(8), hosts(8)] {
        for op in Collective::ALL {
            for bytes in [0, 1, 1024, 1 << 20] {
                for imp in default_candidates(op, 8, bytes, layout.host_count()) {
                    let c = cost(&imp, &layout, bytes);
                    assert!(c.is_some(), "{imp} at {bytes} B");
                }
            }
        }
    }
}

#[test]
fn odd_sizes_and_empty_layouts_do_not_panic() {
    for ranks in [1, 3, 5, 6, 7] {
        for op in Collective::ALL {
            for imp in Implementation::all(op, &[1, 1000]) {
                let layout = hosts(ranks);
                for bytes in [0, 1, 3, 1001] {
                    assert!(cost(&imp, &layout, bytes).is_some(), "{imp} over {ranks}");
                }
            }
        }
    }
    let imp: Implementation = "bcast:binomial".parse().unwrap();
    assert_eq!(cost(&imp, &Layout::one_host(0), 8), None);
    assert_eq!(cost(&imp, &Layout::one_host(1), 8), Some(Cost::default()));
    let huge: Implementation = "allgather:binomial:seg=1K".parse().unwrap();
    assert_eq!(cost(&huge, &hosts(8), usize::MAX), None);
    assert!(cost(&imp, &hosts(8), usize::MAX).is_some());
}

fn synthetic(link: &Link, shapes: &[(f64, f64, f64)]) -> Vec<(Cost, f64)> {
    shapes
        .iter()
        .map(|&(rounds, link_bytes, local)| {
            let c = Cost {
                rounds,
                link_bytes,
                path_link_bytes: link_bytes,
                path_local_bytes: local,
                local_bytes: local,
            };
            (c, link.time(&c))
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.01 * b.abs()
}

#[test]
fn fit_recovers_latency_and_per_byte_time_from_exact_points() {
    let truth = star8();
    let points = synthetic(
        &truth,
        &[
            (1.0, 8.0, 0.0),
            (3.0, 3e6, 0.0),
            (7.0, 7e3, 0.0),
            (48.0, 3e6, 0.0),
        ],
    );
    let fitted = Link::fit(&points).unwrap();
    assert!(close(fitted.latency_s, truth.latency_s), "{fitted:?}");
    assert!(close(fitted.s_per_byte, truth.s_per_byte), "{fitted:?}");
}

#[test]
fn fit_finds_the_local_per_byte_time_when_points_have_both() {
    let truth = Link::from_ns(40_000.0, 80.0, 80.0 / 128.0);
    let points = synthetic(
        &truth,
        &[
            (2.0, 1e3, 1e6),
            (5.0, 1e6, 1e3),
            (3.0, 0.0, 1e7),
            (9.0, 5e5, 5e5),
        ],
    );
    let fitted = Link::fit(&points).unwrap();
    assert!(close(fitted.latency_s, truth.latency_s), "{fitted:?}");
    assert!(close(fitted.s_per_byte, truth.s_per_byte), "{fitted:?}");
    assert!(
        close(fitted.local_s_per_byte, truth.local_s_per_byte),
        "{fitted:?}"
    );
}

#[test]
fn fit_on_one_host_recovers_the_local_per_byte_time() {
    let one = Layout::one_host(4);
    let truth = Link::from_ns(5_000.0, 50.0, 0.25);
    let points: Vec<(Cost, f64)> = ["bcast:binomial", "bcast:chain:seg=1K", "allreduce:ring"]
        .iter()
        .flat_map(|id| [8, 1 << 16, 1 << 20].map(|b| of(id, &one, b)))
        .map(|c| (c, truth.time(&c)))
        .collect();
    let fitted = Link::fit(&points).unwrap();
    assert!(close(fitted.latency_s, truth.latency_s), "{fitted:?}");
    assert!(
        close(fitted.local_s_per_byte, truth.local_s_per_byte),
        "{fitted:?}"
    );
}

#[test]
fn fit_refuses_points_that_cannot_tell_latency_from_bytes() {
    let truth = star8();
    assert_eq!(Link::fit(&[]), None);
    let one = synthetic(&truth, &[(3.0, 1e3, 0.0)]);
    assert_eq!(Link::fit(&one), None);
    let twice = synthetic(&truth, &[(3.0, 1e3, 0.0), (3.0, 1e3, 0.0)]);
    assert_eq!(Link::fit(&twice), None);
    let same_bytes = synthetic(&truth, &[(3.0, 1e3, 0.0), (7.0, 1e3, 0.0)]);
    assert_eq!(Link::fit(&same_bytes), None);
    let proportional = synthetic(&truth, &[(1.0, 1e3, 0.0), (2.0, 2e3, 0.0)]);
    assert_eq!(Link::fit(&proportional), None);
    let no_bytes = synthetic(&truth, &[(1.0, 0.0, 0.0), (2.0, 0.0, 0.0)]);
    assert_eq!(Link::fit(&no_bytes), None);
}

#[test]
fn fit_never_returns_negative_terms() {
    // Times that fall as rounds grow: least squares alone would give a
    // negative latency.
    let cost = |rounds, bytes| Cost {
        rounds,
        link_bytes: bytes,
        path_link_bytes: bytes,
        ..Cost::default()
    };
    let points = [
        (cost(1.0, 1e6), 0.09),
        (cost(10.0, 1e6), 0.08),
        (cost(20.0, 2e6), 0.15),
        (cost(2.0, 0.0), 1e-3),
    ];
    let fitted = Link::fit(&points).unwrap();
    assert!(
        fitted.latency_s >= 0.0 && fitted.s_per_byte >= 0.0,
        "{fitted:?}"
    );
    assert!(fitted.local_s_per_byte >= 0.0, "{fitted:?}");
    let falling = [
        (cost(1.0, 1e6), 0.09),
        (cost(2.0, 2e6), 0.01),
        (cost(3.0, 1e3), 0.2),
    ];
    let fitted = Link::fit(&falling).unwrap();
    assert!(
        fitted.latency_s >= 0.0 && fitted.s_per_byte >= 0.0,
        "{fitted:?}"
    );
}
