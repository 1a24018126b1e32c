//! What a run keeps of what its directory learned, and when a new
//! placement is worth moving ranks for: functions of their inputs only.

use super::manifest::{Host, Manifest, Program};
use super::text::{hosts_text, short};

/// How much lower a placement's estimate must be than the current one's
/// before ranks move: the estimator's error on the mapping experiments
/// (docs/mapping.md#the-estimators-error). Every estimated gain of 13% or
/// more there had the actual change's sign; where it estimated none, the
/// actual change was within the ±5% the machine's noise allows.
pub const MARGIN: f64 = 0.10;

/// What is known of a job before it runs.
#[derive(Clone, Debug)]
pub struct Job {
    /// `openmpi`, `mpich` or `tcp`.
    pub engine: String,
    /// The program.
    pub program: Program,
    /// Its ranks, when the launcher's arguments say.
    pub ranks: Option<usize>,
    /// Its hosts, when the launcher's arguments or `--topology` name them.
    pub hosts: Option<Vec<Host>>,
}

/// What a run keeps of its directory; what it does not keep starts over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Carry {
    /// The last run's pattern.
    pub pattern: bool,
    /// The balancer's tables in the state file.
    pub tables: bool,
    /// The placement in force.
    pub placement: bool,
    /// The topology the directory keeps.
    pub topology: bool,
    /// Whether the job's hosts are other than those it was learned on.
    pub new_hosts: bool,
    /// What changed and what follows, one line each.
    pub notes: Vec<String>,
}

/// What a run of `job` keeps of a directory whose manifest is `old`. The
/// lottery's picks are always kept: they are the machine's, by
/// communicator shape, and a shape that does not occur again costs
/// nothing.
pub fn carry(old: Option<&Manifest>, job: &Job) -> Carry {
    let Some(old) = old else {
        return Carry {
            notes: vec!["first run: nothing learned yet".into()],
            ..Carry::default()
        };
    };
    let mut keep = Carry {
        pattern: true,
        tables: true,
        placement: old.placement.is_some(),
        topology: old.topology.is_some(),
        new_hosts: false,
        notes: Vec::new(),
    };
    if old.program.sha256 != job.program.sha256 {
        keep.pattern = false;
        keep.tables = false;
        keep.placement = false;
        keep.notes.push(format!(
            "the program changed ({} is not the {} learned for): keeping the collectives' \
             picks (the machine's); starting over the pattern, the broadcast order and \
             the placement",
            short(&job.program.sha256),
            short(&old.program.sha256)
        ));
    }
    if let (Some(was), Some(now)) = (old.ranks, job.ranks) {
        if was != now && keep.pattern {
            keep.pattern = false;
            keep.placement = false;
            keep.notes.push(format!(
                "{now} ranks, not {was}: keeping the collectives' picks and the broadcast \
                 order (both by communicator shape); starting over the pattern and the placement"
            ));
        }
    }
    if let Some(now) = &job.hosts {
        if !old.hosts.is_empty() && !same_hosts(&old.hosts, now) {
            keep.topology = false;
            keep.notes.push(format!(
                "other hosts ({}, not {}): the placement made for the old hosts is dropped; \
                 a new one is made for these from the pattern",
                hosts_text(now),
                hosts_text(&old.hosts)
            ));
            keep.placement = false;
            keep.new_hosts = true;
        }
    }
    keep
}

/// Whether two allocations are the same hosts with the same slots, in
/// any order.
pub fn same_hosts(a: &[Host], b: &[Host]) -> bool {
    let sorted = |h: &[Host]| {
        let mut v: Vec<(String, usize)> = h.iter().map(|h| (h.name.clone(), h.slots)).collect();
        v.sort();
        v
    };
    sorted(a) == sorted(b)
}

/// Whether a placement estimated at `candidate_s` is worth moving ranks
/// from one estimated at `current_s`.
pub fn worth_moving(current_s: f64, candidate_s: f64) -> bool {
    candidate_s < current_s * (1.0 - MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::manifest::Placement;

    fn program(sha: &str) -> Program {
        Program {
            path: "/bin/app".into(),
            sha256: sha.into(),
        }
    }

    fn hosts(names: &[&str]) -> Vec<Host> {
        names
            .iter()
            .map(|n| Host {
                name: n.to_string(),
                slots: 2,
                ..Host::default()
            })
            .collect()
    }

    fn learned() -> Manifest {
        let mut m = Manifest::new("openmpi", program("aaaa"));
        m.ranks = Some(4);
        m.hosts = hosts(&["h0", "h1"]);
        m.topology = Some(super::super::manifest::Origin::Hosts);
        m.placement = Some(Placement {
            method: "greedy".into(),
            pes: vec![0, 2, 1, 3],
            hosts: vec!["h0".into(), "h1".into(), "h0".into(), "h1".into()],
            estimate_s: 1.0,
            linear_s: 2.0,
            since_run: 2,
        });
        m
    }

    fn job(sha: &str, ranks: Option<usize>, on: Option<&[&str]>) -> Job {
        Job {
            engine: "openmpi".into(),
            program: program(sha),
            ranks,
            hosts: on.map(hosts),
        }
    }

    #[test]
    fn the_same_job_keeps_everything() {
        let c = carry(Some(&learned()), &job("aaaa", Some(4), Some(&["h1", "h0"])));
        assert!(c.pattern && c.tables && c.placement && c.topology);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
    }

    #[test]
    fn a_changed_program_starts_over_all_but_the_collectives() {
        let c = carry(Some(&learned()), &job("bbbb", Some(4), None));
        assert!(!c.pattern && !c.tables && !c.placement && c.topology);
        assert!(c.notes[0].contains("program changed"), "{:?}", c.notes);
    }

    #[test]
    fn another_rank_count_keeps_the_broadcast_tables_but_not_the_pattern() {
        let c = carry(Some(&learned()), &job("aaaa", Some(8), None));
        assert!(!c.pattern && c.tables && !c.placement);
        assert!(c.notes[0].contains("8 ranks, not 4"), "{:?}", c.notes);
    }

    #[test]
    fn other_hosts_never_get_the_old_placement() {
        let c = carry(Some(&learned()), &job("aaaa", Some(4), Some(&["h2", "h3"])));
        assert!(c.pattern && !c.placement && !c.topology && c.new_hosts);
        assert!(c.notes[0].contains("h2:2 h3:2"), "{:?}", c.notes);
    }

    #[test]
    fn unknown_ranks_and_hosts_change_nothing() {
        let c = carry(Some(&learned()), &job("aaaa", None, None));
        assert!(c.pattern && c.placement && c.topology);
    }

    #[test]
    fn a_first_run_keeps_nothing() {
        let c = carry(None, &job("aaaa", Some(4), None));
        assert!(!c.pattern && !c.tables && !c.placement && !c.topology);
    }

    #[test]
    fn ranks_move_only_beyond_the_estimators_error() {
        assert!(worth_moving(1.0, 0.85));
        assert!(!worth_moving(1.0, 0.95));
        assert!(!worth_moving(1.0, 1.2));
    }
}
