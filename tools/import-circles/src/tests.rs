//! The whole scan on small crates held in memory.

use crate::circles::circles;
use crate::modules::{load, Crate};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The crate rooted at `src/lib.rs` among `files` (path, source).
fn crate_of(files: &[(&str, &str)]) -> Crate {
    let table: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, s)| (PathBuf::from(p), s.to_string()))
        .collect();
    load(Path::new("src/lib.rs"), &|p: &Path| table.get(p).cloned())
}

/// Each circle as its modules' names.
fn named_circles(krate: &Crate) -> Vec<Vec<String>> {
    circles(krate.modules.len(), &krate.imports)
        .into_iter()
        .map(|c| {
            c.into_iter()
                .map(|m| krate.modules[m].name.clone())
                .collect()
        })
        .collect()
}

#[test]
fn two_files_that_use_each_other_are_a_circle() {
    let krate = crate_of(&[
        ("src/lib.rs", "pub mod error; pub mod comm;"),
        (
            "src/error.rs",
            "use crate::comm::CallSig; pub struct Error(CallSig);",
        ),
        (
            "src/comm/mod.rs",
            "mod tcp;\npub struct CallSig; fn f() -> crate::error::Error { todo!() }",
        ),
        ("src/comm/tcp.rs", "use super::CallSig;"),
    ]);
    assert_eq!(
        named_circles(&krate),
        vec![vec!["crate::error", "crate::comm"]]
    );
    assert!(krate.missing.is_empty());
}

#[test]
fn layers_that_look_down_have_no_circle() {
    let krate = crate_of(&[
        (
            "src/lib.rs",
            "pub mod ids; pub mod comm; pub use comm::Communicator; pub use ids::Id;",
        ),
        ("src/ids.rs", "pub struct Id;"),
        ("src/comm/mod.rs", "mod top; pub use top::Communicator;"),
        (
            "src/comm/top.rs",
            "use crate::ids::{self, Id}; pub struct Communicator(Id);",
        ),
    ]);
    assert!(named_circles(&krate).is_empty());
    assert_eq!(krate.modules.len(), 4);
}

#[test]
fn a_re_export_counts_as_an_import() {
    // comm re-exports its child's type; the child uses comm's trait.
    let krate = crate_of(&[
        ("src/lib.rs", "pub mod comm;"),
        (
            "src/comm/mod.rs",
            "mod local;\npub use local::Local;\npub trait Transport {}",
        ),
        (
            "src/comm/local.rs",
            "use super::Transport; pub struct Local;",
        ),
    ]);
    assert_eq!(
        named_circles(&krate),
        vec![vec!["crate::comm", "crate::comm::local"]]
    );
}

#[test]
fn declaring_a_child_and_its_tests_using_super_is_no_circle() {
    let krate = crate_of(&[(
        "src/lib.rs",
        "pub mod a { pub fn f() {} #[cfg(test)] mod tests { use super::*; } }\n\
         pub mod b { pub fn g() { super::a::f() } }",
    )]);
    assert!(named_circles(&krate).is_empty());
    let edges: Vec<(String, String)> = krate
        .imports
        .iter()
        .map(|&(f, t)| (krate.modules[f].name.clone(), krate.modules[t].name.clone()))
        .collect();
    assert!(edges.contains(&("crate::a::tests".into(), "crate::a".into())));
    assert!(edges.contains(&("crate::b".into(), "crate::a".into())));
}

#[test]
fn a_circle_around_three_modules_and_nested_groups() {
    let krate = crate_of(&[
        ("src/lib.rs", "mod a; mod b; mod c;"),
        ("src/a.rs", "use crate::{b::{X, Y as Z}, d};"),
        ("src/b.rs", "fn f() { let _ = crate::c::g(); }"),
        ("src/c.rs", "pub(crate) use super::a::*;"),
    ]);
    assert_eq!(
        named_circles(&krate),
        vec![vec!["crate::a", "crate::b", "crate::c"]]
    );
}

#[test]
fn paths_in_comments_and_strings_are_not_imports() {
    let krate = crate_of(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/a.rs", "use crate::b::X;"),
        (
            "src/b.rs",
            "// use crate::a::Y;\n/// [`crate::a::Y`]\nconst S: &str = \"crate::a\";",
        ),
    ]);
    assert!(named_circles(&krate).is_empty());
}

#[test]
fn a_path_attribute_and_a_mod_rs_are_followed() {
    let krate = crate_of(&[
        ("src/lib.rs", "#[path = \"other/x.rs\"]\nmod x;\nmod y;"),
        ("src/other/x.rs", "use crate::y::Z;"),
        (
            "src/y/mod.rs",
            "mod z; pub use z::Z; fn f() { self::z::g(); crate::x::h(); }",
        ),
        ("src/y/z.rs", "pub struct Z;"),
    ]);
    assert_eq!(krate.modules.len(), 4);
    assert_eq!(named_circles(&krate), vec![vec!["crate::x", "crate::y"]]);
}
