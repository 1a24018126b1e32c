//! The balancer's parameters, as the library and `AUTOCOLL_BALANCE` take
//! them.

use super::*;
use crate::balance::op::check_table;

#[test]
fn the_variable_takes_a_mode_or_key_value_pairs() {
    assert_eq!(Params::parse("swap"), Ok(Some(Params::default())));
    assert_eq!(Params::parse("on"), Ok(Some(Params::default())));
    assert_eq!(Params::parse(" off "), Ok(None));
    assert_eq!(Params::parse(""), Ok(None));
    assert_eq!(Params::parse("sort").unwrap().unwrap().mode, Mode::Sort);
    let p = Params::parse(
        "mode=sort,period=16,threshold=50us,relative=30%,gain=0.2,max-period=64,ops=bcast",
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        p,
        Params {
            mode: Mode::Sort,
            period: 16,
            max_period: 64,
            threshold: Duration::from_micros(50),
            relative: 0.3,
            gain: 0.2,
            ops: vec![Collective::Bcast],
            channel: 0,
        }
    );
}

#[test]
fn a_bad_value_is_an_error_naming_the_variable_and_what_is_wrong() {
    let cases = [
        ("sideways", "`sideways` is not swap, sort, off or key=value"),
        ("mode=shuffle", "mode `shuffle` is not swap or sort"),
        ("period=0", "period must be at least 1"),
        ("period=8,max-period=4", "max-period 4 is below period 8"),
        ("threshold=20", "needs a unit"),
        ("gain=1.5", "gain 1.5 is not a share in [0, 1)"),
        ("relative=lots", "relative=lots is not a number"),
        ("ops=reduce", "bcast only, not reduce"),
        ("ops=sort", "unknown collective"),
        ("speed=9", "unknown key `speed`"),
    ];
    for (text, says) in cases {
        let err = params_of_env(Some(text.into())).unwrap_err().to_string();
        assert!(err.contains(&format!("AUTOCOLL_BALANCE={text}")), "{err}");
        assert!(err.contains(says), "{text}: {err}");
    }
    assert_eq!(params_of_env(None).unwrap(), None);
}

#[test]
fn a_table_from_a_file_must_be_a_permutation() {
    assert_eq!(check_table(&[2, 0, 1], 3), Ok(()));
    assert!(check_table(&[0, 1], 3)
        .unwrap_err()
        .contains("2 entries for 3 ranks"));
    assert!(check_table(&[0, 0, 1], 3)
        .unwrap_err()
        .contains("not a permutation"));
    assert!(check_table(&[0, 3, 1], 3)
        .unwrap_err()
        .contains("not a permutation"));
}
