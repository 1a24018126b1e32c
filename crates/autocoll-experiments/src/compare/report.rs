//! The comparison's report: per collective and size, the MPI library's
//! default against autocoll's best, and both against the link bound.
//!
//! Pure functions of bench rows, so that they are tested with made-up rows.

use std::fmt::Write;

use autocoll::measure::Method;
use autocoll::select::format_bytes;
use autocoll::Collective;
use serde::Serialize;
use serde_json::{json, Value};

use autocoll_tune::Row;

/// Autocoll's best may be this much slower than the library's default and
/// still count as no slower (noise).
pub const NO_SLOWER: f64 = 1.05;
/// Where the library's default is poor, autocoll's best should be this fast.
pub const CLEARLY_FASTER: f64 = 0.9;
/// The library's default is *poor* when it takes this many link bounds …
pub const POOR: f64 = 1.5;
/// … at a size where the link, not latency, should set the time.
pub const POOR_FROM: usize = 64 * 1024;
/// From this size bcast, reduce and allreduce should approach the bound.
pub const LARGE: usize = 1 << 20;

/// What the run was.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    /// The cluster's name.
    pub cluster: String,
    /// The spec file it came from.
    pub spec: String,
    /// Ranks, one per slot.
    pub ranks: usize,
    /// The link rate B of the bound, in bytes per second (the slowest
    /// host link of the spec).
    pub rate_bytes_per_s: f64,
    /// How every point was measured.
    pub method: Method,
    /// The MPI library whose own collectives are the baseline, as users
    /// read its name ("Open MPI", "MPICH").
    pub library: String,
}

/// One line of the report: a collective at a size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    /// The collective.
    pub op: String,
    /// Bytes per rank.
    pub bytes: usize,
    /// The MPI library's own collective (its default algorithm), median s.
    pub mpi_s: f64,
    /// The fastest of autocoll's implementations over the mpi transport.
    pub best_impl: String,
    /// Its median, s.
    pub best_s: f64,
    /// best_s / mpi_s.
    pub ratio: f64,
    /// The link bound at the spec's rate, s.
    pub bound_s: f64,
    /// best_s / bound_s.
    pub ratio_to_bound: f64,
    /// The fastest of autocoll's implementations over the tcp transport.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_best_impl: Option<String>,
    /// Its median, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_best_s: Option<f64>,
    /// tcp_best_s / mpi_s: what our own transport costs against the
    /// library's TCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_ratio: Option<f64>,
}

/// The time no algorithm can beat on links of `rate` bytes/s: bcast and
/// reduce move m through one link; allreduce at least 2(P−1)/P·m through
/// each rank's link; scatter, gather and allgather (P−1)·b through the
/// root's (every rank's, for allgather and alltoall, each way; a
/// reduce-scatter's other blocks out of every rank; the v-forms as their
/// regular forms, at blocks of `bytes` on average); a scan m
/// through every rank's link but the last's.
pub fn bound_s(op: Collective, ranks: usize, bytes: usize, rate: f64) -> f64 {
    let m = bytes as f64;
    let p = ranks as f64;
    let moved = match op {
        Collective::Bcast | Collective::Reduce | Collective::Scan | Collective::Exscan => m,
        Collective::Allreduce => 2.0 * (p - 1.0) / p * m,
        Collective::Scatter
        | Collective::Gather
        | Collective::Allgather
        | Collective::Alltoall
        | Collective::ReduceScatter
        | Collective::Gatherv
        | Collective::Scatterv
        | Collective::Allgatherv
        | Collective::Alltoallv => (p - 1.0) * m,
        Collective::Barrier => 0.0,
    };
    moved / rate
}

/// True for the rows of the library's own collective.
pub fn is_library(imp: &str) -> bool {
    imp.ends_with(":mpi") || imp.contains(":mpi:")
}

/// The fastest of autocoll's implementations of `op` at `bytes` in
/// `rows`, by median, among those with a finite one.
pub fn best(rows: &[Row], op: &str, bytes: usize) -> Option<(String, f64)> {
    rows.iter()
        .filter(|r| r.op == op && r.bytes == bytes && !is_library(&r.imp))
        .filter(|r| r.median_s.is_finite())
        .min_by(|a, b| a.median_s.total_cmp(&b.median_s))
        .map(|r| (r.imp.clone(), r.median_s))
}

/// The library's default at `op` and `bytes` (not a forced algorithm).
fn library(rows: &[Row], op: &str, bytes: usize) -> Option<f64> {
    let id = format!("{op}:mpi");
    rows.iter()
        .find(|r| r.op == op && r.bytes == bytes && r.imp == id && r.median_s.is_finite())
        .map(|r| r.median_s)
}

/// One line per (collective, size) the mpi run measured both the library
/// and autocoll at, in the order first seen; `tcp` rows fill the tcp
/// columns where they have the same point.
pub fn lines(setup: &Setup, mpi: &[Row], tcp: &[Row]) -> Vec<Line> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in mpi {
        let key = (r.op.clone(), r.bytes);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .filter_map(|(op, bytes)| line(setup, mpi, tcp, &op, bytes))
        .collect()
}

fn line(setup: &Setup, mpi: &[Row], tcp: &[Row], op: &str, bytes: usize) -> Option<Line> {
    let mpi_s = library(mpi, op, bytes)?;
    let (best_impl, best_s) = best(mpi, op, bytes)?;
    let coll: Collective = op.parse().ok()?;
    let bound = bound_s(coll, setup.ranks, bytes, setup.rate_bytes_per_s);
    let tcp_best = best(tcp, op, bytes);
    Some(Line {
        op: op.to_string(),
        bytes,
        mpi_s,
        ratio: best_s / mpi_s,
        ratio_to_bound: best_s / bound,
        bound_s: bound,
        best_impl,
        best_s,
        tcp_ratio: tcp_best.as_ref().map(|t| t.1 / mpi_s),
        tcp_best_s: tcp_best.as_ref().map(|t| t.1),
        tcp_best_impl: tcp_best.map(|t| t.0),
    })
}

/// The targets a line misses, each as a sentence.
pub fn misses(setup: &Setup, l: &Line) -> Vec<String> {
    let mut out = Vec::new();
    let library = &setup.library;
    let at = format!("{} {}", l.op, format_bytes(l.bytes));
    if l.ratio > NO_SLOWER {
        out.push(format!(
            "{at}: autocoll's best ({}) is {:.2}× {library}'s default (target ≤ {NO_SLOWER})",
            l.best_impl, l.ratio
        ));
    }
    let poor = l.bytes >= POOR_FROM && l.mpi_s > POOR * l.bound_s;
    if poor && l.ratio <= NO_SLOWER && l.ratio > CLEARLY_FASTER {
        out.push(format!(
            "{at}: {library}'s default is poor ({:.2}× the link bound) but autocoll's best is only {:.2}× it (target ≤ {CLEARLY_FASTER})",
            l.mpi_s / l.bound_s,
            l.ratio
        ));
    }
    if let Some(limit) = bound_target(l) {
        if l.ratio_to_bound > limit {
            out.push(format!(
                "{at}: autocoll's best is {:.2}× the link bound (target ≤ {limit})",
                l.ratio_to_bound
            ));
        }
    }
    out
}

/// The bound target of a line, if it has one: ≥ 1 MiB bcast and reduce
/// within 1.10× of the bound, allreduce within 1.20×.
fn bound_target(l: &Line) -> Option<f64> {
    match (l.op.as_str(), l.bytes >= LARGE) {
        ("bcast" | "reduce", true) => Some(1.10),
        ("allreduce", true) => Some(1.20),
        _ => None,
    }
}

/// The report as JSON (`autocoll.compare/1`).
pub fn json(setup: &Setup, lines: &[Line]) -> Value {
    let misses: Vec<String> = lines.iter().flat_map(|l| misses(setup, l)).collect();
    json!({
        "schema": "autocoll.compare/1",
        "cluster": setup.cluster,
        "spec": setup.spec,
        "ranks": setup.ranks,
        "rate_bytes_per_s": setup.rate_bytes_per_s,
        "method": setup.method,
        "library": setup.library,
        "rows": lines,
        "misses": misses,
    })
}

/// The report as Markdown: a table per collective (with its plot) and the
/// targets missed.
pub fn markdown(setup: &Setup, lines: &[Line], command: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# autocoll against {} on `{}` ({} ranks, links of {:.0} Mbit/s)\n",
        setup.library,
        setup.cluster,
        setup.ranks,
        setup.rate_bytes_per_s * 8.0 / 1e6
    );
    let _ = writeln!(
        out,
        "Medians of the `{}` method. *{}* is the library's own \
         collective with its default algorithm; *autocoll* the fastest of the candidates over \
         the mpi transport (same launcher, same run, interleaved per size); *tcp* the fastest over \
         autocoll's own tcp transport; *bound* the link bound at the spec's rate.\n\n\
         Rerun: `{command}`\n",
        setup.method, setup.library
    );
    let mut ops: Vec<&str> = Vec::new();
    for l in lines {
        if !ops.contains(&l.op.as_str()) {
            ops.push(&l.op);
        }
    }
    for op in ops {
        let _ = writeln!(out, "## {op}\n\n![{op}]({op}.svg)\n");
        out.push_str(&table(&setup.library, lines.iter().filter(|l| l.op == op)));
        out.push('\n');
    }
    let missed: Vec<String> = lines.iter().flat_map(|l| misses(setup, l)).collect();
    let _ = writeln!(out, "## Targets\n");
    if missed.is_empty() {
        let _ = writeln!(out, "Every target is met.");
    }
    for m in missed {
        let _ = writeln!(out, "- missed: {m}");
    }
    out
}

/// The plot's lines: every candidate and the library over mpi, the best
/// over tcp at each size, and the link bound.
pub fn plot_rows(op: Collective, mpi: &[Row], lines: &[Line]) -> Vec<Row> {
    let mut rows: Vec<Row> = mpi.iter().filter(|r| r.op == op.name()).cloned().collect();
    let sample = rows.first().cloned();
    for l in lines {
        let Some(mut r) = sample.clone() else { break };
        r.bytes = l.bytes;
        r.imp = "link bound".into();
        r.median_s = l.bound_s;
        rows.push(r.clone());
        if let Some(s) = l.tcp_best_s {
            r.imp = "autocoll best over tcp".into();
            r.median_s = s;
            rows.push(r);
        }
    }
    rows
}

/// The table of one collective's lines.
pub fn table<'a>(library: &str, lines: impl Iterator<Item = &'a Line>) -> String {
    let ms = |s: f64| format!("{:.3}", s * 1e3);
    let mut out = format!(
        "| bytes | {library} ms | autocoll best (mpi) | ms | ÷ {library} | bound ms | ÷ bound | autocoll best (tcp) | ms | tcp ÷ {library} |\n\
         |---:|---:|---|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for l in lines {
        let tcp_impl = l.tcp_best_impl.clone().unwrap_or_else(|| "–".into());
        let tcp_s = l.tcp_best_s.map(ms).unwrap_or_else(|| "–".into());
        let tcp_ratio = l
            .tcp_ratio
            .map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | {:.2} | {} | {:.2} | `{}` | {} | {} |",
            format_bytes(l.bytes),
            ms(l.mpi_s),
            l.best_impl,
            ms(l.best_s),
            l.ratio,
            ms(l.bound_s),
            l.ratio_to_bound,
            tcp_impl,
            tcp_s,
            tcp_ratio
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(imp: &str, bytes: usize, median_s: f64) -> Row {
        Row {
            op: imp.split(':').next().unwrap().to_string(),
            imp: imp.to_string(),
            ranks: 8,
            bytes,
            root: 0,
            method: Method::Truth,
            reps: 3,
            discarded: 0,
            mean_s: median_s,
            median_s,
            min_s: median_s,
            max_s: median_s,
            stddev_s: 0.0,
            ci95_lo_s: median_s,
            ci95_hi_s: median_s,
            error_vs_truth: None,
            error_ci95: None,
            ol_i_s: None,
            window_s: None,
            raw_s: vec![median_s],
            race: None,
            flags: Vec::new(),
        }
    }

    fn setup() -> Setup {
        Setup {
            cluster: "star8".into(),
            spec: "clusters/star8-100m.toml".into(),
            ranks: 8,
            rate_bytes_per_s: 12.5e6,
            method: Method::Barrier,
            library: "Open MPI".into(),
        }
    }

    #[test]
    fn bounds_follow_the_data_each_link_must_carry() {
        let b = 12.5e6;
        let m = 1 << 20;
        let close = |a: f64, e: f64| assert!((a - e).abs() < 1e-12, "{a} vs {e}");
        close(bound_s(Collective::Bcast, 8, m, b), m as f64 / b);
        close(bound_s(Collective::Reduce, 8, m, b), m as f64 / b);
        close(bound_s(Collective::Allreduce, 8, m, b), 1.75 * m as f64 / b);
        for op in [
            Collective::Scatter,
            Collective::Gather,
            Collective::Allgather,
        ] {
            close(bound_s(op, 8, m, b), 7.0 * m as f64 / b);
        }
        close(bound_s(Collective::Allreduce, 2, m, b), m as f64 / b);
    }

    #[test]
    fn the_best_is_autocolls_fastest_and_ratios_are_to_the_library_and_the_bound() {
        let m = 1 << 20;
        let mpi = vec![
            row("bcast:mpi", m, 0.2),
            row("bcast:binomial", m, 0.25),
            row("bcast:chain:seg=8K", m, 0.09),
            row("bcast:binary", m, f64::NAN),
            row("bcast:mpi:alg=2", m, 0.01),
        ];
        let tcp = vec![
            row("bcast:chain:seg=8K", m, 0.1),
            row("bcast:binomial", m, 0.3),
        ];
        let lines = lines(&setup(), &mpi, &tcp);
        assert_eq!(lines.len(), 1);
        let l = &lines[0];
        assert_eq!(l.best_impl, "bcast:chain:seg=8K");
        assert_eq!(l.mpi_s, 0.2, "the forced algorithm is not the default");
        assert!((l.ratio - 0.45).abs() < 1e-12);
        let bound = m as f64 / 12.5e6;
        assert!((l.ratio_to_bound - 0.09 / bound).abs() < 1e-12);
        assert_eq!(l.tcp_best_impl.as_deref(), Some("bcast:chain:seg=8K"));
        assert!((l.tcp_ratio.unwrap() - 0.5).abs() < 1e-12);
        assert!(misses(&setup(), l).is_empty(), "{:?}", misses(&setup(), l));
    }

    #[test]
    fn missed_targets_are_named() {
        let m = 4 << 20;
        let bound = m as f64 / 12.5e6;
        let slower = vec![
            row("reduce:mpi", m, bound * 1.2),
            row("reduce:chain", m, bound * 1.3),
        ];
        let l = &lines(&setup(), &slower, &[])[0];
        let said = misses(&setup(), l);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("1.08× Open MPI's default"), "{}", said[0]);
        assert!(said[1].contains("1.30× the link bound"), "{}", said[1]);
        let poor = vec![
            row("gather:mpi", m, 7.0 * bound * 2.0),
            row("gather:flat", m, 7.0 * bound * 1.9),
        ];
        let l = &lines(&setup(), &poor, &[])[0];
        assert!(misses(&setup(), l)[0].contains("Open MPI's default is poor"));
        let missing_library = vec![row("gather:flat", m, 1.0)];
        assert!(lines(&setup(), &missing_library, &[]).is_empty());
    }

    #[test]
    fn json_and_markdown_carry_every_line() {
        let m = 1 << 20;
        let mpi = vec![row("allreduce:mpi", m, 0.2), row("allreduce:ring", m, 0.16)];
        let lines = lines(&setup(), &mpi, &[]);
        let doc = json(&setup(), &lines);
        assert_eq!(doc["schema"], "autocoll.compare/1");
        assert_eq!(doc["ranks"], 8);
        let r = &doc["rows"][0];
        for key in [
            "op",
            "bytes",
            "mpi_s",
            "best_impl",
            "best_s",
            "ratio",
            "bound_s",
            "ratio_to_bound",
        ] {
            assert!(!r[key].is_null(), "{key} missing");
        }
        let md = markdown(&setup(), &lines, "scripts/compare-mpi");
        assert!(
            md.contains("| 1M | 200.000 | `allreduce:ring` | 160.000 | 0.80 |"),
            "{md}"
        );
        assert!(md.contains("![allreduce](allreduce.svg)"));
    }
}
