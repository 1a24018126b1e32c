//! The critical path of a call: the chain of stages that ended last.
//!
//! The walk starts at the latest leave (`Done`) of any rank and goes
//! backward. At each event the step before it is, on the same rank, the
//! previous event — unless the event is a receive whose message was sent
//! at or after that previous event: then the rank was waiting for the
//! message, and the path crosses to the sender (a *transfer* step, from
//! the send to the receive). The walk ends at a rank's entry, the path's
//! *start*: the rank whose entry the call's end depended on. Each step is
//! named by what ends it: receive, combine, send, finish (from the last
//! event to `Done`: sends still being taken), transfer. The steps tile the
//! time from the start's entry to the last leave.
//!
//! It compares times of different ranks: with unaligned clocks there is
//! no critical path. A receive whose sender has no file is taken as local.

use serde::Serialize;

use autocoll::observe::Stage;
use autocoll::trace::messages::At;

use super::call::View;

/// What a step of the path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// Up to a receive that did not wait for its message's send.
    Receive,
    /// Combining a received segment.
    Combine,
    /// Handing a segment to the transport.
    Send,
    /// From the last event to done.
    Finish,
    /// A message, from its send to its receive.
    Transfer,
}

impl StepKind {
    /// Every kind.
    pub const ALL: [StepKind; 5] = [
        StepKind::Receive,
        StepKind::Combine,
        StepKind::Send,
        StepKind::Finish,
        StepKind::Transfer,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Receive => "receive",
            StepKind::Combine => "combine",
            StepKind::Send => "send",
            StepKind::Finish => "finish",
            StepKind::Transfer => "transfer",
        }
    }
}

/// One step: on `rank` (the receiver, for a transfer), from `start` to
/// `end`, ns on the common clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The rank.
    pub rank: usize,
    /// What it is.
    pub kind: StepKind,
    /// The other rank of a transfer, send or receive.
    pub peer: Option<usize>,
    /// When it began.
    pub start: i64,
    /// When it ended.
    pub end: i64,
    /// The index of the event on `rank` that ends it.
    pub index: usize,
}

/// The call's critical path, in time order; `None` when the clocks do not
/// align.
pub fn path(view: &View) -> Option<Vec<Step>> {
    if !view.aligned {
        return None;
    }
    let mut rank = view
        .ranks
        .iter()
        .enumerate()
        .filter_map(|(r, v)| v.as_ref().map(|v| (r, v.done())))
        .max_by_key(|&(r, t)| (t, std::cmp::Reverse(r)))?
        .0;
    let sends = view.sends_of_receives();
    let mut index = view.rank(rank)?.t.len() - 1;
    let mut steps = Vec::new();
    let bound: usize = view.ranks.iter().flatten().map(|v| v.t.len()).sum();
    while index > 0 && steps.len() <= bound {
        let v = view.rank(rank)?;
        let e = &v.call.events[index];
        let prev = v.t[index - 1];
        let send = sends[rank][index].filter(|&s| view.time(s) >= prev);
        match (e.stage, send) {
            (
                Stage::Received,
                Some(At {
                    rank: from,
                    index: at,
                }),
            ) => {
                steps.push(Step {
                    rank,
                    kind: StepKind::Transfer,
                    peer: Some(from),
                    start: view.time(At {
                        rank: from,
                        index: at,
                    }),
                    end: v.t[index],
                    index,
                });
                (rank, index) = (from, at);
            }
            (stage, _) => {
                let kind = match stage {
                    Stage::Received => StepKind::Receive,
                    Stage::Combined => StepKind::Combine,
                    Stage::Sent => StepKind::Send,
                    Stage::Done | Stage::Enter => StepKind::Finish,
                };
                steps.push(Step {
                    rank,
                    kind,
                    peer: e.peer(),
                    start: prev,
                    end: v.t[index],
                    index,
                });
                index -= 1;
            }
        }
    }
    steps.reverse();
    Some(steps)
}

/// The rank whose entry starts a path.
pub fn start(view: &View, steps: &[Step]) -> Option<usize> {
    match steps.first() {
        Some(s) => Some(s.rank),
        None => view.ranks.iter().position(Option::is_some),
    }
}
