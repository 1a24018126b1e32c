//! Properties of every mapper on random trees and patterns.

use super::*;

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
