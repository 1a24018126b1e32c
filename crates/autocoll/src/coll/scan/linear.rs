//! Linear scan: segment by segment, rank r receives the prefix of ranks
//! 0..r from rank r − 1, combines its own part and passes the result on to
//! rank r + 1, so segment k leaves while k + 1 arrives. P − 1 hops of
//! latency, each byte through every link once: for long messages.

use bytes::Bytes;

use super::super::{segments, Combine, Ctx};
use crate::error::Result;

/// `recv` holds the prefix of this rank (`exclusive`: without its own
/// part; rank 0's `recv` is then left untouched).
pub(crate) fn linear(
    ctx: &mut Ctx<'_>,
    send: &[u8],
    recv: &mut [u8],
    seg: usize,
    exclusive: bool,
    combine: Combine<'_>,
) -> Result<()> {
    let (r, p) = (ctx.rank, ctx.size);
    for (k, range) in segments(send.len(), seg).enumerate() {
        let mut out = send[range.clone()].to_vec();
        if r > 0 {
            let prefix = ctx.recv(r - 1, 0, range.len(), k)?;
            combine(&mut out, &prefix);
            let mine = if exclusive { &prefix[..] } else { &out[..] };
            recv[range].copy_from_slice(mine);
        } else if !exclusive {
            recv[range].copy_from_slice(&out);
        }
        if r + 1 < p {
            ctx.send(r + 1, 0, Bytes::from(out), k)?;
        }
    }
    Ok(())
}
