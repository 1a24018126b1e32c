//! The clock every measurement reads.

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`), which every
/// process of one host shares, network namespaces included: times taken by
/// different ranks on one host can be compared directly.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}
