//! The probe's plan and what it writes into a topology.

use super::*;

fn probe_options() -> crate::probe::Options {
    crate::probe::Options {
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
    use crate::probe::{Mode, Port, Sets};
    let t = two_subnets();
    let plan = crate::probe::plan(&t, &probe_options());
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
    use crate::probe::{Point, Sets};
    let t = two_subnets();
    let plan = crate::probe::plan(&t, &probe_options());
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
    let (limited, notes) = crate::probe::apply(&t, &plan, &measure(200.0)).unwrap();
    let h0 = &limited.elements()[1];
    let link = h0.link.as_ref().unwrap();
    assert_eq!(link.up.points(), &[(1, 50.0), (1 << 20, 80.0)]);
    assert_eq!((link.max_up, link.max_down), (150.0, 150.0));
    assert_eq!(h0.pe_link.as_ref().unwrap().max_up, 80.0);
    assert_eq!(limited.elements()[0].max, Some(200.0));
    assert!(notes.is_empty(), "{notes:?}");
    let (free, notes) = crate::probe::apply(&t, &plan, &measure(230.0)).unwrap();
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
        let plan = crate::probe::plan(&t, &probe_options());
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
