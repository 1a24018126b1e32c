//! Files written so that a crash never leaves half of one.
//!
//! What autocoll writes for another program or a later run to read (the
//! lottery's state, and in the command tuning tables, results, reports and
//! plots) goes through [`write_atomic`]: a temporary file beside the
//! target, synced, then renamed over it, so a reader sees the old file or
//! the new one. The temporary sits in the target's directory because a
//! rename is atomic only within one file system.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `data` to a temporary file beside `path`, syncs it, and renames
/// it over `path`: readers see the old file or the new one, never a part.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::Config(format!("`{}` names no file", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(data)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(format!("writing {}", path.display()), e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("autocoll-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
        let err = write_atomic(&dir.join("missing/out.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("missing/out.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
