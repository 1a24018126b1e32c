//! Circles in a directed graph: its strongly connected components of more
//! than one node (Tarjan's algorithm, iterative so that deep graphs do not
//! overflow the stack).

use std::collections::BTreeSet;

/// The strongly connected components of more than one node of the graph
/// on nodes `0..nodes` with `edges`, each sorted, in order of their
/// smallest node.
pub fn circles(nodes: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for &(from, to) in edges {
        next[from].push(to);
    }
    let mut tarjan = Tarjan {
        next,
        index: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for node in 0..nodes {
        if tarjan.index[node].is_none() {
            tarjan.visit(node);
        }
    }
    let mut found: Vec<Vec<usize>> = tarjan.found.into_iter().filter(|c| c.len() > 1).collect();
    for circle in &mut found {
        circle.sort_unstable();
    }
    found.sort();
    found
}

struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan {
    fn enter(&mut self, node: usize) {
        self.index[node] = Some(self.counter);
        self.low[node] = self.counter;
        self.counter += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
    }

    /// Visits `start` and everything reachable from it, the call stack kept
    /// as (node, next edge to follow).
    fn visit(&mut self, start: usize) {
        self.enter(start);
        let mut calls = vec![(start, 0)];
        while let Some(&mut (node, ref mut edge)) = calls.last_mut() {
            if let Some(&to) = self.next[node].get(*edge) {
                *edge += 1;
                match self.index[to] {
                    None => {
                        self.enter(to);
                        calls.push((to, 0));
                    }
                    Some(i) if self.on_stack[to] => self.low[node] = self.low[node].min(i),
                    Some(_) => {}
                }
                continue;
            }
            calls.pop();
            if let Some(&(caller, _)) = calls.last() {
                self.low[caller] = self.low[caller].min(self.low[node]);
            }
            if Some(self.low[node]) == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                self.found.push(component);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(list: &[(usize, usize)]) -> BTreeSet<(usize, usize)> {
        list.iter().copied().collect()
    }

    #[test]
    fn a_chain_has_no_circle() {
        assert!(circles(4, &edges(&[(0, 1), (1, 2), (2, 3), (0, 3)])).is_empty());
    }

    #[test]
    fn two_circles_are_found_apart() {
        let found = circles(6, &edges(&[(0, 1), (1, 2), (2, 0), (2, 3), (4, 5), (5, 4)]));
        assert_eq!(found, vec![vec![0, 1, 2], vec![4, 5]]);
    }
}
