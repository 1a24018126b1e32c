//! Placement, topology and pattern files.

use super::*;

#[test]
fn the_placement_files_name_each_ranks_host_and_slot() {
    let mut t = star(2, 2, Link::flat(100.0), None).elements().to_vec();
    t[1].addr = Some("10.0.0.1".into());
    let t = Topology::new("s", t).unwrap();
    let m = Mapping::new(vec![3, 0, 1], 4).unwrap();
    assert_eq!(
        m.rankfile(&t),
        "rank 0=h1 slot=1\nrank 1=h0 slot=0\nrank 2=h0 slot=1\n"
    );
    assert_eq!(m.machinefile(&t), "h1:1\nh0:1\nh0:1\n");
    assert_eq!(
        m.hostfile(&t),
        "h1 slots=1 switch=top\nh0 slots=1 addr=10.0.0.1 switch=top\nh0 slots=1 addr=10.0.0.1 switch=top\n"
    );
    assert!(Mapping::new(vec![1, 1], 4).is_err());
    assert!(Mapping::new(vec![4], 4).is_err());
}

#[test]
fn a_topology_file_round_trips_with_tables_and_measured_rates() {
    let measured = Link {
        up: Table::new(vec![(1, 12345.678), (65536, 1.1e7)]).unwrap(),
        down: Table::new(vec![(1, 9000.5), (1024, 1e6), (1 << 20, 1.2e7)]).unwrap(),
        max_up: 1.25e7,
        max_down: 2.0e7,
    };
    let mut elements = star(2, 2, measured, Some(1.25e9)).elements().to_vec();
    elements[2].addr = Some("10.1.2.3".into());
    let t = Topology::new("round trip", elements).unwrap();
    let text = t.to_toml();
    let back = Topology::parse(&text, "t.toml").unwrap();
    assert_eq!(back, t, "{text}");
    assert!(text.contains("max = \"10gbit\""), "{text}");
    let flat = star(1, 1, Link::flat(12.5e6), None).to_toml();
    assert!(flat.contains("link = \"100mbit\""), "{flat}");
    assert_eq!(Topology::parse(&flat, "f").unwrap().to_toml(), flat);
}

#[test]
fn bad_topology_files_name_the_line_and_the_reason() {
    let head = "schema = \"autocoll.topology/1\"\nname = \"x\"\n[[element]]\nname = \"top\"\n";
    for (tail, line, says) in [
        ("[[element]]\nname = \"h\"\nparent = \"nope\"\nlink = \"1mbit\"\n", 7, "no element is named `nope`"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlink = \"1 furlong\"\n", 8, "unknown unit"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\npes = 2\nlink = \"1mbit\"\n", 5, "needs a pe_link"),
        ("[[element]]\nname = \"top\"\n", 6, "named twice"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlink = { up = [[1, \"1mbit\"]] }\n", 8, "needs `down`"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlink = { up = [[4, 1.0], [2, 1.0]], down = [[1, 1.0]] }\n", 8, "must increase"),
        ("[[element]]\nname = \"h\"\nparent = \"top\"\nlinks = 3\n", 8, "unknown field"),
        ("pes = [\n", 5, ""),
    ] {
        let text = format!("{head}{tail}");
        let err = Topology::parse(&text, "t.toml").unwrap_err().to_string();
        assert!(err.starts_with(&format!("t.toml:{line}:")), "{err}\n{text}");
        assert!(err.contains(says), "{err}");
    }
    let err = Topology::parse(head, "t.toml").unwrap_err().to_string();
    assert!(err.contains("at least one processing element"), "{err}");
    let err = Topology::parse("schema = \"other\"\nname = \"x\"\n", "t.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("t.toml:1:") && err.contains("expected `autocoll.topology/1`"),
        "{err}"
    );
}

#[test]
fn patterns_are_read_as_json_a_matrix_or_a_list_and_bad_lines_are_named() {
    let dir = std::env::temp_dir().join(format!("autocoll-map-traffic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("p.json");
    std::fs::write(
        &json,
        r#"{"schema":"autocoll.pattern/1","ranks":3,"source":"tcp",
            "p2p":[{"src":0,"dst":1,"class":10,"count":2,"bytes":2000}],
            "collective":[{"src":0,"dst":2,"class":8,"count":1,"bytes":256}]}"#,
    )
    .unwrap();
    let p2p = Traffic::read(&json, Which::P2p).unwrap();
    assert_eq!(p2p.ranks(), 3);
    assert_eq!(p2p.pairs(), [(0, 1, 2000.0)]);
    let all = Traffic::read(&json, Which::All).unwrap();
    assert_eq!(all.pairs(), [(0, 1, 2000.0), (0, 2, 256.0)]);
    assert_eq!(all.sent_by(0)[0].bytes, 1000.0);
    std::fs::remove_dir_all(&dir).unwrap();

    let matrix = Traffic::parse_csv("# bytes\n0,10,0\n10,0,5\n0,0,0\n", "m.csv").unwrap();
    assert_eq!(matrix.pairs(), [(0, 1, 20.0), (1, 2, 5.0)]);
    let list = Traffic::parse_csv("src,dst,count,bytes\n0,3,4,4096\n", "l.csv").unwrap();
    assert_eq!(list.ranks(), 4);
    assert_eq!(list.sent_by(0)[0].bytes, 1024.0);
    for (text, says) in [
        ("0,1\n1,0\n0,0\n", "m.csv:1: 2 fields, expected 3"),
        ("0,x\n1,0\n", "m.csv:1: `x` is not a byte count"),
        (
            "src,dst,count,bytes\n0,1,2\n",
            "m.csv:2: 3 fields, expected 4",
        ),
        (
            "src,dst,count,bytes\n0,1,0,9\n",
            "m.csv:2: 9 bytes in no message",
        ),
        ("\n# nothing\n", "no traffic"),
    ] {
        let err = Traffic::parse_csv(text, "m.csv").unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}
