//! Prints the bytes a 1 MiB bcast over 8 local ranks allocates, all ranks
//! together, per implementation: about 1× the payload means the root made
//! its one copy and no receiving rank made a buffer of its own.
//!
//! Run: `cargo bench -p autocoll --bench bcast_copies`

#[path = "../tests/support/counting.rs"]
mod counting;

use counting::{bcast_allocations, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    const MIB: usize = 1 << 20;
    println!(
        "{:<28} {:>14} {:>10} {:>12}",
        "implementation", "bytes alloc", "× payload", "allocations"
    );
    for id in [
        "bcast:flat",
        "bcast:chain",
        "bcast:chain:seg=64K",
        "bcast:binomial",
        "bcast:binomial:seg=32K",
        "bcast:binary:seg=16K",
        "bcast:knomial:k=4:seg=1K",
    ] {
        let (bytes, count) = bcast_allocations(&id.parse().unwrap(), 8, MIB);
        println!(
            "{id:<28} {bytes:>14} {:>10.3} {count:>12}",
            bytes as f64 / MIB as f64
        );
    }
}
