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

/// The import edges of `krate` as (importer, imported) names.
fn named_edges(krate: &Crate) -> Vec<(String, String)> {
    krate
        .imports
        .iter()
        .map(|&(f, t)| (krate.modules[f].name.clone(), krate.modules[t].name.clone()))
        .collect()
}

#[test]
fn a_bare_call_to_a_child_can_close_a_circle() {
    // The parent calls its child by the child's bare name; the child
    // builds on the parent's type.
    let krate = crate_of(&[
        ("src/lib.rs", "mod counts;"),
        (
            "src/counts.rs",
            "mod wire;\npub struct Counts;\n\
             impl Counts { fn encode(&self) -> Vec<u8> { wire::encode(self) } }",
        ),
        (
            "src/counts/wire.rs",
            "use super::Counts; pub fn encode(c: &Counts) -> Vec<u8> { todo!() }",
        ),
    ]);
    assert_eq!(
        named_circles(&krate),
        vec![vec!["crate::counts", "crate::counts::wire"]]
    );
}

#[test]
fn a_bare_call_to_a_sibling_seen_through_a_glob_can_close_a_circle() {
    let krate = crate_of(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/a.rs", "use super::*; pub fn f() { b::g() }"),
        ("src/b.rs", "pub fn g() { crate::a::h() }"),
    ]);
    assert_eq!(named_circles(&krate), vec![vec!["crate::a", "crate::b"]]);
}

#[test]
fn a_name_that_is_no_visible_module_is_no_import() {
    // `a` has a child `wire` and a sibling `b`; `b` has a local named
    // after its sibling `a`. None of these names is a path to a module.
    let krate = crate_of(&[
        ("src/lib.rs", "mod a; mod b;"),
        (
            "src/a.rs",
            "mod wire;\nuse crate::b::B;\n\
             fn f(b: B) { let wire = b.wire::<u8>(); let t = Wire::new(); \
             std::wire::x(); ::wire::y(); B::b(); }\n\
             macro_rules! m { ($wire:ident) => { $wire::x() }; }",
        ),
        ("src/a/wire.rs", "pub struct Wire;"),
        (
            "src/b.rs",
            "pub struct B; fn g() { let a = 1u8; a::max(); }",
        ),
    ]);
    assert_eq!(krate.modules.len(), 4);
    assert_eq!(
        named_edges(&krate),
        vec![("crate::a".to_string(), "crate::b".to_string())]
    );
}
