//! Writing the cluster's shell scripts.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Writes `text` to `path` as an executable script.
pub(super) fn write_script(path: &Path, text: &str) -> anyhow::Result<()> {
    autocoll::files::write_atomic(path, text.as_bytes())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

/// `path` quoted for sh.
pub(super) fn quoted(path: PathBuf) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}
