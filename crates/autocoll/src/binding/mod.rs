//! Binding the ranks of a tcp job to cores.
//!
//! Where a machine runs more ranks than it has cores, which ranks share a
//! core decides which tree is faster, and by more than any tolerance a
//! tuner works to (docs/measurement.md gives the duels); unbound, every job
//! of a sweep draws its own placement, and their verdicts differ for that
//! reason alone.
//!
//! So a tcp rank binds itself at start ([`apply`], from [`crate::init`],
//! by the machines the job's set-up told every rank):
//! the k-th rank of a machine (in rank order) to the (k mod cores)-th of
//! the cores it may run on, round robin, as `mpirun --map-by core
//! --bind-to core:overload-allowed` places them (Open MPI binds nothing
//! of an oversubscribed node unless told). [`BindTo::Auto`], the default,
//! binds only where a machine is crowded: with a core per rank the
//! scheduler keeps ranks apart anyway, and a 1 MiB transfer between two
//! ranks that share a core is twice as fast on this machine as across
//! cores (docs/measurement.md), which binding one rank a core would
//! forbid. A list of cores ([`BindTo::List`]) places the ranks otherwise,
//! to compare placements. Every thread of the process is bound, and
//! threads started later inherit it.
//!
//! A machine's cores are read once per process, before binding narrows
//! this one to a single core, and [`crate::measure::Machines`] gathers
//! where every rank went.

pub(crate) mod bound;

use std::fmt;

use rustix::process::Pid;
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use crate::error::{Error, Result};
use crate::measure::machines::{self, Machines};

/// The binding itself, kept apart so that [`Machines`] can read it.
pub use bound::{current, BindTo};

/// The variable that carries `--bind-to` to every rank.
pub const VARIABLE: &str = "AUTOCOLL_BIND_TO";

/// `AUTOCOLL_BIND_TO`, `auto` when unset.
pub fn from_env() -> Result<BindTo> {
    match std::env::var(VARIABLE) {
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|why| Error::Config(format!("{VARIABLE}={text}: {why}"))),
        Err(_) => Ok(BindTo::Auto),
    }
}

/// Where the binding put the ranks of a job (as
/// [`crate::measure::Machines`] gathered it): each rank's core, `None`
/// for a rank it left free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Each rank's core, by rank.
    pub cores: Vec<Option<usize>>,
}

impl Binding {
    /// Whether any rank is bound.
    pub fn any(&self) -> bool {
        self.cores.iter().any(Option::is_some)
    }
}

impl fmt::Display for Binding {
    /// `core 0: ranks 0, 2; core 1: ranks 1, 3`, the first eight cores.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cores: Vec<usize> = self.cores.iter().flatten().copied().collect();
        cores.sort_unstable();
        cores.dedup();
        for (i, core) in cores.iter().enumerate() {
            if i == 8 {
                return write!(f, "; …");
            }
            let ranks: Vec<String> = (0..self.cores.len())
                .filter(|&r| self.cores[r] == Some(*core))
                .map(|r| r.to_string())
                .collect();
            let s = if ranks.len() == 1 { "" } else { "s" };
            let sep = if i == 0 { "" } else { "; " };
            write!(f, "{sep}core {core}: rank{s} {}", ranks.join(", "))?;
        }
        Ok(())
    }
}

/// Binds rank `rank` of a job as `how` asks, `machines` naming each
/// rank's machine (its clock identity: ranks with equal ones share a
/// kernel and its cores). Every rank knows them all from the job's
/// set-up, so no message is sent: a program's first collective is still
/// its call #1.
pub fn apply<M: PartialEq>(rank: usize, machines: &[M], how: BindTo) -> Result<()> {
    // This rank's view of the cores stands for every machine's: only its
    // own machine is looked at.
    let cores = vec![machines::cores()?; machines.len()];
    let found = Machines::from_ranks(machines, &cores, &[]);
    let machine = found
        .machines
        .iter()
        .find(|m| m.ranks.contains(&rank))
        .ok_or_else(|| Error::Config(format!("rank {rank} is on no machine of its job")))?;
    let local = machine.ranks.iter().position(|&r| r == rank).unwrap_or(0);
    let core = match &how {
        BindTo::Auto if machine.crowded() => round_robin(local, machine.cores, &allowed()?),
        BindTo::Core => round_robin(local, machine.cores, &allowed()?),
        BindTo::List(cores) => cores.get(local % cores.len().max(1)).copied(),
        BindTo::Auto | BindTo::None => None,
    };
    let mut bound = None;
    if let Some(core) = core {
        pin(core)?;
        // What the kernel says, not what was asked.
        bound = alone()?;
    }
    bound::record(how, bound);
    Ok(())
}

/// The core of a machine's `local`-th rank: round robin over the first
/// `cores` of the cores this process may run on (`allowed`, ascending).
pub fn round_robin(local: usize, cores: usize, allowed: &[usize]) -> Option<usize> {
    let n = cores.min(allowed.len());
    (n > 0).then(|| allowed[local % n])
}

/// The cores this thread may run on, ascending.
fn allowed() -> Result<Vec<usize>> {
    let set = sched_getaffinity(None)
        .map_err(|e| Error::io("reading this rank's cores", std::io::Error::from(e)))?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// This thread's one core, if it may run on one only.
fn alone() -> Result<Option<usize>> {
    let cores = allowed()?;
    Ok(match cores[..] {
        [core] => Some(core),
        _ => None,
    })
}

/// Binds every thread of this process to `core`: the transport's threads
/// run already, and later ones inherit the binding of the thread that
/// starts them.
fn pin(core: usize) -> Result<()> {
    let mut set = CpuSet::new();
    set.set(core);
    let tasks = std::fs::read_dir("/proc/self/task")
        .map_err(|e| Error::io("listing this rank's threads", e))?;
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A thread that ended since the listing has nothing to bind.
        let _ = sched_setaffinity(Pid::from_raw(tid), &set);
    }
    sched_setaffinity(None, &set).map_err(|e| {
        Error::io(
            format!("binding this rank to core {core}"),
            std::io::Error::from(e),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_of_a_machine_go_round_robin_over_its_cores() {
        let allowed = [0, 1];
        let cores: Vec<Option<usize>> = (0..4).map(|k| round_robin(k, 2, &allowed)).collect();
        assert_eq!(cores, [Some(0), Some(1), Some(0), Some(1)]);
        // Only the cores the machine counts (AUTOCOLL_CORES=1), of those
        // this process may use (taskset -c 2,5).
        assert_eq!(round_robin(3, 1, &[2, 5]), Some(2));
        assert_eq!(round_robin(3, 8, &[2, 5]), Some(5));
        assert_eq!(round_robin(0, 2, &[]), None);
    }

    #[test]
    fn a_binding_reads_as_cores_and_their_ranks() {
        let b = Binding {
            cores: vec![Some(0), Some(1), Some(0), None],
        };
        assert_eq!(b.to_string(), "core 0: ranks 0, 2; core 1: rank 1");
        assert!(b.any());
        assert!(!Binding {
            cores: vec![None; 3]
        }
        .any());
    }

    #[test]
    fn bind_to_reads_auto_core_none_or_a_list_of_cores() {
        for how in [
            BindTo::Auto,
            BindTo::Core,
            BindTo::None,
            BindTo::List(vec![0, 1, 1, 0]),
        ] {
            assert_eq!(how.to_string().parse::<BindTo>(), Ok(how));
        }
        assert_eq!("3".parse::<BindTo>(), Ok(BindTo::List(vec![3])));
        for bad in ["cores", "", "0,,1", "0,-1", "99999"] {
            let err = bad.parse::<BindTo>().unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }
}
