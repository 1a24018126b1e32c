//! A global allocator that counts the bytes every thread allocates, and a
//! measurement of one broadcast's allocations across all ranks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use autocoll::{local, Implementation};

/// Counts bytes and allocations made through the system allocator.
pub struct Counting;

static BYTES: AtomicUsize = AtomicUsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    /// This thread's allocations: counts that the test harness's own
    /// threads (printing another test's result) do not disturb.
    static MINE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters are plain atomics and allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        COUNT.fetch_add(1, Ordering::Relaxed);
        // A const-initialised thread-local cell allocates nothing; during
        // thread teardown it may be gone, and then only the totals count.
        let _ = MINE.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's layout is passed on as it came.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations made so far, by every thread.
#[allow(dead_code)] // not every test that counts needs it
pub fn allocations() -> usize {
    COUNT.load(Ordering::SeqCst)
}

/// Allocations made so far by the calling thread.
#[allow(dead_code)] // not every test that counts needs it
pub fn thread_allocations() -> usize {
    MINE.with(|n| n.get())
}

/// Bytes and allocations that one broadcast of `bytes` over `ranks` local
/// ranks makes, all ranks together, between two barriers (measured by
/// rank 0 after a warm-up call, so channel blocks already exist).
#[allow(dead_code)] // not every test that counts needs it
pub fn bcast_allocations(imp: &Implementation, ranks: usize, bytes: usize) -> (usize, usize) {
    let barrier: Implementation = "barrier:dissemination".parse().unwrap();
    let out = local::run(ranks, |mut comm| {
        let mut buf = vec![comm.rank() as u8; bytes];
        comm.bcast_with(imp, &mut buf, 0).unwrap();
        comm.barrier_with(&barrier).unwrap();
        let before = (BYTES.load(Ordering::SeqCst), COUNT.load(Ordering::SeqCst));
        comm.barrier_with(&barrier).unwrap();
        comm.bcast_with(imp, &mut buf, 0).unwrap();
        comm.barrier_with(&barrier).unwrap();
        let after = (BYTES.load(Ordering::SeqCst), COUNT.load(Ordering::SeqCst));
        comm.barrier_with(&barrier).unwrap();
        (after.0 - before.0, after.1 - before.1)
    });
    out[0]
}
