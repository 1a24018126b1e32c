//! One rank's transport shared by every communicator it belongs to: a
//! communicator and the sub-communicators made from it (split, dup) each
//! hold a [`View`] of the rank's one transport.
//!
//! A view numbers its own ranks (its rank i is the transport's rank
//! `ranks[i]`) and puts its communicator's context id in every tag, so
//! that a message of one communicator never matches a receive of another:
//! messages of a rank's communicators arrive on one connection and are
//! told apart by the mailbox, as MPI tells them apart by the context id in
//! its envelope. Context ids are agreed when a communicator is made (see
//! [`View::next_ctx`]).
//!
//! The transport sits behind a mutex, taken once per message. Parent and
//! children are used from one thread per rank, one call at a time (as in
//! MPI), so the lock is never contended: taking it is one atomic exchange
//! and releasing it one more, against the channel operations, system calls
//! or MPI calls of the message itself. A communicator that never makes a
//! sub-communicator keeps its transport to itself, and pays nothing.
//!
//! The timeout is a view's own: a view applies it to the transport before
//! a receive only when the last view to wait set another one.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::transport::{Tag, Transport};

/// The transport and what its views agree through.
struct Root {
    transport: Box<dyn Transport>,
    /// Above every context id this rank has taken part in.
    next_ctx: u32,
    /// The timeout set on the transport.
    applied: Duration,
}

/// A communicator's view of its rank's transport: its ranks, in its order,
/// and its context id.
#[derive(Clone)]
pub struct View {
    root: Arc<Mutex<Root>>,
    /// The transport's rank of each rank of the view; `None`: the same.
    ranks: Option<Arc<[usize]>>,
    rank: usize,
    size: usize,
    ctx: u32,
    timeout: Duration,
}

impl View {
    /// The view of all of `transport`'s ranks, with context id 0: what a
    /// communicator holds from its first sub-communicator on.
    pub fn whole(transport: Box<dyn Transport>) -> View {
        let (rank, size, timeout) = (transport.rank(), transport.size(), transport.timeout());
        let root = Root {
            transport,
            next_ctx: 1,
            applied: timeout,
        };
        View {
            root: Arc::new(Mutex::new(root)),
            ranks: None,
            rank,
            size,
            ctx: 0,
            timeout,
        }
    }

    /// The view over `members` (ranks of this view, in the new view's
    /// order) with context id `ctx`, in which this rank is `members[rank]`.
    pub fn sub(&self, members: &[usize], rank: usize, ctx: u32) -> Result<View> {
        let size = self.size;
        let ranks = members
            .iter()
            .map(|&m| match m < size {
                true => Ok(self.root_rank(m)),
                false => Err(Error::RankOutOfRange { rank: m, size }),
            })
            .collect::<Result<Arc<[usize]>>>()?;
        if rank >= ranks.len() {
            return Err(Error::RankOutOfRange {
                rank,
                size: ranks.len(),
            });
        }
        Ok(View {
            root: self.root.clone(),
            size: ranks.len(),
            ranks: Some(ranks),
            rank,
            ctx,
            timeout: self.timeout,
        })
    }

    /// The communicator's context id.
    pub fn ctx(&self) -> u32 {
        self.ctx
    }

    /// The least context id this rank can take for a new communicator.
    /// Made by a collective step: each rank of the parent offers its own,
    /// all take the largest, and each then calls [`Self::taken`] with it.
    /// A rank's own is above every id it holds, so two communicators of
    /// one id have no rank in common, and their messages never meet.
    pub fn next_ctx(&self) -> u32 {
        self.lock().next_ctx
    }

    /// Records that `ctx`, agreed by the new communicator's parent, is in
    /// use on this rank: later ones are above it.
    pub fn taken(&self, ctx: u32) -> Result<()> {
        let next = ctx.checked_add(1).ok_or_else(|| {
            Error::Split(format!(
                "this rank took part in {} communicators: no context id is left",
                u32::MAX
            ))
        })?;
        let mut root = self.lock();
        root.next_ctx = root.next_ctx.max(next);
        Ok(())
    }

    fn root_rank(&self, rank: usize) -> usize {
        match &self.ranks {
            Some(ranks) => ranks[rank],
            None => rank,
        }
    }

    /// The transport's rank of `rank` of this view, checked.
    fn peer(&self, rank: usize) -> Result<usize> {
        match rank < self.size {
            true => Ok(self.root_rank(rank)),
            false => Err(Error::RankOutOfRange {
                rank,
                size: self.size,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Root> {
        // A rank's thread that panicked holding the lock ended the rank:
        // its communicators are not used again.
        self.root.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The transport, with this view's timeout set for a wait.
    fn waiting(&self) -> MutexGuard<'_, Root> {
        let mut root = self.lock();
        if root.applied != self.timeout {
            root.transport.set_timeout(self.timeout);
            root.applied = self.timeout;
        }
        root
    }

    /// `all`, the transport's per-rank list, restricted to this view's
    /// ranks in its order.
    fn restrict<T: Clone>(&self, all: Vec<T>) -> Vec<T> {
        match &self.ranks {
            Some(ranks) => ranks.iter().filter_map(|&r| all.get(r).cloned()).collect(),
            None => all,
        }
    }
}

impl Transport for View {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        let dest = self.peer(dest)?;
        let tag = tag.in_ctx(self.ctx);
        self.lock().transport.send(dest, tag, data)
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        let src = self.peer(src)?;
        let tag = tag.in_ctx(self.ctx);
        self.waiting().transport.recv(src, tag)
    }

    fn try_recv(&mut self, src: usize, tag: Tag) -> Result<Option<Bytes>> {
        let src = self.peer(src)?;
        let tag = tag.in_ctx(self.ctx);
        self.lock().transport.try_recv(src, tag)
    }

    fn kind(&self) -> &'static str {
        self.lock().transport.kind()
    }

    fn shared_clock(&self) -> bool {
        self.lock().transport.shared_clock()
    }

    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn hosts(&self) -> Vec<String> {
        let all = self.lock().transport.hosts();
        self.restrict(all)
    }

    fn switches(&self) -> Vec<Option<String>> {
        let all = self.lock().transport.switches();
        self.restrict(all)
    }

    fn finish_sends(&mut self) -> Result<()> {
        self.lock().transport.finish_sends()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::local::transports;

    fn views(n: usize) -> Vec<View> {
        transports(n)
            .into_iter()
            .map(|t| View::whole(Box::new(t)))
            .collect()
    }

    #[test]
    fn a_sub_view_numbers_its_ranks_and_keeps_its_messages_apart() {
        let mut whole = views(3);
        let mut sub2 = whole[2].sub(&[2, 0], 0, 5).unwrap();
        let mut sub0 = whole[0].sub(&[2, 0], 1, 5).unwrap();
        assert_eq!((sub2.rank(), sub2.size(), sub0.rank()), (0, 2, 1));
        sub2.send(1, Tag::user(7), Bytes::from_static(b"sub"))
            .unwrap();
        whole[2]
            .send(0, Tag::user(7), Bytes::from_static(b"whole"))
            .unwrap();
        assert_eq!(&whole[0].recv(2, Tag::user(7)).unwrap()[..], b"whole");
        assert_eq!(&sub0.recv(0, Tag::user(7)).unwrap()[..], b"sub");
        assert!(matches!(
            sub0.send(2, Tag::user(7), Bytes::new()),
            Err(Error::RankOutOfRange { rank: 2, size: 2 })
        ));
    }

    #[test]
    fn a_view_keeps_its_own_timeout() {
        let mut whole = views(2);
        let mut sub = whole[0].sub(&[0, 1], 0, 1).unwrap();
        sub.set_timeout(Duration::from_millis(20));
        assert!(matches!(
            sub.recv(1, Tag::user(1)),
            Err(Error::PeerGone { .. })
        ));
        assert_eq!(whole[0].lock().applied, Duration::from_millis(20));
        whole[1].send(0, Tag::user(1), Bytes::new()).unwrap();
        whole[0].recv(1, Tag::user(1)).unwrap();
        let applied = whole[0].lock().applied;
        assert_eq!(applied, crate::transport::DEFAULT_TIMEOUT);
    }

    #[test]
    fn context_ids_rise_above_every_one_taken() {
        let whole = views(1);
        assert_eq!(whole[0].next_ctx(), 1);
        whole[0].taken(4).unwrap();
        whole[0].taken(2).unwrap();
        assert_eq!(whole[0].next_ctx(), 5);
        assert!(matches!(whole[0].taken(u32::MAX), Err(Error::Split(_))));
    }
}
