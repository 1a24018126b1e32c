//! Trees read from text: one parent rank per rank.

use super::random_user_tree;
use crate::tree::{ParentList, Tree};

#[test]
fn the_documented_example_is_the_tree_it_says() {
    let text = "# two hosts of four\n-  # root\n0\n0\n0\n0\n4\n4\n4\n";
    let list = ParentList::parse(text, "t.txt").unwrap();
    assert_eq!((list.size(), list.root()), (8, 0));
    let tree = Tree::build(&list.shape(), 8, 0, None).unwrap();
    assert_eq!(tree.children(0), &[1, 2, 3, 4]);
    assert_eq!(tree.children(4), &[5, 6, 7]);
}

/// Any tree, rooted anywhere, written out and read back, is built as
/// written when the call's root is the file's.
#[test]
fn a_tree_read_back_is_built_as_written_at_its_root() {
    for p in 1..=24 {
        for root in [0, p / 3, p - 1] {
            // A random tree over positions, its position v given to rank
            // (root + v) mod p.
            let by_pos = random_user_tree(p, 31 * p as u64 + root as u64);
            let rank = |pos: usize| (root + pos) % p;
            let mut parent = vec![None; p];
            for (pos, &up) in by_pos.iter().enumerate().skip(1) {
                parent[rank(pos)] = Some(rank(up));
            }
            let text: String = parent
                .iter()
                .enumerate()
                .map(|(r, up)| match up {
                    Some(u) => format!("{u}\n"),
                    // Either spelling of the root.
                    None if r % 2 == 0 => "-\n".to_string(),
                    None => format!("{r}  # me\n"),
                })
                .collect();
            let list = ParentList::parse(&text, "t").unwrap();
            assert_eq!(list.root(), root);
            let tree = Tree::build(&list.shape(), p, root, None).unwrap();
            for (r, &up) in parent.iter().enumerate() {
                assert_eq!(tree.parent(r), up, "p={p} root={root} rank {r}");
                assert_eq!(list.parent(r), up);
            }
        }
    }
}

#[test]
fn a_file_that_is_not_a_tree_is_refused_naming_the_line() {
    let err = |text: &str| ParentList::parse(text, "t.txt").unwrap_err().to_string();
    assert_eq!(
        err("-\n0\n\n# gap\nx\n"),
        "t.txt:5: `x` is not rank 2's parent (a rank, or - for the root)"
    );
    assert_eq!(
        err("-\n7\n"),
        "t.txt:2: rank 1's parent 7 is not a rank of this 2-rank tree"
    );
    assert_eq!(
        err("-\n0\n-\n"),
        "t.txt:3: rank 2 is a second root (rank 0, line 1, is the first)"
    );
    assert!(err("1\n0\n").contains("t.txt: no rank is the root"));
    assert_eq!(
        err("-\n2\n3\n1\n"),
        "t.txt:2: rank 1's parents go round in a circle (1 -> 2 -> 3 -> 1) and never reach the root"
    );
    assert!(err("# nothing\n\n").contains("t.txt: names no rank"));
}
