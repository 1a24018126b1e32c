//! import-circles: lists the module-level import circles of Rust crates.
//!
//! `import-circles PATH...` finds every crate (a directory with a
//! `Cargo.toml` holding `[package]`) under the paths, reads each of its
//! roots (`src/lib.rs`, `src/main.rs`, `src/bin/*`, `tests/*`, `benches/*`,
//! `examples/*`) with the modules they declare, and prints every circle of
//! imports between modules (what an import is: [`modules`]). A module
//! imports another that it names by a path, in a `use` or in its code:
//! `crate::`, `super::` and `self::` paths, and paths that start at a
//! module visible by its bare name (a child it declares, as in
//! `wire::encode(..)` after `mod wire;`, or a child of a module it
//! glob-imports). It prints `none` and exits 0 when there is none, exits 1
//! otherwise. The scan is token-based, not a compiler's: macros are not
//! expanded and a `use` of an item brought in by a glob is not followed to
//! its module.

mod circles;
mod lex;
mod modules;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let paths = if args.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args
    };
    let mut crates = Vec::new();
    for path in &paths {
        find_crates(path, &mut crates);
    }
    crates.sort();
    crates.dedup();
    let read = |p: &Path| fs::read_to_string(p).ok();
    let mut report = String::new();
    for dir in &crates {
        for root in roots(dir) {
            let krate = modules::load(&root, &read);
            report.push_str(&describe(&krate, &root));
        }
    }
    if report.is_empty() {
        println!("none");
        ExitCode::SUCCESS
    } else {
        print!("{report}");
        ExitCode::FAILURE
    }
}

/// Every crate directory at or under `path`, skipping `target` and hidden
/// directories.
fn find_crates(path: &Path, found: &mut Vec<PathBuf>) {
    let manifest = path.join("Cargo.toml");
    if fs::read_to_string(&manifest).is_ok_and(|m| m.contains("[package]")) {
        found.push(path.to_path_buf());
    }
    let Ok(entries) = fs::read_dir(path) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name != "target" && !name.starts_with('.') {
            find_crates(&dir, found);
        }
    }
}

/// The root files of the crates a package directory builds.
fn roots(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = ["src/lib.rs", "src/main.rs"]
        .iter()
        .map(|r| dir.join(r))
        .filter(|p| p.is_file())
        .collect();
    for sub in ["src/bin", "tests", "benches", "examples"] {
        let Ok(entries) = fs::read_dir(dir.join(sub)) else {
            continue;
        };
        let mut more: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter_map(|p| match p.extension() {
                Some(e) if e == "rs" => Some(p),
                _ if p.join("main.rs").is_file() => Some(p.join("main.rs")),
                _ => None,
            })
            .collect();
        more.sort();
        found.extend(more);
    }
    found
}

/// The circles of one crate, each with its modules' files and their
/// imports inside the circle; empty when there is none.
fn describe(krate: &modules::Crate, root: &Path) -> String {
    let mut out = String::new();
    for circle in circles::circles(krate.modules.len(), &krate.imports) {
        out.push_str(&format!(
            "{}: a circle of {} modules\n",
            root.display(),
            circle.len()
        ));
        for &m in &circle {
            let module = &krate.modules[m];
            let to: Vec<&str> = circle
                .iter()
                .filter(|&&t| krate.imports.contains(&(m, t)))
                .map(|&t| krate.modules[t].name.as_str())
                .collect();
            out.push_str(&format!(
                "  {} ({}) imports {}\n",
                module.name,
                module.file.display(),
                to.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
