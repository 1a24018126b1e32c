use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::*;
use crate::ids::Collective;
use crate::local;
use crate::observe::{Event, Observer, Stage};
use crate::select::state::read_saved;
use crate::Op;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-select-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn refused(select: Option<&str>, state: Option<&str>) -> String {
    let state = state.map(Path::new);
    match parse(select, state) {
        Ok(choice) => panic!("{select:?} {state:?} gave {choice:?}"),
        Err(e) => e.to_string(),
    }
}

const TABLE: &str = "schema = \"autocoll.tuning/1\"\n[[rule]]\nop = \"allreduce\"\nranks = \"1..8\"\nbytes = \"0..1M\"\nimpl = \"allreduce:ring\"\n";

#[test]
fn neither_variable_set_keeps_the_communicator_s_selector() {
    assert_eq!(parse(None, None).unwrap(), None);
}

#[test]
fn each_value_parses_to_its_choice() {
    let fixed = |ids: &[&str]| Choice::Fixed(ids.iter().map(|id| id.parse().unwrap()).collect());
    let cases = [
        ("lottery", Choice::Lottery(None)),
        (" lottery ", Choice::Lottery(None)),
        ("lottery:t.toml", Choice::Lottery(Some("t.toml".into()))),
        ("table:/x/t.toml", Choice::Table("/x/t.toml".into())),
        ("fixed:bcast:binary:seg=8K", fixed(&["bcast:binary:seg=8K"])),
        (
            "fixed:bcast:chain, allreduce:ring",
            fixed(&["bcast:chain", "allreduce:ring"]),
        ),
    ];
    for (value, choice) in cases {
        assert_eq!(parse(Some(value), None).unwrap(), Some(choice), "{value}");
    }
}

#[test]
fn a_state_file_alone_or_with_the_lottery_is_the_lottery() {
    let state = Some(Path::new("s.json"));
    assert_eq!(parse(None, state).unwrap(), Some(Choice::Lottery(None)));
    let prior = Choice::Lottery(Some("t.toml".into()));
    assert_eq!(parse(Some("lottery:t.toml"), state).unwrap(), Some(prior));
}

#[test]
fn a_bad_value_is_refused_naming_the_variable_and_the_value() {
    for (value, why) in [
        ("fastest", "expected lottery, lottery:FILE"),
        ("table:", "names no file"),
        ("lottery: ", "names no file"),
        (
            "fixed:bcast:binary,bcast:chain",
            "two implementations for bcast",
        ),
        ("fixed:bcast:sideways", "bad implementation id"),
        ("fixed:bcast:mpi", "only the MPI interposition library"),
        ("native", "has none"),
    ] {
        let err = refused(Some(value), None);
        assert!(
            err.contains(&format!("AUTOCOLL_SELECT={value}:")) && err.contains(why),
            "{value}: {err}"
        );
    }
}

#[test]
fn set_and_empty_is_refused_naming_the_variable() {
    for value in ["", "  "] {
        let err = refused(Some(value), None);
        assert!(err.contains("AUTOCOLL_SELECT is set but empty"), "{err}");
    }
    let err = refused(None, Some(""));
    assert!(err.contains("AUTOCOLL_STATE is set but empty"), "{err}");
}

#[test]
fn a_state_file_with_a_selector_that_is_no_lottery_is_refused() {
    for value in ["table:t.toml", "fixed:bcast:chain"] {
        let err = refused(Some(value), Some("s.json"));
        assert!(
            err.contains("AUTOCOLL_STATE=s.json") && err.contains("runs no lottery"),
            "{err}"
        );
    }
}

/// The implementations of the allreduces rank 0 ran (the lottery's own
/// agreements are small reduces and broadcasts), in a 3-rank job of
/// `calls` allreduces of 800 bytes, selecting as `select` and `state` say.
fn rank0_allreduces(select: Option<&str>, state: Option<&Path>, calls: usize) -> Vec<String> {
    let seen = Arc::new(Seen::default());
    local::run(3, |mut comm| {
        apply(&mut comm, select, state).unwrap();
        comm.add_observer(seen.clone());
        for _ in 0..calls {
            let mut out = [0.0f64; 100];
            comm.allreduce(&[1.0f64; 100], &mut out, &Op::SUM).unwrap();
        }
    });
    let ran = seen.0.lock().unwrap();
    ran.iter()
        .filter(|id| id.starts_with("allreduce"))
        .cloned()
        .collect()
}

#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl Observer for Seen {
    fn event(&self, e: &Event<'_>) {
        if e.stage == Stage::Enter && e.rank == 0 {
            self.0.lock().unwrap().push(e.imp.to_string());
        }
    }
}

#[test]
fn the_lottery_with_a_state_file_remembers_in_it_when_the_job_ends() {
    let dir = temp("state");
    let state = dir.join("nested").join("state.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    let ran = rank0_allreduces(None, Some(&state), 12);
    assert_eq!(ran.len(), 12);
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(text.contains("\"autocoll.lottery/1\""), "{text}");
    let saved = read_saved(&state).unwrap();
    assert_eq!(saved.len(), 1);
    let ops: Vec<Collective> = saved[0].pools.iter().map(|(key, _)| key.op).collect();
    assert!(ops.contains(&Collective::Allreduce), "{ops:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_table_picks_its_rule_and_the_default_elsewhere() {
    let dir = temp("table");
    let file = dir.join("t.toml");
    std::fs::write(&file, TABLE).unwrap();
    let select = format!("table:{}", file.display());
    let chosen = local::run(2, |mut comm| {
        apply(&mut comm, Some(&select), None).unwrap();
        let ruled = comm.choose(Collective::Allreduce, 800).unwrap();
        let other = comm.choose(Collective::Bcast, 800).unwrap();
        (ruled.to_string(), other)
    });
    let default = default_for(Collective::Bcast, 2, 800);
    assert_eq!(chosen[0], ("allreduce:ring".to_string(), default));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fixed_picks_what_it_names_and_the_default_elsewhere() {
    let chosen = local::run(2, |mut comm| {
        apply(&mut comm, Some("fixed:bcast:chain"), None).unwrap();
        let named = comm.choose(Collective::Bcast, 800).unwrap();
        let other = comm.choose(Collective::Allreduce, 800).unwrap();
        (named.to_string(), other)
    });
    let default = default_for(Collective::Allreduce, 2, 800);
    assert_eq!(chosen[1], ("bcast:chain".to_string(), default));
}

#[test]
fn the_lottery_with_a_table_starts_every_size_on_the_table_s_pick() {
    let dir = temp("prior");
    let file = dir.join("t.toml");
    std::fs::write(&file, TABLE).unwrap();
    let ran = rank0_allreduces(Some(&format!("lottery:{}", file.display())), None, 3);
    assert_eq!(ran, vec!["allreduce:ring"; 3]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_table_that_cannot_be_used_is_refused_naming_the_variable() {
    let dir = temp("bad-table");
    let native = dir.join("native.toml");
    std::fs::write(&native, TABLE.replace("allreduce:ring", "allreduce:mpi")).unwrap();
    let missing = dir.join("missing.toml");
    let errors = local::run(1, |mut comm| {
        [&native, &missing].map(|file| {
            let select = format!("table:{}", file.display());
            apply(&mut comm, Some(&select), None)
                .unwrap_err()
                .to_string()
        })
    });
    let [native_err, missing_err] = &errors[0];
    assert!(
        native_err.contains("AUTOCOLL_SELECT=table:") && native_err.contains("allreduce:mpi"),
        "{native_err}"
    );
    assert_eq!(
        native_err.matches("configuration").count(),
        1,
        "{native_err}"
    );
    assert!(missing_err.contains("missing.toml"), "{missing_err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
