use super::super::tests::Eight;
use super::*;
use crate::ids::Collective;
use crate::select::implementation::Algorithm;
use crate::select::lottery::{Params, Stats, FIRST_CALLS};
use crate::select::selector::Selector;
use crate::tree::Shape;

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

/// The calls a new pool's incumbent holds before the first draw: a usual
/// hold without a model, [`FIRST_CALLS`] with one.
fn first_hold(model: bool) -> usize {
    match model {
        true => FIRST_CALLS as usize,
        false => 1 + Params::default().ttl_scale as usize,
    }
}

/// Whether any call after the incumbent's first hold ran another tree.
fn switched(used: &[Implementation], model: bool) -> bool {
    used[first_hold(model)..]
        .iter()
        .any(|i| i.algorithm != Algorithm::Native)
}

#[test]
fn a_probed_model_vouches_for_a_first_try_at_a_size_never_measured() {
    let mut lottery = budgeted().with_probed(probed());
    let used = run(&mut lottery, 1 << 20, first_hold(true) + 1, megabyte);
    assert!(switched(&used, true), "{used:?}");
}

#[test]
fn a_model_fitted_to_calls_of_a_few_bytes_does_not_rule_on_megabytes() {
    let calls = first_hold(false) + 10;
    // The small calls' fit alone would be believed at 1 MiB: it is not.
    let mut alone = budgeted();
    tiny(&mut alone);
    let used = run(&mut alone, 1 << 20, calls, megabyte);
    assert!(!switched(&used, false), "{used:?}");
    // The probe's model rules there, as if nothing had been measured.
    let mut probing = budgeted().with_probed(probed());
    tiny(&mut probing);
    let used = run(&mut probing, 1 << 20, first_hold(true) + 1, megabyte);
    assert!(switched(&used, true), "{used:?}");
}

/// What an earlier run learned of 128 and 256 KiB broadcasts: two trees
/// ran three times what the probed link allows (for reasons the model
/// does not replay), the MPI library's own at `native_s`.
fn slow_trees_learned(lottery: &mut Lottery, native_s: f64) {
    let layout = Eight::new().0;
    let stats = |imp: Implementation, mean_s: f64| Stats {
        mean_s,
        count: 5,
        ..Stats::new(imp)
    };
    for bytes in [1 << 17, 1 << 18] {
        let slow = |shape: Shape| {
            let imp = Implementation::tree(Collective::Bcast, shape, None).unwrap();
            let time = probed().time(&estimate::cost(&imp, &layout, bytes).unwrap());
            stats(imp, 3.0 * time)
        };
        let learned = Learned {
            candidates: vec![
                slow(Shape::Binomial),
                slow(Shape::Kary(2)),
                stats(Implementation::native(Collective::Bcast), native_s),
            ],
            spent_s: 10.0,
            lost_s: 0.0,
        };
        lottery
            .prior
            .insert(Key::of(Collective::Bcast, 8, bytes), learned);
    }
}

#[test]
fn trees_that_lose_to_what_the_model_misses_do_not_hide_the_others() {
    // At 512 KiB the MPI library's own takes twice what the probed link
    // allows the segmented chain: a fit to the slow trees alone would not
    // vouch for it, the fit held to the probe's time per byte does.
    let layout = Eight::new().0;
    let chain = Implementation::tree(Collective::Bcast, Shape::Chain, Some(16 << 10)).unwrap();
    let chain_s = probed().time(&estimate::cost(&chain, &layout, 1 << 19).unwrap());
    let times = |imp: &Implementation| match imp.algorithm {
        Algorithm::Native => 2.0 * chain_s,
        _ => megabyte(imp) / 2.0,
    };
    let mut fitted = budgeted();
    slow_trees_learned(&mut fitted, 4.0 * chain_s);
    let used = run(&mut fitted, 1 << 19, first_hold(true) + 2, times);
    assert!(!switched(&used, true), "{used:?}");
    let mut held = budgeted().with_probed(probed());
    slow_trees_learned(&mut held, 4.0 * chain_s);
    let used = run(&mut held, 1 << 19, first_hold(true) + 2, times);
    assert!(switched(&used, true), "{used:?}");
}
