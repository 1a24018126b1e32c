//! Issue 16: the `hier` tree over the layout a communicator is given.
//! Every collective over `hier` passes `check` on local ranks laid out
//! over hosts and switches with `Communicator::set_layout`, and the trees
//! the communicator builds follow that layout.

use autocoll::check::{self, Case, Config};
use autocoll::tree::Hier;
use autocoll::{local, Collective, Implementation, Layout, Shape};

/// Host `hosts[r]` and switch `switch_of_host[hosts[r]]` ("" for none) for
/// every rank r.
fn layout(hosts: &[usize], switch_of_host: &[&str]) -> Layout {
    let names = hosts.iter().map(|h| format!("node{h}")).collect();
    let switches = hosts
        .iter()
        .map(|&h| Some(switch_of_host[h].to_string()).filter(|s| !s.is_empty()))
        .collect();
    Layout::new(names, switches).unwrap()
}

/// The layouts of the test: one host; 13 ranks on uneven hosts (4, 1, 3, 5)
/// dealt out of order; two nested switches as in `clusters/two-subnet.toml`
/// (5 + 3 hosts, 2 ranks each); every rank on its own host.
fn layouts() -> Vec<Layout> {
    let uneven = [0, 0, 2, 1, 3, 3, 3, 0, 2, 3, 0, 2, 3];
    let two_subnet: Vec<usize> = (0..16).map(|r| r / 2).collect();
    let subnets = [
        "sw0", "sw0", "sw0", "sw0", "sw0", "sw0/sw1", "sw0/sw1", "sw0/sw1",
    ];
    vec![
        layout(&[0; 5], &[""]),
        layout(&uneven, &["", "", "", ""]),
        layout(&two_subnet, &subnets),
        layout(&[0, 1, 2, 3, 4, 5, 6], &["a"; 7]),
    ]
}

fn hier(inner: Shape, outer: Shape, top: Shape) -> Shape {
    Shape::Hier(Box::new(Hier { inner, outer, top }))
}

fn cases(p: usize) -> Vec<Case> {
    let shapes = [
        Shape::Hier(Box::default()),
        hier(Shape::Flat, Shape::Chain, Shape::Knomial(3)),
        hier(Shape::BackwardChain, Shape::Kary(3), Shape::Flat),
    ];
    let mut out = Vec::new();
    for op in Collective::ALL.into_iter().filter(|op| op.over_trees()) {
        let segs: &[Option<usize>] = match op {
            Collective::Barrier => &[None],
            _ => &[None, Some(1024)],
        };
        let bytes: &[usize] = match op {
            Collective::Barrier => &[0],
            _ => &[0, 1, 4099, 65539],
        };
        let roots: Vec<usize> = match op.rooted() {
            true => vec![0, p / 2, p - 1],
            false => vec![0],
        };
        for shape in &shapes {
            for &seg in segs {
                let imp = Implementation::tree(op, shape.clone(), seg).unwrap();
                for &b in bytes {
                    for &root in &roots {
                        out.push(Case {
                            imp: imp.clone(),
                            bytes: b,
                            root,
                        });
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_collective_over_hier_passes_check_on_every_layout() {
    for layout in layouts() {
        let p = layout.size();
        let cases = cases(p);
        let failures = local::run(p, |mut comm| {
            comm.set_layout(layout.clone()).unwrap();
            let mine = check::run(&mut comm, &cases, &Config::default());
            check::collect(&mut comm, mine).unwrap()
        });
        assert_eq!(failures[0], [], "{p} ranks on {:?}", layout.hosts());
    }
}

#[test]
fn the_communicator_builds_hier_over_its_layout() {
    let layout = layouts().swap_remove(2);
    let on = layout.clone();
    let trees = local::run(16, move |mut comm| {
        assert_eq!(comm.layout().unwrap().host_count(), 1, "local: one host");
        comm.set_layout(on.clone()).unwrap();
        assert_eq!(comm.hosts()[15], "node7");
        let shape = Shape::Hier(Box::default());
        let tree = comm.tree(&shape, 11).unwrap();
        // A virtual-rank table that moves rank 13 ahead of 12 makes 13
        // host node6's leader.
        let mut table: Vec<usize> = (0..16).collect();
        table.swap(12, 13);
        comm.set_virtual_ranks(Some(table)).unwrap();
        let swapped = comm.tree(&shape, 11).unwrap();
        (tree, swapped)
    });
    let (tree, swapped) = &trees[0];
    for r in 0..16 {
        // Every rank's parent is on its host, but for one leader per host.
        let off_host = tree
            .parent(r)
            .is_none_or(|up| layout.host(up) != layout.host(r));
        let leads = [11, 0, 2, 4, 6, 8, 12, 14].contains(&r);
        assert_eq!(off_host, leads, "rank {r}: parent {:?}", tree.parent(r));
    }
    assert_eq!(tree.children(11), &[0, 14, 12, 10]);
    assert_eq!(swapped.children(11), &[0, 14, 13, 10]);
    assert_eq!(swapped.children(13), &[12]);
    // The same layout on every rank gives the same tree on every rank.
    assert!(trees.iter().all(|t| t == &trees[0]));
}

#[test]
fn a_layout_of_another_size_is_refused() {
    let errors = local::run(3, |mut comm| {
        comm.set_layout(Layout::one_host(4))
            .unwrap_err()
            .to_string()
    });
    assert!(errors[0].contains("a layout of 4 ranks for a communicator of 3"));
}
