//! One link of the simulated network, played in virtual time: the
//! connections that cross it take turns a window at a time.

use std::collections::VecDeque;

/// TCP's initial window (RFC 6928: ten segments of 1460 bytes): a
/// connection puts this much on its host's link before it waits for
/// acknowledgements.
pub(super) const WINDOW_BYTES: f64 = 14_600.0;

/// How much slower star8's links carried a 2-rank exchange than one way
/// (docs/sim.md).
pub(super) const BOTH_WAYS: f64 = 0.07;

/// A message's turn on a link: what is left of its time alone there.
pub(super) struct Job {
    pub(super) msg: u64,
    pub(super) left: f64,
}

/// A link played on in virtual time: its flows (one per connection,
/// whose messages cross in order) take turns, each a window's time alone
/// on it at a time, as TCP's connections take turns at a link's queue a
/// window of packets at a time; with no window they share it evenly;
/// `now` is how far it has been played.
pub(super) struct Link {
    pub(super) now: f64,
    pub(super) flows: Vec<((usize, usize), VecDeque<Job>)>,
    /// Its entry in the scheduler's queue of next ends.
    pub(super) queued: Option<u64>,
    /// A window's time alone on the link (0: an even share).
    pub(super) window: f64,
    /// The flow whose turn it is, and what is left of its window.
    pub(super) turn: usize,
    pub(super) turn_left: f64,
    /// Time per unit of a message's time alone here: above 1 while the
    /// link the other way carries data too.
    pub(super) slow: f64,
}

/// Less than this much of a message's time is taken to be nothing left.
pub(super) const SLACK_NS: f64 = 1e-3;

impl Link {
    pub(super) fn new(window: f64) -> Link {
        Link {
            now: 0.0,
            flows: Vec::new(),
            queued: None,
            window,
            turn: 0,
            turn_left: window,
            slow: 1.0,
        }
    }

    /// Plays the link on to `to`, pushing the messages whose last byte
    /// crossed, with when.
    pub(super) fn advance(&mut self, to: f64, done: &mut Vec<(u64, f64)>) {
        if self.window > 0.0 {
            return self.take_turns(to, done);
        }
        loop {
            self.flows.retain(|(_, q)| !q.is_empty());
            let Some(least) = self.least() else {
                self.now = self.now.max(to);
                return;
            };
            // Each flow's time per unit of its time alone.
            let pace = self.flows.len() as f64 * self.slow;
            // Within a rounding error of `to` counts as through by then
            // (far into a run, a nanosecond's millionth is below f64's
            // resolution of the clock).
            if self.now + least * pace > to + SLACK_NS {
                let step = (to - self.now).max(0.0);
                self.now += step;
                self.flows
                    .iter_mut()
                    .for_each(|(_, q)| q[0].left -= step / pace);
                return;
            }
            self.now += least * pace;
            for (_, queue) in &mut self.flows {
                queue[0].left -= least;
                if queue[0].left <= SLACK_NS {
                    done.push((queue[0].msg, self.now));
                    queue.pop_front();
                }
            }
        }
    }

    /// [`Link::advance`] with turns: the flow whose turn it is crosses
    /// alone until its window or its messages run out, then the next.
    pub(super) fn take_turns(&mut self, to: f64, done: &mut Vec<(u64, f64)>) {
        loop {
            if self.flows.is_empty() {
                (self.turn, self.turn_left) = (0, self.window);
                self.now = self.now.max(to);
                return;
            }
            if self.turn >= self.flows.len() {
                (self.turn, self.turn_left) = (0, self.window);
            }
            let queue = &mut self.flows[self.turn].1;
            let chunk = queue[0].left.min(self.turn_left);
            if self.now + chunk * self.slow > to + SLACK_NS {
                let step = (to - self.now).max(0.0);
                let work = step / self.slow;
                (self.now, queue[0].left, self.turn_left) =
                    (self.now + step, queue[0].left - work, self.turn_left - work);
                return;
            }
            self.now += chunk * self.slow;
            queue[0].left -= chunk;
            self.turn_left -= chunk;
            if queue[0].left <= SLACK_NS {
                done.push((queue[0].msg, self.now));
                queue.pop_front();
            }
            if queue.is_empty() {
                // The next flow moves up to this turn.
                self.flows.remove(self.turn);
                self.turn_left = self.window;
            } else if self.turn_left <= SLACK_NS {
                self.turn += 1;
                self.turn_left = self.window;
            }
        }
    }

    /// The least time alone left to a flow's first message.
    pub(super) fn least(&self) -> Option<f64> {
        self.flows.iter().map(|(_, q)| q[0].left).reduce(f64::min)
    }

    /// When the next message ends if nothing else comes.
    pub(super) fn next_end(&self) -> Option<f64> {
        if self.window <= 0.0 {
            let pace = self.flows.len() as f64 * self.slow;
            return self.least().map(|l| self.now + l * pace);
        }
        // The turns played on, on the flows' first messages, until one ends.
        let mut left: Vec<f64> = self.flows.iter().map(|(_, q)| q[0].left).collect();
        let (mut t, mut turn, mut window) = (self.now, self.turn, self.turn_left);
        while !left.is_empty() {
            if turn >= left.len() {
                (turn, window) = (0, self.window);
            }
            let chunk = left[turn].min(window);
            t += chunk * self.slow;
            left[turn] -= chunk;
            window -= chunk;
            if left[turn] <= SLACK_NS {
                return Some(t);
            }
            if window <= SLACK_NS {
                (turn, window) = (turn + 1, self.window);
            }
        }
        None
    }

    /// Whether a message is on it.
    pub(super) fn busy(&self) -> bool {
        self.flows.iter().any(|(_, q)| !q.is_empty())
    }

    pub(super) fn add(&mut self, flow: (usize, usize), job: Job) {
        match self.flows.iter_mut().find(|(f, _)| *f == flow) {
            Some((_, queue)) => queue.push_back(job),
            None => self.flows.push((flow, VecDeque::from([job]))),
        }
    }
}
