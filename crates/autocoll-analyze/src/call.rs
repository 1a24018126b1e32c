//! One call as the analyses see it: each rank's events with their times on
//! the common clock, each rank's place in the call's tree, and the call's
//! messages (every send paired with its receive).

use autocoll::observe::Stage;
use autocoll::trace::format::{Call, Header, TreePlace};
use autocoll::trace::messages::{pair, At, Messages};
use autocoll::Collective;

use super::clocks::Clocks;

/// One rank's record of the call.
pub struct RankView<'a> {
    /// The record.
    pub call: &'a Call,
    /// Its place in the call's tree, if the algorithm is a tree.
    pub place: Option<&'a TreePlace>,
    /// Each event's time, ns on the common clock (on the rank's own clock
    /// when the clocks could not be aligned).
    pub t: Vec<i64>,
}

impl RankView<'_> {
    /// When the rank entered the call.
    pub fn enter(&self) -> i64 {
        self.t[0]
    }

    /// When its part of the call was complete.
    pub fn done(&self) -> i64 {
        self.t[self.t.len() - 1]
    }

    /// Its parent in the call's tree.
    pub fn parent(&self) -> Option<usize> {
        self.place.and_then(|p| p.parent.map(|r| r as usize))
    }

    /// Its children in the call's tree, in send order.
    pub fn children(&self) -> impl Iterator<Item = usize> + '_ {
        self.place
            .into_iter()
            .flat_map(|p| p.children.iter().map(|&c| c as usize))
    }

    /// Index of the last event `stage` with `peer`, if any.
    pub fn last(&self, stage: Stage, peer: usize) -> Option<usize> {
        self.call
            .events
            .iter()
            .rposition(|e| e.stage == stage && e.peer() == Some(peer))
    }
}

/// One call, every rank's record of it together.
pub struct View<'a> {
    /// The call's number.
    pub seq: u64,
    /// The collective.
    pub op: Collective,
    /// Bytes per rank.
    pub bytes: u64,
    /// The root.
    pub root: usize,
    /// The implementation id.
    pub imp: &'a str,
    /// Rank r's record at index r; `None` for a rank without a file, or
    /// whose record holds no event.
    pub ranks: Vec<Option<RankView<'a>>>,
    /// The call's messages.
    pub messages: Messages,
    /// True when the times of different ranks compare.
    pub aligned: bool,
}

impl<'a> View<'a> {
    /// The view of `calls` (rank r's at index r).
    pub fn new(
        calls: &'a [Option<Call>],
        headers: &'a [Option<Header>],
        clocks: &Clocks,
    ) -> View<'a> {
        let ranks: Vec<Option<RankView<'a>>> = calls
            .iter()
            .zip(headers)
            .enumerate()
            .map(|(rank, (call, header))| {
                let (call, header) = (call.as_ref()?, header.as_ref()?);
                if call.events.is_empty() {
                    return None;
                }
                let t = call
                    .events
                    .iter()
                    .map(|e| clocks.common(rank, e.time_ns))
                    .collect();
                Some(RankView {
                    call,
                    place: call.tree(header),
                    t,
                })
            })
            .collect();
        let (first_rank, first) = ranks
            .iter()
            .enumerate()
            .find_map(|(r, v)| v.as_ref().map(|v| (r, v.call)))
            .expect("a call set holds at least one rank's record");
        let header = headers[first_rank]
            .as_ref()
            .expect("a rank with a call has a header");
        let present: Vec<Option<&Call>> =
            ranks.iter().map(|v| v.as_ref().map(|v| v.call)).collect();
        View {
            seq: first.seq,
            op: first.op,
            bytes: first.bytes,
            root: first.root as usize,
            imp: &header.impls[first.imp as usize],
            messages: pair(&present),
            aligned: clocks.aligned(),
            ranks,
        }
    }

    /// Rank `r`'s record, if present.
    pub fn rank(&self, r: usize) -> Option<&RankView<'a>> {
        self.ranks.get(r).and_then(Option::as_ref)
    }

    /// The time of the event at `at`.
    pub fn time(&self, at: At) -> i64 {
        self.ranks[at.rank]
            .as_ref()
            .expect("events are of present ranks")
            .t[at.index]
    }

    /// True when the call ran over a tree.
    pub fn is_tree(&self) -> bool {
        self.ranks.iter().flatten().any(|v| v.place.is_some())
    }

    /// The call's time: from the first enter to the last leave where the
    /// clocks compare, else the longest time one rank spent in it.
    pub fn duration(&self) -> f64 {
        let present = self.ranks.iter().flatten();
        if self.aligned {
            let first = present.clone().map(RankView::enter).min().unwrap_or(0);
            let last = present.map(RankView::done).max().unwrap_or(0);
            (last - first) as f64
        } else {
            present
                .map(|v| (v.done() - v.enter()) as f64)
                .fold(0.0, f64::max)
        }
    }

    /// For each rank and event, the send that a `Received` event took.
    pub fn sends_of_receives(&self) -> Vec<Vec<Option<At>>> {
        let mut out: Vec<Vec<Option<At>>> = self
            .ranks
            .iter()
            .map(|v| vec![None; v.as_ref().map_or(0, |v| v.t.len())])
            .collect();
        for m in &self.messages.paired {
            out[m.recv.rank][m.recv.index] = Some(m.send);
        }
        out
    }
}
