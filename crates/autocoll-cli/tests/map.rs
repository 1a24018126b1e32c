//! `autocoll map`: the command on a cluster spec and on a
//! topology file, the files it writes, `autocoll launch` placing ranks by
//! its hostfile, and bad input.

mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::Cluster;

const AUTOCOLL: &str = env!("CARGO_BIN_EXE_autocoll");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("autocoll-map-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn map(args: &[&str], dir: &Path) -> Output {
    Command::new(AUTOCOLL)
        .arg("map")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Whether Debian's `scotch_gmap` is installed; CI (which installs it
/// through scripts/ci-deps) must have it.
fn have_scotch() -> bool {
    let found = Command::new("scotch_gmap")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || std::env::var_os("CI").is_none(),
        "CI must have scotch_gmap (scripts/ci-deps installs Debian's scotch)"
    );
    found
}

/// Each rank's host under the first method of a `--json` report.
fn first_hosts(json: &Path) -> Vec<String> {
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    report["methods"][0]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect()
}

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
        .display()
        .to_string()
}

/// A ladder of 2 × 8 ranks as a pattern file: rank r's partner on the
/// other side is r + 8 (the steps, 75% more bytes than the sides), its
/// neighbours on its side r ± 1. Linear placement puts every step across
/// hosts.
fn ladder(path: &Path) {
    let mut p2p = Vec::new();
    let mut add = |src: usize, dst: usize, bytes: u64| {
        let count = 100;
        let class = 64 - (bytes / count - 1).leading_zeros();
        p2p.push(format!(
            r#"{{"src":{src},"dst":{dst},"class":{class},"count":{count},"bytes":{bytes}}}"#
        ));
    };
    for r in 0..8 {
        add(r, r + 8, 175 * 65536);
        add(r + 8, r, 175 * 65536);
        if r + 1 < 8 {
            for (a, b) in [(r, r + 1), (r + 8, r + 9)] {
                add(a, b, 100 * 65536);
                add(b, a, 100 * 65536);
            }
        }
    }
    let doc = format!(
        r#"{{"schema":"autocoll.pattern/1","ranks":16,"source":"tcp","p2p":[{}],"collective":[]}}"#,
        p2p.join(",")
    );
    std::fs::write(path, doc).unwrap();
}

#[test]
fn map_on_the_two_subnet_cluster_writes_a_rankfile_that_beats_linear() {
    let dir = scratch("twosub");
    ladder(&dir.join("ladder.json"));
    let spec = repo("clusters/two-subnet.toml");
    let out = map(
        &[
            "--topology",
            &spec,
            "--pattern",
            "ladder.json",
            "--rankfile",
            "ranks.txt",
            "--machinefile",
            "machines.txt",
            "--json",
            "map.json",
            "--samples",
            "200",
            "--search-time",
            "5",
            "--search-evaluations",
            "2000",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for method in ["linear", "greedy", "search", "random"] {
        assert!(stdout.contains(method), "{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("map.json")).unwrap()).unwrap();
    assert_eq!(report["schema"], "autocoll.map/1");
    let methods = report["methods"].as_array().unwrap();
    let cost = |m: &str| {
        methods.iter().find(|o| o["method"] == m).unwrap()["seconds"]
            .as_f64()
            .unwrap()
    };
    // Every step across hosts under linear; greedy puts the steps on
    // hosts, the search is no worse.
    assert!(cost("greedy") < cost("linear"), "{report}");
    assert!(cost("search") <= cost("greedy"), "{report}");
    // Scotch ran on the same inputs, and our best is no worse.
    if have_scotch() {
        assert!(cost("search") <= cost("scotch") * 1.000001, "{report}");
    } else {
        eprintln!("scotch_gmap not installed: Scotch not compared");
    }
    let chosen = report["chosen"].as_str().unwrap();
    assert_ne!(chosen, "linear", "{report}");
    let chosen = methods.iter().find(|o| o["method"] == chosen).unwrap();
    let hosts: Vec<&str> = chosen["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let rankfile = std::fs::read_to_string(dir.join("ranks.txt")).unwrap();
    let mut places = HashSet::new();
    for (rank, line) in rankfile.lines().enumerate() {
        let (head, slot) = line.split_once(" slot=").unwrap();
        assert_eq!(head, format!("rank {rank}={}", hosts[rank]), "{rankfile}");
        assert!(places.insert((hosts[rank], slot.to_string())), "{rankfile}");
    }
    assert_eq!(places.len(), 16);
    let machines = std::fs::read_to_string(dir.join("machines.txt")).unwrap();
    let expected: String = hosts.iter().map(|h| format!("{h}:1\n")).collect();
    assert_eq!(machines, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Three loopback hosts of two processing elements; ranks 0 and 3 talk,
/// 1 and 2, 4 and 5: the hostfile `map` writes places each pair on one
/// host, and `autocoll launch` runs every rank where the mapping says.
#[test]
fn launch_places_every_rank_on_the_host_of_a_mapped_hostfile() {
    let dir = scratch("launch");
    let mut topology = String::from("schema = \"autocoll.topology/1\"\nname = \"lo\"\n");
    topology += "[[element]]\nname = \"sw\"\n";
    for h in ["a", "b", "c"] {
        topology += &format!(
            "[[element]]\nname = \"{h}\"\nparent = \"sw\"\nlink = \"100mbit\"\npes = 2\npe_link = \"2GB/s\"\naddr = \"127.0.0.1\"\n"
        );
    }
    std::fs::write(dir.join("lo.toml"), topology).unwrap();
    std::fs::write(
        dir.join("pairs.csv"),
        "src,dst,count,bytes\n0,3,10,10000\n3,0,10,10000\n1,2,10,10000\n2,1,10,10000\n4,5,10,10000\n5,4,10,10000\n",
    )
    .unwrap();
    let out = map(
        &[
            "--topology",
            "lo.toml",
            "--pattern",
            "pairs.csv",
            "--method",
            "greedy",
            "--hostfile",
            "hosts.txt",
            "--json",
            "map.json",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hosts = first_hosts(&dir.join("map.json"));
    for (a, b) in [(0, 3), (1, 2), (4, 5)] {
        assert_eq!(hosts[a], hosts[b], "{hosts:?}");
    }
    let out = Command::new(AUTOCOLL)
        .args(["launch", "-n", "6", "--timeout", "30", "--hostfile"])
        .arg(dir.join("hosts.txt"))
        .args([
            "--",
            "sh",
            "-c",
            "echo placed $AUTOCOLL_RANK $AUTOCOLL_HOST",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut seen = 0;
    // Launch prefixes every line with `[rank N] `.
    for line in stdout.lines().filter_map(|l| l.split_once("placed ")) {
        let words: Vec<&str> = line.1.split_whitespace().collect();
        let rank: usize = words[0].parse().unwrap();
        assert!(line.0.contains(&format!("[rank {rank}]")), "{stdout}");
        assert_eq!(words[1], hosts[rank], "{stdout}");
        seen += 1;
    }
    assert_eq!(seen, 6, "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_topologies_and_patterns_are_refused_naming_the_file_and_line() {
    let dir = scratch("bad");
    std::fs::write(
        dir.join("t.toml"),
        "schema = \"autocoll.topology/1\"\nname = \"x\"\n[[element]]\nname = \"top\"\n[[element]]\nname = \"h\"\nparent = \"top\"\nlink = \"fast\"\npes = 1\npe_link = \"1GB/s\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("p.csv"),
        "src,dst,count,bytes\n0,1,1,10\n1,x,1,10\n",
    )
    .unwrap();
    std::fs::write(dir.join("big.csv"), "src,dst,count,bytes\n0,99,1,10\n").unwrap();
    let spec = repo("clusters/two-subnet.toml");
    for (args, says) in [
        (
            vec!["--topology", "t.toml", "--pattern", "p.csv"],
            "t.toml:8: `fast`",
        ),
        (
            vec!["--topology", &spec, "--pattern", "p.csv"],
            "p.csv:3: `x` is not a rank",
        ),
        (
            vec!["--topology", &spec, "--pattern", "big.csv"],
            "the pattern has 100 ranks, the topology `twosub` 16 processing elements",
        ),
        (
            vec!["--topology", "none.toml", "--pattern", "p.csv"],
            "reading topology none.toml",
        ),
        (vec!["--topology", &spec], "give --pattern"),
    ] {
        let out = map(&args, &dir);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--method scotch`: our graph and target go through Debian's
/// `scotch_gmap` and its mapping comes back as a rankfile, every rank on a
/// processing element of its own.
#[test]
fn scotch_gmap_takes_our_files_and_its_mapping_is_read_back() {
    if !have_scotch() {
        eprintln!("scotch_gmap not installed: skipped");
        return;
    }
    let dir = scratch("scotch");
    ladder(&dir.join("ladder.json"));
    let spec = repo("clusters/two-subnet.toml");
    let out = map(
        &[
            "--topology",
            &spec,
            "--pattern",
            "ladder.json",
            "--method",
            "scotch",
            "--rankfile",
            "ranks.txt",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("scotch"),
        "{}",
        text(&out.stdout)
    );
    let rankfile = std::fs::read_to_string(dir.join("ranks.txt")).unwrap();
    let places: HashSet<&str> = rankfile
        .lines()
        .map(|l| l.split_once('=').unwrap().1)
        .collect();
    assert_eq!(places.len(), 16, "{rankfile}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Under real `mpirun` on the emulated two-subnet cluster (as root): the
/// rankfile `map` writes puts every rank on its host. Ranks r and 15 − r
/// talk, so the greedy mapping is not the linear one.
#[test]
fn mpirun_places_every_rank_on_the_host_of_the_rankfile() {
    if let Some(why) = support::cannot_make_clusters() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = scratch("rankfile");
    let cluster = Cluster::up("clusters/two-subnet.toml", dir.join("cluster"));
    let mut csv = String::from("src,dst,count,bytes\n");
    for r in 0..16 {
        csv += &format!("{r},{},10,100000\n", 15 - r);
    }
    std::fs::write(dir.join("pairs.csv"), csv).unwrap();
    let spec = cluster.spec().display().to_string();
    let out = map(
        &[
            "--topology",
            &spec,
            "--pattern",
            "pairs.csv",
            "--method",
            "greedy",
            "--rankfile",
            "ranks.txt",
            "--json",
            "map.json",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hosts = first_hosts(&dir.join("map.json"));
    assert_eq!(hosts[0], hosts[15], "{hosts:?}");
    // Open MPI's daemons on the emulated hosts share one hostname and
    // /tmp, and one now and then fails to make its session directory: a
    // job that fails to start is tried again, twice.
    let run = || {
        Command::new(cluster.dir().join("mpirun"))
            .arg("--rankfile")
            .arg(dir.join("ranks.txt"))
            .args([
                "-n",
                "16",
                "sh",
                "-c",
                "echo placed $OMPI_COMM_WORLD_RANK $AUTOCOLL_HOST",
            ])
            .output()
            .unwrap()
    };
    let mut out = run();
    for _ in 0..2 {
        if out.status.success() {
            break;
        }
        out = run();
    }
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut seen = HashSet::new();
    for line in stdout.lines().filter_map(|l| l.strip_prefix("placed ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let rank: usize = words[0].parse().unwrap();
        assert_eq!(words[1], hosts[rank], "rank {rank}: {stdout}");
        seen.insert(rank);
    }
    assert_eq!(seen.len(), 16, "{stdout}");
    drop(cluster);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--host-inside FILE`: a saved hwloc line arranges each host's four
/// processing elements as 2 packages × 2 cores; the topology written has
/// the elements inside, the rankfile still names the hosts; a line that
/// does not fit the hosts is refused naming both.
#[test]
fn the_inside_of_a_host_comes_from_a_saved_hwloc_line() {
    let dir = scratch("hwloc");
    let mut topology = String::from("schema = \"autocoll.topology/1\"\nname = \"four\"\n");
    topology += "[[element]]\nname = \"sw\"\n";
    for h in ["a", "b"] {
        topology += &format!(
            "[[element]]\nname = \"{h}\"\nparent = \"sw\"\nlink = \"100mbit\"\npes = 4\npe_link = \"2GB/s\"\n"
        );
    }
    std::fs::write(dir.join("four.toml"), topology).unwrap();
    std::fs::write(
        dir.join("inside.txt"),
        "Package:2 [NUMANode(memory=1)] Core:2 PU:1\n",
    )
    .unwrap();
    std::fs::write(dir.join("wrong.txt"), "Package:2 Core:4\n").unwrap();
    std::fs::write(dir.join("p.csv"), "src,dst,count,bytes\n0,7,1,100\n").unwrap();
    let out = map(
        &[
            "--topology",
            "four.toml",
            "--host-inside",
            "inside.txt",
            "--write-topology",
            "inside.toml",
            "--pattern",
            "p.csv",
            "-n",
            "8",
            "--method",
            "linear",
            "--rankfile",
            "ranks.txt",
            "--json",
            "map.json",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hosts = first_hosts(&dir.join("map.json"));
    assert_eq!(hosts, ["a", "a", "a", "a", "b", "b", "b", "b"]);
    let written = std::fs::read_to_string(dir.join("inside.toml")).unwrap();
    assert!(written.contains("name = \"b.Package1\""), "{written}");
    assert!(written.contains("host = \"b\""), "{written}");
    let rankfile = std::fs::read_to_string(dir.join("ranks.txt")).unwrap();
    let expected: String = (0..8)
        .map(|r| format!("rank {r}={} slot={}\n", ["a", "b"][r / 4], r % 4))
        .collect();
    assert_eq!(rankfile, expected);
    let out = map(
        &[
            "--topology",
            "four.toml",
            "--host-inside",
            "wrong.txt",
            "--pattern",
            "p.csv",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("host `a` has 4 processing elements, hwloc's levels hold 8"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `map probe` of the cluster `spec` (its directory `cluster` in `dir`),
/// writing measured.toml, probe.json and figure1.svg into `dir`.
fn probe(spec: &str, dir: &Path) -> Output {
    map(
        &[
            "probe",
            "--topology",
            spec,
            "--cluster-dir",
            "cluster",
            "--lengths",
            "1K,256K,1M",
            "--stream-lengths",
            "256K,1M",
            "--reps",
            "2",
            "--out",
            "measured.toml",
            "--json",
            "probe.json",
            "--plot",
            "figure1.svg",
        ],
        dir,
    )
}

/// The Mbit/s of a measured link's last upward point.
fn sustained(v: &toml::Value) -> f64 {
    let up = v["up"].as_array().unwrap();
    let last = up.last().unwrap().as_array().unwrap();
    last[1].as_float().unwrap() * 8.0 / 1e6
}

/// `map probe` on the emulated two-subnet cluster: one rank per slot, the
/// measured topology read back by `map` and written again unchanged, its
/// host links near the 100 Mbit/s the cluster's token buckets allow (a
/// probe that measured something else, or nothing, fails), memory faster
/// than any link, the JSON with every curve and Figure 1 as SVG. Without
/// an agent and on several hosts it says what to give.
#[test]
fn the_probe_measures_the_emulated_links_into_a_topology_file() {
    if let Some(why) = support::cannot_make_clusters() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = scratch("probe");
    let cluster = Cluster::up("clusters/two-subnet.toml", dir.join("cluster"));
    let spec = cluster.spec().display().to_string();
    let lonely = map(
        &["probe", "--topology", &spec, "--cluster-dir", "nowhere"],
        &dir,
    );
    assert_eq!(lonely.status.code(), Some(2));
    assert!(
        text(&lonely.stderr).contains("give --agent"),
        "{}",
        text(&lonely.stderr)
    );
    let out = probe(&spec, &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("probe.json")).unwrap()).unwrap();
    assert_eq!(json["curves"].as_array().unwrap().len(), 48);
    let file: toml::Table = std::fs::read_to_string(dir.join("measured.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let elements = file["element"].as_array().unwrap();
    for e in elements.iter().filter(|e| e.get("pes").is_some()) {
        let link = sustained(&e["link"]);
        assert!(
            (50.0..=105.0).contains(&link),
            "{}: {link} Mbit/s",
            e["name"]
        );
        assert!(sustained(&e["pe_link"]) > 3.0 * link, "{}", e["name"]);
    }
    assert!(std::fs::read_to_string(dir.join("figure1.svg"))
        .unwrap()
        .starts_with("<svg"));
    let mapped = map(
        &[
            "--topology",
            "measured.toml",
            "--write-topology",
            "again.toml",
        ],
        &dir,
    );
    assert!(mapped.status.success(), "{}", text(&mapped.stderr));
    // The measured file round-trips: read and written again, unchanged.
    assert_eq!(
        std::fs::read_to_string(dir.join("again.toml")).unwrap(),
        std::fs::read_to_string(dir.join("measured.toml")).unwrap()
    );
    drop(cluster);
    std::fs::remove_dir_all(&dir).unwrap();
}
