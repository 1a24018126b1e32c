//! A raced row's part in its race: how the race ended for it, its paired
//! comparison with its rival in the final, and how the jobs that settled
//! the final judged it. A [`crate::row::Row`] carries one when it was raced.

use autocoll::measure::race::Ending;
use serde::{Deserialize, Serialize};

/// A raced candidate's part in its race.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    /// Still in at the end (a dropped candidate's figures rest on its few
    /// repetitions).
    pub live: bool,
    /// How the race ended.
    pub ending: Ending,
    /// Rounds the race ran.
    pub rounds: usize,
    /// Jobs that measured the race (over tcp a race runs in jobs of a
    /// few rounds; absent in files of earlier versions: one).
    #[serde(default = "one")]
    pub jobs: usize,
    /// Not raced: it sends the same messages as this candidate, whose
    /// figures it carries ([`autocoll::measure::same`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    /// Of the two in the race's final: its time over its rival's, paired
    /// by round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
    /// Of the two in the final (or the winner and the runner-up of a race
    /// decided late): how it fared in the jobs that settled it (tcp, a
    /// job per point; [`crate::across`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across: Option<Across>,
}

fn one() -> usize {
    1
}

/// A finalist's paired comparison with its rival.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// The rival.
    pub against: String,
    /// Rounds in which both kept a repetition.
    pub rounds: usize,
    /// The median of this candidate's time over the rival's.
    pub ratio: f64,
    /// Its 95% interval.
    pub ci95: [f64; 2],
    /// The median ratio in the rounds this candidate ran first, and in
    /// those it ran second: alike unless coming first in a round costs
    /// (or gains) something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_order: Option<[f64; 2]>,
}

/// A finalist's time over its rival's in the jobs that settled the final.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Across {
    /// Jobs that measured both.
    pub jobs: usize,
    /// The median over the jobs of this one's median over its rival's.
    pub ratio: f64,
    /// The smallest and largest job's ratio.
    pub range: [f64; 2],
}
