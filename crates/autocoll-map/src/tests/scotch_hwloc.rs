//! Scotch's target and graph files, and hwloc's synthetic line.

use super::*;

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
