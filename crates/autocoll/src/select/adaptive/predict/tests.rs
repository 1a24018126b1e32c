use super::super::tests::Eight;
use super::*;
use crate::ids::Collective;
use crate::select::implementation::Algorithm;
use crate::select::lottery::Params;
use crate::select::selector::Selector;

/// The emulated 100 Mbit/s cluster, as a probe would read it.
fn probed() -> Link {
    Link::from_ns(50_000.0, 80.0, 0.6)
}

fn budgeted() -> Lottery {
    let params = Params {
        budget: Some(Budget::default()),
        ..Params::default()
    };
    Lottery::new(params, 7).with_incumbent(|op, _, _| Some(Implementation::native(op)))
}

/// Runs `calls` broadcasts of `bytes` at `seconds(imp)` a call; what
/// each call ran.
fn run(
    lottery: &mut Lottery,
    bytes: usize,
    calls: usize,
    seconds: impl Fn(&Implementation) -> f64,
) -> Vec<Implementation> {
    let mut group = Eight::new();
    let mut clock = 0u64;
    (0..calls)
        .map(|_| {
            let imp = lottery
                .select(&mut group, Collective::Bcast, bytes)
                .unwrap();
            let took = (seconds(&imp) * 1e9) as u64;
            lottery.record(&imp, bytes, clock, clock + took);
            clock += took;
            imp
        })
        .collect()
}

/// Calls of 1 to 8 bytes, where the larger happen to run slower: a fit
/// reads tens of microseconds a byte off them.
fn tiny(lottery: &mut Lottery) {
    for bytes in [1, 2, 4, 8] {
        run(lottery, bytes, 1000, |imp| match imp.algorithm {
            Algorithm::Native => 300e-6,
            _ => 150e-6 + 25e-6 * bytes as f64,
        });
    }
}

/// A megabyte broadcast: the MPI library's own at half a second, every
/// other tree as the probed model says.
fn megabyte(imp: &Implementation) -> f64 {
    let layout = Eight::new().0;
    match estimate::cost(imp, &layout, 1 << 20) {
        Some(c) => probed().time(&c),
        None => 0.55,
    }
}

/// The calls a new pool's incumbent holds before the first draw.
fn first_hold() -> usize {
    1 + Params::default().ttl_scale as usize
}

/// Whether any call after the incumbent's first hold ran another tree.
fn switched(used: &[Implementation]) -> bool {
    used[first_hold()..]
        .iter()
        .any(|i| i.algorithm != Algorithm::Native)
}

#[test]
fn a_probed_model_vouches_for_a_first_try_at_a_size_never_measured() {
    let mut lottery = budgeted().with_probed(probed());
    let used = run(&mut lottery, 1 << 20, first_hold() + 1, megabyte);
    assert!(switched(&used), "{used:?}");
}

#[test]
fn a_model_fitted_to_calls_of_a_few_bytes_does_not_rule_on_megabytes() {
    let calls = first_hold() + 10;
    // The small calls' fit alone would be believed at 1 MiB: it is not.
    let mut alone = budgeted();
    tiny(&mut alone);
    let used = run(&mut alone, 1 << 20, calls, megabyte);
    assert!(!switched(&used), "{used:?}");
    // The probe's model rules there, as if nothing had been measured.
    let mut probing = budgeted().with_probed(probed());
    tiny(&mut probing);
    let used = run(&mut probing, 1 << 20, first_hold() + 1, megabyte);
    assert!(switched(&used), "{used:?}");
}
