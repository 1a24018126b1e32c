//! The balancer's messages: how a rank's wait (its probe's) reaches rank 0 (a report on a reserved tag,
//! sent after the call, drained without blocking), and how rank 0's
//! decision reaches every rank (one small binomial broadcast before the
//! call it applies to, and a second carrying a whole table when there is
//! one).

use std::ops::RangeInclusive;

use bytes::Bytes;

use super::Balancer;
use crate::balance::op::Message;
use crate::balance::rules::{Change, Kind};
use crate::error::{Error, Result};
use crate::ids::Collective;
use crate::layout::Layout;
use crate::select::Implementation;
use crate::transport::{Tag, Transport};
use crate::tree::Shape;

/// The user tags reserved for the balancer's reports: the base plus the
/// balancer's [`crate::balance::Params::channel`]. Programs that send their own
/// point-to-point messages on a communicator with a balancer must not use
/// them.
pub const REPORT_TAGS: RangeInclusive<u64> = REPORT_TAG_BASE..=REPORT_TAG_BASE + 0xFFFF;
/// The first of [`REPORT_TAGS`].
pub const REPORT_TAG_BASE: u64 = 0xBA1A_0000;

/// Words of a decision's first message: the collective, why, the next
/// period, the two ranks of a swap, and the focus root.
const HEADER_WORDS: usize = 6;

/// The focus word of a decision without a focus root.
const NO_FOCUS: u32 = u32::MAX;

/// What the balancer's decisions need of the communicator they travel on:
/// its transport, where its ranks run, and broadcasts it does not balance.
pub(crate) trait Comm {
    /// The transport, for the reports.
    fn transport_mut(&mut self) -> &mut dyn Transport;
    /// Where the ranks run.
    fn layout(&self) -> Result<&Layout>;
    /// Broadcasts `words` from `root` with `imp`.
    fn bcast_with(&mut self, imp: &Implementation, words: &mut [u32], root: usize) -> Result<()>;
}

impl Balancer {
    fn tag(&self) -> Tag {
        Tag::user(REPORT_TAG_BASE + u64::from(self.params.channel))
    }

    /// Before a balanced call of `op`, numbered by `comm` next: the
    /// decision, when one is due. `comm` must not hold this balancer (its
    /// own broadcasts are not balanced).
    pub(crate) fn before(&mut self, comm: &mut dyn Comm, op: Collective) -> Result<()> {
        let due = self.state(op).is_some_and(|s| s.due());
        if !due {
            return Ok(());
        }
        let mut words = [0u32; HEADER_WORDS];
        let mut msg = None;
        if self.rank == 0 {
            self.drain(comm.transport_mut())?;
            let one_host;
            let layout = match comm.layout() {
                Ok(layout) => layout,
                Err(_) => {
                    one_host = Layout::one_host(self.size);
                    &one_host
                }
            };
            let params = self.params.clone();
            let state = self.state_mut(op).expect("due implies balanced");
            let decided = state.decide(layout, &params)?;
            words = header(op, &decided);
            msg = Some(decided);
        }
        let carrier = carrier();
        comm.bcast_with(&carrier, &mut words, 0)?;
        let msg = match msg {
            Some(msg) => msg,
            None => self.received(comm, op, &words)?,
        };
        if self.rank == 0 {
            if let Change::Table(table) = &msg.change {
                let mut t: Vec<u32> = table.iter().map(|&r| r as u32).collect();
                comm.bcast_with(&carrier, &mut t, 0)?;
            }
        }
        self.state_mut(op).expect("balanced").apply(&msg)
    }

    /// A decision rank 0 sent: its header `words`, and the table that
    /// follows it when it carries one.
    fn received(
        &mut self,
        comm: &mut dyn Comm,
        op: Collective,
        words: &[u32; HEADER_WORDS],
    ) -> Result<Message> {
        let bad = |reason: String| Error::Protocol {
            peer: "rank 0".into(),
            reason: format!("balancer decision: {reason}"),
        };
        let [code, kind, period, a, b, focus] = *words;
        if Collective::ALL.get(code as usize) != Some(&op) {
            return Err(bad(format!(
                "for collective #{code} at a call of {op}: do all ranks balance the same collectives?"
            )));
        }
        let (kind, table) = match kind {
            0 => (Kind::Keep, false),
            1 => (Kind::Trial, false),
            2 => (Kind::Revert, false),
            3 => (Kind::Trial, true),
            4 => (Kind::Revert, true),
            5 => (Kind::Restore, true),
            other => return Err(bad(format!("unknown kind {other}"))),
        };
        let change = if table {
            let mut t = vec![0u32; self.size];
            comm.bcast_with(&carrier(), &mut t, 0)?;
            Change::Table(t.into_iter().map(|r| r as usize).collect())
        } else if kind == Kind::Keep {
            Change::Keep
        } else {
            Change::Swap(a as usize, b as usize)
        };
        if period > self.params.max_period {
            return Err(bad(format!(
                "a period of {period} calls, above the longest, {}: do all ranks run the same parameters?",
                self.params.max_period
            )));
        }
        Ok(Message {
            kind,
            change,
            period,
            focus: (focus != NO_FOCUS).then_some(focus as usize),
        })
    }

    /// Rank 0: files every report that has come in.
    fn drain(&mut self, transport: &mut dyn Transport) -> Result<()> {
        let tag = self.tag();
        for src in 1..self.size {
            while let Some(data) = transport.try_recv(src, tag)? {
                let (op, wait) = report_of(&data).map_err(|reason| Error::Protocol {
                    peer: format!("rank {src}"),
                    reason: format!("balancer report: {reason}"),
                })?;
                if let Some(state) = self.state_mut(op) {
                    state.hear(src, wait);
                }
            }
        }
        Ok(())
    }

    /// The call numbered `seq` is the balanced call: measure it.
    pub(crate) fn arm(&self, seq: u64) {
        self.probe.arm(seq);
    }

    /// After a balanced call of `shape` from `root`: its wait counted, and
    /// reported to rank 0 if it moved enough (a send that never blocks).
    pub(crate) fn after(
        &mut self,
        transport: &mut dyn Transport,
        op: Collective,
        shape: &Shape,
        root: usize,
    ) {
        let wait = self.probe.wait();
        let tag = self.tag();
        let Some(state) = self.state_mut(op) else {
            return;
        };
        if let Some(report) = state.called(wait, shape, root) {
            // A report is advice: rank 0 may have left its last call and
            // ended already, and a rank that is really gone fails the next
            // collective that needs it, naming it.
            let _ = transport.send(0, tag, report_bytes(op, report));
        }
    }
}

/// The broadcast that carries decisions: binomial from rank 0, as the
/// lottery's draw message.
fn carrier() -> Implementation {
    Implementation {
        op: Collective::Bcast,
        algorithm: crate::select::Algorithm::Tree(Shape::Binomial),
        seg: None,
    }
}

/// The first message of `msg`, a decision about `op`.
fn header(op: Collective, msg: &Message) -> [u32; HEADER_WORDS] {
    let code = Collective::ALL
        .iter()
        .position(|&o| o == op)
        .expect("every collective is in ALL") as u32;
    let (kind, a, b) = match (&msg.kind, &msg.change) {
        (_, Change::Keep) => (0, 0, 0),
        (Kind::Revert, Change::Swap(a, b)) => (2, *a, *b),
        (_, Change::Swap(a, b)) => (1, *a, *b),
        (Kind::Trial, Change::Table(_)) | (Kind::Keep, Change::Table(_)) => (3, 0, 0),
        (Kind::Revert, Change::Table(_)) => (4, 0, 0),
        (Kind::Restore, Change::Table(_)) => (5, 0, 0),
    };
    let focus = msg.focus.map_or(NO_FOCUS, |f| f as u32);
    [code, kind, msg.period, a as u32, b as u32, focus]
}

/// A report: the collective's number, then the wait (ns, little-endian).
fn report_bytes(op: Collective, wait: u64) -> Bytes {
    let code = Collective::ALL
        .iter()
        .position(|&o| o == op)
        .expect("every collective is in ALL") as u8;
    let mut bytes = [0u8; 9];
    bytes[0] = code;
    bytes[1..].copy_from_slice(&wait.to_le_bytes());
    Bytes::copy_from_slice(&bytes)
}

fn report_of(data: &[u8]) -> std::result::Result<(Collective, u64), String> {
    let [code, wait @ ..] = data else {
        return Err("an empty message".into());
    };
    let op = *Collective::ALL
        .get(*code as usize)
        .ok_or_else(|| format!("collective #{code} does not exist"))?;
    let wait: [u8; 8] = wait
        .try_into()
        .map_err(|_| format!("{} bytes, not 9", data.len()))?;
    Ok((op, u64::from_le_bytes(wait)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_and_bad_ones_say_why() {
        let bytes = report_bytes(Collective::Bcast, 123_456);
        assert_eq!(report_of(&bytes), Ok((Collective::Bcast, 123_456)));
        assert!(report_of(&[]).unwrap_err().contains("empty"));
        assert!(report_of(&[99; 9]).unwrap_err().contains("#99"));
        assert!(report_of(&[0; 5]).unwrap_err().contains("5 bytes"));
    }

    #[test]
    fn decision_headers_name_the_collective_kind_period_and_pair() {
        let msg = Message {
            kind: Kind::Revert,
            change: Change::Swap(3, 5),
            period: 16,
            focus: Some(2),
        };
        assert_eq!(header(Collective::Bcast, &msg), [0, 2, 16, 3, 5, 2]);
        let sort = Message {
            kind: Kind::Trial,
            change: Change::Table(vec![0, 2, 1]),
            period: 8,
            focus: None,
        };
        assert_eq!(header(Collective::Bcast, &sort), [0, 3, 8, 0, 0, NO_FOCUS]);
    }
}
