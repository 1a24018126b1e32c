//! What the tests share: scratch directories, the analysis with the
//! default options, the hand-built 3-rank run and its writer, closeness in
//! ns, and the timeline's structural checks.

use std::path::{Path, PathBuf};

use autocoll::observe::Stage;
use autocoll::trace::format::{encode, Call, Event, NO_PEER};
use autocoll::Implementation;

use crate::result::{GroupReport, Report};
use crate::synthetic::{self, rank_file, Spec};
use crate::{analyse, chrome::Chrome, Options};

/// A fresh directory for one test.
pub(super) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-analyze-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(super) fn options() -> Options {
    Options::default()
}

pub(super) fn run(dir: &Path) -> Report {
    match analyse(dir, &options(), None) {
        Ok(r) => r,
        Err(e) => panic!("{}: {e}", if e.is_input() { "usage" } else { "run" }),
    }
}

pub(super) fn error(dir: &Path) -> String {
    match analyse(dir, &options(), None) {
        Ok(_) => panic!("{} was accepted", dir.display()),
        Err(e) => e.to_string(),
    }
}

/// An event: (time, stage, peer, phase).
pub(super) fn e(t: u64, stage: Stage, peer: Option<u16>, phase: u8) -> Event {
    Event {
        time_ns: t,
        segment: 0,
        peer: peer.unwrap_or(NO_PEER),
        stage,
        phase,
    }
}

use Stage::{Combined as C, Done as D, Enter as N, Received as R, Sent as S};

/// The hand-built run: allreduce over a flat tree, root 0 with children
/// 1 and 2, two calls, times in ns (rank r's events at index r).
pub(super) fn hand_built() -> (Spec, Vec<Vec<Vec<Event>>>) {
    let spec = Spec::new("allreduce:flat".parse::<Implementation>().unwrap(), 3);
    let call0 = vec![
        vec![
            e(50, N, None, 0),
            e(150, R, Some(1), 0),
            e(160, C, Some(1), 0),
            e(300, R, Some(2), 0),
            e(310, C, Some(2), 0),
            e(330, S, Some(1), 1),
            e(350, S, Some(2), 1),
            e(370, D, None, 0),
        ],
        vec![
            e(100, N, None, 0),
            e(110, S, Some(0), 0),
            e(400, R, Some(0), 1),
            e(410, D, None, 0),
        ],
        vec![
            e(200, N, None, 0),
            e(230, S, Some(0), 0),
            e(450, R, Some(0), 1),
            e(460, D, None, 0),
        ],
    ];
    let call1 = vec![
        vec![
            e(1050, N, None, 0),
            e(1320, R, Some(1), 0),
            e(1330, C, Some(1), 0),
            e(1340, R, Some(2), 0),
            e(1350, C, Some(2), 0),
            e(1360, S, Some(1), 1),
            e(1370, S, Some(2), 1),
            e(1380, D, None, 0),
        ],
        vec![
            e(1300, N, None, 0),
            e(1310, S, Some(0), 0),
            e(1400, R, Some(0), 1),
            e(1410, D, None, 0),
        ],
        vec![
            e(1200, N, None, 0),
            e(1230, S, Some(0), 0),
            e(1450, R, Some(0), 1),
            e(1460, D, None, 0),
        ],
    ];
    (spec, vec![call0, call1])
}

/// Writes `calls` (per call, per rank) with `spec`'s headers, adding
/// `skew[r]` to rank r's times; ranks in `leave_out` get no file.
pub(super) fn write_run(dir: &Path, spec: &Spec, calls: &[Vec<Vec<Event>>], leave_out: &[usize]) {
    let tree =
        autocoll::Tree::build(spec.imp.shape().unwrap(), spec.size, spec.root, None).unwrap();
    for rank in (0..spec.size).filter(|r| !leave_out.contains(r)) {
        let mine: Vec<Call> = calls
            .iter()
            .enumerate()
            .map(|(k, per_rank)| Call {
                seq: k as u64,
                op: spec.imp.op,
                bytes: spec.bytes,
                root: 0,
                imp: 0,
                tree: 0,
                events: per_rank[rank]
                    .iter()
                    .map(|ev| Event {
                        time_ns: (ev.time_ns as i64 + spec.skew[rank]) as u64,
                        ..*ev
                    })
                    .collect(),
            })
            .collect();
        let bytes = encode(&synthetic::header(spec, Some(&tree), rank), &mine);
        std::fs::write(rank_file(dir, rank), bytes).unwrap();
    }
}

pub(super) fn ns(x: f64) -> f64 {
    x * 1e-9
}

pub(super) fn close(got: f64, want_ns: f64) {
    assert!(
        (got - ns(want_ns)).abs() <= 1e-15 + 1e-12 * ns(want_ns).abs(),
        "{got} s against {want_ns} ns"
    );
}

pub(super) fn only_group(r: &Report) -> &GroupReport {
    assert_eq!(r.groups.len(), 1);
    &r.groups[0]
}

/// The structure Perfetto needs: every flow has both ends, slices on one
/// track nest or follow, every track is named.
pub(super) fn check_timeline(text: &str, messages: usize) {
    let doc: serde_json::Value = serde_json::from_str(text).expect("the timeline is JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let mut flows: std::collections::BTreeMap<u64, (u32, u32)> = Default::default();
    let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<(i64, i64)>> = Default::default();
    let mut named = std::collections::BTreeSet::new();
    let to_ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    for ev in events {
        let (pid, tid) = (ev["pid"].as_u64().unwrap(), ev["tid"].as_u64().unwrap());
        match ev["ph"].as_str().unwrap() {
            "M" => {
                if ev["name"] == "thread_name" {
                    named.insert((pid, tid));
                }
            }
            "X" => {
                let ts = to_ns(&ev["ts"]);
                tracks
                    .entry((pid, tid))
                    .or_default()
                    .push((ts, ts + to_ns(&ev["dur"])));
                if let Some(id) = ev.get("bind_id") {
                    let id = id.as_u64().expect("integer flow ids");
                    let slot = flows.entry(id).or_default();
                    match (ev.get("flow_out"), ev.get("flow_in")) {
                        (Some(_), None) => slot.0 += 1,
                        (None, Some(_)) => slot.1 += 1,
                        _ => panic!("flow {id} has no direction"),
                    }
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(flows.len(), messages);
    assert!(flows.values().all(|&ends| ends == (1, 1)), "{flows:?}");
    for (track, mut slices) in tracks {
        assert!(named.contains(&track), "track {track:?} has no name");
        slices.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<i64> = Vec::new();
        for (s, e) in slices {
            while open.last().is_some_and(|&end| end <= s) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(
                    e <= end,
                    "track {track:?}: [{s}, {e}] overlaps a slice ending at {end}"
                );
            }
            open.push(e);
        }
    }
}

pub(super) fn timeline(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let mut chrome = Chrome::create(&path).unwrap();
    let Ok(_) = analyse(dir, &options(), Some(&mut chrome)) else {
        panic!("analysis failed")
    };
    chrome.finish().unwrap();
    std::fs::read_to_string(path).unwrap()
}

/// An event of segment `seg`.
pub(super) fn es(t: u64, stage: Stage, peer: Option<u16>, seg: u32) -> Event {
    Event {
        segment: seg,
        ..e(t, stage, peer, 0)
    }
}
