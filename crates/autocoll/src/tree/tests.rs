use super::*;

mod file;
mod hier;

fn ceil_log(p: usize, k: usize) -> usize {
    let (mut d, mut reach) = (0, 1);
    while reach < p {
        reach *= k;
        d += 1;
    }
    d
}

fn floor_log2(p: usize) -> usize {
    (usize::BITS - 1 - p.leading_zeros()) as usize
}

/// Depth of a complete k-ary heap of p nodes: the level of node p-1.
fn heap_depth(p: usize, k: usize) -> usize {
    let (mut node, mut d) = (p - 1, 0);
    while node > 0 {
        node = (node - 1) / k;
        d += 1;
    }
    d
}

/// Most non-zero base-k digits among 0..p: the k-nomial tree's depth.
fn most_digits(p: usize, k: usize) -> usize {
    (0..p)
        .map(|mut v| {
            let mut n = 0;
            while v > 0 {
                n += usize::from(v % k != 0);
                v /= k;
            }
            n
        })
        .max()
        .unwrap_or(0)
}

fn random_user_tree(p: usize, seed: u64) -> Vec<usize> {
    let mut s = seed | 1;
    (0..p)
        .map(|pos| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if pos == 0 {
                0
            } else {
                (s % pos as u64) as usize
            }
        })
        .collect()
}

fn shapes(p: usize) -> Vec<Shape> {
    vec![
        Shape::Flat,
        Shape::Chain,
        Shape::BackwardChain,
        Shape::Binary,
        Shape::Kary(3),
        Shape::Kary(5),
        Shape::Binomial,
        Shape::Knomial(3),
        Shape::Knomial(4),
        Shape::User(random_user_tree(p, p as u64 * 7919)),
    ]
}

fn expected_depth(shape: &Shape, p: usize) -> Option<usize> {
    Some(match shape {
        Shape::Flat => usize::from(p > 1),
        Shape::Chain | Shape::BackwardChain => p - 1,
        Shape::Binary => floor_log2(p),
        Shape::Kary(k) => heap_depth(p, *k),
        Shape::Binomial => most_digits(p, 2),
        Shape::Knomial(k) => most_digits(p, *k),
        Shape::User(_) | Shape::Hier(_) => return None,
    })
}

fn check_structure(tree: &Tree, shape: &Shape, p: usize, root: usize) {
    let roots: Vec<usize> = (0..p).filter(|&r| tree.parent(r).is_none()).collect();
    assert_eq!(roots, vec![root], "{shape} p={p}: exactly one root");
    for r in 0..p {
        // Acyclic: every rank reaches the root in fewer than p hops.
        let (mut at, mut hops) = (r, 0);
        while let Some(up) = tree.parent(at) {
            at = up;
            hops += 1;
            assert!(hops < p, "{shape} p={p} root={root}: cycle through {r}");
        }
        assert_eq!(at, root);
        for &kid in tree.children(r) {
            assert_eq!(
                tree.parent(kid),
                Some(r),
                "{shape}: child list and parent agree"
            );
        }
    }
    let mut seen = tree.preorder().to_vec();
    seen.sort_unstable();
    assert_eq!(seen, (0..p).collect::<Vec<_>>(), "{shape} p={p}: spanning");
    for r in 0..p {
        // A subtree is the rank followed by its children's subtrees, in order.
        let mut expect = vec![r];
        for &kid in tree.children(r) {
            expect.extend_from_slice(tree.subtree(kid));
        }
        assert_eq!(
            tree.subtree(r),
            &expect[..],
            "{shape} p={p}: subtree of {r}"
        );
    }
}

#[test]
fn every_shape_every_size_every_root_is_a_spanning_tree_of_the_right_depth() {
    for p in 1..=64 {
        for shape in shapes(p) {
            for root in 0..p {
                let tree = Tree::build(&shape, p, root, None).unwrap();
                check_structure(&tree, &shape, p, root);
                if let Some(depth) = expected_depth(&shape, p) {
                    assert_eq!(tree.depth(), depth, "{shape} p={p} root={root}: depth");
                }
                if shape == Shape::Binomial {
                    assert_eq!(tree.rounds(), ceil_log(p, 2), "binomial p={p}: rounds");
                    assert!(tree.depth() <= ceil_log(p, 2));
                }
                if matches!(shape, Shape::Flat | Shape::Chain | Shape::BackwardChain) {
                    assert_eq!(tree.rounds(), p - 1, "{shape} p={p}: rounds");
                }
                if let Shape::Kary(k) = shape {
                    assert!(tree.fan_out() <= k, "{shape} p={p}: fan-out");
                }
            }
        }
    }
}

#[test]
fn binomial_matches_the_classic_layout() {
    let tree = Tree::build(&Shape::Binomial, 8, 0, None).unwrap();
    assert_eq!(tree.children(0), &[4, 2, 1]);
    assert_eq!(tree.children(4), &[6, 5]);
    assert_eq!(tree.children(6), &[7]);
    assert_eq!(tree.subtree(4), &[4, 6, 7, 5]);
    // A non-zero root rotates the ranks: position v is rank (root + v) mod P.
    let tree = Tree::build(&Shape::Binomial, 5, 3, None).unwrap();
    assert_eq!(tree.children(3), &[2, 0, 4]);
}

#[test]
fn chains_run_in_opposite_directions() {
    let fwd = Tree::build(&Shape::Chain, 4, 1, None).unwrap();
    assert_eq!(fwd.subtree(1), &[1, 2, 3, 0]);
    let back = Tree::build(&Shape::BackwardChain, 4, 1, None).unwrap();
    assert_eq!(back.subtree(1), &[1, 0, 3, 2]);
}

#[test]
fn virtual_rank_table_reorders_positions() {
    let table = [2, 0, 3, 1];
    let tree = Tree::build(&Shape::Chain, 4, 0, Some(&table)).unwrap();
    // Starting at the root's place in the table and wrapping around.
    assert_eq!(tree.subtree(0), &[0, 3, 1, 2]);
    for p in [1, 5, 13] {
        let table: Vec<usize> = (0..p).rev().collect();
        for shape in shapes(p) {
            for root in 0..p {
                let tree = Tree::build(&shape, p, root, Some(&table)).unwrap();
                check_structure(&tree, &shape, p, root);
            }
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    assert!(Tree::build(&Shape::Binomial, 0, 0, None).is_err());
    assert!(Tree::build(&Shape::Binomial, 4, 4, None).is_err());
    assert!(Tree::build(&Shape::Kary(1), 4, 0, None).is_err());
    assert!(Tree::build(&Shape::Knomial(0), 4, 0, None).is_err());
    assert!(Tree::build(&Shape::Chain, 3, 0, Some(&[0, 0, 1])).is_err());
    assert!(Tree::build(&Shape::Chain, 3, 0, Some(&[0, 1])).is_err());
    // Wrong length, root not 0, self-parent, and a cycle cut off from the root.
    assert!(Tree::build(&Shape::User(vec![0, 0]), 3, 0, None).is_err());
    assert!(Tree::build(&Shape::User(vec![1, 0, 0]), 3, 0, None).is_err());
    assert!(Tree::build(&Shape::User(vec![0, 1, 0]), 3, 0, None).is_err());
    let err = Tree::build(&Shape::User(vec![0, 2, 1]), 3, 0, None).unwrap_err();
    assert!(
        err.to_string().contains("does not reach every rank"),
        "{err}"
    );
}
