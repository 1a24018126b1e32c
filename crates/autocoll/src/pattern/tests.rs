use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::*;
use crate::error::Error;
use crate::transport::{Tag, Transport};
use crate::{local, Communicator};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-pattern-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn classes_are_powers_of_two_closed_above() {
    let got: Vec<u32> = [0, 1, 2, 3, 4, 5, 1024, 1025, u64::MAX]
        .into_iter()
        .map(class_of)
        .collect();
    assert_eq!(got, [0, 0, 1, 2, 2, 3, 10, 11, 64]);
}

fn sample() -> Recorder {
    let mut r = Recorder::new(1, 3);
    r.record(Kind::P2p, 2, 1000);
    r.record(Kind::P2p, 2, 700);
    r.record(Kind::P2p, 0, 0);
    r.record(Kind::Collective, 0, 1 << 40);
    r.record(Kind::Collective, 2, u64::MAX);
    r
}

#[test]
fn a_recorder_counts_per_kind_destination_and_class() {
    let r = sample();
    assert_eq!(r.totals(Kind::P2p, 2, 10), Some((2, 1700)));
    assert_eq!(r.totals(Kind::P2p, 0, 0), Some((1, 0)));
    assert_eq!(r.totals(Kind::Collective, 0, 40), Some((1, 1 << 40)));
    assert_eq!(r.totals(Kind::Collective, 2, 10), None);
}

#[test]
fn a_record_decodes_to_what_was_encoded() {
    let r = sample();
    assert_eq!(Recorder::decode(&r.encode()).unwrap(), r);
    let empty = Recorder::new(0, 1);
    assert_eq!(Recorder::decode(&empty.encode()).unwrap(), empty);
}

#[test]
fn a_record_cut_short_anywhere_is_refused_with_where() {
    let data = sample().encode();
    for len in 0..data.len() {
        let err = Recorder::decode(&data[..len]).unwrap_err().to_string();
        assert!(err.starts_with("pattern: record of"), "{len}: {err}");
        assert!(err.contains("cut short") || err.contains("ACP1"), "{err}");
    }
    let mut longer = data.clone();
    longer.push(0);
    let err = Recorder::decode(&longer).unwrap_err().to_string();
    assert!(err.contains("1 bytes after the last entry"), "{err}");
}

#[test]
fn a_damaged_record_is_refused() {
    let mut r = Recorder::new(0, 2);
    r.record(Kind::P2p, 5, 8);
    let err = Recorder::decode(&r.encode()).unwrap_err().to_string();
    assert!(err.contains("dst 5 is not below ranks 2"), "{err}");
    // "ACP1", rank 0, ranks 2, one entry: of kind 7.
    let mut data = Recorder::new(0, 2).encode();
    data[6] = 1;
    data.extend([7, 1, 3, 1, 8]);
    let err = Recorder::decode(&data).unwrap_err().to_string();
    assert!(err.contains("at byte 7: kind 7 is neither"), "{err}");
    data[7] = 0;
    assert_eq!(
        Recorder::decode(&data).unwrap().totals(Kind::P2p, 1, 3),
        Some((1, 8))
    );
    data[6] = 2;
    data.extend([0, 1, 3, 1, 8]);
    let err = Recorder::decode(&data).unwrap_err().to_string();
    assert!(
        err.contains("at byte 12: a second entry for P2p to rank 1 of class 3"),
        "{err}"
    );
    let mut huge = b"ACP1".to_vec();
    huge.extend([0xff; 9]);
    huge.push(2);
    let err = Recorder::decode(&huge).unwrap_err().to_string();
    assert!(err.contains("the rank is above 2^64"), "{err}");
}

#[test]
fn merge_sorts_every_rank_and_refuses_parts_that_do_not_fit() {
    let mut zero = Recorder::new(0, 3);
    zero.record(Kind::P2p, 2, 4);
    zero.record(Kind::P2p, 1, 4);
    zero.record(Kind::Collective, 1, 64);
    let p = Pattern::merge("local", 3, [sample(), zero.clone()]).unwrap();
    let keys: Vec<_> = p.p2p.iter().map(|e| (e.src, e.dst, e.class)).collect();
    assert_eq!(keys, [(0, 1, 2), (0, 2, 2), (1, 0, 0), (1, 2, 10)]);
    assert_eq!(p.collective.len(), 3);
    assert_eq!(
        (p.schema.as_str(), p.ranks, p.source.as_str()),
        (SCHEMA, 3, "local")
    );

    let err = Pattern::merge("x", 4, [zero.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rank 0 of 3 ranks do not fit a job of 4"),
        "{err}"
    );
    let err = Pattern::merge("x", 3, [zero.clone(), zero])
        .unwrap_err()
        .to_string();
    assert!(err.contains("rank 0 are given twice"), "{err}");
    let mut far = Recorder::new(1, 3);
    far.record(Kind::P2p, 3, 1);
    let err = Pattern::merge("x", 3, [far]).unwrap_err().to_string();
    assert!(err.contains("rank 1: dst 3 is not below ranks 3"), "{err}");
}

#[test]
fn a_written_pattern_reads_back_the_same() {
    let dir = temp("roundtrip");
    let path = dir.join("p.json");
    let p = Pattern::merge("tcp", 3, [sample()]).unwrap();
    p.write(&path).unwrap();
    assert_eq!(Pattern::read(&path).unwrap(), p);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\n    {\"src\":1,\"dst\":2,\"class\":10,\"count\":2,\"bytes\":1700}"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pattern_with_hosts_reads_back_the_same() {
    let hosts = ["a", "a", "b \"q\""].map(String::from).to_vec();
    let p = Pattern::merge("tcp", 3, [sample()])
        .unwrap()
        .with_hosts(hosts.clone())
        .unwrap();
    let text = p.to_json();
    assert!(
        text.contains("  \"source\": \"tcp\",\n  \"hosts\": [\"a\", \"a\", \"b \\\"q\\\"\"],\n"),
        "{text}"
    );
    let back = Pattern::parse(&text, "p.json").unwrap();
    assert_eq!((&back, &back.hosts), (&p, &hosts));
}

#[test]
fn a_file_without_hosts_reads_with_none() {
    let ok = r#"{"src":0,"dst":1,"class":3,"count":2,"bytes":12}"#;
    let p = Pattern::parse(&file_with(&[ok]), "p.json").unwrap();
    assert!(p.hosts.is_empty());
    assert!(!p.to_json().contains("hosts"), "{}", p.to_json());
}

#[test]
fn hosts_not_one_a_rank_are_refused_with_their_line() {
    let with = |hosts: &str| {
        file_with(&[]).replace("\"tcp\",\n", &format!("\"tcp\",\n  \"hosts\": {hosts},\n"))
    };
    assert_eq!(
        Pattern::parse(&with(r#"["a", "b"]"#), "p.json")
            .unwrap()
            .hosts,
        ["a", "b"]
    );
    let cases = [
        (r#"["a", "b", "c"]"#, "hosts: 3 names for 2 ranks"),
        ("[]", "hosts: 0 names for 2 ranks"),
        (r#"["a", ""]"#, "hosts: the host of rank 1 is empty"),
        (r#"["a", 2]"#, "invalid type"),
    ];
    for (hosts, what) in cases {
        let err = parse_error(&with(hosts));
        assert!(err.starts_with("p.json:5:") && err.contains(what), "{err}");
    }
    let p = Pattern::merge("x", 2, []).unwrap();
    let err = p.clone().with_hosts(vec!["a".into()]).unwrap_err();
    assert!(
        err.to_string().contains("hosts: 1 names for 2 ranks"),
        "{err}"
    );
    let mut kept = p.clone();
    assert!(kept.set_hosts(vec!["a".into(), String::new()]).is_err());
    assert_eq!(kept, p);
}

/// A file whose p2p list holds `entries`, one a line from line 6.
fn file_with(entries: &[&str]) -> String {
    format!(
        "{{\n  \"schema\": \"{SCHEMA}\",\n  \"ranks\": 2,\n  \"source\": \"tcp\",\n  \"p2p\": [\n    {}\n  ],\n  \"collective\": []\n}}\n",
        entries.join(",\n    ")
    )
}

fn parse_error(text: &str) -> String {
    match Pattern::parse(text, "p.json") {
        Err(e @ Error::BadFile { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn read_errors_name_the_file_line_and_column() {
    let ok = r#"{"src":0,"dst":1,"class":3,"count":2,"bytes":12}"#;
    assert_eq!(
        Pattern::parse(&file_with(&[ok]), "p.json")
            .unwrap()
            .p2p
            .len(),
        1
    );
    let cases = [
        (
            file_with(&[ok, r#"{"src":0,"dst":2,"class":3,"count":2,"bytes":12}"#]),
            "p.json:7: column 52: ",
            "p2p entry 2: dst 2 is not below ranks 2",
        ),
        (
            file_with(&[r#"{"src":0,"dst":1,"class":65,"count":1,"bytes":1}"#]),
            "p.json:6:",
            "class 65 is above 64",
        ),
        (
            file_with(&[r#"{"src":0,"dst":1,"class":3,"count":2,"bytes":99}"#]),
            "p.json:6:",
            "99 bytes cannot be 2 messages of class 3 (5 to 8 bytes each)",
        ),
        (
            file_with(&[r#"{"src":0,"dst":1,"class":3,"count":0,"bytes":0}"#]),
            "p.json:6:",
            "count 0",
        ),
        (
            file_with(&[ok, ok]),
            "p.json:7:",
            "p2p entry 2: src 0 dst 1 class 3 is there already",
        ),
        (
            file_with(&[r#"{"src":0,"dst":1,"class":3,"count":2}"#]),
            "p.json:6:",
            "missing field `bytes`",
        ),
        (
            file_with(&[ok]).replace(SCHEMA, "autocoll.pattern/2"),
            "p.json:2:",
            "schema `autocoll.pattern/2` is not autocoll.pattern/1",
        ),
        (
            file_with(&[ok]).replace("\"ranks\": 2", "\"ranks\": 0"),
            "p.json:3:",
            "ranks 0",
        ),
        (
            file_with(&[ok]).replace("12}", "12"),
            "p.json:7:",
            "column ",
        ),
        (
            file_with(&[ok]).replace("  ],\n  \"collective\": []\n", "  ]\n"),
            "p.json:",
            "missing field `collective`",
        ),
    ];
    for (text, at, what) in cases {
        let err = parse_error(&text);
        assert!(
            err.starts_with(at) && err.contains(what),
            "{err}\nwanted {at} … {what}"
        );
    }
}

#[test]
fn reading_a_missing_file_names_it() {
    let err = Pattern::read(std::path::Path::new("/nonexistent/p.json")).unwrap_err();
    assert!(
        err.to_string()
            .contains("reading pattern /nonexistent/p.json"),
        "{err}"
    );
}

/// Counts only what reaches the transport: `Recording` delegates
/// everything, and skips the gathering's tag.
#[test]
fn recording_counts_sends_by_tag_under_world_ranks() {
    let recorder = Arc::new(Mutex::new(Recorder::new(0, 4)));
    let mut ts = local::transports(2);
    let peer = ts.pop().unwrap();
    let inner = Box::new(ts.pop().unwrap());
    let mut t = Recording::new(inner, recorder.clone(), Some(vec![3, 1]));
    assert_eq!((t.rank(), t.size(), t.kind()), (0, 2, "local"));
    t.send(1, Tag::user(5), Bytes::from_static(b"hello"))
        .unwrap();
    t.send(1, Tag::user(GATHER_TAG), Bytes::from_static(b"not counted"))
        .unwrap();
    t.send(0, Tag::user(5), Bytes::new()).unwrap();
    assert!(t.send(2, Tag::user(5), Bytes::new()).is_err());
    assert_eq!(t.recv(0, Tag::user(5)).unwrap().len(), 0);
    drop(peer);
    let r = recorder.lock().unwrap();
    assert_eq!(r.totals(Kind::P2p, 1, 3), Some((1, 5)));
    assert_eq!(r.totals(Kind::P2p, 3, 0), Some((1, 0)));
    assert_eq!(r.counts.len(), 2);
}

/// The ring of a local job: every rank sends 100 bytes to the next, then
/// rank 0 broadcasts; the file holds exactly the ring.
#[test]
fn a_local_job_writes_its_pattern_when_dropped() {
    let dir = temp("job");
    let path = dir.join("sub/ring.json");
    local::run(3, |mut comm: Communicator| {
        comm.record_pattern(&path).unwrap();
        let (rank, size) = (comm.rank(), comm.size());
        comm.send_bytes((rank + 1) % size, 7, Bytes::from(vec![1u8; 100]))
            .unwrap();
        comm.recv_bytes((rank + size - 1) % size, 7).unwrap();
        comm.bcast(&mut [0u64; 4], 0).unwrap();
    });
    let p = Pattern::read(&path).unwrap();
    let ring: Vec<_> = (0..3)
        .map(|src| Entry {
            src,
            dst: (src + 1) % 3,
            class: 7,
            count: 1,
            bytes: 100,
        })
        .collect();
    assert_eq!((p.ranks, p.source.as_str(), p.p2p), (3, "local", ring));
    assert!(p.collective.iter().any(|e| e.src == 0 && e.class == 5));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_local_job_s_pattern_holds_the_transport_s_hosts() {
    let dir = temp("hosts");
    let path = dir.join("hosts.json");
    local::run(3, |mut comm: Communicator| {
        comm.record_pattern(&path).unwrap();
    });
    let hosts = Pattern::read(&path).unwrap().hosts;
    assert_eq!(hosts.len(), 3);
    assert_eq!(hosts, local::transports(3)[0].hosts());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_path_rank_0_cannot_write_fails_on_every_rank() {
    let dir = temp("unwritable");
    let blocker = dir.join("file");
    std::fs::write(&blocker, b"").unwrap();
    let errors = local::run(2, |mut comm: Communicator| {
        comm.record_pattern(blocker.join("p.json"))
            .unwrap_err()
            .to_string()
    });
    assert!(
        errors[0].contains("cannot create its directory"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("rank 0 cannot write it"),
        "{}",
        errors[1]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
