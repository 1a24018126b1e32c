//! Parsing of the list and range arguments the subcommands share.

use std::path::PathBuf;
use std::str::FromStr;

use autocoll::measure::Options;
use autocoll::select::parse_bytes;
use autocoll::tree::ParentList;
use autocoll::{Collective, Implementation};

use crate::failure::Failure;

/// Splits a comma list, refusing empty items.
pub fn split(what: &str, text: &str) -> Result<Vec<String>, Failure> {
    let items: Vec<String> = text.split(',').map(|s| s.trim().to_string()).collect();
    if items.iter().any(String::is_empty) {
        return Err(Failure::Usage(format!("{what} `{text}` has an empty item")));
    }
    Ok(items)
}

/// `all` or a comma list of collectives.
pub fn ops(text: &str) -> Result<Vec<Collective>, Failure> {
    if text == "all" {
        return Ok(Collective::ALL.to_vec());
    }
    split("--op", text)?
        .iter()
        .map(|s| Collective::from_str(s).map_err(|e| Failure::Usage(format!("--op: {e}"))))
        .collect()
}

/// `None` for `all`, else the implementations named.
pub fn impls(text: &str) -> Result<Option<Vec<Implementation>>, Failure> {
    if text == "all" {
        return Ok(None);
    }
    let list = split("--impl", text)?
        .iter()
        .map(|s| {
            s.parse::<Implementation>()
                .map_err(|e| Failure::Usage(format!("--impl: {e}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(list))
}

/// `--tree-file FILE`, shared by `bench`, `check`, `tune` and `adapt`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TreeFileArg {
    /// A tree as every rank's parent, one a line, the root's `-`
    /// (docs/formats.md), run as `<op>:user:parents=…` beside --impl's
    /// (alone without --impl); -n and --root default to its ranks and root.
    #[arg(long, value_name = "FILE")]
    pub tree_file: Option<PathBuf>,
}

/// A `--tree-file`, read and checked to be a tree.
pub struct TreeFile {
    list: ParentList,
    path: PathBuf,
}

impl TreeFile {
    /// Reads the file `arg` names, if any.
    pub fn load(arg: &TreeFileArg) -> Result<Option<TreeFile>, Failure> {
        let Some(path) = &arg.tree_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Usage(format!("--tree-file {}: {e}", path.display())))?;
        let list = ParentList::parse(&text, &path.display().to_string())
            .map_err(|e| Failure::Usage(format!("--tree-file: {e}")))?;
        Ok(Some(TreeFile {
            list,
            path: path.clone(),
        }))
    }

    /// The tree's ranks.
    pub fn size(&self) -> usize {
        self.list.size()
    }

    /// The tree's root.
    pub fn root(&self) -> usize {
        self.list.root()
    }

    /// The file's tree as an implementation of `op` (unsegmented); none
    /// for a collective that runs over no tree.
    pub fn imp(&self, op: Collective) -> Option<Implementation> {
        op.over_trees().then(|| {
            Implementation::tree(op, self.list.shape(), None)
                .expect("a user tree runs every collective over trees")
        })
    }

    /// Refuses rank counts other than the tree's, and says (on stderr,
    /// once for the job) when a collective runs the tree from another
    /// root than its own.
    pub fn check(&self, ranks: &[usize], ops: &[Collective], root: usize) -> Result<(), Failure> {
        let p = self.size();
        if let Some(other) = ranks.iter().find(|&&n| n != p) {
            return Err(Failure::Usage(format!(
                "--tree-file {} has {p} ranks, -n asks for {other}",
                self.path.display()
            )));
        }
        let trees = ops.iter().filter(|op| op.over_trees());
        for op in trees.filter(|_| speaks_for_the_job()) {
            let from = if op.rooted() { root } else { 0 };
            if from != self.root() {
                eprintln!(
                    "autocoll: {op} runs the tree of {} from rank {from}, not from its root {}: every rank moves {} places along with the root",
                    self.path.display(),
                    self.root(),
                    (from + p - self.root()) % p
                );
            }
        }
        Ok(())
    }
}

/// True in the process that speaks for the whole job: not a rank the
/// launcher started, and, under mpirun, rank 0 (each rank runs the
/// command, and a note should not come once per rank).
fn speaks_for_the_job() -> bool {
    let mpi_rank = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok());
    !crate::launch::is_rank() && mpi_rank.is_none_or(|r| r == "0")
}

/// What `--impl` and `--tree-file` choose.
#[derive(Clone, Debug, Default)]
pub struct Chosen {
    /// Every family, as `--impl all` says.
    pub all: bool,
    /// The implementations named, and the tree file's.
    pub named: Vec<Implementation>,
}

impl Chosen {
    /// `--impl` (`None` when left out: `all`, or nothing beside a tree
    /// file) and the tree file's tree for each of `ops`.
    pub fn new(
        imp: Option<&str>,
        tree: Option<&TreeFile>,
        ops: &[Collective],
    ) -> Result<Chosen, Failure> {
        let mut chosen = match (imp, tree) {
            (None, Some(_)) => Chosen::default(),
            (None, None) => Chosen {
                all: true,
                named: Vec::new(),
            },
            (Some(text), _) => match impls(text)? {
                None => Chosen {
                    all: true,
                    named: Vec::new(),
                },
                Some(named) => Chosen { all: false, named },
            },
        };
        if let Some(tree) = tree {
            chosen
                .named
                .extend(ops.iter().filter_map(|&op| tree.imp(op)));
        }
        Ok(chosen)
    }

    /// The implementations of `op`: `every()` when all are chosen, then
    /// the named ones of `op`.
    pub fn of(
        &self,
        op: Collective,
        every: impl FnOnce() -> Vec<Implementation>,
    ) -> Vec<Implementation> {
        let mut out = if self.all { every() } else { Vec::new() };
        out.extend(self.named.iter().filter(|i| i.op == op).cloned());
        out
    }
}

/// Rank counts: `5`, `2,4,8`, or an inclusive range `2..16`.
pub fn ranks(text: &str) -> Result<Vec<usize>, Failure> {
    let bad = |why: &str| Failure::Usage(format!("-n `{text}`: {why}"));
    let list: Vec<usize> = match text.split_once("..") {
        Some((lo, hi)) => {
            let lo: usize = lo
                .parse()
                .map_err(|_| bad("the range start is not a number"))?;
            let hi: usize = hi
                .parse()
                .map_err(|_| bad("the range end is not a number"))?;
            if lo > hi {
                return Err(bad("the range is reversed"));
            }
            (lo..=hi).collect()
        }
        None => split("-n", text)?
            .iter()
            .map(|s| {
                s.parse()
                    .map_err(|_| bad(&format!("`{s}` is not a number")))
            })
            .collect::<Result<_, _>>()?,
    };
    if list.contains(&0) {
        return Err(bad("a job needs at least 1 rank"));
    }
    Ok(list)
}

/// Under `--transport mpi` mpirun sets the job's size `p`; a `-n` given
/// too must name the same.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn agree_with_mpirun(given: Option<&str>, p: usize) -> Result<(), Failure> {
    match given {
        Some(text) if ranks(text)? != [p] => Err(Failure::Usage(format!(
            "-n {text}: mpirun started {p} ranks; under --transport mpi leave -n out or give {p}"
        ))),
        _ => Ok(()),
    }
}

/// Byte counts: `0,1,64K`, or a range `1K..8M` stepping by ×`step`.
pub fn bytes(text: &str, step: usize) -> Result<Vec<usize>, Failure> {
    let bad = |why: String| Failure::Usage(format!("--bytes `{text}`: {why}"));
    match text.split_once("..") {
        Some((lo, hi)) => {
            let lo = parse_bytes(lo).map_err(bad)?;
            let hi = parse_bytes(hi).map_err(bad)?;
            if lo > hi {
                return Err(bad("the range is reversed".into()));
            }
            if lo == 0 || step < 2 {
                return Err(bad(
                    "a range needs a start above 0 and a step of at least 2".into(),
                ));
            }
            let mut out = vec![lo];
            while let Some(next) = out.last().unwrap().checked_mul(step).filter(|&n| n <= hi) {
                out.push(next);
            }
            Ok(out)
        }
        None => split("--bytes", text)?
            .iter()
            .map(|s| parse_bytes(s).map_err(&bad))
            .collect(),
    }
}

/// Roots: `all`, or a comma list where `last` and `mid` stand for P−1 and
/// P/2; resolved per communicator size.
pub fn roots(text: &str, p: usize) -> Result<Vec<usize>, Failure> {
    if text == "all" {
        return Ok((0..p).collect());
    }
    let mut out = Vec::new();
    for item in split("--root", text)? {
        let r = match item.as_str() {
            "last" => p - 1,
            "mid" => p / 2,
            s => s.parse().map_err(|_| {
                Failure::Usage(format!(
                    "--root `{s}` is not a rank (a number, mid, last or all)"
                ))
            })?,
        };
        if r >= p {
            return Err(Failure::Usage(format!(
                "--root {r} is not a rank of a {p}-rank job"
            )));
        }
        if !out.contains(&r) {
            out.push(r);
        }
    }
    Ok(out)
}

/// How `tune` and `bench --best` race a point's candidates.
#[derive(clap::Args, Clone, Debug)]
pub struct Racing {
    /// Racing: candidates whose times differ by less than this share of the
    /// best's are not told apart (the race ends there).
    #[arg(long, default_value_t = 0.02)]
    pub tolerance: f64,
    /// Racing: when --max-reps rounds leave several candidates in, the two
    /// lowest race on alone, paired round by round, for up to this many
    /// rounds (the final; 0: none, the lowest median wins).
    #[arg(long, default_value_t = 70)]
    pub final_rounds: usize,
}

/// Repetitions of an implementation `bench` makes at least, unless told.
const MIN_REPS: usize = 5;

/// How long `bench` and `tune` repeat each point.
#[derive(clap::Args, Clone, Debug)]
pub struct Repeat {
    /// Stop repeating an implementation when the relative standard error
    /// of the mean is below this (`bench`; a race, in `tune` and `bench
    /// --best`, ends by its own rule: see --tolerance).
    #[arg(long, default_value_t = 0.03)]
    pub rse: f64,
    /// Repetitions at least: of each implementation (default 5); in a
    /// race (`tune`, `bench --best`), of every candidate before any is
    /// dropped (default 3).
    #[arg(long)]
    pub min_reps: Option<usize>,
    /// Repetitions at most.
    #[arg(long, default_value_t = 30)]
    pub max_reps: usize,
    /// Calls per repetition (M).
    #[arg(long, default_value_t = 10)]
    pub calls: usize,
    /// Untimed warm-up calls per point.
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
}

impl Repeat {
    /// The measuring options these flags give.
    pub fn options(&self) -> Options {
        Options {
            calls: self.calls,
            warmup: self.warmup,
            // Left out, never above --max-reps: only a --min-reps the
            // user gave can conflict with it.
            min_reps: self.min_reps.unwrap_or(MIN_REPS.min(self.max_reps)),
            max_reps: self.max_reps,
            rse: self.rse,
            // Until the machines are known (bench and tune set it).
            spin_waits: true,
        }
    }
}

/// A race's rule from the racing flags, the repetition flags and
/// `--exhaustive` (`tune`'s and `bench --best`'s): `--min-reps` when
/// given, else the race's own ([`autocoll_tune::race::rule`]).
pub fn race_rule(
    racing: &Racing,
    repeat: &Repeat,
    exhaustive: bool,
) -> Result<autocoll::measure::race::Rule, Failure> {
    autocoll_tune::race::rule(
        racing.tolerance,
        repeat.min_reps,
        repeat.max_reps,
        racing.final_rounds,
        exhaustive,
    )
    .map_err(|e| Failure::Usage(format!("--tolerance {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage<T: std::fmt::Debug>(r: Result<T, Failure>) -> String {
        match r {
            Err(Failure::Usage(m)) => m,
            Err(Failure::Run(e)) => panic!("not a usage error: {e}"),
            Ok(v) => panic!("accepted: {v:?}"),
        }
    }

    #[test]
    fn lists_and_ranges_parse() {
        assert_eq!(ranks("2..4").ok().unwrap(), vec![2, 3, 4]);
        assert_eq!(ranks("2,8").ok().unwrap(), vec![2, 8]);
        assert_eq!(
            bytes("1K..8K", 2).ok().unwrap(),
            vec![1024, 2048, 4096, 8192]
        );
        assert_eq!(bytes("1K..8M", 4).ok().unwrap().len(), 7);
        assert_eq!(bytes("0,1,65539", 2).ok().unwrap(), vec![0, 1, 65539]);
        assert_eq!(roots("0,mid,last", 5).ok().unwrap(), vec![0, 2, 4]);
        assert_eq!(roots("0,last", 1).ok().unwrap(), vec![0]);
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        assert!(usage(ranks("4..2")).contains("reversed"));
        assert!(usage(ranks("0")).contains("at least 1 rank"));
        assert!(usage(ranks("2,,3")).contains("empty item"));
        assert!(usage(bytes("8M..1K", 2)).contains("reversed"));
        assert!(usage(bytes("1Q", 2)).contains("unknown size suffix"));
        assert!(usage(ops("bcast,sacn")).contains("unknown collective `sacn`"));
        assert!(usage(impls("bcast:tree")).contains("unknown algorithm"));
        assert!(usage(roots("7", 4)).contains("not a rank of a 4-rank job"));
    }

    /// `tune --min-reps` and `bench --best --min-reps` set when a race may
    /// first drop a candidate; left out, the race's own 3.
    #[test]
    fn min_reps_sets_the_repetitions_before_a_race_drops_any() {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            racing: Racing,
            #[command(flatten)]
            repeat: Repeat,
        }
        let rule = |argv: &[&str]| {
            let flags = <Flags as clap::Parser>::try_parse_from(argv).expect("valid flags");
            match race_rule(&flags.racing, &flags.repeat, false) {
                Ok(rule) => rule,
                Err(_) => panic!("{argv:?}: no rule"),
            }
        };
        assert_eq!(rule(&["tune"]).min_reps, 3);
        assert_eq!(rule(&["tune", "--min-reps", "6"]).min_reps, 6);
        let repeat = |argv: &[&str]| {
            <Flags as clap::Parser>::try_parse_from(argv)
                .expect("valid flags")
                .repeat
                .options()
        };
        assert_eq!(repeat(&["bench"]).min_reps, 5);
        assert_eq!(repeat(&["bench", "--max-reps", "4"]).min_reps, 4);
    }
}
