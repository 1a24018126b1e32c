//! A mapping of ranks to processing elements, and the files that place a
//! job by it: Open MPI's rankfile, MPICH's machinefile and the hostfile of
//! `autocoll launch`.

use crate::error::{Error, Result};
use crate::topology::Topology;

/// Rank i runs on processing element `pe[i]`; no two ranks share one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pe: Vec<usize>,
}

impl Mapping {
    /// A mapping from each rank's processing element, checked against a
    /// topology of `pes` processing elements.
    pub fn new(pe: Vec<usize>, pes: usize) -> Result<Mapping> {
        let mut used = vec![false; pes];
        for (rank, &p) in pe.iter().enumerate() {
            if p >= pes {
                return Err(Error::Mismatch(format!(
                    "rank {rank} is mapped to processing element {p}, the topology has {pes}"
                )));
            }
            if std::mem::replace(&mut used[p], true) {
                return Err(Error::Mismatch(format!(
                    "rank {rank} shares processing element {p} with another rank"
                )));
            }
        }
        Ok(Mapping { pe })
    }

    /// Each rank's processing element.
    pub fn pes(&self) -> &[usize] {
        &self.pe
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.pe.len()
    }

    /// Open MPI's rankfile: `rank i=HOST slot=S`, for `mpirun --rankfile`.
    pub fn rankfile(&self, t: &Topology) -> String {
        let mut out = String::new();
        for (rank, &pe) in self.pe.iter().enumerate() {
            let (host, slot) = t.host_slot(pe);
            out += &format!("rank {rank}={host} slot={slot}\n");
        }
        out
    }

    /// MPICH's machinefile: `HOST:1` per rank, in rank order.
    pub fn machinefile(&self, t: &Topology) -> String {
        self.pe
            .iter()
            .map(|&pe| format!("{}:1\n", t.host_of(pe)))
            .collect()
    }

    /// The hostfile of `autocoll launch`: one line per rank, in rank
    /// order, `HOST slots=1` with the host's address and switch path when
    /// the topology knows them (launch places ranks in file order).
    pub fn hostfile(&self, t: &Topology) -> String {
        let mut out = String::new();
        for &pe in &self.pe {
            let e = t.pe(pe).0;
            out += &format!("{} slots=1", t.host_of(pe));
            if let Some(a) = &t.elements()[e].addr {
                out += &format!(" addr={a}");
            }
            let path = t.switch_path(e);
            if !path.is_empty() {
                out += &format!(" switch={path}");
            }
            out += "\n";
        }
        out
    }
}

/// Rank i on processing element i: what `mpirun` does with a hostfile
/// listing the topology's hosts in order.
pub fn linear(ranks: usize, t: &Topology) -> Result<Mapping> {
    fits(ranks, t)?;
    Mapping::new((0..ranks).collect(), t.pe_count())
}

/// Refuses a job with more ranks than processing elements.
pub(crate) fn fits(ranks: usize, t: &Topology) -> Result<()> {
    match ranks <= t.pe_count() {
        true => Ok(()),
        false => Err(Error::Mismatch(format!(
            "the pattern has {ranks} ranks, the topology `{}` {} processing elements",
            t.name,
            t.pe_count()
        ))),
    }
}
