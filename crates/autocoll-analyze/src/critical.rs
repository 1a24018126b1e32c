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
    let rank = last_to_leave(view)?;
    let mut at = At {
        rank,
        index: view.rank(rank)?.t.len() - 1,
    };
    let sends = view.sends_of_receives();
    let mut steps = Vec::new();
    let bound: usize = view.ranks.iter().flatten().map(|v| v.t.len()).sum();
    while at.index > 0 && steps.len() <= bound {
        let (step, before) = step_to(view, &sends, at)?;
        steps.push(step);
        at = before;
    }
    steps.reverse();
    Some(steps)
}

/// The rank that left the call last (the lowest of those that left
/// together).
fn last_to_leave(view: &View) -> Option<usize> {
    let (rank, _) = view
        .ranks
        .iter()
        .enumerate()
        .filter_map(|(r, v)| v.as_ref().map(|v| (r, v.done())))
        .max_by_key(|&(r, t)| (t, std::cmp::Reverse(r)))?;
    Some(rank)
}

/// The step that ends at event `at` (not a rank's first), and the event
/// it starts at: the sender's send for a receive that waited for its
/// message (`sends`: each receive's send), else the rank's event before.
fn step_to(view: &View, sends: &[Vec<Option<At>>], at: At) -> Option<(Step, At)> {
    let At { rank, index } = at;
    let v = view.rank(rank)?;
    let e = &v.call.events[index];
    let prev = v.t[index - 1];
    let send = sends[rank][index].filter(|&s| view.time(s) >= prev);
    if let (Stage::Received, Some(from)) = (e.stage, send) {
        let step = Step {
            rank,
            kind: StepKind::Transfer,
            peer: Some(from.rank),
            start: view.time(from),
            end: v.t[index],
            index,
        };
        return Some((step, from));
    }
    let kind = match e.stage {
        Stage::Received => StepKind::Receive,
        Stage::Combined => StepKind::Combine,
        Stage::Sent => StepKind::Send,
        Stage::Done | Stage::Enter => StepKind::Finish,
    };
    let step = Step {
        rank,
        kind,
        peer: e.peer(),
        start: prev,
        end: v.t[index],
        index,
    };
    Some((
        step,
        At {
            rank,
            index: index - 1,
        },
    ))
}

/// The rank whose entry starts a path.
pub fn start(view: &View, steps: &[Step]) -> Option<usize> {
    match steps.first() {
        Some(s) => Some(s.rank),
        None => view.ranks.iter().position(Option::is_some),
    }
}
