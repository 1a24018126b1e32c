//! Candidates that send the same messages.
//!
//! At a given number of ranks, size and root, many implementations are one
//! and the same exchange: on 4 ranks the flat tree, the 3-ary tree and the
//! 4-nomial tree all have the root send its message to the three others; a
//! segment as large as the message is no segmentation; on 2 ranks every
//! broadcast tree is one message. Measuring such candidates against each
//! other measures only noise, and a race among them cannot end before its
//! last round. [`classes`] runs every candidate once on threads, logs what
//! each rank does, and groups the candidates whose logs are equal.
//!
//! A rank's log is its collective sends (destination and length) and
//! receives (source) in the order it makes them: the same messages in the
//! same order of dependence. Counting messages alone is not enough: on 2
//! ranks a ring allreduce and a reduce followed by a broadcast send the
//! same two halves each way, but the ring sends them at once and the other
//! one after the other. Collectives receive from a named source, never
//! whichever comes first, so a log is the same on every run and on every
//! rank of a job, which each compute the groups for themselves.
//! The calls run over the job's [`Layout`], so that trees that follow the
//! hosts are built as the job builds them; the MPI library's own algorithm
//! (`<op>:mpi`) cannot run here and is never grouped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use crate::comm::communicator::Communicator;
use crate::comm::local;
use crate::error::Result;
use crate::layout::Layout;
use crate::measure::call::Caller;
use crate::measure::method::Point;
use crate::select::Algorithm;
use crate::transport::local::Local;
use crate::transport::{Tag, Transport};

/// Above this many ranks [`classes`] groups nothing: running every
/// candidate once on threads costs ranks × bytes of memory and copying
/// per candidate.
pub const MOST_RANKS: usize = 256;

/// One step of a rank's part in a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// A message of this many bytes to this rank.
    Send(usize, usize),
    /// A wait for the next message from this rank.
    Recv(usize),
}

/// What one rank did in one call, in order.
pub type Log = Vec<Step>;

/// For each of `points` (one collective, size and root) on the ranks of
/// `layout`, the index of the first point that sends the same messages:
/// its own index when no earlier one does. Above [`MOST_RANKS`] every
/// point is its own.
pub fn classes(points: &[Point], layout: &Layout) -> Result<Vec<usize>> {
    if layout.size() > MOST_RANKS {
        return Ok((0..points.len()).collect());
    }
    let mut first: HashMap<Vec<Log>, usize> = HashMap::new();
    let mut out = Vec::with_capacity(points.len());
    for (i, point) in points.iter().enumerate() {
        if point.imp.algorithm == Algorithm::Native {
            out.push(i);
            continue;
        }
        let logs = logs(point, layout)?;
        out.push(*first.entry(logs).or_insert(i));
    }
    Ok(out)
}

/// Whether `a` and `b` send the same messages on the ranks of `layout`.
pub fn alike(a: &Point, b: &Point, layout: &Layout) -> Result<bool> {
    Ok(a == b || classes(&[a.clone(), b.clone()], layout)? == [0, 0])
}

/// Every rank's log of one call of `point` on a thread per rank of
/// `layout`.
pub fn logs(point: &Point, layout: &Layout) -> Result<Vec<Log>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = local::transports(layout.size())
            .into_iter()
            .map(|t| scope.spawn(move || one_rank(point, layout, t)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn one_rank(point: &Point, layout: &Layout, inner: Local) -> Result<Log> {
    let log = Arc::new(Mutex::new(Log::new()));
    let logging = Logging {
        inner,
        log: log.clone(),
    };
    let mut comm = Communicator::new(Box::new(logging));
    comm.set_layout(layout.clone())?;
    Caller::of(&point.imp, point.bytes, layout.size()).call(&mut comm, point.root)?;
    drop(comm);
    let log = std::mem::take(&mut *log.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(log)
}

/// A transport that logs a collective's sends and receives.
struct Logging {
    inner: Local,
    log: Arc<Mutex<Log>>,
}

impl Logging {
    fn note(&self, tag: &Tag, step: Step) {
        if matches!(tag, Tag::Coll { .. }) {
            let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
            log.push(step);
        }
    }
}

impl Transport for Logging {
    crate::transport::forward_transport!(inner);

    fn send(&mut self, dest: usize, tag: Tag, data: Bytes) -> Result<()> {
        self.note(&tag, Step::Send(dest, data.len()));
        self.inner.send(dest, tag, data)
    }

    fn recv(&mut self, src: usize, tag: Tag) -> Result<Bytes> {
        self.note(&tag, Step::Recv(src));
        self.inner.recv(src, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(id: &str, bytes: usize) -> Point {
        Point {
            imp: id.parse().unwrap(),
            bytes,
            root: 0,
        }
    }

    fn classes_of(ids: &[&str], bytes: usize, ranks: usize) -> Vec<usize> {
        let points: Vec<Point> = ids.iter().map(|id| point(id, bytes)).collect();
        classes(&points, &Layout::one_host(ranks)).unwrap()
    }

    #[test]
    fn trees_that_are_one_tree_at_this_size_are_one_candidate() {
        // On 4 ranks the flat, 3-ary and 4-nomial trees all have the root
        // send to the other three; binomial and chain do not.
        let ids = [
            "bcast:flat",
            "bcast:kary:k=3",
            "bcast:knomial:k=4",
            "bcast:binomial",
            "bcast:chain",
        ];
        assert_eq!(classes_of(&ids, 1024, 4), vec![0, 0, 0, 3, 4]);
    }

    #[test]
    fn a_segment_as_large_as_the_message_is_no_segmentation() {
        // A 1K message: seg=1K and seg=2K send it whole; a 4K one: seg=1K
        // sends it in four.
        let ids = ["bcast:chain", "bcast:chain:seg=1K", "bcast:chain:seg=2K"];
        assert_eq!(classes_of(&ids, 1024, 3), vec![0, 0, 0]);
        let points = vec![
            point("bcast:chain", 4096),
            point("bcast:chain:seg=1K", 4096),
        ];
        assert_eq!(classes(&points, &Layout::one_host(3)).unwrap(), vec![0, 1]);
    }

    #[test]
    fn logs_hold_every_message_in_order() {
        let logs = logs(&point("bcast:chain:seg=2K", 4096), &Layout::one_host(3)).unwrap();
        assert_eq!(logs[0], vec![Step::Send(1, 2048); 2]);
        let middle = [Step::Recv(0), Step::Send(2, 2048)];
        assert_eq!(logs[1], [middle, middle].concat());
        assert_eq!(logs[2], vec![Step::Recv(1); 2]);
    }

    #[test]
    fn the_same_messages_in_another_order_of_dependence_differ() {
        // On 2 ranks both send two halves each way; the ring at once, the
        // reduce-then-broadcast one after the other.
        let ids = ["allreduce:ring", "allreduce:flat:seg=512K"];
        assert_eq!(classes_of(&ids, 1 << 20, 2), vec![0, 1]);
    }

    #[test]
    fn above_the_cap_nothing_is_grouped() {
        let points = vec![point("bcast:flat", 8), point("bcast:flat", 8)];
        let layout = Layout::one_host(MOST_RANKS + 1);
        assert_eq!(classes(&points, &layout).unwrap(), vec![0, 1]);
    }

    #[test]
    fn a_tree_that_follows_the_hosts_is_built_over_the_jobs_layout() {
        // On one host the hierarchical tree is its inner tree. With the
        // root alone on its host, the root sends only to the other host's
        // leader, which a binomial root never does on 4 ranks.
        let ids = [
            "bcast:hier:inner=binomial:outer=binomial:top=binomial",
            "bcast:binomial",
        ];
        assert_eq!(classes_of(&ids, 1024, 4), vec![0, 0]);
        let hosts = ["a", "b", "b", "b"].map(String::from).to_vec();
        let apart = Layout::new(hosts, vec![None; 4]).unwrap();
        let points: Vec<Point> = ids.iter().map(|id| point(id, 1024)).collect();
        assert_eq!(classes(&points, &apart).unwrap(), vec![0, 1]);
        assert_eq!(
            logs(&points[0], &apart).unwrap()[0],
            vec![Step::Send(1, 1024)]
        );
    }
}
