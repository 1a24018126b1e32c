use super::*;
use crate::ids::{CallSig, Collective};

#[test]
fn headers_round_trip_for_every_kind_of_tag() {
    let call = CallSig {
        seq: u64::MAX - 3,
        op: Collective::Allgather,
        root: 7,
        bytes: 1 << 40,
    };
    for (tag, len, inline) in [
        (Tag::coll(call, 200), 0, true),
        (Tag::coll(call, 0).in_ctx(7), 1 << 33, false),
        (Tag::user(0xC4EC), 4096, true),
    ] {
        let h = encode(&tag, len, inline);
        assert_eq!(decode(&h).unwrap(), Header { tag, len, inline });
    }
}

#[test]
fn a_long_payload_goes_in_pieces_under_the_eager_limit() {
    for len in [INLINE_MAX + 1, PIECE, PIECE + 1, 3 * PIECE - 7, 1 << 22] {
        let parts: Vec<_> = pieces(len).collect();
        assert_eq!(parts.len(), len.div_ceil(PIECE), "{len}");
        assert_eq!(parts[0].start, 0);
        assert_eq!(parts.last().unwrap().end, len);
        for w in parts.windows(2) {
            assert_eq!(w[0].end, w[1].start, "{len}: a gap or an overlap");
        }
        // Open MPI's tcp eager limit, less its match header.
        assert!(parts.iter().all(|r| !r.is_empty() && r.len() < 65536 - 64));
    }
}

#[test]
fn bad_headers_are_refused_with_the_reason() {
    let good = encode(&Tag::user(1), 0, true);
    assert!(decode(&good[..31]).unwrap_err().contains("shorter"));
    let mut bad = good;
    bad[0] = 9;
    assert!(decode(&bad).unwrap_err().contains("kind 9"));
    let mut bad = encode(
        &Tag::coll(
            CallSig {
                seq: 0,
                op: Collective::Bcast,
                root: 0,
                bytes: 0,
            },
            0,
        ),
        0,
        true,
    );
    let unknown = Collective::ALL.len() as u8;
    bad[2] = unknown;
    assert!(decode(&bad)
        .unwrap_err()
        .contains(&format!("collective number {unknown}")));
    bad[2] = 0;
    bad[3] = 2;
    assert!(decode(&bad).unwrap_err().contains("inline flag"));
}
