//! Ground truth from one shared clock.
//!
//! When every rank reads the same monotonic clock (one host, network
//! namespaces included), a call's operation latency can be read off
//! directly: max over ranks of the leave time − min over ranks of the enter
//! time. To keep calls from overlapping, they start on a schedule: the
//! leader picks a start time in the future and call k starts at
//! start + k·window on every rank.
//!
//! A call is discarded (and counted) when a rank started late or the call
//! overran its window:
//! - *late*: the ranks' entries are spread by more than the skew
//!   tolerance, a twentieth of one call's estimated time (at least 5 µs:
//!   thread wake-ups are not more punctual); or the
//!   first entry came more than a quarter window after the scheduled start
//!   (the schedule slipped). Entry skew is what would bias max(leave) −
//!   min(enter), so it is what is bounded.
//! - *overran*: some rank left after the next call's start.
//!
//! When more than a quarter of a repetition's calls slipped or overran, the
//! window doubles. Skewed entries do not grow it: a wider window does not
//! make ranks wake together.

use super::call::{times_gather, Caller};
use crate::clock::now_ns;
use crate::comm::communicator::Communicator;
use crate::error::Result;
use crate::measure::job::{share, Job, Sample};

/// The narrowest window between call starts.
const MIN_WINDOW_NS: u64 = 100_000;
/// A window grows at most to this multiple of the first: beyond it the
/// overruns come from a loaded machine, not from a short window.
const MAX_GROWTH: u64 = 16;
/// Entries may always be spread this much (ns).
const MIN_SKEW_NS: u64 = 5_000;
/// The widest window: beyond it something else is wrong. (An 8 MiB
/// gather to one rank over a 100 Mbit/s link takes 5 s a call.)
const MAX_WINDOW_NS: u64 = 60_000_000_000;
/// Calls longer than this get a window of twice, not four times, their
/// estimate: a long call's start is not noticeably late, and the idle
/// part of each window is time the benchmark spends doing nothing.
const LONG_CALL_NS: u64 = 10_000_000;
/// A rank that sleeps wakes this long before a start, then spins
/// (yielding).
const SPIN_NS: u64 = 200_000;
/// Waits up to this long are spun through when ranks have a core each
/// ([`wait_until`]); a wake-up's cost is a percent of a call that needs a
/// longer one.
const NAP_FROM_NS: u64 = 10_000_000;
/// The last stretch before a start is spun without yielding.
const FINAL_SPIN_NS: u64 = 20_000;
/// How far ahead of the first start the leader schedules a repetition, on
/// top of one window, so that the schedule reaches every rank in time.
const LEAD_NS: u64 = 2_000_000;

/// The leader's schedule state: the window between call starts.
#[derive(Clone, Copy, Debug)]
pub struct Windows {
    window_ns: u64,
    max_window_ns: u64,
    skew_ns: u64,
}

impl Windows {
    /// For calls of about `estimate_s` seconds (an upper bound): a first
    /// window of four estimates (two above 10 ms), at least 100 µs, that
    /// may grow 16-fold, and a skew tolerance of a twentieth of the
    /// estimate, at least 5 µs.
    pub fn new(estimate_s: f64) -> Windows {
        let est = (estimate_s * 1e9) as u64;
        let factor = if est > LONG_CALL_NS { 2 } else { 4 };
        // Virtual time costs nothing to wait through: a simulated call of
        // 88 s (1 MiB to 1023 ranks over one link) is not a fault.
        let widest = match crate::clock::is_virtual() {
            true => u64::MAX / 4,
            false => MAX_WINDOW_NS,
        };
        let window_ns = est.saturating_mul(factor).clamp(MIN_WINDOW_NS, widest);
        Windows {
            window_ns,
            max_window_ns: window_ns.saturating_mul(MAX_GROWTH).min(widest),
            skew_ns: (est / 20).max(MIN_SKEW_NS),
        }
    }

    /// The time between consecutive call starts, in nanoseconds.
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// How far apart the ranks' entries into one call may be.
    pub fn skew_tolerance_ns(&self) -> u64 {
        self.skew_ns
    }

    fn grow(&mut self) {
        self.window_ns = (self.window_ns * 2).min(self.max_window_ns);
    }
}

/// Returns at `t_ns` on the monotonic clock (or at once if it has passed),
/// spinning and yielding the processor so that ranks sharing a core still
/// reach their start; the last stretch is spun without yielding. With
/// `spin` false, or a wait longer than 10 ms, it first sleeps until
/// 0.2 ms before.
///
/// Not slept through: a rank that slept starts its next call slower, and
/// wakes late and unevenly (docs/decisions.md, "Measurement").
pub fn wait_until(t_ns: u64, spin: bool) {
    if crate::clock::is_virtual() {
        // Virtual time passes only when the rank says so.
        crate::clock::set_virtual(now_ns().max(t_ns));
        return;
    }
    let nap_from = if spin { NAP_FROM_NS } else { SPIN_NS };
    loop {
        let now = now_ns();
        if now >= t_ns {
            return;
        }
        let left = t_ns - now;
        if left > nap_from {
            std::thread::sleep(std::time::Duration::from_nanos(left - SPIN_NS));
        } else if left > FINAL_SPIN_NS {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Asks the kernel to end this thread's sleeps on time (a timer slack of
/// 1 ns instead of the default 50 µs), so that the final spin of
/// [`wait_until`] stays short. Best effort: without it the schedule is only
/// less punctual.
pub fn precise_sleeps() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

/// Call `k` of a schedule: waits for start + k·window (spinning through
/// the wait, or not: [`wait_until`]), then records the enter and leave
/// times of `call` in `times[2k]` and `times[2k+1]`.
#[inline]
pub fn timed_call<E>(
    start_ns: u64,
    window_ns: u64,
    spin: bool,
    k: usize,
    times: &mut [u64],
    call: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    wait_until(start_ns + k as u64 * window_ns, spin);
    let enter = now_ns();
    call()?;
    let leave = now_ns();
    times[2 * k] = enter;
    times[2 * k + 1] = leave;
    Ok(())
}

/// One repetition: M scheduled calls; the leader judges them.
pub(crate) fn rep(
    comm: &mut Communicator,
    caller: &mut Caller,
    job: &Job,
    windows: &mut Windows,
) -> Result<Option<Sample>> {
    let (me, size, m) = (comm.rank(), comm.size(), job.calls);
    let mut plan = [0u64; 2];
    if me == job.leader {
        plan = [now_ns() + LEAD_NS + windows.window_ns, windows.window_ns];
    }
    share(comm, job.leader, &mut plan)?;
    let [start, window] = plan;
    precise_sleeps();
    let mut times = vec![0u64; 2 * m];
    let spin = job.spin_waits;
    for k in 0..m {
        timed_call(start, window, spin, k, &mut times, || {
            caller.call(comm, job.root)
        })?;
    }
    let mut all = if me == job.leader {
        vec![0u64; 2 * m * size]
    } else {
        Vec::new()
    };
    comm.gather_with(&times_gather(), &times, &mut all, job.leader)?;
    if me != job.leader {
        return Ok(None);
    }
    let verdict = judge(&all, size, start, window, windows.skew_tolerance_ns());
    if (verdict.slipped + verdict.overran) * 4 > m {
        windows.grow();
    }
    let value = (!verdict.kept.is_empty()).then(|| crate::stats::mean(&verdict.kept));
    Ok(Some(Sample {
        value,
        discarded: verdict.discarded(),
        ol_i: None,
    }))
}

/// The calls of one repetition sorted into kept latencies and discards.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// max(leave) − min(enter) of every kept call, in seconds.
    pub kept: Vec<f64>,
    /// Calls whose entries were spread too far (see the module's notes).
    pub skewed: usize,
    /// Calls whose first entry was more than a quarter window late.
    pub slipped: usize,
    /// Calls that some rank left after the next call's start.
    pub overran: usize,
}

impl Verdict {
    /// All discarded calls (a call is counted once, under its first fault
    /// in the order overran, slipped, skewed).
    pub fn discarded(&self) -> usize {
        self.skewed + self.slipped + self.overran
    }
}

/// Judges the calls in `all`: rank r's `times` (enter, leave per call, as
/// [`timed_call`] writes them) at `all[r·2M ..]`.
pub fn judge(all: &[u64], size: usize, start: u64, window: u64, skew_ns: u64) -> Verdict {
    let m = all.len() / (2 * size.max(1));
    let mut verdict = Verdict::default();
    for k in 0..m {
        let slot = start + k as u64 * window;
        let at = |r: usize, which: usize| all[r * 2 * m + 2 * k + which];
        let enters = (0..size).map(|r| at(r, 0));
        let first_enter = enters.clone().min().unwrap_or(slot);
        let last_enter = enters.max().unwrap_or(slot);
        let last_leave = (0..size).map(|r| at(r, 1)).max().unwrap_or(slot);
        if last_leave > slot + window {
            verdict.overran += 1;
        } else if first_enter > slot + window / 4 {
            verdict.slipped += 1;
        } else if last_enter - first_enter > skew_ns {
            verdict.skewed += 1;
        } else {
            verdict.kept.push((last_leave - first_enter) as f64 * 1e-9);
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_slipped_and_overrunning_calls_are_discarded() {
        // Two ranks, four calls of a 100 µs window starting at 1 ms.
        let ms = 1_000_000;
        let rank0 = [
            ms,
            ms + 30_000,
            ms + 100_000,
            ms + 120_000,
            ms + 200_000,
            ms + 210_000,
            ms + 330_000,
            ms + 340_000,
        ];
        // Call 0: rank 1 enters 1 µs after rank 0 (within 2 µs: kept, 40 µs).
        // Call 1: rank 1 enters 5 µs late in a 30 µs call (skewed).
        // Call 2: rank 1 leaves after the next start (overran).
        // Call 3: both enter 30 µs after the start (slipped).
        let rank1 = [
            ms + 1_000,
            ms + 40_000,
            ms + 105_000,
            ms + 130_000,
            ms + 200_000,
            ms + 305_000,
            ms + 330_000,
            ms + 350_000,
        ];
        let all: Vec<u64> = rank0.iter().chain(&rank1).copied().collect();
        let v = judge(&all, 2, ms, 100_000, 2_000);
        assert_eq!((v.skewed, v.overran, v.slipped), (1, 1, 1));
        assert_eq!(v.discarded(), 3);
        assert_eq!(v.kept.len(), 1);
        assert!((v.kept[0] - 40e-6).abs() < 1e-12);
        // With more tolerance the skewed call counts, from the first enter.
        let v = judge(&all, 2, ms, 100_000, 5_000);
        assert_eq!(v.discarded(), 2);
        assert!((v.kept[1] - 30e-6).abs() < 1e-12);
    }

    #[test]
    fn windows_start_at_four_estimates_and_double() {
        let mut w = Windows::new(200e-6);
        assert_eq!(w.window_ns(), 800_000);
        assert_eq!(w.skew_tolerance_ns(), 10_000);
        assert_eq!(Windows::new(1e-9).skew_tolerance_ns(), MIN_SKEW_NS);
        w.grow();
        assert_eq!(w.window_ns(), 1_600_000);
        assert_eq!(Windows::new(1e-9).window_ns(), MIN_WINDOW_NS);
        assert_eq!(Windows::new(1e9).window_ns(), MAX_WINDOW_NS);
        for _ in 0..10 {
            w.grow();
        }
        assert_eq!(w.window_ns(), 16 * 800_000);
        // A long call gets two estimates: 2 s calls fit, not 1 s windows.
        assert_eq!(Windows::new(2.0).window_ns(), 4_000_000_000);
    }

    #[test]
    fn timed_call_waits_for_its_slot() {
        let start = now_ns() + 2_000_000;
        let mut times = [0u64; 4];
        timed_call(start, 1_000_000, true, 1, &mut times, || Ok::<(), ()>(())).unwrap();
        assert!(times[2] >= start + 1_000_000);
        assert!(times[3] >= times[2]);
    }
}
