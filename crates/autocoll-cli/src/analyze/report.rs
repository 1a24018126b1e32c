//! The terminal report: per group a few lines of findings and short
//! tables. Ranks come as classes (one row per class, its representative
//! named) and tree nodes as the representatives' and the root's, so that a
//! 64-rank run reads in a screen; `--ranks` gives rows per rank.

use autocoll_analyze::compare::Comparison;
use autocoll_analyze::result::{Factors, GroupReport, NodeReport, Report, Summary};
use autocoll_analyze::{ranges, us};

use crate::failure::Failure;
use crate::out::say;

/// `--ranks`: `None` without it, every rank for `all`, else the list.
pub fn ranks_of(text: Option<&str>, size: usize) -> Result<Option<Vec<usize>>, Failure> {
    let Some(text) = text else { return Ok(None) };
    if text == "all" {
        return Ok(Some((0..size).collect()));
    }
    let list = crate::args::split("--ranks", text)?
        .iter()
        .map(|s| match s.parse::<usize>() {
            Ok(r) if r < size => Ok(r),
            _ => Err(Failure::Usage(format!(
                "--ranks: `{s}` is not a rank of this {size}-rank run"
            ))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(list))
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn summary_line(s: &Summary) -> String {
    format!(
        "mean {} µs  sd {}  p10 {}  p50 {}  p90 {}  p99 {}  max {}",
        us(s.mean_s),
        us(s.sd_s),
        us(s.p10_s),
        us(s.p50_s),
        us(s.p90_s),
        us(s.p99_s),
        us(s.max_s)
    )
}

/// Prints the report; `ranks` (from `--ranks`) asks for per-rank rows.
pub fn print(r: &Report, ranks: Option<&[usize]>) {
    let clock = match (r.clock.alignment, r.clock.uncertainty_s) {
        ("estimated", Some(u)) => format!(
            "{} clocks, aligned with the recorded offset estimates (± {} µs)",
            r.clock.clocks,
            us(u)
        ),
        ("none", _) => format!(
            "{} clocks and no offset estimate for rank(s) {}: nothing that compares ranks' times is shown",
            r.clock.clocks,
            ranges(&r.clock.unaligned_ranks)
        ),
        _ => "one clock shared by all ranks".into(),
    };
    say!(
        "run {}: {} ranks on {} host(s), {}; {clock}",
        r.run,
        r.ranks,
        r.hosts.len(),
        r.transport
    );
    let left_out = match r.left_out_calls {
        0 => String::new(),
        n => format!(" ({n} left out: not in every file)"),
    };
    say!(
        "{} calls analysed in {} group(s){left_out}",
        r.calls,
        r.groups.len()
    );
    for g in &r.groups {
        group(g, ranks);
    }
}

fn group(g: &GroupReport, ranks: Option<&[usize]>) {
    let size = autocoll::select::format_bytes(g.bytes as usize);
    let root = if g.op == "bcast" || g.op == "reduce" || g.op == "scatter" || g.op == "gather" {
        format!(", root {}", g.root)
    } else {
        String::new()
    };
    say!();
    say!(
        "== {} ({} bytes per rank{root}): {} calls ({}..={}) ==",
        g.imp,
        size,
        g.calls,
        g.first_call,
        g.last_call
    );
    say!("call time        {}", summary_line(&g.call_time));
    findings(g);
    classes(g);
    if let Some(b) = &g.cost_breakdown {
        say!(
            "cost breakdown: {} of rank {} (class {}), {} µs",
            b.basis,
            b.rank,
            b.class,
            us(b.total_s)
        );
        for p in &b.stages {
            say!(
                "  {:<28} {:>9} µs  {:>4}",
                p.stage,
                us(p.mean_s),
                pct(p.share)
            );
        }
        say!("  → {}", b.sentence);
    }
    nodes(g, ranks);
    links(g);
    critical(g);
    if let Some(list) = ranks {
        rank_rows(g, list);
    }
}

fn findings(g: &GroupReport) {
    if let (Some(p), Some(m)) = (&g.arrival_pattern, &g.message_time) {
        let f = |x: &Option<Factors>| {
            x.as_ref().map_or("-".into(), |f| {
                format!("{:.2} messages (p90 {:.2})", f.mean, f.p90)
            })
        };
        say!(
            "arrival pattern  imbalance factor average-case {}, worst-case {}; one message = {} µs ({})",
            f(&p.average_case_factor),
            f(&p.worst_case_factor),
            us(m.time_s),
            m.from
        );
    } else if let Some(p) = &g.arrival_pattern {
        say!(
            "arrival pattern  average-case {} µs, worst-case {} µs (no message time to scale by)",
            us(p.average_case.mean_s),
            us(p.worst_case.mean_s)
        );
    }
    if let Some(w) = &g.wait_states {
        let completion = match (w.completion_pattern, w.completion_total_s) {
            (Some(name), Some(t)) => format!("; {name} {} ms", ms(t)),
            _ => String::new(),
        };
        let top: Vec<String> = {
            let mut by = w.by_rank.clone();
            by.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
            by.iter()
                .take(3)
                .map(|r| format!("rank {} {} µs/call", r.rank, us(r.wait.mean_s)))
                .collect()
        };
        say!(
            "wait states      {} {} ms in all, {} of the time in calls ({} clocks){completion}; most: {}",
            w.pattern,
            ms(w.total_s),
            pct(w.share_of_time),
            w.clock,
            top.join(", ")
        );
    }
    if let Some(i) = &g.load_imbalance {
        say!("load imbalance   {}", i.sentence);
    }
}

fn ms(s: f64) -> String {
    match s * 1e3 {
        m if m < 10.0 => format!("{m:.3}"),
        m if m < 1000.0 => format!("{m:.1}"),
        m => format!("{m:.0}"),
    }
}

fn classes(g: &GroupReport) {
    if g.classes.is_empty() {
        return;
    }
    let names: Vec<&str> = g.classes[0].profile.iter().map(|p| p.stage).collect();
    say!("classes of ranks (alike stage by stage; mean µs per call)");
    let mut head = format!("  {:<5} {:>4} {:>5}", "class", "rep", "ranks");
    for n in &names {
        head.push_str(&format!(" {:>w$}", n, w = n.len().max(7)));
    }
    say!("{head}  members");
    for c in &g.classes {
        let mut row = format!(
            "  {:<5} {:>4} {:>5}",
            c.name,
            c.representative,
            c.ranks.len()
        );
        for (p, n) in c.profile.iter().zip(&names) {
            row.push_str(&format!(
                " {:>w$}",
                p.mean_s.map_or("-".into(), us),
                w = n.len().max(7)
            ));
        }
        say!("{row}  {}", ranges(&c.ranks));
    }
}

/// The nodes to show: every listed rank's, else the root's and the class
/// representatives'.
fn shown_nodes<'a>(g: &'a GroupReport, ranks: Option<&[usize]>) -> Vec<&'a NodeReport> {
    let wanted = |r: usize| match ranks {
        Some(list) => list.contains(&r),
        None => r == g.root || g.classes.iter().any(|c| c.representative == r),
    };
    g.nodes.iter().filter(|n| wanted(n.rank)).collect()
}

fn nodes(g: &GroupReport, ranks: Option<&[usize]>) {
    let shown = shown_nodes(g, ranks);
    if shown.is_empty() {
        return;
    }
    let which = if ranks.is_some() {
        "listed ranks"
    } else {
        "the root and class representatives; --ranks for others"
    };
    say!("tree nodes ({which}; µs, mean)");
    say!(
        "  {:<5} {:<14} {:>10} {:>10}  {}",
        "node",
        "children",
        "down lat",
        "up lat",
        "last arrival share / arrival wait µs, by contributor (own = its entry)"
    );
    for n in shown {
        let contributors: Vec<String> = n
            .contributors
            .iter()
            .map(|c| {
                let who = if c.own {
                    "own".to_string()
                } else {
                    c.rank.to_string()
                };
                format!("{who} {}/{}", pct(c.last_share), us(c.arrival_wait.mean_s))
            })
            .collect();
        say!(
            "  {:<5} {:<14} {:>10} {:>10}  {}",
            n.rank,
            ranges(&sorted(&n.children)),
            n.down_latency.as_ref().map_or("-".into(), |s| us(s.mean_s)),
            n.up_latency.as_ref().map_or("-".into(), |s| us(s.mean_s)),
            contributors.join("  ")
        );
        let departures: Vec<String> = n
            .departures
            .iter()
            .map(|d| {
                format!(
                    "{} {} µs (first in {})",
                    d.rank,
                    us(d.departure_wait.mean_s),
                    share_first(&d.departure_order)
                )
            })
            .collect();
        if !departures.is_empty() {
            say!("  {:<5} departure wait: {}", "", departures.join(", "));
        }
    }
}

fn sorted(v: &[usize]) -> Vec<usize> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v
}

fn share_first(order: &[u64]) -> String {
    let total: u64 = order.iter().sum();
    pct(order.first().copied().unwrap_or(0) as f64 / total.max(1) as f64)
}

fn links(g: &GroupReport) {
    let mut two_way: Vec<_> = g
        .links
        .iter()
        .filter_map(|l| l.two_way_latency.as_ref().map(|s| (l, s)))
        .collect();
    if two_way.is_empty() {
        return;
    }
    two_way.sort_by(|a, b| b.1.p50_s.total_cmp(&a.1.p50_s));
    let shown = two_way.len().min(5);
    say!(
        "links: two-way latency (t4 − t1) − (t3 − t2), no common clock needed; the {shown} slowest of {} by median",
        two_way.len()
    );
    say!("       (it counts the time a message waited for a parent busy with other children: compare a node's children)");
    for (l, s) in two_way.iter().take(shown) {
        say!("  {:>4} – {:<4} {}", l.a, l.b, summary_line(s));
    }
}

fn critical(g: &GroupReport) {
    let Some(c) = &g.critical_path else { return };
    let ranks: Vec<String> = c
        .ranks
        .iter()
        .take(6)
        .map(|r| format!("{} ({})", r.rank, pct(r.share)))
        .collect();
    let starts = c
        .ranks
        .iter()
        .max_by(|a, b| a.start_share.total_cmp(&b.start_share))
        .map(|r| {
            format!(
                "; it starts at rank {}'s entry in {} of calls",
                r.rank,
                pct(r.start_share)
            )
        })
        .unwrap_or_default();
    say!(
        "critical path    mean {} µs; through ranks {}{starts}",
        us(c.mean_length_s),
        ranks.join(", ")
    );
    let stages: Vec<String> = c
        .stages
        .iter()
        .take(5)
        .map(|s| format!("{} @{} {}", s.step.name(), s.rank, pct(s.share)))
        .collect();
    say!("                 its time: {}", stages.join(", "));
}

fn rank_rows(g: &GroupReport, list: &[usize]) {
    say!("ranks (µs, mean per call)");
    say!(
        "  {:<5} {:<10} {:<5} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "rank",
        "host",
        "class",
        "in call",
        "receive",
        "combine",
        "send",
        "finish",
        "wait"
    );
    for r in g.ranks.iter().filter(|r| list.contains(&r.rank)) {
        let wait = g
            .wait_states
            .as_ref()
            .and_then(|w| w.by_rank.iter().find(|x| x.rank == r.rank))
            .map_or("-".into(), |x| us(x.wait.mean_s));
        say!(
            "  {:<5} {:<10} {:<5} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            r.rank,
            r.host,
            r.class,
            us(r.time_in_call.mean_s),
            us(r.stages.receive.mean_s),
            us(r.stages.combine.mean_s),
            us(r.stages.send.mean_s),
            us(r.stages.finish.mean_s),
            wait
        );
    }
}

/// Prints each comparison's table.
pub fn print_comparisons(comparisons: &[Comparison]) {
    for c in comparisons {
        say!();
        say!(
            "== compare rank {}: {} ({}) against {} ({}), {} bytes ==",
            c.rank,
            c.this.imp,
            c.dirs.0,
            c.other.imp,
            c.dirs.1,
            c.this.bytes
        );
        say!(
            "  {:<16} {:>12} {:>12} {:>12}",
            "stage (µs)",
            "this",
            "other",
            "other − this"
        );
        let (mut ta, mut tb) = (0.0, 0.0);
        for (name, a, b) in &c.rows {
            say!(
                "  {:<16} {:>12} {:>12} {:>12}",
                name,
                us(a * 1e-6),
                us(b * 1e-6),
                us((b - a) * 1e-6)
            );
            ta += a;
            tb += b;
        }
        say!(
            "  {:<16} {:>12} {:>12} {:>12}",
            "total",
            us(ta * 1e-6),
            us(tb * 1e-6),
            us((tb - ta) * 1e-6)
        );
        say!(
            "  call time: mean {} µs against {} µs: speedup {:.2}× ({})",
            us(c.this.call_time.mean_s),
            us(c.other.call_time.mean_s),
            c.speedup,
            if c.speedup >= 1.0 {
                "the other is faster"
            } else {
                "this one is faster"
            }
        );
    }
}
