//! Issue 2: a 1 MiB bcast over 8 local ranks copies the payload at most
//! once per receiving rank. Receivers copy each segment into their own
//! buffer and forward the very same shared payload; so the only new buffer
//! the whole broadcast allocates is the root's one copy of the message.
//! A rank that copied the payload into a fresh buffer to forward it would
//! add a megabyte per rank, which this test would see. (With small
//! segments the channel's message envelopes, about 90 bytes per message,
//! add to the count; the benchmark `bcast_copies` shows them.)

mod support;

use support::counting::{bcast_allocations, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn bcast_allocates_one_payload_copy_at_the_root_only() {
    const MIB: usize = 1 << 20;
    for id in [
        "bcast:flat",
        "bcast:chain:seg=64K",
        "bcast:binomial",
        "bcast:binary:seg=16K",
        "bcast:knomial:k=4:seg=32K",
    ] {
        let (bytes, _) = bcast_allocations(&id.parse().unwrap(), 8, MIB);
        assert!(bytes >= MIB, "{id}: the root's copy is {bytes} bytes?");
        assert!(
            bytes < MIB + MIB / 4,
            "{id}: {bytes} bytes allocated for a {MIB}-byte bcast"
        );
    }
}
