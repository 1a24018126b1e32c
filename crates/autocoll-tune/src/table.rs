//! Tuning tables: each point's winner, and the winners as the
//! non-overlapping rules of a tuning file ([`autocoll::select::Table`],
//! which also exports them as Open MPI and MPICH rules).

use std::collections::BTreeMap;

use autocoll::select::{format_bytes, Rule, Table};
use autocoll::{Collective, Implementation};

use crate::error::Error;
use crate::row::Row;

/// Upper end of the last size range: sizes above the largest measured one
/// get its winner (a range must end somewhere; 1G keeps exports readable).
pub const TOP_BYTES: usize = 1 << 30;

/// The fastest implementation (by median) of every (op, ranks, bytes);
/// of a race, among the candidates still in at its end (a dropped one's
/// median rests on a few repetitions that ruled it out).
pub fn winners(rows: &[Row]) -> BTreeMap<(String, usize, usize), Row> {
    let mut best: BTreeMap<(String, usize, usize), Row> = BTreeMap::new();
    let contends = |r: &&Row| {
        r.race
            .as_ref()
            .is_none_or(|m| m.live && m.same_as.is_none())
    };
    for r in rows
        .iter()
        .filter(|r| r.median_s.is_finite())
        .filter(contends)
    {
        let key = (r.op.clone(), r.ranks, r.bytes);
        match best.get(&key) {
            Some(b) if b.median_s <= r.median_s => {}
            _ => {
                best.insert(key, r.clone());
            }
        }
    }
    best
}

/// The winners as non-overlapping rules: neighbouring sizes with the same
/// winner merge into one size range (from 0, each up to the next range's
/// start − 1, the last to 1G), and neighbouring rank counts with the same
/// size ranges merge into one rank range (each up to the next measured
/// count − 1, the last ending at the largest count measured).
pub fn table_of(rows: &[Row]) -> Result<Table, Error> {
    let best = winners(rows);
    let mut per_op: BTreeMap<String, BTreeMap<usize, Vec<(usize, String)>>> = BTreeMap::new();
    for ((op, p, bytes), r) in &best {
        per_op
            .entry(op.clone())
            .or_default()
            .entry(*p)
            .or_default()
            .push((*bytes, r.imp.clone()));
    }
    let mut rules = Vec::new();
    for (op, by_ranks) in per_op {
        let op: Collective = op.parse().map_err(Error::Id)?;
        let spans: Vec<(usize, Vec<SizeRange>)> = by_ranks
            .into_iter()
            .map(|(p, winners)| (p, size_ranges(&winners)))
            .collect();
        let mut i = 0;
        while i < spans.len() {
            let mut j = i;
            while j + 1 < spans.len() && spans[j + 1].1 == spans[i].1 {
                j += 1;
            }
            let lo = spans[i].0;
            let hi = match spans.get(j + 1) {
                Some(next) => next.0 - 1,
                None => spans[j].0,
            };
            for (b_lo, b_hi, imp) in &spans[i].1 {
                let imp: Implementation = imp.parse().map_err(|e| Error::Id(format!("{e}")))?;
                rules.push(Rule {
                    op,
                    ranks: lo..=hi,
                    bytes: *b_lo..=*b_hi,
                    imp,
                });
            }
            i = j + 1;
        }
    }
    Ok(Table { rules })
}

/// Bytes from, bytes to (inclusive), winner.
type SizeRange = (usize, usize, String);

/// Sorted (bytes, winner) → contiguous (lo, hi, winner) ranges from 0.
fn size_ranges(winners: &[(usize, String)]) -> Vec<SizeRange> {
    let mut out: Vec<SizeRange> = Vec::new();
    for (bytes, imp) in winners {
        match out.last_mut() {
            Some(last) if last.2 == *imp => {}
            Some(last) => {
                last.1 = bytes - 1;
                out.push((*bytes, *bytes, imp.clone()));
            }
            None => out.push((0, *bytes, imp.clone())),
        }
    }
    if let Some(last) = out.last_mut() {
        last.1 = winners.last().map_or(0, |w| w.0).max(TOP_BYTES);
    }
    out
}

/// The rules, one per line under a header: what `tune` prints.
pub fn summary(table: &Table) -> String {
    let mut out = format!("{:<10} {:>9} {:>16}  impl", "op", "ranks", "bytes");
    for r in &table.rules {
        let show = |x: &std::ops::RangeInclusive<usize>| {
            format!("{}..{}", format_bytes(*x.start()), format_bytes(*x.end()))
        };
        out.push_str(&format!(
            "\n{:<10} {:>9} {:>16}  {}",
            r.op.to_string(),
            format!("{}..{}", r.ranks.start(), r.ranks.end()),
            show(&r.bytes),
            r.imp
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ranks: usize, bytes: usize, imp: &str, median: f64) -> Row {
        let json = serde_json::json!({
            "op": "bcast", "impl": imp, "ranks": ranks, "bytes": bytes, "root": 0,
            "method": "truth", "reps": 5, "discarded": 0, "mean_s": median,
            "median_s": median, "min_s": median, "max_s": median, "stddev_s": 0.0,
            "ci95_lo_s": median, "ci95_hi_s": median, "raw_s": [median],
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn winners_merge_into_contiguous_ranges() {
        let mut rows = Vec::new();
        for p in [2, 4, 8] {
            for (bytes, fast) in [
                (1024, "bcast:binomial"),
                (4096, "bcast:binomial"),
                (65536, "bcast:chain:seg=8K"),
            ] {
                let fast = if p == 8 && bytes == 4096 {
                    "bcast:flat"
                } else {
                    fast
                };
                rows.push(row(p, bytes, fast, 1.0));
                rows.push(row(p, bytes, "bcast:binary", 2.0));
            }
        }
        let table = table_of(&rows).unwrap();
        let text = table.to_toml("test");
        let back = Table::parse(&text, "test").unwrap();
        assert_eq!(back, table);
        // 2 and 4 ranks share their winners: one rank range 2..7.
        let r = &table.rules[0];
        assert_eq!((r.ranks.clone(), r.bytes.clone()), (2..=7, 0..=65535));
        assert_eq!(table.rules[1].bytes, 65536..=TOP_BYTES);
        assert_eq!(table.rules.len(), 2 + 3);
        for p in 2..=8 {
            for (bytes, want) in [
                (0, "bcast:binomial"),
                (1024, "bcast:binomial"),
                (1 << 20, "bcast:chain:seg=8K"),
            ] {
                assert_eq!(
                    table
                        .lookup(Collective::Bcast, p, bytes)
                        .unwrap()
                        .to_string(),
                    want
                );
            }
        }
        assert_eq!(
            table
                .lookup(Collective::Bcast, 8, 4096)
                .unwrap()
                .to_string(),
            "bcast:flat"
        );
        assert_eq!(
            table
                .lookup(Collective::Bcast, 7, 4096)
                .unwrap()
                .to_string(),
            "bcast:binomial"
        );
    }
}
