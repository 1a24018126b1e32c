//! How this process binds its ranks ([`BindTo`]) and the core this rank
//! was bound to: a leaf, so that what gathers the machines of a job
//! ([`crate::measure::Machines`]) reads it without importing the binding.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use rustix::thread::CpuSet;

/// Which ranks are bound to a core, and to which.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BindTo {
    /// The ranks of a machine with more ranks than cores, round robin.
    #[default]
    Auto,
    /// Every rank, round robin.
    Core,
    /// None: the scheduler places them.
    None,
    /// Every rank, the k-th of a machine to the (k mod len)-th core listed
    /// (`0,1,1,0`): another placement than round robin, to compare.
    List(Vec<usize>),
}

impl FromStr for BindTo {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(BindTo::Auto),
            "core" => Ok(BindTo::Core),
            "none" => Ok(BindTo::None),
            list => list
                .split(',')
                .map(|core| core.trim().parse::<usize>().ok())
                .collect::<Option<Vec<usize>>>()
                .filter(|cores| cores.iter().all(|&c| c < CpuSet::MAX_CPU))
                .map(BindTo::List)
                .ok_or_else(|| {
                    format!("`{list}` is not auto, core, none or a list of cores (0,1,1,0)")
                }),
        }
    }
}

impl fmt::Display for BindTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindTo::Auto => f.write_str("auto"),
            BindTo::Core => f.write_str("core"),
            BindTo::None => f.write_str("none"),
            BindTo::List(cores) => {
                let cores: Vec<String> = cores.iter().map(usize::to_string).collect();
                f.write_str(&cores.join(","))
            }
        }
    }
}

static BOUND: OnceLock<(BindTo, Option<usize>)> = OnceLock::new();

/// How this process's tcp job binds its ranks, and the core this rank was
/// bound to (`None`: left free), once [`apply`](super::apply) ran.
pub fn current() -> Option<&'static (BindTo, Option<usize>)> {
    BOUND.get()
}

/// Keeps how this process binds and where this rank went; the first call
/// wins.
pub(super) fn record(how: BindTo, bound: Option<usize>) {
    let _ = BOUND.set((how, bound));
}
