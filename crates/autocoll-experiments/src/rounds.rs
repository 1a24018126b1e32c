//! What the adaptation and balance experiments share: rounds of series in
//! a fresh random order, the barrier that separates timed calls, and every
//! rank's call times brought to rank 0.

use autocoll::clock::now_ns;
use autocoll::select::lottery::Rng;
use autocoll::{Algorithm, Collective, Communicator, Implementation, Shape};

/// Random orders of the series of a round.
pub struct Order(pub Rng);

impl Order {
    /// 0..n in a random order.
    pub fn shuffled(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        self.0.shuffle(&mut v);
        v
    }
}

/// The barrier between timed calls; not the plain barrier, which would go
/// through the communicator's selector.
pub fn separating_barrier() -> Implementation {
    Implementation::new(Collective::Barrier, Algorithm::Dissemination, None)
        .expect("the dissemination barrier exists")
}

/// One rank's enter and leave times of each call of every series, series
/// after series, as [`gather_times`] takes them.
pub struct Stamps {
    /// When each call was entered (ns).
    pub enter: Vec<u64>,
    /// When each call was left (ns).
    pub leave: Vec<u64>,
    calls: usize,
}

impl Stamps {
    /// Room for `calls` calls of each of `series` series.
    pub fn new(series: usize, calls: usize) -> Stamps {
        Stamps {
            enter: vec![0; series * calls],
            leave: vec![0; series * calls],
            calls,
        }
    }

    /// Runs `call`, call `k` of series `c`, between its enter and leave
    /// times.
    pub fn time<T>(&mut self, c: usize, k: usize, call: impl FnOnce() -> T) -> T {
        let i = c * self.calls + k;
        self.enter[i] = now_ns();
        let out = call();
        self.leave[i] = now_ns();
        out
    }
}

/// Every rank's enter and leave times of every call, at rank 0.
pub struct Times {
    /// Per rank: the enter times of every call, then the leave times.
    all: Vec<u64>,
    calls: usize,
}

impl Times {
    /// Each rank's (enter, leave) of call `i`.
    pub fn of_call(&self, i: usize) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.all
            .chunks(2 * self.calls)
            .map(move |r| (r[i], r[self.calls + i]))
    }

    /// Call `i`'s time (s): max(leave) − min(enter) when the ranks share a
    /// clock, else the longest rank's duration.
    pub fn span(&self, i: usize, shared: bool) -> f64 {
        let (mut lo, mut hi, mut longest) = (u64::MAX, 0u64, 0u64);
        for (e, l) in self.of_call(i) {
            lo = lo.min(e);
            hi = hi.max(l);
            longest = longest.max(l.saturating_sub(e));
        }
        let ns = if shared {
            hi.saturating_sub(lo)
        } else {
            longest
        };
        ns as f64 * 1e-9
    }
}

/// Brings every rank's `enter` and `leave` times to rank 0 (a flat
/// gather, untimed); `None` on the other ranks.
pub fn gather_times(
    comm: &mut Communicator,
    enter: &[u64],
    leave: &[u64],
) -> autocoll::Result<Option<Times>> {
    let n = enter.len();
    let size = comm.size();
    let mut mine = enter.to_vec();
    mine.extend_from_slice(leave);
    let mut all = if comm.rank() == 0 {
        vec![0u64; 2 * n * size]
    } else {
        Vec::new()
    };
    let gather = Implementation::tree(Collective::Gather, Shape::Flat, None)?;
    comm.gather_with(&gather, &mine, &mut all, 0)?;
    Ok((comm.rank() == 0).then_some(Times { all, calls: n }))
}

/// Rank 0's outcome of a job of threads: the first rank that failed, as
/// [`crate::Error::Rank`], or what rank 0 returned.
pub(crate) fn of_job<T: Default>(
    outcomes: Vec<Result<T, crate::Error>>,
) -> Result<T, crate::Error> {
    let ranks = outcomes.len();
    let mut found = T::default();
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let got = outcome.map_err(|e| crate::Error::Rank {
            ranks,
            rank,
            source: Box::new(e),
        })?;
        if rank == 0 {
            found = got;
        }
    }
    Ok(found)
}
