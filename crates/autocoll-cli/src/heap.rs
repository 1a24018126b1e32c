//! The process's heap, held steady for measuring.
//!
//! glibc serves a large allocation with its own `mmap` until a freed one
//! moves its threshold up, and returns the heap's free top to the system
//! past a trim threshold that moves with it. A message of a MiB is an
//! allocation of a MiB on the receiving side, so whether each call paid
//! fresh pages (a fault per 4 KiB page, every call) depended on what the
//! process had allocated and freed before, and the first candidate `bench`
//! measured could run several times slower than the same one measured
//! next. Fixed thresholds make every candidate meet the same heap. Only the command
//! does this: a program that links autocoll keeps its own settings.

/// Serves allocations up to 32 MiB (glibc's largest threshold on 64-bit)
/// from the heap and keeps up to 256 MiB of freed memory in it.
pub fn steady() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's allocator parameters, called
    // before this process allocates from more than one thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}
