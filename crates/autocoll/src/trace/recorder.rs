//! The recorder: an [`Observer`] that keeps the stages of every call in a
//! buffer allocated once, up front, and never grows it.
//!
//! The buffer is a ring of 16-byte slots. An event takes one slot (the
//! 16 bytes it takes in the file); a call's header takes two (its number,
//! bytes, implementation, tree place, root, op and event count), so a call
//! of E events takes E + 2 slots. When the ring is full the oldest calls
//! are dropped whole, and counted, to make room: a flight recorder that
//! always holds the latest calls. A call longer than the whole ring is
//! dropped too (and counted) and its remaining events ignored.
//!
//! The per-event path is one uncontended lock (a recorder belongs to one
//! communicator, whose thread alone reports to it), a few shifts and one
//! store: no allocation, no clock read of its own (the event carries the
//! time). The implementation id and the tree place are interned once per
//! call, on `Enter`, by comparison with the previous call's; only a new
//! one is looked up in a table, and only one never seen before allocates.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

use super::format::{self, Call, Header, TreePlace, NO_PEER, NO_TREE};
use crate::ids::Collective;
use crate::observe::{Event, Observer, Stage};
use crate::select::Implementation;
use crate::tree::Tree;

/// Events a recorder holds unless told otherwise: 1 Mi slots, 16 MiB.
pub const DEFAULT_CAPACITY_EVENTS: usize = 1 << 20;
/// The smallest buffer: one call of two events (enter, done) and its header.
pub const MIN_CAPACITY_EVENTS: usize = 4;
/// Slots a call's header takes.
const HEAD_SLOTS: usize = 2;

/// One 16-byte slot: an event, or half a call's header.
type Slot = [u64; 2];

/// Keeps the stages of every call it observes, for a trace file.
pub struct Recorder {
    ring: Mutex<Ring>,
}

/// How full a recorder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Calls held.
    pub calls: u64,
    /// Events held.
    pub events: u64,
    /// Oldest calls dropped to make room.
    pub dropped_calls: u64,
    /// Their events.
    pub dropped_events: u64,
    /// Slots in the buffer (an event takes one, a call's header two).
    pub capacity_events: u64,
}

impl Recorder {
    /// A recorder whose buffer holds `capacity_events` 16-byte slots
    /// (at least [`MIN_CAPACITY_EVENTS`]), allocated and written once now
    /// so that recording never waits for the operating system to map a
    /// page.
    pub fn new(capacity_events: usize) -> Recorder {
        let cap = capacity_events.max(MIN_CAPACITY_EVENTS);
        let mut slots = Vec::with_capacity(cap);
        // Not zeros: a zeroed allocation may stay unmapped until written.
        slots.resize(cap, [u64::MAX; 2]);
        Recorder {
            ring: Mutex::new(Ring {
                slots: slots.into_boxed_slice(),
                tail: 0,
                len: 0,
                calls: 0,
                open: None,
                impls: Vec::new(),
                impl_index: HashMap::new(),
                last_imp: u32::MAX,
                places: Vec::new(),
                place_index: HashMap::new(),
                last_place: NO_TREE,
                dropped_calls: 0,
                dropped_events: 0,
            }),
        }
    }

    fn ring(&self) -> MutexGuard<'_, Ring> {
        // A panic inside `record` leaves the ring consistent (every
        // field is updated after the checks that could fail).
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How full the buffer is, and what was dropped.
    pub fn usage(&self) -> Usage {
        let ring = self.ring();
        Usage {
            calls: ring.calls,
            events: (ring.len - HEAD_SLOTS * ring.calls as usize) as u64,
            dropped_calls: ring.dropped_calls,
            dropped_events: ring.dropped_events,
            capacity_events: ring.slots.len() as u64,
        }
    }

    /// The calls held, oldest first, with their events.
    pub fn calls(&self) -> Vec<Call> {
        let ring = self.ring();
        let mut out = Vec::with_capacity(ring.calls as usize);
        ring.each_call(|call, events| {
            out.push(Call {
                events: events.map(event_of).collect(),
                ..call
            })
        });
        out
    }

    /// The whole file (`autocoll.trace/1`) of what the buffer holds, under
    /// `header`, whose implementations, tree places, counts and drop counts
    /// are filled in here.
    pub fn encode(&self, header: &Header) -> Vec<u8> {
        let ring = self.ring();
        let usage = Usage {
            calls: ring.calls,
            events: (ring.len - HEAD_SLOTS * ring.calls as usize) as u64,
            dropped_calls: ring.dropped_calls,
            dropped_events: ring.dropped_events,
            capacity_events: ring.slots.len() as u64,
        };
        let header = Header {
            impls: ring.impls.iter().map(ToString::to_string).collect(),
            trees: ring.places.clone(),
            dropped_calls: usage.dropped_calls,
            dropped_events: usage.dropped_events,
            capacity_events: usage.capacity_events,
            ..header.clone()
        };
        let mut out = format::header_line(&header, usage.calls, usage.events);
        out.reserve(
            usage.calls as usize * format::CALL_BYTES
                + usage.events as usize * format::EVENT_BYTES
                + format::TRAILER_BYTES,
        );
        ring.each_call(|call, events| {
            format::encode_call_head(&mut out, &call, events.len() as u32);
            for e in events {
                format::encode_event(&mut out, &event_of(e));
            }
        });
        format::append_trailer(&mut out, usage.calls, usage.events);
        out
    }
}

impl Observer for Recorder {
    fn event(&self, event: &Event<'_>) {
        self.ring().record(event);
    }
}

/// The call being recorded: where its header is, and its events so far.
#[derive(Clone, Copy)]
struct Open {
    at: usize,
    events: u32,
}

struct Ring {
    slots: Box<[Slot]>,
    /// Position of the oldest slot held.
    tail: usize,
    /// Slots held.
    len: usize,
    /// Calls held, the open one included.
    calls: u64,
    /// The call being recorded, if any.
    open: Option<Open>,
    impls: Vec<Implementation>,
    impl_index: HashMap<Implementation, u32>,
    /// The previous call's implementation (an index into `impls`).
    last_imp: u32,
    places: Vec<TreePlace>,
    /// Tree places by the hash of their contents (collisions are found by
    /// comparing, and resolved by a search).
    place_index: HashMap<u64, u32>,
    /// The previous call's tree place (an index into `places`).
    last_place: u32,
    dropped_calls: u64,
    dropped_events: u64,
}

impl Ring {
    fn record(&mut self, e: &Event<'_>) {
        if e.stage == Stage::Enter {
            self.begin(e);
        }
        let Some(open) = self.open else {
            // The rest of a call that outgrew the buffer.
            return;
        };
        if !self.make_room() {
            return;
        }
        self.put([e.time_ns, pack(e)]);
        let events = open.events + 1;
        if e.stage == Stage::Done {
            self.close(open.at, events);
        } else {
            self.open = Some(Open { events, ..open });
        }
    }

    /// Starts a call: closes one left open (a call that failed midway
    /// keeps the events it had), interns what it runs, writes its header.
    fn begin(&mut self, e: &Event<'_>) {
        if let Some(open) = self.open {
            self.close(open.at, open.events);
        }
        let imp = self.intern_imp(e.imp);
        let tree = self.intern_place(e.tree, e.rank);
        let head = [
            [e.sig.seq, e.sig.bytes],
            [
                u64::from(imp) | u64::from(tree) << 32,
                u64::from(e.sig.root as u16) << 32 | u64::from(format::op_code(e.sig.op)) << 48,
            ],
        ];
        for half in head {
            self.make_room();
            self.put(half);
        }
        self.calls += 1;
        self.open = Some(Open {
            at: self.wrap(self.tail + self.len + self.slots.len() - HEAD_SLOTS),
            events: 0,
        });
    }

    fn close(&mut self, at: usize, events: u32) {
        let i = self.wrap(at + 1);
        self.slots[i][1] = (self.slots[i][1] & !0xffff_ffff) | u64::from(events);
        self.open = None;
    }

    fn wrap(&self, i: usize) -> usize {
        if i >= self.slots.len() {
            i % self.slots.len()
        } else {
            i
        }
    }

    /// Appends one slot; there must be room.
    fn put(&mut self, slot: Slot) {
        let at = self.wrap(self.tail + self.len);
        self.slots[at] = slot;
        self.len += 1;
    }

    /// Drops the oldest calls until one slot is free. False when the open
    /// call itself had to go: it was longer than the whole buffer.
    fn make_room(&mut self) -> bool {
        while self.len == self.slots.len() {
            match self.open {
                Some(open) if open.at == self.tail => {
                    self.count_dropped(open.events);
                    self.len = 0;
                    self.open = None;
                    return false;
                }
                _ => {
                    let events = (self.slots[self.wrap(self.tail + 1)][1] & 0xffff_ffff) as u32;
                    let taken = HEAD_SLOTS + events as usize;
                    self.tail = self.wrap(self.tail + taken);
                    self.len -= taken;
                    self.count_dropped(events);
                }
            }
        }
        true
    }

    fn count_dropped(&mut self, events: u32) {
        self.calls -= 1;
        self.dropped_calls += 1;
        self.dropped_events += u64::from(events);
    }

    fn intern_imp(&mut self, imp: &Implementation) -> u32 {
        if self.impls.get(self.last_imp as usize) == Some(imp) {
            return self.last_imp;
        }
        let index = match self.impl_index.get(imp) {
            Some(&i) => i,
            None => {
                let i = self.impls.len() as u32;
                self.impls.push(imp.clone());
                self.impl_index.insert(imp.clone(), i);
                i
            }
        };
        self.last_imp = index;
        index
    }

    fn intern_place(&mut self, tree: Option<&Tree>, rank: usize) -> u32 {
        let Some(tree) = tree else { return NO_TREE };
        let (parent, children) = (tree.parent(rank), tree.children(rank));
        let same = |p: &TreePlace| {
            p.parent.map(|x| x as usize) == parent
                && p.children.len() == children.len()
                && p.children
                    .iter()
                    .zip(children)
                    .all(|(&a, &b)| a as usize == b)
        };
        if self.places.get(self.last_place as usize).is_some_and(same) {
            return self.last_place;
        }
        let mut h = DefaultHasher::new();
        (parent, children).hash(&mut h);
        let hash = h.finish();
        let found = match self.place_index.get(&hash) {
            Some(&i) if same(&self.places[i as usize]) => Some(i),
            Some(_) => self.places.iter().position(same).map(|i| i as u32),
            None => None,
        };
        let index = found.unwrap_or_else(|| {
            let i = self.places.len() as u32;
            self.places.push(TreePlace {
                parent: parent.map(|p| p as u32),
                children: children.iter().map(|&c| c as u32).collect(),
            });
            self.place_index.entry(hash).or_insert(i);
            i
        });
        self.last_place = index;
        index
    }

    /// Calls `f` with every call held, oldest first: its record (without
    /// events) and its event slots.
    fn each_call(&self, mut f: impl FnMut(Call, EventSlots<'_>)) {
        let mut at = self.tail;
        let mut left = self.len;
        while left >= HEAD_SLOTS {
            let (a, b) = (self.slots[at], self.slots[self.wrap(at + 1)]);
            let events = match self.open {
                Some(open) if open.at == at => open.events,
                _ => (b[1] & 0xffff_ffff) as u32,
            };
            let call = Call {
                seq: a[0],
                bytes: a[1],
                imp: b[0] as u32,
                tree: (b[0] >> 32) as u32,
                root: u32::from((b[1] >> 32) as u16),
                op: Collective::ALL[((b[1] >> 48) & 0xff) as usize],
                events: Vec::new(),
            };
            let first = self.wrap(at + HEAD_SLOTS);
            f(
                call,
                EventSlots {
                    ring: &self.slots,
                    at: first,
                    left: events as usize,
                },
            );
            let taken = HEAD_SLOTS + events as usize;
            at = self.wrap(at + taken);
            left -= taken;
        }
    }
}

/// The event slots of one call, in order (they may wrap around the ring).
struct EventSlots<'a> {
    ring: &'a [Slot],
    at: usize,
    left: usize,
}

impl Iterator for EventSlots<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        if self.left == 0 {
            return None;
        }
        let slot = self.ring[self.at];
        self.at = if self.at + 1 == self.ring.len() {
            0
        } else {
            self.at + 1
        };
        self.left -= 1;
        Some(slot)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for EventSlots<'_> {}

/// The second half of an event's slot: segment, peer, stage and phase,
/// as the file stores them.
fn pack(e: &Event<'_>) -> u64 {
    let peer = e.peer.map_or(NO_PEER, |p| p as u16);
    u64::from(e.segment)
        | u64::from(peer) << 32
        | u64::from(format::stage_code(e.stage)) << 48
        | u64::from(e.phase) << 56
}

fn event_of(slot: Slot) -> format::Event {
    let bits = slot[1];
    format::Event {
        time_ns: slot[0],
        segment: bits as u32,
        peer: (bits >> 32) as u16,
        stage: format::stage_of((bits >> 48) as u8).expect("the recorder wrote a stage"),
        phase: (bits >> 56) as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CallSig;
    use crate::tree::Shape;

    fn imp(id: &str) -> Implementation {
        id.parse().unwrap()
    }

    /// Feeds one call of `sends` Sent events to `rec` as rank 1.
    fn call(rec: &Recorder, seq: u64, imp: &Implementation, tree: Option<&Tree>, sends: u32) {
        let sig = CallSig {
            seq,
            op: imp.op,
            root: 0,
            bytes: 64,
        };
        let at = |stage, segment, peer, time_ns| Event {
            rank: 1,
            sig,
            imp,
            tree,
            stage,
            phase: 2,
            segment,
            peer,
            time_ns,
        };
        rec.event(&at(Stage::Enter, 0, None, seq * 100));
        for k in 0..sends {
            rec.event(&at(Stage::Sent, k, Some(2), seq * 100 + 1 + u64::from(k)));
        }
        rec.event(&at(Stage::Done, 0, None, seq * 100 + 99));
    }

    #[test]
    fn calls_read_back_with_their_events_and_interned_places() {
        let rec = Recorder::new(64);
        let chain = Tree::build(&Shape::Chain, 4, 0, None).unwrap();
        let binomial = Tree::build(&Shape::Binomial, 4, 0, None).unwrap();
        let (a, b) = (imp("bcast:chain"), imp("bcast:binomial"));
        call(&rec, 0, &a, Some(&chain), 1);
        call(&rec, 1, &b, Some(&binomial), 0);
        call(&rec, 2, &a, Some(&chain), 2);
        let calls = rec.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(
            calls
                .iter()
                .map(|c| (c.seq, c.imp, c.tree))
                .collect::<Vec<_>>(),
            vec![(0, 0, 0), (1, 1, 1), (2, 0, 0)]
        );
        let last = &calls[2];
        assert_eq!((last.op, last.bytes, last.root), (Collective::Bcast, 64, 0));
        let stages: Vec<_> = last.events.iter().map(|e| (e.stage, e.peer())).collect();
        assert_eq!(
            stages,
            vec![
                (Stage::Enter, None),
                (Stage::Sent, Some(2)),
                (Stage::Sent, Some(2)),
                (Stage::Done, None)
            ]
        );
        assert_eq!(last.events[2].time_ns, 202);
        assert_eq!((last.events[2].segment, last.events[2].phase), (1, 2));
        let usage = rec.usage();
        assert_eq!((usage.calls, usage.events, usage.dropped_calls), (3, 9, 0));
        // The file says where rank 1 sits in each tree.
        let bytes = rec.encode(&header());
        let mut r = format::Reader::new(std::path::Path::new("t"), &bytes[..]).unwrap();
        let h = r.header().clone();
        assert_eq!(h.impls, vec!["bcast:chain", "bcast:binomial"]);
        assert_eq!(
            h.trees,
            vec![
                TreePlace {
                    parent: Some(0),
                    children: vec![2]
                },
                TreePlace {
                    parent: Some(0),
                    children: vec![]
                }
            ]
        );
        let mut back = Vec::new();
        while let Some(c) = r.next_call().unwrap() {
            back.push(c);
        }
        assert_eq!(back, calls);
    }

    #[test]
    fn a_full_buffer_drops_the_oldest_calls_whole_and_counts_them() {
        // 4 slots a call (header, enter, one send, done): 10 slots hold 2.
        let rec = Recorder::new(10);
        let a = imp("allreduce:ring");
        for seq in 0..7 {
            call(&rec, seq, &a, None, 1);
        }
        let calls = rec.calls();
        assert_eq!(calls.iter().map(|c| c.seq).collect::<Vec<_>>(), [5, 6]);
        assert!(calls
            .iter()
            .all(|c| c.events.len() == 3 && c.tree == NO_TREE));
        let usage = rec.usage();
        assert_eq!(
            (
                usage.calls,
                usage.events,
                usage.dropped_calls,
                usage.dropped_events
            ),
            (2, 6, 5, 15)
        );
        // Calls of other lengths wrap around the ring's end intact.
        for seq in 7..40 {
            call(&rec, seq, &a, None, (seq % 4) as u32);
        }
        let calls = rec.calls();
        assert_eq!(calls.last().unwrap().seq, 39);
        for c in &calls {
            assert_eq!(c.events.len() as u64, 2 + c.seq % 4, "call {}", c.seq);
            assert_eq!(c.events[0].time_ns, c.seq * 100);
            assert_eq!(c.events.last().unwrap().stage, Stage::Done);
        }
        let usage = rec.usage();
        assert_eq!(usage.dropped_calls + usage.calls, 40);
    }

    #[test]
    fn a_call_longer_than_the_buffer_is_dropped_and_counted() {
        let rec = Recorder::new(8);
        let a = imp("allreduce:ring");
        call(&rec, 0, &a, None, 1);
        call(&rec, 1, &a, None, 20);
        assert!(rec.calls().is_empty());
        call(&rec, 2, &a, None, 1);
        assert_eq!(rec.calls().iter().map(|c| c.seq).collect::<Vec<_>>(), [2]);
        let usage = rec.usage();
        assert_eq!((usage.dropped_calls, usage.calls), (2, 1));
    }

    fn header() -> Header {
        Header {
            rank: 1,
            size: 4,
            ..Header::default()
        }
    }
}
