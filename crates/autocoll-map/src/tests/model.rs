//! The estimator and the greedy mapper on hand-worked cases.

use super::*;

#[test]
fn a_table_interpolates_on_a_logarithmic_length_axis_and_is_flat_beyond() {
    let t = Table::new(vec![(1, 10.0), (1024, 1010.0)]).unwrap();
    assert!(close(t.at(32.0), 510.0), "{}", t.at(32.0));
    assert!(close(t.at(0.5), 10.0));
    assert!(close(t.at(1e9), 1010.0));
    assert!(Table::new(vec![(8, 1.0), (8, 2.0)]).is_err());
    assert!(Table::new(vec![(0, 1.0)]).is_err());
    assert!(Table::new(vec![(1, -1.0)]).is_err());
}

/// One message of 100 bytes over a 100 B/s host link: 1 s (Figure 4 as
/// printed would charge the idle link 2 s).
#[test]
fn one_message_costs_its_bytes_over_the_slowest_link_on_its_path() {
    let t = star(2, 2, Link::flat(100.0), None);
    let m = linear(4, &t).unwrap();
    let e = estimate(&t, &traffic(4, &[(0, 2, 100.0)]), &m);
    assert!(close(e.seconds, 1.0), "{e:?}");
    // Within a host: memory at 1000 B/s.
    let e = estimate(&t, &traffic(4, &[(0, 1, 100.0)]), &m);
    assert!(close(e.seconds, 0.1), "{e:?}");
}

/// Two ranks of h0 send 100 bytes each to h1. A pair gets 50 B/s on the
/// link (its table) and the link carries 100 B/s: the second rank fits
/// beside the first (2 s). With the link's maximum at 50 B/s it queues
/// (4 s).
#[test]
fn ranks_overlap_on_a_link_up_to_its_maximum_and_queue_beyond() {
    let concurrent = Link {
        up: Table::flat(50.0),
        down: Table::flat(50.0),
        max_up: 100.0,
        max_down: 100.0,
    };
    let pattern = traffic(4, &[(0, 2, 100.0), (1, 3, 100.0)]);
    let t = star(2, 2, concurrent, None);
    let e = estimate(&t, &pattern, &linear(4, &t).unwrap());
    assert!(close(e.seconds, 2.0), "{e:?}");
    let t = star(2, 2, Link::flat(50.0), None);
    let e = estimate(&t, &pattern, &linear(4, &t).unwrap());
    assert!(close(e.seconds, 4.0), "{e:?}");
    assert_eq!(e.busiest.as_deref(), Some("h0 up"));
}

/// Four hosts, 0→2 and 1→3 cross the top switch (links 1000 B/s, 100
/// bytes each): 0.1 s on the links, but a switch bounded at 100 B/s in
/// all carries them one after the other, 1 s each.
#[test]
fn a_switch_bounds_the_aggregate_of_its_ports() {
    let pattern = traffic(4, &[(0, 2, 100.0), (1, 3, 100.0)]);
    let t = star(4, 1, Link::flat(1000.0), None);
    let m = linear(4, &t).unwrap();
    assert!(close(estimate(&t, &pattern, &m).seconds, 0.1));
    let t = star(4, 1, Link::flat(1000.0), Some(100.0));
    let e = estimate(&t, &pattern, &m);
    assert!(close(e.seconds, 2.0), "{e:?}");
    assert_eq!(e.busiest.as_deref(), Some("switch top"));
}

/// Heavy pairs (0,2) and (1,3), light ones (0,1) and (2,3): the greedy
/// mapper puts each heavy pair on one host, in the order it formed them.
#[test]
fn greedy_puts_the_heaviest_pairs_on_one_host() {
    let t = star(2, 2, Link::flat(100.0), None);
    let pattern = traffic(
        4,
        &[
            (0, 2, 1000.0),
            (2, 0, 1000.0),
            (1, 3, 1000.0),
            (3, 1, 1000.0),
            (0, 1, 1.0),
            (2, 3, 1.0),
        ],
    );
    let m = greedy(&t, &pattern).unwrap();
    assert_eq!(m.pes(), [0, 2, 1, 3]);
    let e = Estimator::new(&t);
    assert!(e.cost(&pattern, &m) < e.cost(&pattern, &linear(4, &t).unwrap()));
}

/// The paper's cluster in small: a top switch with two hosts of its own
/// and a sub-switch of three (every host two processing elements). Six
/// ranks talk in a ring, four in another, one byte between the rings: the
/// six go under the sub-switch, the four on the top's hosts, and nothing
/// but that byte crosses the sub-switch's uplink (linear placement puts
/// two ring edges across it).
#[test]
fn greedy_fills_levels_of_unequal_arity_and_depth() {
    let mut elements = vec![top(None)];
    elements.push(host("h0", 0, 2, Link::flat(100.0)));
    elements.push(host("h1", 0, 2, Link::flat(100.0)));
    // The uplink is the slowest link, as between the paper's subnets.
    let mut sub = host("sub", 0, 0, Link::flat(10.0));
    sub.pe_link = None;
    elements.push(sub);
    for h in 2..5 {
        elements.push(host(&format!("h{h}"), 3, 2, Link::flat(100.0)));
    }
    let t = Topology::new("two", elements).unwrap();
    let mut m = Vec::new();
    for (a, b, w) in [(0, 1, 100.0), (2, 3, 100.0), (4, 5, 100.0)] {
        m.extend([(a, b, w), (b, a, w)]);
    }
    m.extend([(1, 2, 50.0), (3, 4, 50.0), (5, 0, 50.0)]);
    m.extend([(6, 7, 100.0), (8, 9, 100.0), (7, 8, 50.0), (9, 6, 50.0)]);
    m.push((5, 6, 1.0));
    let pattern = traffic(10, &m);
    let mapping = greedy(&t, &pattern).unwrap();
    let under_sub: Vec<usize> = (0..10)
        .filter(|&r| t.elements()[t.pe(mapping.pes()[r]).0].parent == Some(3))
        .collect();
    assert_eq!(under_sub, [0, 1, 2, 3, 4, 5]);
    for (a, b) in [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)] {
        let host = |r: usize| t.pe(mapping.pes()[r]).0;
        assert_eq!(host(a), host(b), "{a} and {b}: {mapping:?}");
    }
    let e = Estimator::new(&t);
    assert!(e.cost(&pattern, &mapping) < e.cost(&pattern, &linear(10, &t).unwrap()));
}

#[test]
fn fewer_ranks_than_processing_elements_are_mapped_and_more_are_refused() {
    let t = star(3, 2, Link::flat(100.0), None);
    let pattern = traffic(3, &[(0, 2, 10.0), (2, 0, 10.0)]);
    let m = greedy(&t, &pattern).unwrap();
    assert_eq!(m.ranks(), 3);
    assert_eq!(t.pe(m.pes()[0]).0, t.pe(m.pes()[2]).0);
    let err = greedy(&t, &Traffic::new(7)).unwrap_err().to_string();
    assert!(
        err.contains("7 ranks") && err.contains("6 processing"),
        "{err}"
    );
}
