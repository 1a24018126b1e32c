//! Sub-communicators, as MPI makes them: [`Communicator::split`] and
//! [`Communicator::dup`].
//!
//! A communicator and the ones made from it share their rank's transport,
//! each through a [`View`] with its own ranks and its own context id
//! (see [`crate::transport::shared`]). The first split or dup moves the
//! communicator's transport behind a view of all its ranks. A split is
//! one small allgather over the parent: every rank's color, key and the
//! least context id it can take; the largest of those is the children's
//! id (siblings share it: they have no rank in common).
//!
//! A child starts with: the parent's layout restricted to its ranks, in
//! its order; a selector made by the parent's ([`crate::select::Selector::offspring`]:
//! a lottery learns by shape with its parent's family and saves into the
//! same state file); the parent's timeout; a recording of its own when
//! the parent records, in a subdirectory of the parent's named for the
//! child (`comm-<context>-r<parent rank of its rank 0>`); a balancer with
//! the parent's parameters. Messages it sends are counted by a pattern
//! recording the parent started before its first split (the counts sit
//! below the views, in the transport's ranks). Virtual-rank tables and
//! observers are the parent's own, and stay with it.

use std::sync::Arc;

use super::Communicator;
use crate::comm::trace_options::TraceOptions;
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::layout::Layout;
use crate::select::state::{Fingerprint, Store};
use crate::select::{Algorithm, Implementation, Offspring};
use crate::transport::shared::View;

/// A rank's split arguments on the wire: color (or [`UNDEFINED`]), key,
/// least context id.
const FIELDS: usize = 3;
/// The color of a rank that joins no child.
const UNDEFINED: u64 = u64::MAX;

impl Communicator {
    /// Splits the ranks into new communicators, one per color, as
    /// `MPI_Comm_split` does: collective, every rank calls it. The ranks
    /// of one color make a communicator in which they are ordered by
    /// `key`, then by their rank here; a rank whose color is `None`
    /// (`MPI_UNDEFINED`) joins none and gets `None`.
    ///
    /// The new communicator runs every collective, algorithm and selector
    /// this one does, numbers its calls from 0, and its messages never
    /// meet this one's or a sibling's. Use a communicator and those made
    /// from it from one thread per rank, one call at a time, as in MPI.
    /// Errors name ranks by the transport's numbering (the first
    /// communicator's).
    ///
    /// ```
    /// let sums = autocoll::local::run(6, |mut world| {
    ///     let (r, cols) = (world.rank(), 3);
    ///     let mut row = world.split(Some((r / cols) as u32), 0)?.expect("a row");
    ///     let mut col = world.split(Some((r % cols) as u32), 0)?.expect("a column");
    ///     let mut sum = [0u64];
    ///     row.allreduce(&[r as u64], &mut sum, &autocoll::Op::SUM)?;
    ///     col.bcast(&mut sum, 0)?;
    ///     world.barrier()?;
    ///     autocoll::Result::Ok(sum[0])
    /// });
    /// let sums: Vec<u64> = sums.into_iter().collect::<autocoll::Result<_>>().unwrap();
    /// assert_eq!(sums, [3; 6]);
    /// ```
    pub fn split(&mut self, color: Option<u32>, key: i64) -> Result<Option<Communicator>> {
        let view = self.view();
        let mine = [
            color.map_or(UNDEFINED, u64::from),
            key as u64,
            u64::from(view.next_ctx()),
        ];
        let mut all = vec![0u64; FIELDS * self.size()];
        let imp = Implementation::new(Collective::Allgather, Algorithm::RecursiveDoubling, None)?;
        self.unbalanced(|c| c.allgather_with(&imp, &mine, &mut all))?;
        let ranks: Vec<&[u64]> = all.chunks_exact(FIELDS).collect();
        let ctx = ranks.iter().map(|r| r[2]).max().unwrap_or(0);
        let ctx = u32::try_from(ctx)
            .map_err(|_| Error::Split(format!("a rank offered context id {ctx}")))?;
        view.taken(ctx)?;
        let Some(color) = color else {
            return Ok(None);
        };
        let mut members: Vec<(i64, usize)> = ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| r[0] == u64::from(color))
            .map(|(rank, r)| (r[1] as i64, rank))
            .collect();
        members.sort_unstable();
        let members: Vec<usize> = members.into_iter().map(|(_, rank)| rank).collect();
        let rank = members
            .iter()
            .position(|&r| r == self.rank())
            .ok_or_else(|| {
                Error::Split(format!("rank {} is missing from its color", self.rank()))
            })?;
        let sub = view.sub(&members, rank, ctx)?;
        self.child(sub, &members).map(Some)
    }

    /// A new communicator of the same ranks in the same order, as
    /// `MPI_Comm_dup` makes: collective. It starts as [`Self::split`]'s
    /// children do, and its messages never meet this one's.
    pub fn dup(&mut self) -> Result<Communicator> {
        let rank = self.rank() as i64;
        self.split(Some(0), rank)?
            .ok_or_else(|| Error::Split("a duplicate without this rank".into()))
    }

    /// This communicator's view of its transport, made on the first call.
    fn view(&mut self) -> View {
        if let Some(view) = &self.view {
            return view.clone();
        }
        let transport = std::mem::replace(&mut self.transport, super::stand_in());
        let view = View::whole(transport);
        self.transport = Box::new(view.clone());
        self.view = Some(view.clone());
        view
    }

    /// The communicator of `view`, whose ranks are `members` here.
    fn child(&mut self, view: View, members: &[usize]) -> Result<Communicator> {
        let mut child = Communicator::new(Box::new(view.clone()));
        child.view = Some(view);
        if let Ok(layout) = &self.layout {
            let hosts = layout.hosts();
            let switches = layout.switches();
            let pick = |r: &usize| (hosts[*r].clone(), switches[*r].clone());
            let (hosts, switches) = members.iter().map(pick).unzip();
            child.layout = Ok(Arc::new(Layout::new(hosts, switches)?));
        }
        let hosts = child.hosts();
        let ranks = Offspring {
            hosts: &hosts,
            transport: child.transport_kind(),
            rank: child.rank(),
        };
        child.state = self.state.as_ref().map(|store| {
            let objective = store.fingerprint().objective;
            let fingerprint = Fingerprint::new(&hosts, ranks.transport).measuring(objective);
            Store::new(store.path(), fingerprint, ranks.rank == 0)
        });
        if let Some(selector) = self.selector.offspring(&ranks) {
            child.set_selector(selector);
        }
        self.start_like(&mut child, members)?;
        Ok(child)
    }

    /// Starts on `child` the recording and the balancer this one has.
    fn start_like(&self, child: &mut Communicator, members: &[usize]) -> Result<()> {
        if let Some(tracing) = &self.tracing {
            let dir = tracing.path.parent().unwrap_or(std::path::Path::new("."));
            let leader = members.first().copied().unwrap_or(0);
            let ctx = child.view.as_ref().map_or(0, View::ctx);
            let options = TraceOptions {
                capacity_events: tracing.recorder.usage().capacity_events as usize,
                estimate_offsets: tracing.estimates_offsets(),
            };
            child.trace_with(dir.join(format!("comm-{ctx}-r{leader}")), options)?;
        }
        if let Some(balancer) = &self.balancer {
            child.use_balancer(balancer.params().clone())?;
        }
        Ok(())
    }
}
