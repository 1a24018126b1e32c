//! The `hier` shape over layouts of ranks on hosts and switches.

use proptest::prelude::*;

use super::check_structure;
use crate::layout::Layout;
use crate::tree::{Hier, Shape, Tree};

/// The level shapes a `hier` tree may use.
fn level_shapes() -> Vec<Shape> {
    vec![
        Shape::Flat,
        Shape::Chain,
        Shape::BackwardChain,
        Shape::Binary,
        Shape::Kary(3),
        Shape::Binomial,
        Shape::Knomial(3),
    ]
}

fn hier(inner: Shape, outer: Shape, top: Shape) -> Shape {
    Shape::Hier(Box::new(Hier { inner, outer, top }))
}

/// A layout from a host number and a switch path ("" for none) per rank.
fn layout(hosts: &[usize], switch_of_host: &[&str]) -> Layout {
    let names = hosts.iter().map(|h| format!("h{h}")).collect();
    let switches = hosts
        .iter()
        .map(|&h| Some(switch_of_host[h].to_string()).filter(|s| !s.is_empty()))
        .collect();
    Layout::new(names, switches).unwrap()
}

/// True when `inner` (a switch path) is `outer` or lies below it.
fn under(path: Option<&str>, outer: &str) -> bool {
    path.is_some_and(|p| p == outer || p.starts_with(&format!("{outer}/")))
}

/// Every rank in `group` but one has its parent in `group`: the group is
/// one subtree, entered at its leader; returns that leader.
fn entered_once(tree: &Tree, group: &[usize], what: &str) -> usize {
    let entries: Vec<usize> = group
        .iter()
        .copied()
        .filter(|&r| tree.parent(r).is_none_or(|up| !group.contains(&up)))
        .collect();
    assert_eq!(entries.len(), 1, "{what} {group:?} entered at {entries:?}");
    entries[0]
}

/// The ranks in the order they take places: the table rotated to the root.
fn order(p: usize, root: usize, table: Option<&[usize]>) -> Vec<usize> {
    let identity: Vec<usize> = (0..p).collect();
    let table = table.unwrap_or(&identity);
    let at = table.iter().position(|&r| r == root).unwrap();
    (0..p).map(|i| table[(at + i) % p]).collect()
}

/// Everything a `hier` tree must be over `layout`, rooted at `root`.
fn check_hier(shape: &Shape, layout: &Layout, root: usize, table: Option<&[usize]>) {
    let p = layout.size();
    let tree = Tree::build_in(shape, layout, root, table).unwrap();
    check_structure(&tree, shape, p, root);
    let order = order(p, root, table);
    let what = format!("{shape} p={p} root={root} table={table:?}");
    // Each host's ranks hang under their leader, the host's first rank in
    // the table's order; the root leads its host.
    for host in 0..layout.host_count() {
        let ranks: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&r| layout.host(r) == host)
            .collect();
        let leader = entered_once(&tree, &ranks, &format!("{what}: host"));
        assert_eq!(leader, ranks[0], "{what}: host {host}'s leader");
    }
    // So do the ranks under each switch, and the ranks of the hosts hung
    // directly on one switch; the root leads every group it is in.
    let switches: Vec<Option<String>> = layout.switches();
    for id in 0..layout.switch_count() {
        let path = layout.switch_path(id);
        let mut prefix = String::new();
        for part in path.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let below: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&r| under(switches[r].as_deref(), &prefix))
                .collect();
            let leader = entered_once(&tree, &below, &format!("{what}: switch {prefix}"));
            assert_eq!(leader, below[0], "{what}: switch {prefix}'s leader");
        }
        let direct: Vec<usize> = (0..p).filter(|&r| layout.switch(r) == Some(id)).collect();
        entered_once(&tree, &direct, &format!("{what}: hosts on {path}"));
    }
    let unswitched: Vec<usize> = (0..p).filter(|&r| layout.switch(r).is_none()).collect();
    if !unswitched.is_empty() {
        entered_once(&tree, &unswitched, &format!("{what}: hosts on no switch"));
    }
}

/// Switch paths a host may hang on ("" for none).
const SWITCHES: [&str; 6] = ["", "a", "b", "a/c", "a/c/d", "b/e"];

/// A random layout of 1..=40 ranks: each rank on one of up to P hosts,
/// each host on one of [`SWITCHES`] (or all on none), with a random
/// virtual-rank table half of the time.
fn any_layout() -> impl Strategy<Value = (Layout, Option<Vec<usize>>, Shape)> {
    (1usize..=40).prop_flat_map(|p| {
        let hosts = proptest::collection::vec(0..p, p);
        let switches = prop_oneof![
            Just(vec![0usize; p]),
            proptest::collection::vec(0..SWITCHES.len(), p),
        ];
        let table = prop_oneof![
            Just(None),
            Just((0..p).collect::<Vec<_>>())
                .prop_shuffle()
                .prop_map(Some),
        ];
        let level = || proptest::sample::select(level_shapes());
        (hosts, switches, table, level(), level(), level()).prop_map(
            |(hosts, switches, table, inner, outer, top)| {
                let paths: Vec<&str> = switches.iter().map(|&s| SWITCHES[s]).collect();
                (layout(&hosts, &paths), table, hier(inner, outer, top))
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Spanning, acyclic, rooted at the root, each host's and each
    /// switch's ranks one subtree under their leader, for every root.
    #[test]
    fn hier_is_a_spanning_tree_that_follows_the_layout((layout, table, shape) in any_layout()) {
        for root in 0..layout.size() {
            check_hier(&shape, &layout, root, table.as_deref());
        }
    }
}

/// The layouts people meet, for every P up to 40 and every root: one
/// host, a host per rank, blocks of 2, 3 and 5 ranks per host (the last
/// one short), ranks dealt round-robin over 3 hosts, and the blocks under
/// two switches one of which hangs under the other.
#[test]
fn hier_follows_the_usual_layouts_at_every_size_and_root() {
    let shape = hier(Shape::Flat, Shape::Binomial, Shape::Chain);
    for p in 1..=40usize {
        let mut layouts = vec![
            layout(&vec![0; p], &[""]),
            layout(&(0..p).collect::<Vec<_>>(), &vec![""; p]),
            layout(&(0..p).map(|r| r % 3).collect::<Vec<_>>(), &["", "", ""]),
        ];
        for per_host in [2, 3, 5] {
            let hosts: Vec<usize> = (0..p).map(|r| r / per_host).collect();
            let n = hosts[p - 1] + 1;
            layouts.push(layout(&hosts, &vec![""; n]));
            let nested: Vec<&str> = (0..n)
                .map(|h| if h < n.div_ceil(2) { "sw0" } else { "sw0/sw1" })
                .collect();
            layouts.push(layout(&hosts, &nested));
        }
        for l in &layouts {
            for root in 0..p {
                check_hier(&shape, l, root, None);
            }
        }
    }
}

#[test]
fn hier_on_one_host_is_its_inner_shape() {
    for p in 1..=13 {
        let table: Vec<usize> = (0..p).rev().collect();
        for inner in level_shapes() {
            let shape = hier(inner.clone(), Shape::Flat, Shape::Flat);
            for root in 0..p {
                for t in [None, Some(&table[..])] {
                    assert_eq!(
                        Tree::build(&shape, p, root, t).unwrap(),
                        Tree::build(&inner, p, root, t).unwrap(),
                        "{inner} p={p} root={root} table={t:?}"
                    );
                }
            }
        }
    }
}

/// `clusters/two-subnet.toml`: h0–h4 on sw0, h5–h7 on sw1 under sw0, two
/// ranks a host (rank r on host r/2).
fn two_subnet() -> Layout {
    let hosts: Vec<usize> = (0..16).map(|r| r / 2).collect();
    let sw = [
        "sw0", "sw0", "sw0", "sw0", "sw0", "sw0/sw1", "sw0/sw1", "sw0/sw1",
    ];
    layout(&hosts, &sw)
}

#[test]
fn hier_on_two_subnets_crosses_the_uplink_once() {
    let shape = hier(Shape::Flat, Shape::Binomial, Shape::Binomial);
    let tree = Tree::build_in(&shape, &two_subnet(), 0, None).unwrap();
    // The root serves the other subnet's leader first, then its subnet's
    // host leaders (binomial over 5), then its host's other rank.
    assert_eq!(tree.children(0), &[10, 8, 4, 2, 1]);
    assert_eq!(tree.children(4), &[6, 5]);
    assert_eq!(tree.children(10), &[14, 12, 11]);
    assert_eq!(tree.children(12), &[13]);
    // A root on sw1 leads its host, sw1 and sw0.
    let tree = Tree::build_in(&shape, &two_subnet(), 11, None).unwrap();
    assert_eq!(tree.children(11), &[0, 14, 12, 10]);
    assert_eq!(tree.parent(10), Some(11));
    let crossings = (0..16)
        .filter(|&r| tree.parent(r).is_some_and(|up| (up < 10) != (r < 10)))
        .count();
    assert_eq!(crossings, 1, "one message each way over the uplink");
}

#[test]
fn the_table_picks_the_leaders_and_their_order() {
    // Ranks 0–3 on host a, 4–7 on host b; the table puts rank 6 before 4
    // and host b's ranks before host a's.
    let hosts = vec![0, 0, 0, 0, 1, 1, 1, 1];
    let l = layout(&hosts, &["", ""]);
    let table = [6, 5, 4, 7, 2, 3, 0, 1];
    let shape = hier(Shape::Chain, Shape::Flat, Shape::Flat);
    let tree = Tree::build_in(&shape, &l, 0, Some(&table)).unwrap();
    // From the root in the table's order: 0 1 6 5 4 7 2 3.
    assert_eq!(tree.children(0), &[6, 1]);
    assert_eq!(tree.subtree(6), &[6, 5, 4, 7]);
    assert_eq!(tree.subtree(1), &[1, 2, 3]);
}

#[test]
fn bad_levels_are_refused() {
    let l = layout(&[0, 1], &["", ""]);
    for bad in [
        hier(Shape::User(vec![0, 0]), Shape::Flat, Shape::Flat),
        hier(Shape::Flat, Shape::Kary(1), Shape::Flat),
        hier(
            Shape::Flat,
            Shape::Flat,
            hier(Shape::Flat, Shape::Flat, Shape::Flat),
        ),
    ] {
        let err = Tree::build_in(&bad, &l, 0, None).unwrap_err().to_string();
        assert!(err.contains("hier's"), "{err}");
    }
    assert!(Tree::build_in(&hier(Shape::Flat, Shape::Flat, Shape::Flat), &l, 2, None).is_err());
}
