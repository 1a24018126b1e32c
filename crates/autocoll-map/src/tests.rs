//! Hand-worked cases of the estimator and the greedy mapper, the files,
//! and properties of every mapper.

use proptest::prelude::*;

use crate::search::Budget;
use crate::traffic::Which;
use crate::*;

/// A top switch `top` (with `max`) over `hosts` hosts `h0`, `h1`, … of
/// `pes` processing elements each; host links of `link` bytes/s, memory
/// of 1000 bytes/s.
fn star(hosts: usize, pes: usize, link: Link, max: Option<f64>) -> Topology {
    let mut elements = vec![top(max)];
    for h in 0..hosts {
        elements.push(host(&format!("h{h}"), 0, pes, link.clone()));
    }
    Topology::new("star", elements).unwrap()
}

fn top(max: Option<f64>) -> Element {
    Element {
        name: "top".into(),
        parent: None,
        link: None,
        max,
        pes: 0,
        pe_link: None,
        addr: None,
        host: None,
    }
}

fn host(name: &str, parent: usize, pes: usize, link: Link) -> Element {
    Element {
        name: name.into(),
        parent: Some(parent),
        link: Some(link),
        max: None,
        pes,
        pe_link: Some(Link::flat(1000.0)),
        addr: None,
        host: None,
    }
}

fn traffic(ranks: usize, messages: &[(usize, usize, f64)]) -> Traffic {
    let mut t = Traffic::new(ranks);
    for &(src, dst, bytes) in messages {
        t.add(src, dst, bytes, 1);
    }
    t
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

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

#[test]
fn the_placement_files_name_each_ranks_host_and_slot() {
    let mut t = star(2, 2, Link::flat(100.0), None).elements().to_vec();
    t[1].addr = Some("10.0.0.1".into());
    let t = Topology::new("s", t).unwrap();
    let m = Mapping::new(vec![3, 0, 1], 4).unwrap();
    assert_eq!(
        m.rankfile(&t),
        "rank 0=h1 slot=1\nrank 1=h0 slot=0\nrank 2=h0 slot=1\n"
    );
    assert_eq!(m.machinefile(&t), "h1:1\nh0:1\nh0:1\n");
    assert_eq!(
        m.hostfile(&t),
        "h1 slots=1 switch=top\nh0 slots=1 addr=10.0.0.1 switch=top\nh0 slots=1 addr=10.0.0.1 switch=top\n"
    );
    assert!(Mapping::new(vec![1, 1], 4).is_err());
    assert!(Mapping::new(vec![4], 4).is_err());
}

#[test]
fn a_topology_file_round_trips_with_tables_and_measured_rates() {
    let measured = Link {
        up: Table::new(vec![(1, 12345.678), (65536, 1.1e7)]).unwrap(),
        down: Table::new(vec![(1, 9000.5), (1024, 1e6), (1 << 20, 1.2e7)]).unwrap(),
        max_up: 1.25e7,
        max_down: 2.0e7,
    };
    let mut elements = star(2, 2, measured, Some(1.25e9)).elements().to_vec();
    elements[2].addr = Some("10.1.2.3".into());
    let t = Topology::new("round trip", elements).unwrap();
    let text = t.to_toml();
    let back = Topology::parse(&text, "t.toml").unwrap();
    assert_eq!(back, t, "{text}");
    assert!(text.contains("max = \"10gbit\""), "{text}");
    let flat = star(1, 1, Link::flat(12.5e6), None).to_toml();
    assert!(flat.contains("link = \"100mbit\""), "{flat}");
    assert_eq!(Topology::parse(&flat, "f").unwrap().to_toml(), flat);
}

#[test]
fn bad_topology_files_name_the_line_and_the_reason() {
    let head = "schema = \"autocoll.topology/1\"\nname = \"x\"\n[[element]]\nname = \"top\"\n";
    for (tail, line, says) in [
        ("[[element]]\nname = \"h\"\nparent = \"nope\"\nlink = \"1mbit\"\n", 7, "no element is named `nope`"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlink = \"1 furlong\"\n", 8, "unknown unit"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\npes = 2\nlink = \"1mbit\"\n", 5, "needs a pe_link"),
        ("[[element]]\nname = \"top\"\n", 6, "named twice"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlink = { up = [[1, \"1mbit\"]] }\n", 8, "needs `down`"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlink = { up = [[4, 1.0], [2, 1.0]], down = [[1, 1.0]] }\n", 8, "must increase"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlinks = 3\n", 8, "unknown field"),
        ("pes = [\n", 5, ""),
    ] {
        let text = format!("{head}{tail}");
        let err = Topology::parse(&text, "t.toml").unwrap_err().to_string();
        assert!(err.starts_with(&format!("t.toml:{line}:")), "{err}\n{text}");
        assert!(err.contains(says), "{err}");
    }
    let err = Topology::parse(head, "t.toml").unwrap_err().to_string();
    assert!(err.contains("at least one processing element"), "{err}");
    let err = Topology::parse("schema = \"other\"\nname = \"x\"\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("t.toml:1:") && err.contains("expected `autocoll.topology/1`"),
        "{err}"
    );
}

#[test]
fn patterns_are_read_as_json_a_matrix_or_a_list_and_bad_lines_are_named() {
    let dir = std::env::temp_dir().join(format!("autocoll-map-traffic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("p.json");
    std::fs::write(
        &json,
        r#"{"schema":"autocoll.pattern/1","ranks":3,"source":"tcp",
            "p2p":[{"src":0,"dst":1,"class":10,"count":2,"bytes":2000}],
            "collective":[{"src":0,"dst":2,"class":8,"count":1,"bytes":256}]}"#,
    )
    .unwrap();
    let p2p = Traffic::read(&json, Which::P2p).unwrap();
    assert_eq!(p2p.ranks(), 3);
    assert_eq!(p2p.pairs(), [(0, 1, 2000.0)]);
    let all = Traffic::read(&json, Which::All).unwrap();
    assert_eq!(all.pairs(), [(0, 1, 2000.0), (0, 2, 256.0)]);
    assert_eq!(all.sent_by(0)[0].bytes, 1000.0);
    std::fs::remove_dir_all(&dir).unwrap();

    let matrix = Traffic::parse_csv("# bytes\n0,10,0\n10,0,5\n0,0,0\n", "m.csv").unwrap();
    assert_eq!(matrix.pairs(), [(0, 1, 20.0), (1, 2, 5.0)]);
    let list = Traffic::parse_csv("src,dst,count,bytes\n0,3,4,4096\n", "l.csv").unwrap();
    assert_eq!(list.ranks(), 4);
    assert_eq!(list.sent_by(0)[0].bytes, 1024.0);
    for (text, says) in [
        ("0,1\n1,0\n0,0\n", "m.csv:1: 2 fields, expected 3"),
        ("0,x\n1,0\n", "m.csv:1: `x` is not a byte count"),
        (
            "src,dst,count,bytes\n0,1,2\n",
            "m.csv:2: 3 fields, expected 4",
        ),
        (
            "src,dst,count,bytes\n0,1,0,9\n",
            "m.csv:2: 9 bytes in no message",
        ),
        ("\n# nothing\n", "no traffic"),
    ] {
        let err = Traffic::parse_csv(text, "m.csv").unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}

/// A random tree: a top switch over 1–3 sub-switches (some with a
/// maximum), each over 1–3 hosts of 1–4 processing elements, with random
/// rates.
fn any_topology() -> impl Strategy<Value = Topology> {
    let a_host = (1usize..5, 1.0f64..1000.0);
    let sub = (
        prop::collection::vec(a_host, 1..4),
        prop::option::of(10.0f64..1e4),
    );
    prop::collection::vec(sub, 1..4).prop_map(|subs| {
        let mut elements = vec![top(None)];
        for (s, (hosts, max)) in subs.into_iter().enumerate() {
            let parent = elements.len();
            let mut sw = host(&format!("s{s}"), 0, 0, Link::flat(50.0));
            sw.pe_link = None;
            sw.max = max;
            elements.push(sw);
            for (h, (pes, rate)) in hosts.into_iter().enumerate() {
                elements.push(host(&format!("s{s}h{h}"), parent, pes, Link::flat(rate)));
            }
        }
        Topology::new("any", elements).unwrap()
    })
}

fn any_case() -> impl Strategy<Value = (Topology, Traffic)> {
    any_topology().prop_flat_map(|t| {
        let pes = t.pe_count();
        let message = (0..pes, 0..pes, 1.0f64..1e5, 1u64..4);
        (1..=pes, prop::collection::vec(message, 0..40)).prop_map(move |(ranks, ms)| {
            let mut traffic = Traffic::new(ranks);
            for (a, b, bytes, count) in ms {
                traffic.add(a % ranks, b % ranks, bytes, count);
            }
            (t.clone(), traffic)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every mapper gives every rank its own processing element on any
    /// tree, and the search never ends worse than where it started.
    #[test]
    fn every_mapper_places_every_rank_once_and_the_search_never_loses((t, traffic) in any_case()) {
        let e = Estimator::new(&t);
        let g = greedy(&t, &traffic).unwrap();
        prop_assert_eq!(g.ranks(), traffic.ranks());
        let budget = Budget { evaluations: 300, ..Budget::default() };
        let s = search(&t, &traffic, &g, budget).unwrap();
        prop_assert!(e.cost(&traffic, &s) <= e.cost(&traffic, &g));
        let spread = random(&t, &traffic, 20, 7).unwrap();
        prop_assert!(spread.best.0 <= spread.median && spread.median <= spread.worst);
        prop_assert_eq!(spread.best.1.ranks(), traffic.ranks());
        let again = Topology::parse(&t.to_toml(), "t").unwrap();
        prop_assert_eq!(again, t.clone());
    }
}

/// The paper's cluster: five hosts on the top switch, three under a
/// sub-switch (every host two processing elements; uplink 10 B/s, host
/// links 100, memory 1000), in that order in the file.
fn two_subnets() -> Topology {
    let mut elements = vec![top(None)];
    for h in 0..5 {
        elements.push(host(&format!("h{h}"), 0, 2, Link::flat(100.0)));
    }
    let mut sub = host("sub", 0, 0, Link::flat(10.0));
    sub.pe_link = None;
    elements.push(sub);
    for h in 5..8 {
        elements.push(host(&format!("h{h}"), 6, 2, Link::flat(100.0)));
    }
    Topology::new("two", elements).unwrap()
}

/// The five hosts hanging one level higher are gathered under a virtual
/// switch beside the sub-switch: a tleaf of 2 × 5 × 2 whose 16 real leaves
/// the `sub` keeps; costs 1/10, 1/100, 1/1000 scaled to 100, 10, 1.
#[test]
fn the_scotch_target_levels_an_unequal_tree_and_keeps_its_real_leaves() {
    let (text, terminals) = scotch::target(&two_subnets());
    let leaves: Vec<String> = (0..6).chain(10..20).map(|l| l.to_string()).collect();
    assert_eq!(
        text,
        format!("sub\n16 {}\ntleaf 3 2 100 5 10 2 1\n", leaves.join(" "))
    );
    let expected: Vec<usize> = (10..16).chain(0..10).collect();
    assert_eq!(terminals, expected);
}

#[test]
fn the_scotch_graph_is_symmetric_with_integer_weights_and_no_self_loops() {
    let mut t = traffic(3, &[(0, 1, 100.0), (1, 0, 100.0), (1, 2, 50.0)]);
    t.add(2, 2, 1e9, 1);
    assert_eq!(
        scotch::graph(&t),
        "0\n3 4\n0 010\n1 1000000 1\n2 1000000 0 250000 2\n1 250000 1\n"
    );
}

#[test]
fn a_scotch_mapping_is_read_back_and_a_doubly_given_element_is_repaired() {
    let (m, moved) = scotch::read_mapping("3\n0 1\n1 1\n2 0\n", 3, &[5, 6], 8).unwrap();
    assert_eq!(m.pes(), [6, 0, 5]);
    assert_eq!(moved, 1);
    for (text, says) in [
        ("2\n0 1\n1 0\n", "2 vertices, the job has 3 ranks"),
        ("3\n0 1\n1 7\n2 0\n", "out of range"),
        ("3\n0 1\n", "cut short"),
        ("3\n0 x\n", "`x` is not a number"),
    ] {
        let err = scotch::read_mapping(text, 3, &[5, 6], 8)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn hwlocs_synthetic_line_is_read_without_its_memory_and_attributes() {
    let text = "# Ignoring 1 Bridge\nPackage:1 [NUMANode(memory=10429345792)] L3Cache:1(size=503316480) L2Cache:2(size=2097152) Core:1 PU:1\n";
    let levels = hwloc::parse_synthetic(text).unwrap();
    let kinds: Vec<(&str, usize)> = levels.iter().map(|l| (l.kind.as_str(), l.arity)).collect();
    assert_eq!(
        kinds,
        [
            ("Package", 1),
            ("L3Cache", 1),
            ("L2Cache", 2),
            ("Core", 1),
            ("PU", 1)
        ]
    );
    for (bad, says) in [
        ("Core:x PU:2", "not a whole number"),
        ("Core", "not TYPE:COUNT"),
        ("# only\n", "no synthetic"),
    ] {
        let err = hwloc::parse_synthetic(bad).unwrap_err();
        assert!(err.contains(says), "{err}");
    }
}

/// Two hosts of 8 processing elements become 2 packages × 2 cores × 2
/// PUs each; the rankfile still names the host, slots 0–7; the file reads
/// back equal; a host of another size is refused.
#[test]
fn hwlocs_levels_go_inside_every_host_and_files_still_name_the_host() {
    let t = star(2, 8, Link::flat(100.0), None);
    let levels = hwloc::parse_synthetic("Package:2 Core:2 L1Cache:1 PU:2").unwrap();
    let inside = hwloc::expand(&t, &levels).unwrap();
    assert_eq!(inside.pe_count(), 16);
    // top, 2 hosts, per host 2 packages and 4 cores.
    assert_eq!(inside.elements().len(), 3 + 2 * 6);
    let core = inside
        .elements()
        .iter()
        .find(|e| e.name == "h1.Package1.Core0")
        .unwrap();
    assert_eq!((core.pes, core.host.as_deref()), (2, Some("h1")));
    let m = linear(16, &inside).unwrap();
    let rankfile = m.rankfile(&inside);
    let expected: String = (0..16)
        .map(|r| format!("rank {r}=h{} slot={}\n", r / 8, r % 8))
        .collect();
    assert_eq!(rankfile, expected);
    assert!(m
        .hostfile(&inside)
        .lines()
        .all(|l| l.ends_with("switch=top")));
    assert_eq!(Topology::parse(&inside.to_toml(), "t").unwrap(), inside);
    // Ranks 0 and 1 on one core: the estimate inside a host is unchanged.
    let pattern = traffic(16, &[(0, 1, 100.0), (0, 8, 100.0)]);
    assert_eq!(
        Estimator::new(&t).cost(&pattern, &linear(16, &t).unwrap()),
        Estimator::new(&inside).cost(&pattern, &m)
    );
    let err = hwloc::expand(&star(2, 6, Link::flat(1.0), None), &levels)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has 6 processing elements, hwloc's levels hold 8"),
        "{err}"
    );
}

fn probe_options() -> probe::Options {
    probe::Options {
        lengths: vec![1, 1 << 20],
        stream_lengths: vec![1 << 20],
        max_pairs: 4,
    }
}

/// The element whose link is at the top of the path between two
/// processing elements, on `a`'s side (`None` when both share an element).
fn top_link(t: &Topology, a: usize, b: usize) -> Option<usize> {
    let mut last = None;
    t.walk(a, b, |hop| {
        if let topology::Hop::Up(e) = hop {
            last = Some(e);
        }
    });
    last
}

/// On the two subnets: a memory curve per host, host links paired with a
/// sibling (h4 and h7, left over, with one already measured), the
/// sub-switch's uplink through a pair that crosses it; the top switch's
/// six units make three pairs at once, the sub-switch's three make one and
/// get none; every link two streams each way, the uplink four.
#[test]
fn the_probe_measures_every_link_once_from_the_bottom_up() {
    use probe::{Mode, Port, Sets};
    let t = two_subnets();
    let plan = probe::plan(&t, &probe_options());
    let named = |e: usize| t.elements()[e].name.clone();
    let tables: Vec<(Vec<String>, (usize, usize))> = plan
        .iter()
        .filter_map(|c| match &c.sets {
            Sets::Tables(ports) => Some((
                ports
                    .iter()
                    .map(|p| match *p {
                        Port::Link(e) => named(e),
                        Port::Pe(e) => format!("{}/pe", named(e)),
                    })
                    .collect(),
                c.pairs[0],
            )),
            _ => None,
        })
        .collect();
    let ports: Vec<Vec<String>> = tables.iter().map(|t| t.0.clone()).collect();
    let want = [
        "h0/pe", "h1/pe", "h2/pe", "h3/pe", "h4/pe", "h5/pe", "h6/pe", "h7/pe", "h0 h1", "h2 h3",
        "h4", "sub", "h5 h6", "h7",
    ];
    let want: Vec<Vec<String>> = want
        .iter()
        .map(|w| w.split(' ').map(String::from).collect())
        .collect();
    assert_eq!(ports, want);
    for (ports, (a, b)) in &tables {
        match top_link(&t, *a, *b) {
            None => assert!(ports[0].ends_with("/pe"), "{ports:?}"),
            Some(e) => assert_eq!(named(e), ports[0], "pair {a}-{b}"),
        }
    }
    // Every table curve has its both-ways twin on the same pair.
    let twins = plan
        .iter()
        .filter(|c| c.mode == Mode::BothWays && c.sets == Sets::Report);
    assert_eq!(twins.count(), tables.len() + 1);
    let switch: Vec<(String, usize)> = plan
        .iter()
        .filter_map(|c| match c.sets {
            Sets::SwitchMax(e) => Some((named(e), c.pairs.len())),
            _ => None,
        })
        .collect();
    assert_eq!(switch, [("top".to_string(), 3)]);
    let maxima: Vec<(String, usize)> = plan
        .iter()
        .filter_map(|c| match c.sets {
            Sets::LinkMax(Port::Link(e), _) => Some((named(e), c.pairs.len())),
            _ => None,
        })
        .collect();
    assert_eq!(maxima.len(), 18);
    assert!(maxima.contains(&("sub".to_string(), 4)), "{maxima:?}");
    assert!(
        maxima.iter().filter(|m| m.0 != "sub").all(|m| m.1 == 2),
        "{maxima:?}"
    );
}

/// The tables come from the one-way medians, a link's maximum is the
/// higher of what it sustains alone and what streams got across it, and
/// a switch gets a maximum only when streams through it together got less
/// than 90% of what they get alone.
#[test]
fn the_probe_writes_tables_maxima_and_a_switch_max_only_where_it_limits() {
    use probe::{Point, Sets};
    let t = two_subnets();
    let plan = probe::plan(&t, &probe_options());
    let at = |rates: &[f64], lengths: &[u64]| -> Vec<Point> {
        lengths
            .iter()
            .zip(rates)
            .map(|(&bytes, &r)| Point {
                bytes,
                median: r,
                low: r,
                high: r,
            })
            .collect()
    };
    let measure = |switch: f64| -> Vec<Vec<Point>> {
        plan.iter()
            .map(|c| match c.sets {
                Sets::Tables(_) => at(&[50.0, 80.0], &c.lengths),
                Sets::LinkMax(..) => at(&[150.0], &c.lengths),
                Sets::SwitchMax(_) => at(&[switch], &c.lengths),
                Sets::Report => at(&[1.0, 1.0], &c.lengths),
            })
            .collect()
    };
    // Three streams that each get 80 alone: 200 is a limit, 230 is not.
    let (limited, notes) = probe::apply(&t, &plan, &measure(200.0)).unwrap();
    let h0 = &limited.elements()[1];
    let link = h0.link.as_ref().unwrap();
    assert_eq!(link.up.points(), &[(1, 50.0), (1 << 20, 80.0)]);
    assert_eq!((link.max_up, link.max_down), (150.0, 150.0));
    assert_eq!(h0.pe_link.as_ref().unwrap().max_up, 80.0);
    assert_eq!(limited.elements()[0].max, Some(200.0));
    assert!(notes.is_empty(), "{notes:?}");
    let (free, notes) = probe::apply(&t, &plan, &measure(230.0)).unwrap();
    assert_eq!(free.elements()[0].max, None);
    assert!(
        notes[0].starts_with("top carried 3 streams at once at 96%"),
        "{notes:?}"
    );
    // The measured topology round-trips through its file.
    assert_eq!(Topology::parse(&limited.to_toml(), "m").unwrap(), limited);
    // A plan and results that do not match are refused.
    assert!(probe::apply(&t, &plan, &measure(1.0)[1..]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On any tree: the pairs of a curve never share a rank, a link's
    /// table is set by one curve at most, and every link is measured that
    /// has a sibling or a processing element beside it.
    #[test]
    fn probe_curves_use_disjoint_pairs_and_measure_each_link_once(t in any_topology()) {
        let plan = probe::plan(&t, &probe_options());
        let mut set = Vec::new();
        for c in &plan {
            let mut ranks: Vec<usize> = c.pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
            let n = ranks.len();
            ranks.sort_unstable();
            ranks.dedup();
            prop_assert_eq!(ranks.len(), n, "{}", c.label);
            if let probe::Sets::Tables(ports) = &c.sets {
                set.extend(ports.iter().copied());
            }
        }
        let n = set.len();
        set.sort_by_key(|p| format!("{p:?}"));
        set.dedup();
        prop_assert_eq!(set.len(), n);
        for (e, element) in t.elements().iter().enumerate() {
            let Some(p) = element.parent else { continue };
            let beside = t.children(p).len() > 1 || t.elements()[p].pes > 0;
            prop_assert_eq!(set.contains(&probe::Port::Link(e)), beside, "{}", element.name);
        }
    }
}
