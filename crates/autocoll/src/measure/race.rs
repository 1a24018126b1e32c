//! Racing: the candidates of one point measured in rounds, the clearly
//! slower ones dropped as soon as the data says so (successive elimination,
//! after Maron and Moore's Hoeffding races and Birattari's F-race).
//!
//! The statistic is the median of a candidate's repetitions and its
//! distribution-free 95% confidence interval ([`Summary`]'s: the k-th
//! smallest and k-th largest repetitions, k from the binomial
//! distribution). No normality is assumed: call times have a long right
//! tail, and one preempted repetition moves a mean and a standard error but
//! not this interval. Below six repetitions no k reaches 95%, and the
//! interval is the whole range (five repetitions cover the median with
//! 94%).
//!
//! After each round, among the live candidates with `min_reps`
//! repetitions, one whose interval lies wholly above the best's (lowest
//! median) interval is dropped, if it is also behind the best in most of
//! the jobs that measured both (a race measured in jobs of a few rounds:
//! its median in each job over the best's in that job; one job, or none
//! on record, leaves the interval alone to decide). The race is decided
//! when one candidate is left, or when every live candidate has
//! `min_reps` and the best's upper bound lies within `tolerance` of every
//! other's lower bound (none can be more than the tolerance faster), or
//! after `max_reps` rounds, every live candidate tried once a round
//! (undecided: the lowest median wins, and the point says so; a method
//! that discards calls may have kept fewer).
//! Rounds running out with several candidates left call a *final*: the
//! two with the lowest medians race on alone for up to `final_rounds`
//! more rounds, judged by the ratio of their times within each round (a
//! round in which both kept a repetition): the median ratio and its 95%
//! interval, as above. Pairing removes what drifts from round to round
//! (on crowded cores, the whole level moves by more than the tolerance
//! within a minute), so the two that matter are told apart with the care
//! of a dedicated comparison and not by two medians whose intervals
//! overlap. From six paired rounds on (the fewest whose interval reaches
//! 95%), an interval wholly on one side of 1 drops the slower (*alone*);
//! one within the tolerance either side of 1 is a tie. A final whose
//! rounds run out is undecided, and the paired median's loser is
//! dropped: which was ahead in more rounds is the better guess.
//! A race in which a live candidate kept fewer than `min_reps` repetitions
//! in twice as many rounds ends *unmeasured*: the method cannot measure
//! that candidate here, and its caller measures the point another way.
//! Two candidates measured every round without elimination (`tune
//! --exhaustive` of two: a duel) are paired from the first round, and
//! the paired median's loser is dropped when the rounds run out: on this
//! project's virtual machine a 1 MiB transfer takes one time or twice it
//! by turns, and two medians mix the two states each in its own
//! proportion, while a round's two calls mostly meet the same one.
//!
//! This module is pure: the driver runs the repetitions, in the order the
//! caller shuffles, and feeds their times here.

use serde::{Deserialize, Serialize};

use crate::stats::{median, Summary};

/// Paired rounds before a final can end: the fewest whose median's
/// interval (the smallest to the largest) reaches 95%.
const FINAL_MIN_PAIRS: usize = 6;

/// When a race drops candidates and when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// A difference below this share of the best's time does not matter.
    pub tolerance: f64,
    /// Repetitions of every live candidate before any is dropped.
    pub min_reps: usize,
    /// Repetitions of a candidate at most.
    pub max_reps: usize,
    /// Drop the clearly slower and stop at a tie (a race); when false,
    /// every candidate runs every one of `max_reps` rounds (`tune
    /// --exhaustive`: the same care for all, still interleaved).
    pub eliminate: bool,
    /// Rounds the two best may race on, paired, when `max_reps` rounds
    /// leave several in (0: none; the lowest median wins undecided).
    #[serde(default)]
    pub final_rounds: usize,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            tolerance: 0.02,
            min_reps: 3,
            max_reps: 30,
            eliminate: true,
            final_rounds: 70,
        }
    }
}

/// How a race ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// One candidate was left.
    Alone,
    /// The live candidates were within the tolerance of each other.
    Tied,
    /// Repetitions ran out before either: the lowest median wins,
    /// unconfirmed.
    Undecided,
    /// A live candidate kept fewer than `min_reps` repetitions in twice as
    /// many rounds: the method cannot measure it here (`truth` discarding
    /// every call of crowded ranks), and the race cannot be fair.
    Unmeasured,
    /// Without elimination, every candidate ran all its rounds.
    Exhausted,
}

/// One point's race: every candidate's repetitions and whether it is
/// still in. Saved whole in a sweep's partial file, so that a resumed
/// sweep goes on with the race where it stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Race {
    /// Repetitions (seconds per call) of every candidate, in order.
    pub reps: Vec<Vec<f64>>,
    /// Whether each candidate is still in.
    pub live: Vec<bool>,
    /// Rounds run.
    pub rounds: usize,
    /// How it ended, once it has.
    pub ending: Option<Ending>,
    /// The final of the two best, once rounds ran out without a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<Final>,
    /// Jobs (runs of the measuring processes) that have measured it: more
    /// than one when a sweep measures a race in jobs of a few rounds
    /// ([`Race::hand_over`]) or was interrupted and resumed.
    #[serde(default)]
    pub jobs: usize,
    /// Per job on record, every candidate's repetitions before it began
    /// ([`Race::begin_job`]), so that a drop can rest on each job's
    /// figures. Empty in files of before: their repetitions count as one
    /// job's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_starts: Vec<Vec<usize>>,
}

/// The final of a race: two candidates, their times paired by round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Final {
    /// The two: in a final, the lower median first when it began; in a
    /// duel ([`Race::under`]), in the race's order.
    pub pair: [usize; 2],
    /// The round it began after.
    pub from: usize,
    /// Per round in which both kept a repetition: the first's time over
    /// the second's.
    pub ratios: Vec<f64>,
    /// Per ratio: whether the first ran before the second in its round
    /// (a round's order is random; a call that pays for coming first
    /// shows as two ratios, one per order). Empty in files of before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leads: Vec<bool>,
    /// This round's times of the two so far (a round ends between saves).
    #[serde(skip)]
    round: [Option<f64>; 2],
    /// Which of the two ran first this round.
    #[serde(skip)]
    ahead: Option<usize>,
}

impl Final {
    fn new(pair: [usize; 2], from: usize) -> Self {
        Final {
            pair,
            from,
            ratios: Vec::new(),
            leads: Vec::new(),
            round: [None; 2],
            ahead: None,
        }
    }

    fn add(&mut self, i: usize, seconds: f64) {
        if let Some(k) = self.pair.iter().position(|&p| p == i) {
            self.round[k] = Some(seconds);
            self.ahead.get_or_insert(k);
        }
    }

    fn close_round(&mut self) {
        let ahead = self.ahead.take();
        if let [Some(a), Some(b)] = std::mem::take(&mut self.round) {
            // A final resumed from a file of before has no leads: it
            // keeps none, so that they stay one per ratio or absent.
            if self.leads.len() == self.ratios.len() {
                self.leads.push(ahead == Some(0));
            }
            self.ratios.push(a / b);
        }
    }

    /// For the pair's `k`-th (0 or 1): the median of its time over its
    /// rival's in the rounds it ran first, and in those it ran second;
    /// `None` unless both orders were paired (and a lead recorded per
    /// ratio).
    pub fn by_order(&self, k: usize) -> Option<[f64; 2]> {
        if self.leads.len() != self.ratios.len() {
            return None;
        }
        let side = |ahead: bool| -> Vec<f64> {
            let both = self.ratios.iter().zip(&self.leads);
            let own = both.filter(|(_, &lead)| lead == (ahead == (k == 0)));
            own.map(|(&r, _)| if k == 0 { r } else { 1.0 / r })
                .collect()
        };
        let (first, second) = (side(true), side(false));
        (!first.is_empty() && !second.is_empty()).then(|| [median(&first), median(&second)])
    }
}

impl Race {
    /// A race of `n` candidates, none measured.
    pub fn new(n: usize) -> Self {
        Race {
            reps: vec![Vec::new(); n],
            live: vec![true; n],
            rounds: 0,
            ending: None,
            last: None,
            jobs: 0,
            job_starts: Vec::new(),
        }
    }

    /// Marks the start of a job's share of the race: the repetitions
    /// recorded from here on are this job's.
    pub fn begin_job(&mut self) {
        self.jobs += 1;
        self.job_starts
            .push(self.reps.iter().map(Vec::len).collect());
    }

    /// Candidate `i`'s repetitions cut by job, aligned across candidates:
    /// first those before the first job on record, then one slice a job.
    fn per_job(&self, i: usize) -> Vec<&[f64]> {
        let reps = &self.reps[i];
        let starts = self.job_starts.iter().map(|s| s.get(i).copied());
        let mut cuts = vec![0];
        cuts.extend(starts.map(|s| s.unwrap_or(0).min(reps.len())));
        cuts.push(reps.len());
        cuts.windows(2)
            .map(|w| &reps[w[0]..w[1].max(w[0])])
            .collect()
    }

    /// Whether `i` is behind `best` (its median over the other's) in most
    /// of the jobs that measured both. A machine can run one candidate in
    /// a fast state for a whole job (`allreduce:ring` at 1 MiB, 0.20 ms a
    /// call in one job of three and 0.35 in the others); a drop on pooled
    /// figures alone, taken while such a job's rounds make most of them,
    /// loses the candidate the other jobs put first.
    fn behind_in_most_jobs(&self, i: usize, best: usize) -> bool {
        let (mine, theirs) = (self.per_job(i), self.per_job(best));
        let both = mine.iter().zip(&theirs);
        let met: Vec<bool> = both
            .filter(|(a, b)| !a.is_empty() && !b.is_empty())
            .map(|(a, b)| median(a) > median(b))
            .collect();
        let behind = met.iter().filter(|&&x| x).count();
        met.is_empty() || 2 * behind > met.len()
    }

    /// A race of `n` candidates under `rule`. Two measured every round
    /// without elimination are a duel: their times are paired by round
    /// from the first, as in a final, and the paired median decides.
    pub fn under(n: usize, rule: &Rule) -> Self {
        let mut race = Race::new(n);
        if n == 2 && !rule.eliminate {
            race.last = Some(Final::new([0, 1], 0));
        }
        race
    }

    /// The candidates still in, in index order.
    pub fn contenders(&self) -> Vec<usize> {
        (0..self.live.len()).filter(|&i| self.live[i]).collect()
    }

    /// Records a repetition of candidate `i`.
    pub fn add(&mut self, i: usize, seconds: f64) {
        self.reps[i].push(seconds);
        if let Some(last) = &mut self.last {
            last.add(i, seconds);
        }
    }

    /// The live candidate with the lowest median, if any has a repetition
    /// (the winner, once decided).
    pub fn best(&self) -> Option<usize> {
        self.contenders()
            .into_iter()
            .filter(|&i| !self.reps[i].is_empty())
            .min_by(|&a, &b| median(&self.reps[a]).total_cmp(&median(&self.reps[b])))
    }

    /// Ends a round: drops what the data rules out and says whether the
    /// race is decided (then [`Race::ending`] says how).
    pub fn close_round(&mut self, rule: &Rule) -> bool {
        self.rounds += 1;
        if self.ending.is_some() {
            return true;
        }
        if let Some(how) = self.short_of_figures(rule) {
            return self.end(how);
        }
        if !rule.eliminate {
            return self.close_round_kept(rule);
        }
        if self.last.is_some() {
            return self.close_final(rule);
        }
        if let Some(how) = self.eliminate(rule) {
            return self.end(how);
        }
        // Every live candidate has had max_reps tries, one a round (a
        // method may keep fewer: truth discards skewed calls).
        if self.rounds >= rule.max_reps {
            return !self.begin_final(rule) && self.end(Ending::Undecided);
        }
        false
    }

    /// The endings that rest on how many repetitions the live candidates
    /// kept, not on their times.
    fn short_of_figures(&self, rule: &Rule) -> Option<Ending> {
        // A candidate alone from the start (its rivals all send the same
        // messages) still needs figures of its own: the point's winner.
        let live = self.contenders();
        if live.len() <= 1 && live.iter().all(|&i| self.reps[i].len() >= rule.min_reps) {
            return Some(Ending::Alone);
        }
        let short = |i: &usize| self.reps[*i].len() < rule.min_reps;
        if self.rounds >= 2 * rule.min_reps.max(1) && live.iter().any(short) {
            return Some(Ending::Unmeasured);
        }
        None
    }

    /// Ends a round of a race without elimination: every candidate runs
    /// all `max_reps` rounds.
    fn close_round_kept(&mut self, rule: &Rule) -> bool {
        if let Some(last) = &mut self.last {
            last.close_round();
        }
        if self.rounds < rule.max_reps {
            return false;
        }
        self.drop_paired_loser();
        self.end(Ending::Exhausted)
    }

    /// Drops every measured candidate whose 95% interval lies above the
    /// best median's and that was behind it in most jobs; the race is then
    /// decided when one is left, or when every live one is measured and
    /// within the tolerance of the best.
    fn eliminate(&mut self, rule: &Rule) -> Option<Ending> {
        let measured = |race: &Race| -> Vec<usize> {
            let live = race.contenders().into_iter();
            live.filter(|&i| race.reps[i].len() >= rule.min_reps)
                .collect()
        };
        let summary = |i: usize| Summary::of(&self.reps[i]);
        let ranked = measured(self);
        let best = ranked
            .iter()
            .copied()
            .min_by(|&a, &b| median(&self.reps[a]).total_cmp(&median(&self.reps[b])))?;
        let best_hi = summary(best).ci95_hi;
        let out: Vec<usize> = ranked
            .iter()
            .copied()
            .filter(|&i| i != best && summary(i).ci95_lo > best_hi)
            .filter(|&i| self.behind_in_most_jobs(i, best))
            .collect();
        for i in out {
            self.live[i] = false;
        }
        let live = self.contenders();
        if live.len() == 1 {
            return Some(Ending::Alone);
        }
        let all_measured = measured(self).len() == live.len();
        let tied = live
            .iter()
            .filter(|&&i| i != best)
            .all(|&i| best_hi <= summary(i).ci95_lo * (1.0 + rule.tolerance));
        (all_measured && tied).then_some(Ending::Tied)
    }

    /// Narrows an undecided race to its two lowest medians, if the rule
    /// allows a final and two are measured; false when there is none.
    fn begin_final(&mut self, rule: &Rule) -> bool {
        let mut ranked: Vec<usize> = self
            .contenders()
            .into_iter()
            .filter(|&i| self.reps[i].len() >= rule.min_reps)
            .collect();
        if rule.final_rounds == 0 || ranked.len() < 2 {
            return false;
        }
        ranked.sort_by(|&a, &b| median(&self.reps[a]).total_cmp(&median(&self.reps[b])));
        let pair = [ranked[0], ranked[1]];
        for i in self.contenders() {
            self.live[i] = pair.contains(&i);
        }
        self.last = Some(Final::new(pair, self.rounds));
        true
    }

    /// Ends a round of the final: its paired ratios decide, or its rounds
    /// run out (undecided).
    fn close_final(&mut self, rule: &Rule) -> bool {
        let last = self.last.as_mut().expect("a final");
        last.close_round();
        let (pair, from) = (last.pair, last.from);
        let paired = Summary::of(&last.ratios);
        if last.ratios.len() >= FINAL_MIN_PAIRS {
            if paired.ci95_hi < 1.0 {
                self.live[pair[1]] = false;
                return self.end(Ending::Alone);
            }
            if paired.ci95_lo > 1.0 {
                self.live[pair[0]] = false;
                return self.end(Ending::Alone);
            }
            let band = 1.0 / (1.0 + rule.tolerance)..=1.0 + rule.tolerance;
            if band.contains(&paired.ci95_lo) && band.contains(&paired.ci95_hi) {
                return self.end(Ending::Tied);
            }
        }
        if self.rounds >= from + rule.final_rounds {
            self.drop_paired_loser();
            return self.end(Ending::Undecided);
        }
        false
    }

    /// Drops the one of the two paired that was behind in their paired
    /// median: which was ahead in more rounds is the better guess than
    /// two medians that drifted apart, or that each mix a fast and a slow
    /// state of the machine in their own proportions. Its rival is
    /// dropped so that every reader of the rows sees one winner.
    fn drop_paired_loser(&mut self) {
        let Some(last) = &self.last else { return };
        let paired = median(&last.ratios);
        if paired.is_nan() {
            return;
        }
        let behind = if paired <= 1.0 {
            last.pair[1]
        } else {
            last.pair[0]
        };
        self.live[behind] = false;
    }

    /// Ends an undecided race (its rounds ran out).
    pub fn stop(&mut self) {
        if self.ending.is_none() {
            self.ending = Some(Ending::Undecided);
        }
    }

    /// The winner once decided: the live candidate with the lowest median.
    pub fn winner(&self) -> Option<usize> {
        self.ending.and(self.best())
    }

    /// Whether a race measured in jobs of `per_job` rounds hands over to
    /// a fresh job after the round just closed: the first job runs
    /// `min_reps − 1` rounds, so that no candidate is dropped on the
    /// figures of one job, and each job after it `per_job` rounds, until
    /// `max_reps`; a final runs on in the job it begins in (its settling
    /// jobs are jobs of their own). A job's figures move with the job
    /// (which of two close trees is ahead changes from one job to the
    /// next), and a median over several jobs' rounds moves less. Never
    /// with `per_job` 0, once decided, without elimination, or with one
    /// candidate in (nothing left to drop).
    pub fn hand_over(&self, rule: &Rule, per_job: usize) -> bool {
        let open = self.ending.is_none() && self.last.is_none() && self.contenders().len() > 1;
        if per_job == 0 || !rule.eliminate || !open {
            return false;
        }
        let first = rule.min_reps.saturating_sub(1).max(1);
        let r = self.rounds;
        r < rule.max_reps && r >= first && (r - first).is_multiple_of(per_job)
    }

    fn end(&mut self, how: Ending) -> bool {
        self.ending = Some(how);
        true
    }
}

#[cfg(test)]
mod tests;
