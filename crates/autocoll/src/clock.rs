//! The clock every measurement reads, and how ranks know they share it.
//!
//! Every time in autocoll is nanoseconds on [`now_ns`], the monotonic
//! clock: the measurement methods, the enter and leave times a selector
//! hears, `check`'s barrier test. The ranks of one machine read one such
//! clock and can compare their times directly; a transport says so through
//! `shared_clock` (`tcp` compares the [`clock_id`] in every rank's hello),
//! and what subtracts one rank's time from another's (the `truth` method,
//! the lottery's agreed call spans) does so only then.

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`), which every
/// process of one host shares, network namespaces included: times taken by
/// different ranks on one host can be compared directly.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Identifies the clock `now_ns` reads: the running kernel's boot id,
/// which every process and network namespace of one machine shares and no
/// other machine has. Where it cannot be read, a random id, so that the
/// clock is never wrongly taken for shared.
pub fn clock_id() -> [u8; 16] {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    let mut id = [0u8; 16];
    if digits.len() == 32 {
        for (i, pair) in digits.chunks(2).enumerate() {
            let hex = std::str::from_utf8(pair).expect("ASCII hex digits");
            id[i] = u8::from_str_radix(hex, 16).expect("hex digits");
        }
    } else if rustix::rand::getrandom(&mut id, rustix::rand::GetRandomFlags::empty()).is_err() {
        id = now_ns()
            .to_le_bytes()
            .repeat(2)
            .try_into()
            .expect("16 bytes");
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_id_is_stable_within_a_machine() {
        assert_eq!(clock_id(), clock_id());
        assert_ne!(clock_id(), [0u8; 16]);
    }
}
