//! The MPI library's own result beside autocoll's: run first, compared
//! bit for bit.

use super::case::Native;
use super::reference::compare;
use crate::ids::Collective;

/// The native library's result for the same call, run before autocoll's.
pub(super) fn native_result(
    native: Option<&dyn Native>,
    op: Collective,
    mut buf: Vec<u8>,
    call: impl FnOnce(&dyn Native, &mut [u8]) -> crate::error::Result<()>,
) -> Result<Option<(String, Vec<u8>)>, String> {
    let Some(lib) = native else {
        return Ok(None);
    };
    let name = lib.name(op);
    call(lib, &mut buf).map_err(|e| format!("{name}: {e}"))?;
    Ok(Some((name, buf)))
}

/// Requires autocoll's result (`got`, already checked against the
/// reference) to be bit-equal to the native library's.
pub(super) fn against_native(native: Option<(String, Vec<u8>)>, got: &[u8]) -> Result<(), String> {
    match native {
        None => Ok(()),
        Some((name, theirs)) => compare(&format!("autocoll vs {name} result"), got, &theirs),
    }
}
