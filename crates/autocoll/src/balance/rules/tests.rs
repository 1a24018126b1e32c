//! The rules on simulated waits. A simulator computes every rank's wait in
//! a call from when each rank entered and the call's tree; the job below
//! runs the very per-rank state the protocol runs ([`OpState`]: periods,
//! reports, decisions applied on every rank), with reports that arrive at
//! once.

use super::*;
use crate::balance::op::OpState;
use crate::balance::Params;
use crate::select::lottery::Rng;

/// One send (µs as ns): what a rank adds for each child before the next.
const SEND: u64 = 10_000;
/// The pseudo-load of a late rank: 1 ms.
const LOAD: u64 = 1_000_000;
/// How much later than the others a balanced rank may enter, at random:
/// twice the default threshold, four sends. (At 60 µs one configuration
/// in ten makes a trial after the warm-up, and undoes it.)
const JITTER: u64 = 40_000;

/// Each rank's wait and time in the call when rank r enters at `enter[r]`
/// (ns): the root's first segment leaves when it enters; a rank's arrives
/// at max(its parent's arrival, its parent's enter) + (its index among
/// the parent's children + 1) × [`SEND`]; a rank leaves once it has sent
/// to every child.
fn simulate(tree: &Tree, enter: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let n = tree.size();
    let mut ready = vec![0u64; n];
    let mut wait = vec![0u64; n];
    ready[tree.root()] = enter[tree.root()];
    for &rank in tree.preorder() {
        for (i, &kid) in tree.children(rank).iter().enumerate() {
            let arrival = ready[rank] + (i as u64 + 1) * SEND;
            wait[kid] = arrival.saturating_sub(enter[kid]);
            ready[kid] = arrival.max(enter[kid]);
        }
    }
    let inside = (0..n)
        .map(|r| ready[r] + tree.children(r).len() as u64 * SEND - enter[r])
        .collect();
    (wait, inside)
}

/// A job of simulated ranks running balanced calls of one tree shape.
struct Job {
    shape: Shape,
    layout: Layout,
    root: usize,
    params: Params,
    ranks: Vec<OpState>,
    tree: Tree,
    calls: u64,
    /// Enter jitter, up to this many ns, when set.
    noise: Option<(Rng, u64)>,
    /// Every this many calls one comes from root + 1 instead (0: never).
    other_root_every: u64,
}

impl Job {
    fn new(shape: Shape, layout: Layout, root: usize, mode: Mode) -> Job {
        let params = Params {
            mode,
            ..Params::default()
        };
        let size = layout.size();
        let ranks = (0..size)
            .map(|r| {
                OpState::new(
                    crate::Collective::Bcast,
                    (0..size).collect(),
                    r,
                    size,
                    &params,
                )
            })
            .collect();
        let tree = Tree::build_in(&shape, &layout, root, None).unwrap();
        Job {
            shape,
            layout,
            root,
            params,
            ranks,
            tree,
            calls: 0,
            noise: None,
            other_root_every: 0,
        }
    }

    fn of(shape: Shape, size: usize, root: usize, mode: Mode) -> Job {
        Job::new(shape, Layout::one_host(size), root, mode)
    }

    fn table(&self) -> &[usize] {
        &self.ranks[0].table.ranks
    }

    fn status(&self) -> crate::balance::Status {
        self.ranks[0].status()
    }

    /// One balanced call with `late` ranks entering that much later; the
    /// time every rank spent inside it, summed.
    fn call(&mut self, late: &[(usize, u64)]) -> u64 {
        if self.ranks[0].due() {
            let msg = self.ranks[0].decide(&self.layout, &self.params).unwrap();
            for rank in &mut self.ranks {
                assert!(rank.due(), "every rank decides at the same call");
                rank.apply(&msg).unwrap();
            }
            let table = self.table().to_vec();
            self.tree = Tree::build_in(&self.shape, &self.layout, self.root, Some(&table)).unwrap();
        }
        let size = self.tree.size();
        let other = self.other_root_every > 0 && self.calls.is_multiple_of(self.other_root_every);
        let root = if other {
            (self.root + 1) % size
        } else {
            self.root
        };
        let elsewhere;
        let tree = match other {
            true => {
                let table = self.table().to_vec();
                elsewhere = Tree::build_in(&self.shape, &self.layout, root, Some(&table)).unwrap();
                &elsewhere
            }
            false => &self.tree,
        };
        let mut enter = vec![0u64; size];
        if let Some((rng, most)) = &mut self.noise {
            for e in &mut enter {
                *e = (rng.uniform() * *most as f64) as u64;
            }
        }
        for &(rank, by) in late {
            enter[rank] += by;
        }
        let (waits, inside) = simulate(tree, &enter);
        for (rank, &wait) in waits.iter().enumerate() {
            if let Some(report) = self.ranks[rank].called(wait, &self.shape, root) {
                self.ranks[0].hear(rank, report);
            }
        }
        for rank in &self.ranks[1..] {
            assert_eq!(&rank.table.ranks[..], self.table(), "tables agree");
        }
        self.calls += 1;
        inside.iter().sum()
    }

    /// Runs calls until `periods` more decisions have been applied, and the
    /// calls of the last period (up to the next decision).
    fn periods(&mut self, periods: u32, late: &[(usize, u64)]) {
        if self.tree.size() < 3 {
            return;
        }
        let target = self.ranks[0].decisions() + periods;
        while !(self.ranks[0].due() && self.ranks[0].decisions() >= target) {
            self.call(late);
        }
    }

    fn is_leaf(&self, rank: usize) -> bool {
        self.tree.children(rank).is_empty()
    }
}

/// The shapes laid over positions, with a k of each kind.
fn shapes() -> Vec<Shape> {
    vec![
        Shape::Flat,
        Shape::Chain,
        Shape::BackwardChain,
        Shape::Binary,
        Shape::Kary(3),
        Shape::Binomial,
        Shape::Knomial(3),
        Shape::Knomial(4),
    ]
}

/// Late ranks worth trying in `tree`: the root's first receiver (the
/// paper's), the last rank with children, and one between.
fn lates(tree: &Tree) -> Vec<usize> {
    let inner: Vec<usize> = (0..tree.size())
        .filter(|&r| r != tree.root() && !tree.children(r).is_empty())
        .collect();
    let mut out: Vec<usize> = tree
        .children(tree.root())
        .first()
        .copied()
        .into_iter()
        .collect();
    out.extend(inner.get(inner.len() / 2));
    out.extend(inner.last());
    out.sort_unstable();
    out.dedup();
    out.retain(|&r| !tree.children(r).is_empty());
    out
}

/// Runs a late rank's scenario: the periods it took to reach a leaf (the
/// first decision has nothing to go on), and checks that it stays there
/// and that the ranks spend less time in the broadcast than with the
/// identity table.
fn settle(mut job: Job, late: usize) -> u32 {
    let load = [(late, LOAD)];
    let identity_cost = {
        let mut enter = vec![0; job.tree.size()];
        enter[late] = LOAD;
        simulate(&job.tree, &enter).1.iter().sum::<u64>()
    };
    let mut periods = 0;
    while !job.is_leaf(late) {
        job.periods(1, &load);
        periods += 1;
        assert!(
            periods <= 12,
            "{} P={} root {}: rank {late} still has children after 12 periods, table {:?}",
            job.shape,
            job.tree.size(),
            job.root,
            job.table()
        );
    }
    job.periods(6, &load);
    assert!(
        job.is_leaf(late),
        "{}: rank {late} left its leaf, table {:?}",
        job.shape,
        job.table()
    );
    let cost = job.call(&load);
    assert!(
        cost < identity_cost,
        "{}: {cost} ns in the call, identity {identity_cost}",
        job.shape
    );
    periods
}

#[test]
fn the_late_rank_ends_at_a_leaf_for_every_shape_size_and_root() {
    for mode in [Mode::Swap, Mode::Sort] {
        let mut worst = 0;
        for shape in shapes() {
            for size in 2..=17 {
                for root in 0..size {
                    let identity = Tree::build(&shape, size, root, None).unwrap();
                    for late in lates(&identity) {
                        let job = Job::of(shape.clone(), size, root, mode);
                        worst = worst.max(settle(job, late));
                    }
                }
            }
        }
        // One period with nothing to go on, one to see the late rank, one
        // to see it again and move it down.
        assert!(worst <= 3, "{mode}: {worst} periods at worst");
    }
}

/// Layouts of `hosts[i]` ranks on host i (rank order), hosts `sw` of a
/// switch each when given.
fn layout(hosts: &[usize], switches: Option<&[&str]>) -> Layout {
    let mut names = Vec::new();
    let mut sws = Vec::new();
    for (h, &n) in hosts.iter().enumerate() {
        for _ in 0..n {
            names.push(format!("h{h}"));
            sws.push(switches.map(|s| s[h].to_string()));
        }
    }
    Layout::new(names, sws).unwrap()
}

#[test]
fn hier_late_ranks_end_at_a_leaf_and_a_sort_keeps_every_host_s_slots() {
    let layouts = [
        layout(&[3, 3], None),
        layout(&[2, 2, 2, 2], None),
        layout(&[4, 2, 3], None),
        layout(&[2, 3, 2, 2], Some(&["sw0", "sw0", "sw0/a", "sw0/a"])),
        layout(&[1, 2, 1, 3, 1], None),
    ];
    for (i, layout) in layouts.iter().enumerate() {
        let size = layout.size();
        let lone_host = (0..layout.host_count())
            .any(|h| (0..size).filter(|&r| layout.host(r) == h).count() == 1);
        for mode in [Mode::Swap, Mode::Sort] {
            // A sort keeps each host's slots: a host of one late rank keeps
            // its place (the swap moves it).
            if mode == Mode::Sort && lone_host {
                continue;
            }
            for root in 0..size {
                let shape = Shape::Hier(Box::default());
                let identity = Tree::build_in(&shape, layout, root, None).unwrap();
                for late in lates(&identity) {
                    let job = Job::new(shape.clone(), layout.clone(), root, mode);
                    let periods = settle(job, late);
                    assert!(
                        periods <= 4,
                        "layout {i} {mode} root {root} late {late}: {periods} periods"
                    );
                }
            }
        }
    }
}

#[test]
fn a_hier_sort_moves_ranks_only_within_their_host() {
    let layout = layout(&[3, 2, 3], None);
    let mut job = Job::new(Shape::Hier(Box::default()), layout.clone(), 0, Mode::Sort);
    let hosts_by_slot =
        |table: &[usize]| -> Vec<usize> { table.iter().map(|&r| layout.host(r)).collect() };
    let before = hosts_by_slot(job.table());
    job.periods(3, &[(3, LOAD)]);
    assert!(job.status().changes > 0, "the sort changed the table");
    assert_eq!(hosts_by_slot(job.table()), before);
}

#[test]
fn balanced_ranks_see_no_changes_after_the_warm_up() {
    for mode in [Mode::Swap, Mode::Sort] {
        for shape in shapes() {
            for size in [5, 8, 13, 16] {
                let mut job = Job::of(shape.clone(), size, 0, mode);
                job.noise = Some((Rng::new(size as u64), JITTER));
                job.periods(24, &[]);
                let warm = job.status();
                job.periods(40, &[]);
                let end = job.status();
                assert_eq!(
                    end.changes, warm.changes,
                    "{mode} {shape} P={size}: changes after the warm-up ({} in the warm-up)",
                    warm.changes
                );
                assert_eq!(
                    end.changes % 2,
                    0,
                    "{mode} {shape} P={size}: every trial undone"
                );
                assert!(
                    end.period > job.params.period,
                    "{mode} {shape} P={size}: the period grew"
                );
            }
        }
    }
}

#[test]
fn a_moved_load_is_followed_within_a_few_periods() {
    for mode in [Mode::Swap, Mode::Sort] {
        for shape in [
            Shape::Binomial,
            Shape::Binary,
            Shape::Knomial(4),
            Shape::Chain,
        ] {
            for size in [8, 11, 16] {
                let mut job = Job::of(shape.clone(), size, 0, mode);
                let first = job.tree.children(0)[0];
                job.periods(12, &[(first, LOAD)]);
                assert!(job.is_leaf(first));
                // The rank now at the position the first one left: early,
                // with the most descendants.
                let second = job.tree.children(0)[0];
                let mut periods = 0;
                while !job.is_leaf(second) {
                    job.periods(1, &[(second, LOAD)]);
                    periods += 1;
                    assert!(
                        periods <= 5,
                        "{mode} {shape} P={size}: rank {second} not moved in 5 periods"
                    );
                }
            }
        }
    }
}

#[test]
fn with_calls_from_several_roots_the_balancer_follows_the_most_frequent() {
    for every in [3, 4, 7] {
        let mut job = Job::of(Shape::Binomial, 12, 0, Mode::Swap);
        job.other_root_every = every;
        let late = job.tree.children(0)[0];
        job.periods(6, &[(late, LOAD)]);
        assert!(
            job.is_leaf(late),
            "one call in {every} from root 1: table {:?}",
            job.table()
        );
    }
}

#[test]
fn the_root_never_moves_and_a_restored_table_comes_first() {
    let mut job = Job::of(Shape::Binomial, 8, 3, Mode::Swap);
    job.ranks[0].restore(vec![0, 1, 2, 3, 7, 5, 6, 4]);
    job.call(&[]);
    assert_eq!(job.table(), [0, 1, 2, 3, 7, 5, 6, 4]);
    assert!(job.status().restored);
    // Load the root itself: nothing can help, nothing moves it.
    job.periods(10, &[(3, LOAD)]);
    assert_eq!(job.tree.root(), 3);
    assert!(job.table().contains(&3));
}

/// Rules over a chain of 4 ranks rooted at 0, with every rank heard.
struct Chain4 {
    rules: Rules,
    layout: Layout,
}

impl Chain4 {
    fn new() -> Chain4 {
        Chain4 {
            rules: Rules::new(4, Mode::Swap, Params::default().limits()),
            layout: Layout::one_host(4),
        }
    }

    fn decide(&mut self, waits: [Option<u64>; 4]) -> Decision {
        for (rank, w) in waits.into_iter().enumerate() {
            if let Some(w) = w {
                self.rules.hear(rank, w);
            }
        }
        let at = Situation {
            shape: &Shape::Chain,
            layout: &self.layout,
            root: 0,
            table: &[0, 1, 2, 3],
        };
        self.rules.decide(Some(&at)).unwrap()
    }

    fn heard(&mut self, waits: [u64; 4]) -> Decision {
        self.decide(waits.map(Some))
    }
}

#[test]
fn nothing_is_tried_before_every_rank_reported_and_a_late_rank_was_seen_twice() {
    let mut chain = Chain4::new();
    let late = [0, 0, 5_000_000, 6_000_000];
    assert_eq!(
        chain.decide([Some(0), Some(0), Some(5_000_000), None]),
        Decision::keep(Pace::Base)
    );
    assert_eq!(chain.heard(late), Decision::keep(Pace::Same), "seen once");
    let d = chain.heard(late);
    assert_eq!((d.kind, d.change), (Kind::Trial, Change::Swap(1, 3)));
}

#[test]
fn a_trial_is_kept_when_it_pays_and_undone_and_frozen_when_not() {
    let mut chain = Chain4::new();
    chain.heard([0, 0, 900_000, 950_000]);
    assert_eq!(chain.heard([0, 0, 900_000, 950_000]).kind, Kind::Trial);
    assert_eq!(
        chain.heard([0, 10_000, 20_000, 0]),
        Decision::keep(Pace::Base)
    );

    let mut chain = Chain4::new();
    chain.heard([0, 0, 200_000, 220_000]);
    let trial = chain.heard([0, 0, 200_000, 220_000]);
    assert_eq!(trial.change, Change::Swap(1, 3));
    // Within what the reports may be off by: not kept.
    let undo = chain.heard([0, 5_000, 180_000, 190_000]);
    assert_eq!((undo.kind, undo.change), (Kind::Revert, Change::Swap(1, 3)));
    // Rank 1 is frozen: the next late rank is rank 2, once seen twice.
    assert_eq!(chain.heard([0, 0, 0, 220_000]), Decision::keep(Pace::Same));
    assert_eq!(chain.heard([0, 0, 0, 220_000]).change, Change::Swap(2, 3));
}

/// One busy period (the total wait jumps, then comes back) does not lift
/// a freeze; a total that stays up, two decisions in a row, does.
#[test]
fn a_frozen_trial_waits_for_the_loads_to_move_not_for_one_busy_period() {
    let mut chain = Chain4::new();
    let usual = [0, 0, 200_000, 220_000];
    let busy = [0, 0, 400_000, 420_000];
    chain.heard(usual);
    assert_eq!(chain.heard(usual).change, Change::Swap(1, 3));
    assert_eq!(chain.heard([0, 5_000, 180_000, 190_000]).kind, Kind::Revert);
    assert_eq!(chain.heard(usual).change, Change::Keep, "rank 1 frozen");
    let spike = chain.heard(busy);
    assert_eq!((spike.change, spike.pace), (Change::Keep, Pace::Base));
    for _ in 0..3 {
        assert_eq!(chain.heard(usual).change, Change::Keep, "still frozen");
    }
    assert_eq!(chain.heard(busy).change, Change::Keep, "one rise");
    let d = chain.heard(busy);
    assert_eq!(
        (d.kind, d.change),
        (Kind::Trial, Change::Swap(1, 3)),
        "risen twice: tried again"
    );
}

#[test]
fn a_report_summarises_the_period_s_latest_calls_and_skips_small_moves() {
    let limits = Limits {
        threshold_ns: 20_000,
        relative: 0.25,
        gain: 0.1,
    };
    let mut r = Reporter::default();
    r.restart(true);
    assert_eq!(r.add(999_999, &limits), None, "the first call is skipped");
    assert_eq!(
        r.add(100_000, &limits),
        Some(100_000),
        "the first summary goes"
    );
    assert_eq!(
        r.add(110_000, &limits),
        None,
        "10 µs is below the threshold"
    );
    // One outlier does not move the median of three.
    assert_eq!(r.add(5_000_000, &limits), None);
    // 24 µs above 100 µs is above 20 µs but not above 25%.
    for _ in 0..8 {
        assert_eq!(r.add(124_000, &limits), None);
    }
    for _ in 0..4 {
        r.add(200_000, &limits);
    }
    assert_eq!(r.add(200_000, &limits), None, "reported once");
    r.restart(false);
    assert_eq!(r.add(50_000, &limits), Some(50_000));
}

#[test]
fn bad_decisions_are_refused_naming_what_is_wrong() {
    let params = Params::default();
    let mut state = OpState::new(crate::Collective::Bcast, (0..4).collect(), 1, 4, &params);
    let msg = |change, period| crate::balance::op::Message {
        kind: Kind::Trial,
        change,
        period,
        focus: None,
    };
    let cases = [
        (msg(Change::Swap(1, 1), 8), "swap of ranks 1 and 1"),
        (msg(Change::Swap(1, 9), 8), "swap of ranks 1 and 9"),
        (msg(Change::Table(vec![0, 1, 1, 2]), 8), "not a permutation"),
        (msg(Change::Table(vec![0, 1]), 8), "2 entries for 4 ranks"),
        (msg(Change::Keep, 0), "period of 0"),
    ];
    for (bad, says) in cases {
        let err = state.apply(&bad).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(state.status().changes, 0);
}
