use super::*;

const TABLE: &str = r#"schema = "autocoll.tuning/1"
[[rule]]
op = "bcast"
ranks = "2..4"
bytes = "0..8K"
impl = "bcast:binomial"
[[rule]]
op = "bcast"
ranks = "2..4"
bytes = "8193..8M"
impl = "bcast:chain:seg=16K"
[[rule]]
op = "bcast"
ranks = "5..8"
bytes = "0..8M"
impl = "bcast:knomial:k=4"
[[rule]]
op = "allreduce"
ranks = "2..8"
bytes = "0..4K"
impl = "allreduce:recursive-doubling"
[[rule]]
op = "allreduce"
ranks = "2..8"
bytes = "4097..8M"
impl = "allreduce:ring"
[[rule]]
op = "allgather"
ranks = "4..8"
bytes = "0..1K"
impl = "allgather:recursive-doubling"
[[rule]]
op = "allgather"
ranks = "4..8"
bytes = "1025..1M"
impl = "allgather:ring"
[[rule]]
op = "scatter"
ranks = "2..8"
bytes = "0..1K"
impl = "scatter:flat"
[[rule]]
op = "scatter"
ranks = "2..8"
bytes = "1025..1M"
impl = "scatter:binomial:seg=4K"
[[rule]]
op = "barrier"
ranks = "2..8"
bytes = "0..0"
impl = "barrier:dissemination"
"#;

/// Open MPI 4.1's reading of a classic rules file: per collective id, the
/// sections (size, [(msg, alg, faninout, seg)]).
type Sections = Vec<(usize, Vec<[usize; 4]>)>;

fn read_ompi(text: &str) -> std::collections::HashMap<usize, Sections> {
    let mut nums = text
        .lines()
        .filter(|l| !l.starts_with("rule-file-version"))
        .flat_map(|l| l.split('#').next().unwrap().split_whitespace())
        .map(|t| t.parse::<usize>().unwrap());
    let mut next = || nums.next().expect("file ends early");
    let mut out = std::collections::HashMap::new();
    for _ in 0..next() {
        let id = next();
        let mut sections = Vec::new();
        for _ in 0..next() {
            let size = next();
            let rules: Vec<[usize; 4]> = (0..next())
                .map(|_| [next(), next(), next(), next()])
                .collect();
            assert_eq!(rules[0][0], 0, "the first message size of a section is 0");
            assert!(rules.windows(2).all(|w| w[0][0] < w[1][0]), "ascending");
            sections.push((size, rules));
        }
        out.insert(id, sections);
    }
    out
}

fn ompi_lookup(sections: &Sections, p: usize, msg: usize) -> [usize; 4] {
    let (_, rules) = sections.iter().rfind(|(s, _)| *s <= p).expect("a section");
    *rules.iter().rfind(|r| r[0] <= msg).unwrap()
}

#[test]
fn ompi_file_selects_each_winner_as_open_mpi_reads_it() {
    let table = Table::parse(TABLE, "t").unwrap();
    let file = read_ompi(&to_ompi(&table, 1));
    for op in [
        Collective::Bcast,
        Collective::Allreduce,
        Collective::Allgather,
    ] {
        let sections = &file[&(ompi_coll_id(op) as usize)];
        for p in 4..=8 {
            for bytes in [
                0,
                1,
                100,
                1024,
                1025,
                4096,
                4097,
                8192,
                8193,
                65536,
                1 << 20,
            ] {
                let Some(imp) = table.lookup(op, p, bytes) else {
                    continue;
                };
                let (alg, _, fan, seg) = ompi_algorithm(imp);
                let got = ompi_lookup(sections, p, ompi_msg_size(op, p, bytes));
                assert_eq!(
                    got[1..],
                    [alg as usize, fan, seg],
                    "{op} p={p} bytes={bytes} ({imp})"
                );
            }
        }
    }
    // Scatter: one rule per size, the winner of the largest message.
    let scatter = &file[&15];
    assert_eq!(ompi_lookup(scatter, 5, 5)[1], 2);
    assert_eq!(
        ompi_lookup(&file[&6], 3, 0)[1],
        4,
        "dissemination is Open MPI's bruck barrier"
    );
}

#[test]
fn ompi_format_2_has_the_header_and_a_fifth_field() {
    let table = Table::parse(TABLE, "t").unwrap();
    let text = to_ompi(&table, 2);
    assert!(text.starts_with("rule-file-version-2\n"));
    let rule = text
        .lines()
        .find(|l| l.contains("<- bcast:chain:seg=16K"))
        .unwrap();
    let fields: Vec<&str> = rule.split('#').next().unwrap().split_whitespace().collect();
    assert_eq!(fields, ["8193", "3", "0", "16384", "0"]);
}

/// MPICH's evaluation of our keys: the first key of a level that matches.
fn mpich_eval(node: &Value, p: usize, bytes: usize) -> &Value {
    let obj = node.as_object().unwrap();
    if obj
        .keys()
        .any(|k| k.starts_with("algorithm=") || k.starts_with("is_op_built_in"))
    {
        return node;
    }
    for (key, child) in obj {
        let hit = match key.split_once("<=") {
            Some(("comm_size", n)) => p <= n.parse().unwrap(),
            Some(("avg_msg_size", n)) => bytes <= n.parse().unwrap(),
            Some(("total_msg_size", n)) => p * bytes <= n.parse().unwrap(),
            _ => key.ends_with("=any"),
        };
        if hit {
            return mpich_eval(child, p, bytes);
        }
    }
    panic!("no key matches p={p} bytes={bytes} in {node}");
}

#[test]
fn mpich_file_covers_every_blocking_collective_and_selects_each_winner() {
    let table = Table::parse(TABLE, "t").unwrap();
    let doc: Value = serde_json::from_str(&to_mpich(&table)).unwrap();
    for name in [
        "allgather",
        "allgatherv",
        "allreduce",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "barrier",
        "bcast",
        "exscan",
        "gather",
        "gatherv",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_block",
        "scan",
        "scatter",
        "scatterv",
        "neighbor_allgather",
        "neighbor_allgatherv",
        "neighbor_alltoall",
        "neighbor_alltoallv",
        "neighbor_alltoallw",
    ] {
        assert!(
            doc.get(format!("collective={name}")).is_some(),
            "{name} missing"
        );
    }
    for op in [
        Collective::Bcast,
        Collective::Allreduce,
        Collective::Allgather,
    ] {
        let intra = &doc[format!("collective={op}")]["comm_type=intra"];
        // Totals are exact at each section's largest size.
        let sizes: Vec<usize> = if op == Collective::Allgather {
            vec![8]
        } else {
            (2..=8).collect()
        };
        for p in sizes {
            for bytes in [0, 1024, 4096, 4097, 8193, 1 << 20] {
                let Some(imp) = table.lookup(op, p, bytes) else {
                    continue;
                };
                assert_eq!(
                    mpich_eval(intra, p, bytes),
                    &mpich_algorithm(imp),
                    "{op} p={p} bytes={bytes}"
                );
            }
        }
    }
    // Every algorithm named exists in MPICH 4.0 (the names its library carries).
    let text = to_mpich(&table);
    for name in text
        .split("algorithm=")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
    {
        assert!(
            name.starts_with("MPIR_")
                && (name.contains("_intra_")
                    || name.contains("_inter_")
                    || name.contains("_allcomm_")),
            "{name}"
        );
    }
}

/// MPICH takes the first key of a level that matches, in the file's order:
/// the keys must come out in ascending order of their bounds, not sorted as
/// text (`comm_size<=15` before `comm_size<=3`, `avg_msg_size<=1073741824`
/// before `<=4095`: a 2-rank 1 KiB bcast then ran the rule of 4–15 ranks
/// above 4 KiB).
#[test]
fn mpich_keys_come_in_the_order_of_their_bounds() {
    let table = Table::parse(
        r#"schema = "autocoll.tuning/1"
[[rule]]
op = "bcast"
ranks = "2..3"
bytes = "0..4095"
impl = "bcast:binomial"
[[rule]]
op = "bcast"
ranks = "2..3"
bytes = "4096..1G"
impl = "bcast:chain:seg=16K"
[[rule]]
op = "bcast"
ranks = "4..15"
bytes = "0..4095"
impl = "bcast:flat"
[[rule]]
op = "bcast"
ranks = "4..15"
bytes = "4096..1G"
impl = "bcast:binary:seg=16K"
"#,
        "t",
    )
    .unwrap();
    let text = to_mpich(&table);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let intra = &doc["collective=bcast"]["comm_type=intra"];
    for (p, bytes) in [(2, 1024), (3, 1 << 20), (4, 0), (15, 4096), (9, 4095)] {
        let imp = table.lookup(Collective::Bcast, p, bytes).unwrap();
        assert_eq!(
            mpich_eval(intra, p, bytes),
            &mpich_algorithm(imp),
            "p={p} bytes={bytes}"
        );
    }
    let at = |key: &str| text.find(key).unwrap_or_else(|| panic!("{key} missing"));
    assert!(at("\"comm_size<=3\"") < at("\"comm_size<=15\""));
    assert!(at("\"avg_msg_size<=4095\"") < at("\"avg_msg_size<=1073741824\""));
}

/// Neither library has a host-aware alltoall: the export names their
/// pairwise exchange, as for every alltoall algorithm they lack.
#[test]
fn two_level_alltoall_exports_as_pairwise_exchange() {
    let imp: Implementation = "alltoall:two-level".parse().unwrap();
    assert_eq!(ompi_algorithm(&imp), (2, "pairwise", 0, 0));
    let leaf = &mpich_algorithm(&imp)["is_sendbuf_inplace=no"];
    assert!(leaf.get("algorithm=MPIR_Alltoall_intra_pairwise").is_some());
}
