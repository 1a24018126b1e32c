use super::*;

fn header() -> Header {
    Header {
        schema: SCHEMA.into(),
        run: "0123456789abcdef0123456789abcdef".into(),
        rank: 1,
        size: 3,
        host: "h1".into(),
        transport: "local".into(),
        clock: "00".repeat(16),
        shared_clock: false,
        offset: Some(ClockOffset {
            start: OffsetSample {
                at_ns: 1_000,
                offset_ns: -500,
                rtt_ns: 40,
            },
            end: Some(OffsetSample {
                at_ns: 11_000,
                offset_ns: -400,
                rtt_ns: 30,
            }),
        }),
        impls: vec!["bcast:binomial".into(), "allreduce:ring".into()],
        trees: vec![TreePlace {
            parent: Some(0),
            children: vec![2],
        }],
        calls: 0,
        events: 0,
        dropped_calls: 2,
        dropped_events: 9,
        capacity_events: 1024,
        autocoll: "0.1.0".into(),
    }
}

fn ev(time_ns: u64, stage: Stage, peer: u16) -> Event {
    Event {
        time_ns,
        segment: 3,
        peer,
        stage,
        phase: 1,
    }
}

fn calls() -> Vec<Call> {
    vec![
        Call {
            seq: 7,
            op: Collective::Bcast,
            bytes: 65536,
            root: 0,
            imp: 0,
            tree: 0,
            events: vec![
                ev(100, Stage::Enter, NO_PEER),
                ev(150, Stage::Received, 0),
                ev(160, Stage::Sent, 2),
                ev(170, Stage::Done, NO_PEER),
            ],
        },
        Call {
            seq: 8,
            op: Collective::Allreduce,
            bytes: 8,
            root: 0,
            imp: 1,
            tree: NO_TREE,
            events: vec![],
        },
    ]
}

fn read_all(bytes: &[u8]) -> Result<(Header, Vec<Call>)> {
    let mut r = Reader::new(Path::new("t.trace"), bytes)?;
    let mut out = Vec::new();
    while let Some(c) = r.next_call()? {
        out.push(c);
    }
    Ok((r.header().clone(), out))
}

#[test]
fn a_file_reads_back_as_written() {
    let bytes = encode(&header(), &calls());
    let (h, got) = read_all(&bytes).unwrap();
    assert_eq!(got, calls());
    assert_eq!((h.calls, h.events), (2, 4));
    assert_eq!(
        bytes.len(),
        bytes.iter().position(|&b| b == b'\n').unwrap()
            + 1
            + 2 * CALL_BYTES
            + 4 * EVENT_BYTES
            + TRAILER_BYTES
    );
}

#[test]
fn a_file_cut_anywhere_is_refused_with_the_offset() {
    let bytes = encode(&header(), &calls());
    for cut in 0..bytes.len() {
        let err = read_all(&bytes[..cut]).unwrap_err().to_string();
        assert!(err.starts_with("t.trace: at byte "), "cut at {cut}: {err}");
    }
}

#[test]
fn a_damaged_byte_is_refused() {
    let bytes = encode(&header(), &calls());
    for at in 0..bytes.len() - TRAILER_BYTES {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        let err = read_all(&bad).unwrap_err().to_string();
        assert!(err.contains("t.trace: at byte "), "flip at {at}: {err}");
    }
}

#[test]
fn headers_of_other_files_are_refused() {
    let err = read_all(b"{\"schema\":\"autocoll.bench/1\"}\n").unwrap_err();
    assert!(
        err.to_string().contains("not autocoll.trace/1 JSON"),
        "{err}"
    );
    let mut h = header();
    h.schema = "autocoll.trace/9".into();
    let err = read_all(&encode(&h, &[])).unwrap_err();
    assert!(
        err.to_string().contains("schema `autocoll.trace/9`"),
        "{err}"
    );
}

#[test]
fn the_offset_is_interpolated_between_its_samples() {
    let off = header().offset.unwrap();
    assert_eq!(off.at(1_000), -500);
    assert_eq!(off.at(6_000), -450);
    assert_eq!(off.at(11_000), -400);
    let start_only = ClockOffset { end: None, ..off };
    assert_eq!(start_only.at(50_000), -500);
}
