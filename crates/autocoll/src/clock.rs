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
/// On a rank of the `sim` transport, the rank's virtual time instead
/// (see [`start_virtual`]).
pub fn now_ns() -> u64 {
    match VIRTUAL.get() {
        Some(v) => v.now(),
        None => read(rustix::time::ClockId::Monotonic),
    }
}

fn read(id: rustix::time::ClockId) -> u64 {
    let t = rustix::time::clock_gettime(id);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A rank's virtual time: where its transport last set it, plus the
/// processor time the thread has used since, times `scale` (the work a
/// collective does between messages, combining and copying, costs what it
/// costs this machine's processor; 0 leaves it out).
#[derive(Clone, Copy, Debug)]
struct Virtual {
    base_ns: u64,
    cpu_mark_ns: u64,
    scale: f64,
}

impl Virtual {
    fn now(&self) -> u64 {
        let used = read(rustix::time::ClockId::ThreadCPUTime).saturating_sub(self.cpu_mark_ns);
        self.base_ns + (used as f64 * self.scale) as u64
    }
}

thread_local! {
    static VIRTUAL: std::cell::Cell<Option<Virtual>> = const { std::cell::Cell::new(None) };
}

/// Makes [`now_ns`] on this thread read virtual time, starting at 0, with
/// processor time counted `scale` times (the `sim` transport's ranks).
pub fn start_virtual(scale: f64) {
    VIRTUAL.set(Some(Virtual {
        base_ns: 0,
        cpu_mark_ns: read(rustix::time::ClockId::ThreadCPUTime),
        scale,
    }));
}

/// True on a thread whose clock is virtual.
pub fn is_virtual() -> bool {
    VIRTUAL.get().is_some()
}

/// Sets this thread's virtual time to `t_ns` (the transport, after a
/// send or a receive); does nothing on a real clock.
pub fn set_virtual(t_ns: u64) {
    if let Some(v) = VIRTUAL.get() {
        VIRTUAL.set(Some(Virtual {
            base_ns: t_ns,
            cpu_mark_ns: read(rustix::time::ClockId::ThreadCPUTime),
            ..v
        }));
    }
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

/// A duration as the command line and `AUTOCOLL_*` variables write it: a
/// whole number with its unit, `ns`, `us` (or `µs`), `ms` or `s`: `200us`,
/// `2ms`. The error says what is wrong with `text`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number with ns, us, ms or s"))?;
    match unit {
        "ns" => Ok(std::time::Duration::from_nanos(n)),
        "us" | "µs" => Ok(std::time::Duration::from_micros(n)),
        "ms" => Ok(std::time::Duration::from_millis(n)),
        "s" => Ok(std::time::Duration::from_secs(n)),
        _ => Err(format!("`{text}` needs a unit: ns, us, ms or s")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_unit() {
        use std::time::Duration;
        assert_eq!(parse_duration("200us"), Ok(Duration::from_micros(200)));
        assert_eq!(parse_duration("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_duration("7ns"), Ok(Duration::from_nanos(7)));
        assert!(parse_duration("20").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("us").unwrap_err().contains("whole number"));
        assert!(parse_duration("1.5ms")
            .unwrap_err()
            .contains("needs a unit"));
    }

    #[test]
    fn the_clock_id_is_stable_within_a_machine() {
        assert_eq!(clock_id(), clock_id());
        assert_ne!(clock_id(), [0u8; 16]);
    }
}
