//! The messages of one call, found in its ranks' events: every send paired
//! with the receive that took it.
//!
//! A send is a `Sent` event on the sender naming the receiver; its receive
//! is a `Received` event on the receiver naming the sender, with the same
//! phase and segment. Transports deliver the messages of one pair and tag
//! in order, so the n-th such send goes with the n-th such receive. Analyses
//! that follow the data through a call (the critical path, flows in a
//! timeline, link latencies) start here.

use std::collections::HashMap;

use super::format::{Call, Event};
use crate::observe::Stage;

/// Where an event is: the rank, and its index in that rank's call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct At {
    /// The rank.
    pub rank: usize,
    /// Index into the rank's `Call::events`.
    pub index: usize,
}

/// One message of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The sender's `Sent` event.
    pub send: At,
    /// The receiver's `Received` event.
    pub recv: At,
    /// The algorithm's phase.
    pub phase: u8,
    /// The segment or step.
    pub segment: u32,
}

/// The messages of one call, and the events that found no partner.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Messages {
    /// Paired sends and receives, in the order of the sends' ranks and
    /// events.
    pub paired: Vec<Message>,
    /// Sends whose receive is not in the trace (its rank's file is
    /// missing, or the call was dropped there).
    pub unreceived: Vec<At>,
    /// Receives whose send is not in the trace.
    pub unsent: Vec<At>,
}

/// (sender, receiver, phase, segment): what pairs a send with a receive.
type Key = (usize, usize, u8, u32);

/// Pairs the sends and receives of one call. `calls[r]` is rank r's record
/// of the call, `None` where that rank's is missing.
pub fn pair(calls: &[Option<&Call>]) -> Messages {
    let mut sends: HashMap<Key, Vec<At>> = HashMap::new();
    let mut recvs: HashMap<Key, Vec<At>> = HashMap::new();
    for (rank, call) in calls.iter().enumerate() {
        let Some(call) = call else { continue };
        for (index, e) in call.events.iter().enumerate() {
            let at = At { rank, index };
            match (e.stage, e.peer()) {
                (Stage::Sent, Some(dst)) => sends.entry(key(rank, dst, e)).or_default().push(at),
                (Stage::Received, Some(src)) => {
                    recvs.entry(key(src, rank, e)).or_default().push(at)
                }
                _ => {}
            }
        }
    }
    let mut out = Messages::default();
    for (k, sent) in &sends {
        let got = recvs.remove(k).unwrap_or_default();
        for (i, &send) in sent.iter().enumerate() {
            match got.get(i) {
                Some(&recv) => out.paired.push(Message {
                    send,
                    recv,
                    phase: k.2,
                    segment: k.3,
                }),
                None => out.unreceived.push(send),
            }
        }
        out.unsent.extend(got.iter().skip(sent.len()));
    }
    out.unsent.extend(recvs.into_values().flatten());
    out.paired.sort_by_key(|m| (m.send.rank, m.send.index));
    out.unreceived.sort_by_key(|a| (a.rank, a.index));
    out.unsent.sort_by_key(|a| (a.rank, a.index));
    out
}

fn key(src: usize, dst: usize, e: &Event) -> Key {
    (src, dst, e.phase, e.segment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Collective;
    use crate::trace::format::{NO_PEER, NO_TREE};

    fn ev(time_ns: u64, stage: Stage, peer: u16, segment: u32) -> Event {
        Event {
            time_ns,
            segment,
            peer,
            stage,
            phase: 0,
        }
    }

    fn call(events: Vec<Event>) -> Call {
        Call {
            seq: 0,
            op: Collective::Bcast,
            bytes: 8,
            root: 0,
            imp: 0,
            tree: NO_TREE,
            events,
        }
    }

    #[test]
    fn sends_pair_with_receives_in_order_and_strays_are_named() {
        // Rank 0 sends segments 0 and 1 to rank 1, and segment 0 twice to
        // rank 2 (two phases' worth, same key: the n-th goes with the n-th).
        let r0 = call(vec![
            ev(0, Stage::Enter, NO_PEER, 0),
            ev(1, Stage::Sent, 1, 0),
            ev(2, Stage::Sent, 1, 1),
            ev(3, Stage::Sent, 2, 0),
            ev(4, Stage::Sent, 2, 0),
        ]);
        let r1 = call(vec![
            ev(5, Stage::Received, 0, 0),
            ev(6, Stage::Received, 0, 1),
            ev(7, Stage::Received, 2, 9),
        ]);
        let r2 = call(vec![ev(8, Stage::Received, 0, 0)]);
        let got = pair(&[Some(&r0), Some(&r1), Some(&r2)]);
        let pairs: Vec<_> = got
            .paired
            .iter()
            .map(|m| ((m.send.rank, m.send.index), (m.recv.rank, m.recv.index)))
            .collect();
        assert_eq!(
            pairs,
            [((0, 1), (1, 0)), ((0, 2), (1, 1)), ((0, 3), (2, 0))]
        );
        assert_eq!(got.unreceived, [At { rank: 0, index: 4 }]);
        assert_eq!(got.unsent, [At { rank: 1, index: 2 }]);
        let without_rank_1 = pair(&[Some(&r0), None, Some(&r2)]);
        assert_eq!(without_rank_1.paired.len(), 1);
        assert_eq!(without_rank_1.unreceived.len(), 3);
    }
}
