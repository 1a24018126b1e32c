//! What a sweep measures: its collectives, sizes and candidates, less the
//! points an interrupted sweep finished, with the races it left
//! unfinished.

use std::collections::BTreeSet;
use std::path::Path;

use autocoll::measure::{Method, Point};
use autocoll::Collective;
use autocoll_tune::partial::{self, Partial};
use autocoll_tune::race;

use super::args::Args;
use crate::args;
use crate::bench::{self, Planned, Subject};
use crate::failure::Failure;

/// What a rank must know to build its share of the sweep.
pub(super) struct Sweep {
    pub(super) ops: Vec<(Collective, Vec<usize>, args::Chosen)>,
    pub(super) root: usize,
    pub(super) method: Option<Method>,
    pub(super) done: BTreeSet<(String, usize, usize)>,
    /// Races an interrupted sweep left unfinished.
    pub(super) saved: Vec<race::Saved>,
}

impl Sweep {
    /// The points still to measure on `p` ranks with `method`.
    pub(super) fn plan(&self, p: usize, method: Method) -> Vec<Planned> {
        let mut out = Vec::new();
        for (op, sizes, impls) in &self.ops {
            let root = if op.rooted() { self.root } else { 0 };
            for planned in bench::plan_ours(*op, impls, sizes, root, &[method]) {
                let key = (planned.subject.id(), p, planned.subject.bytes());
                if !self.done.contains(&key) {
                    out.push(planned);
                }
            }
        }
        out
    }

    /// The races still to run on `p` ranks with `method`.
    pub(super) fn heats(&self, p: usize, method: Method) -> Vec<Vec<Point>> {
        let points = self
            .plan(p, method)
            .into_iter()
            .filter_map(|planned| match planned.subject {
                Subject::Ours(point) => Some(point),
                Subject::Library(..) => None,
            });
        race::heats(points.collect())
    }

    /// The race of the point named `key` ([`race::point_key`]) alone.
    pub(super) fn heat_of(
        &self,
        p: usize,
        method: Method,
        key: &str,
    ) -> Result<Vec<Vec<Point>>, Failure> {
        let heat = self
            .heats(p, method)
            .into_iter()
            .find(|heat| race::point_key(heat) == key);
        match heat {
            Some(heat) => Ok(vec![heat]),
            None => Err(Failure::Usage(format!(
                "--point {key}: not a point of this sweep still to measure"
            ))),
        }
    }
}

/// The collectives, their sizes and candidate lists, and what is done.
pub(super) fn sweep_of(a: &Args, tree: Option<&args::TreeFile>) -> Result<Sweep, Failure> {
    let ops = args::ops(&a.op)?;
    let impls = args::Chosen::new(a.imp.as_deref(), tree, &ops)?;
    let bytes = args::bytes(&a.bytes, a.step)?;
    let method = match a.method.as_str() {
        "auto" => None,
        "truth" => Some(Method::Truth),
        "ol-i" => Some(Method::OlI),
        "barrier" => Some(Method::Barrier),
        other => {
            return Err(Failure::Usage(format!(
                "--method `{other}`: tune ranks by auto, truth, ol-i or barrier"
            )))
        }
    };
    let mut out = Vec::new();
    for op in ops {
        let mine = args::Chosen {
            all: impls.all,
            named: impls.of(op, Vec::new),
        };
        if !mine.all && mine.named.is_empty() {
            return Err(Failure::Usage(format!(
                "tune: no candidates for {op}: --impl names none of its implementations"
            )));
        }
        out.push((op, bench::sizes(op, &bytes), mine));
    }
    let mut sweep = Sweep {
        ops: out,
        root: a.root.or(tree.map(args::TreeFile::root)).unwrap_or(0),
        method,
        done: BTreeSet::new(),
        saved: Vec::new(),
    };
    if a.resume {
        // Ranks of a tcp job read the file too: they start before any new
        // point is saved, so all of them see the same done points.
        let partial = load_partial(&partial::path_beside(&a.out))?;
        sweep.done = partial
            .rows
            .iter()
            .map(|r| (r.imp.clone(), r.ranks, r.bytes))
            .collect();
        sweep.saved = partial.races;
    }
    Ok(sweep)
}

/// The progress file at `path` ([`partial::load`]); one that cannot be
/// read fails the run, one that does not parse is the user's to fix.
pub(super) fn load_partial(path: &Path) -> Result<Partial, Failure> {
    partial::load(path).map_err(|e| match e {
        autocoll_tune::Error::Read { .. } => Failure::Run(e.into()),
        _ => Failure::Usage(e.to_string()),
    })
}
