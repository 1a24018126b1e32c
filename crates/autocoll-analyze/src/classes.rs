//! Classes of ranks that behave alike (the paper: "many subtrees have
//! similar behaviour"), each with a representative, so that a 64-rank run
//! reads as a handful of rows.
//!
//! A rank's profile is the mean of each of its stages over the group's
//! calls: time in the call and its local stages (receive, combine, send,
//! finish) and, over a tree, its path's arrival wait, the rest of its down
//! path and its up path. Two profiles are alike when no stage differs by
//! more than `tolerance` × the group's mean call time (one scale for every
//! stage, so that a stage of a few nanoseconds does not split classes on
//! noise). Ranks are taken slowest first (by time in the call); each joins
//! the first class whose first rank it is alike to, or starts a class.
//! Classes are named A, B, … slowest first. The representative is the
//! class's medoid: the member with the smallest summed distance (the
//! largest stage difference) to the others, the lowest rank of equals.

/// One class of ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    /// Its members, ascending.
    pub ranks: Vec<usize>,
    /// The member that stands for it.
    pub representative: usize,
    /// The members' mean profile.
    pub mean: Vec<f64>,
}

/// The largest difference between two profiles' stages; a stage missing
/// from one of them (NaN) is an infinite difference unless missing from
/// both.
fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x.is_nan(), y.is_nan()) {
            (true, true) => 0.0,
            (false, false) => (x - y).abs(),
            _ => f64::INFINITY,
        })
        .fold(0.0, f64::max)
}

/// Groups `profiles` (rank, profile; profile[0] is the time in the call)
/// into classes; `scale` is the group's mean call time.
pub fn classes(profiles: &[(usize, Vec<f64>)], scale: f64, tolerance: f64) -> Vec<Class> {
    let mut order: Vec<&(usize, Vec<f64>)> = profiles.iter().collect();
    order.sort_by(|a, b| b.1[0].total_cmp(&a.1[0]).then(a.0.cmp(&b.0)));
    let limit = tolerance * scale.max(0.0);
    let mut groups: Vec<Vec<&(usize, Vec<f64>)>> = Vec::new();
    for p in order {
        match groups.iter_mut().find(|g| distance(&g[0].1, &p.1) <= limit) {
            Some(g) => g.push(p),
            None => groups.push(vec![p]),
        }
    }
    groups.into_iter().map(class_of).collect()
}

fn class_of(members: Vec<&(usize, Vec<f64>)>) -> Class {
    let width = members[0].1.len();
    let mean = (0..width)
        .map(|k| members.iter().map(|m| m.1[k]).sum::<f64>() / members.len() as f64)
        .collect();
    let representative = members
        .iter()
        .map(|m| {
            let cost: f64 = members.iter().map(|o| distance(&m.1, &o.1)).sum();
            (cost, m.0)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .expect("a class has a member")
        .1;
    let mut ranks: Vec<usize> = members.iter().map(|m| m.0).collect();
    ranks.sort_unstable();
    Class {
        ranks,
        representative,
        mean,
    }
}

/// The name of the i-th class: A … Z, then AA, AB, …
pub fn name(i: usize) -> String {
    let letter = |k: usize| char::from(b'A' + (k % 26) as u8);
    match i {
        0..=25 => letter(i).to_string(),
        _ => format!("{}{}", letter(i / 26 - 1), letter(i)),
    }
}

/// Ranks as a short list: `0,2-5,9`.
pub fn ranges(ranks: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(match j - i {
            0 => ranks[i].to_string(),
            1 => format!("{},{}", ranks[i], ranks[j]),
            _ => format!("{}-{}", ranks[i], ranks[j]),
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alike_ranks_share_a_class_with_a_medoid_representative() {
        let p = |r: usize, t: f64, w: f64| (r, vec![t, w]);
        let profiles = vec![
            p(0, 100.0, 10.0),
            p(1, 50.0, 40.0),
            p(2, 52.0, 41.0),
            p(3, 51.0, 40.5),
            p(4, 101.0, 12.0),
            p(5, 20.0, f64::NAN),
        ];
        let got = classes(&profiles, 100.0, 0.05);
        let ranks: Vec<Vec<usize>> = got.iter().map(|c| c.ranks.clone()).collect();
        assert_eq!(ranks, vec![vec![0, 4], vec![1, 2, 3], vec![5]]);
        assert_eq!(got[1].representative, 3);
        assert_eq!(got[0].representative, 0);
        assert!((got[1].mean[0] - 51.0).abs() < 1e-9);
    }

    #[test]
    fn names_and_ranges_read_well() {
        assert_eq!(name(0), "A");
        assert_eq!(name(25), "Z");
        assert_eq!(name(26), "AA");
        assert_eq!(ranges(&[0, 2, 3, 4, 5, 9, 10]), "0,2-5,9,10");
        assert_eq!(ranges(&[]), "");
    }
}
