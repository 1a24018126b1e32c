use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::file::sibling;
use super::*;
use crate::ids::Collective;
use crate::select::key::Key;
use crate::select::lottery::Stats;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-state-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("state.json")
}

fn stats(id: &str, mean_s: f64, count: u32) -> Stats {
    Stats {
        mean_s,
        count,
        ..Stats::new(id.parse().unwrap())
    }
}

fn learned(candidates: &[(&str, f64, u32)]) -> Learned {
    Learned {
        candidates: candidates
            .iter()
            .map(|&(id, mean, count)| stats(id, mean, count))
            .collect(),
        spent_s: 1.0,
        lost_s: 0.25,
    }
}

fn fingerprint(ranks: usize) -> Fingerprint {
    Fingerprint::new(&vec!["a".to_string(); ranks], "local")
}

fn table(ranks: usize) -> TableEntry {
    TableEntry {
        op: Collective::Bcast,
        ranks,
        table: (0..ranks).rev().collect(),
    }
}

/// A file with one run of 2 ranks and one of 3, each with a pool and a
/// balancer table.
fn two_runs(path: &Path) -> Learned {
    let pool = learned(&[("bcast:binary", 2e-6, 4), ("bcast:chain", 1e-6, 3)]);
    for ranks in [2, 3] {
        let store = Store::new(path, fingerprint(ranks), true);
        let pools = BTreeMap::from([(Key::of(Collective::Bcast, ranks, 1000), pool.clone())]);
        store.save(&pools).unwrap();
        store.save_tables(&[table(ranks)]).unwrap();
    }
    pool
}

#[test]
fn the_best_is_the_measured_candidate_with_the_lowest_average() {
    let pool = learned(&[
        ("bcast:flat", 0.5e-6, 0),
        ("bcast:binary", 2e-6, 4),
        ("bcast:chain", 1e-6, 3),
        ("bcast:binomial", 1e-6, 9),
    ]);
    assert_eq!(pool.best().unwrap().imp.to_string(), "bcast:chain");
    assert_eq!(learned(&[("bcast:flat", 1e-6, 0)]).best(), None);
    assert_eq!(Learned::default().best(), None);
}

#[test]
fn of_impl_finds_a_candidate_by_its_implementation() {
    let pool = learned(&[("bcast:binary", 2e-6, 4), ("bcast:chain", 1e-6, 3)]);
    let chain = "bcast:chain".parse().unwrap();
    assert_eq!(pool.of_impl(&chain).unwrap().count, 3);
    assert_eq!(pool.of_impl(&"bcast:flat".parse().unwrap()), None);
}

#[test]
fn read_saved_gives_every_run_with_its_pools_and_tables() {
    let path = temp("read");
    assert!(read_saved(&path).unwrap().is_empty(), "a missing file");
    let pool = two_runs(&path);
    let saved = read_saved(&path).unwrap();
    assert_eq!(saved.len(), 2);
    for (run, ranks) in saved.iter().zip([2, 3]) {
        assert_eq!(run.fingerprint, fingerprint(ranks));
        assert_eq!(
            run.pools,
            vec![(Key::of(Collective::Bcast, ranks, 1000), pool.clone())]
        );
        assert_eq!(run.tables, vec![table(ranks)]);
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn read_saved_refuses_a_corrupt_or_foreign_file_naming_it() {
    let path = temp("corrupt");
    for text in ["{ not json", r#"{"schema": "other/1", "runs": []}"#] {
        std::fs::write(&path, text).unwrap();
        let err = read_saved(&path).unwrap_err().to_string();
        assert!(
            err.contains("unreadable") && err.contains(&path.display().to_string()),
            "{err}"
        );
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn forget_tables_removes_every_table_and_keeps_the_pools() {
    let path = temp("forget");
    let pool = two_runs(&path);
    assert_eq!(forget_tables(&path).unwrap(), 2);
    let saved = read_saved(&path).unwrap();
    assert_eq!(saved.len(), 2);
    for run in &saved {
        assert!(run.tables.is_empty());
        assert_eq!(run.pools[0].1, pool);
    }
    assert_eq!(forget_tables(&path).unwrap(), 0, "nothing left to forget");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn forget_tables_leaves_a_missing_or_corrupt_file_as_it_is() {
    let path = temp("forget-missing");
    assert_eq!(forget_tables(&path).unwrap(), 0);
    assert!(!path.exists(), "no file is created");
    std::fs::write(&path, "{ not json").unwrap();
    let err = forget_tables(&path).unwrap_err().to_string();
    assert!(err.contains("unreadable"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
    assert!(!sibling(&path, "corrupt").exists(), "not set aside");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
