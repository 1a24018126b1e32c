//! Where the ranks of a job run: every rank's host and, when the job knows
//! them, the switches above that host.
//!
//! Every transport reports the host of each rank and, when the job's
//! environment names it (`AUTOCOLL_SWITCH`), its switch; the communicator
//! turns those reports into one [`Layout`]. The `hier` tree shape reads it,
//! and so can anything else that needs to know which ranks share a host or
//! a switch (a topology file can later supply one through
//! [`crate::Communicator::set_layout`]).
//!
//! A switch is named by its *path* from the top switch down, components
//! separated by `/`: `sw0/sw1` is switch `sw1` under `sw0`. A plain name is
//! a path of one component. Two paths name the same switch only when they
//! are equal, so the switches of a job form a tree of their own: `sw0` is
//! the parent of `sw0/sw1`.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// The separator of the components of a switch path.
pub const SWITCH_SEPARATOR: char = '/';

/// The host and switch of every rank of a job.
///
/// Hosts and switches are numbered from 0 in the order of the first rank
/// on them. Every rank of a host has the same switch (or none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    host_names: Vec<String>,
    switch_paths: Vec<String>,
    host_of: Vec<usize>,
    switch_of: Vec<Option<usize>>,
}

impl Layout {
    /// The layout of ranks whose hosts are `hosts` and switches `switches`
    /// (both indexed by rank; `None` where the switch is not known).
    /// Refuses empty names, switch paths with an empty component, lists of
    /// different lengths, and a host whose ranks name different switches.
    pub fn new(hosts: Vec<String>, switches: Vec<Option<String>>) -> Result<Layout> {
        if hosts.is_empty() {
            return Err(Error::Layout("a job has at least one rank".into()));
        }
        if hosts.len() != switches.len() {
            return Err(Error::Layout(format!(
                "{} hosts but {} switches given, one of each per rank",
                hosts.len(),
                switches.len()
            )));
        }
        let mut build = Build::default();
        for (rank, (host, switch)) in hosts.into_iter().zip(switches).enumerate() {
            build.add(rank, host, switch)?;
        }
        Ok(build.layout)
    }

    /// `size` ranks on one host (`localhost`), no switch known.
    pub fn one_host(size: usize) -> Layout {
        Layout {
            host_names: vec!["localhost".into()],
            switch_paths: Vec::new(),
            host_of: vec![0; size],
            switch_of: vec![None; size],
        }
    }

    /// Ranks on hosts named `hosts` (by rank), no switch known.
    pub fn of_hosts(hosts: Vec<String>) -> Result<Layout> {
        let switches = vec![None; hosts.len()];
        Layout::new(hosts, switches)
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.host_of.len()
    }

    /// The number of hosts.
    pub fn host_count(&self) -> usize {
        self.host_names.len()
    }

    /// The number of switches named (a path's ancestors count only when a
    /// rank names them).
    pub fn switch_count(&self) -> usize {
        self.switch_paths.len()
    }

    /// True when the ranks run on more than one host.
    pub fn spans_hosts(&self) -> bool {
        self.host_count() > 1
    }

    /// The host of `rank`, a number below [`Self::host_count`].
    pub fn host(&self, rank: usize) -> usize {
        self.host_of[rank]
    }

    /// The switch of `rank`'s host, when known, a number below
    /// [`Self::switch_count`].
    pub fn switch(&self, rank: usize) -> Option<usize> {
        self.switch_of[rank]
    }

    /// The ranks of every host, by host number, each in rank order: the
    /// first of each is the host's lowest rank.
    pub fn ranks_by_host(&self) -> Vec<Vec<usize>> {
        let mut ranks = vec![Vec::new(); self.host_count()];
        for (rank, &host) in self.host_of.iter().enumerate() {
            ranks[host].push(rank);
        }
        ranks
    }

    /// The name of host `host`.
    pub fn host_name(&self, host: usize) -> &str {
        &self.host_names[host]
    }

    /// The path of switch `switch`, from the top switch down.
    pub fn switch_path(&self, switch: usize) -> &str {
        &self.switch_paths[switch]
    }

    /// The host name of every rank, by rank.
    pub fn hosts(&self) -> Vec<String> {
        self.host_of
            .iter()
            .map(|&h| self.host_names[h].clone())
            .collect()
    }

    /// The switch path of every rank, by rank.
    pub fn switches(&self) -> Vec<Option<String>> {
        self.switch_of
            .iter()
            .map(|s| s.map(|id| self.switch_paths[id].clone()))
            .collect()
    }
}

/// A [`Layout`] built rank by rank. Names are looked up by hash, not by
/// scanning the names so far: a communicator of 1024 simulated ranks, one
/// a host, builds its layout on every rank, and scans would cost a
/// million string comparisons each.
struct Build {
    layout: Layout,
    host_ids: HashMap<String, usize>,
    switch_ids: HashMap<String, usize>,
    /// The first rank of each host.
    first_rank: Vec<usize>,
}

impl Default for Build {
    fn default() -> Self {
        Build {
            layout: Layout {
                host_names: Vec::new(),
                switch_paths: Vec::new(),
                host_of: Vec::new(),
                switch_of: Vec::new(),
            },
            host_ids: HashMap::new(),
            switch_ids: HashMap::new(),
            first_rank: Vec::new(),
        }
    }
}

impl Build {
    fn add(&mut self, rank: usize, host: String, switch: Option<String>) -> Result<()> {
        if host.is_empty() {
            return Err(Error::Layout(format!("rank {rank} has an empty host name")));
        }
        let switch = match switch {
            Some(path) => Some(self.switch_id(rank, path)?),
            None => None,
        };
        let l = &mut self.layout;
        let host_id = match self.host_ids.get(&host) {
            Some(&id) => id,
            None => {
                let id = l.host_names.len();
                self.host_ids.insert(host.clone(), id);
                l.host_names.push(host);
                self.first_rank.push(rank);
                id
            }
        };
        let first = self.first_rank[host_id];
        if first != rank && l.switch_of[first] != switch {
            let name = |s: Option<usize>| match s {
                Some(id) => format!("switch {}", l.switch_paths[id]),
                None => "no switch".to_string(),
            };
            return Err(Error::Layout(format!(
                "host {} has rank {first} on {} and rank {rank} on {} (a host hangs under one switch; do the ranks name their host, e.g. with AUTOCOLL_HOST?)",
                l.host_names[host_id],
                name(l.switch_of[first]),
                name(switch)
            )));
        }
        l.host_of.push(host_id);
        l.switch_of.push(switch);
        Ok(())
    }

    fn switch_id(&mut self, rank: usize, path: String) -> Result<usize> {
        if path.split(SWITCH_SEPARATOR).any(str::is_empty) {
            return Err(Error::Layout(format!(
                "rank {rank}'s switch `{path}` is not a path of names separated by `{SWITCH_SEPARATOR}`"
            )));
        }
        let paths = &mut self.layout.switch_paths;
        Ok(*self.switch_ids.entry(path).or_insert_with_key(|path| {
            paths.push(path.clone());
            paths.len() - 1
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hosts_and_switches_are_numbered_by_their_first_rank() {
        let layout = Layout::new(
            names(&["b", "b", "a", "c"]),
            vec![
                Some("s0/s1".into()),
                Some("s0/s1".into()),
                Some("s0".into()),
                None,
            ],
        )
        .unwrap();
        assert_eq!(layout.size(), 4);
        assert_eq!(layout.host_count(), 3);
        assert_eq!(
            (0..4).map(|r| layout.host(r)).collect::<Vec<_>>(),
            [0, 0, 1, 2]
        );
        assert_eq!(layout.host_name(1), "a");
        assert_eq!(layout.switch(2), Some(1));
        assert_eq!(layout.switch_path(0), "s0/s1");
        assert_eq!(layout.switch(3), None);
        assert!(layout.spans_hosts());
        assert_eq!(layout.hosts(), names(&["b", "b", "a", "c"]));
        assert_eq!(layout.switches()[0].as_deref(), Some("s0/s1"));
        assert!(!Layout::one_host(3).spans_hosts());
    }

    #[test]
    fn ranks_by_host_lists_each_hosts_ranks_in_rank_order() {
        let layout = Layout::of_hosts(names(&["b", "a", "b", "c", "a"])).unwrap();
        assert_eq!(layout.ranks_by_host(), [vec![0, 2], vec![1, 4], vec![3]]);
        assert_eq!(Layout::one_host(3).ranks_by_host(), [vec![0, 1, 2]]);
    }

    #[test]
    fn bad_layouts_say_what_is_wrong() {
        let err = |hosts: &[&str], switches: Vec<Option<&str>>| {
            let switches = switches.into_iter().map(|s| s.map(String::from)).collect();
            Layout::new(names(hosts), switches).unwrap_err().to_string()
        };
        assert!(err(&["a", "a"], vec![Some("s0"), Some("s1")])
            .contains("host a has rank 0 on switch s0 and rank 1 on switch s1"));
        assert!(err(&["a", "a"], vec![None, Some("s1")]).contains("rank 0 on no switch"));
        assert!(err(&["a"], vec![Some("s0//s1")]).contains("not a path"));
        assert!(err(&["a"], vec![Some("/s0")]).contains("not a path"));
        assert!(err(&[""], vec![None]).contains("empty host name"));
        assert!(err(&["a"], vec![None, None]).contains("1 hosts but 2 switches"));
        assert!(err(&[], vec![]).contains("at least one rank"));
    }
}
