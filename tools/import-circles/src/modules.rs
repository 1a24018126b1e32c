//! A crate's module tree and the imports between its modules.
//!
//! A module is a file or an inline `mod name { ... }`. Module A imports B
//! when A's code names B by a path: in a `use` declaration (re-exports
//! included) or anywhere in its code. A path names the deepest module it
//! walks through: `crate::comm::Communicator` imports `comm`. The path's
//! first segment says where the walk starts: `crate::`, `super::` and
//! `self::` at the root, A's parent and A; any other name at a module
//! visible by that bare name in A, that is a child A declares
//! (`wire::encode(..)` after `mod wire;`) or a child of a module A
//! glob-imports (a sibling after `use super::*;`). A path whose first
//! segment names no such module (a local, a type, an extern crate, a
//! `::`-rooted path) is no import, nor is a name after `.` (a method's
//! turbofish) or `$` (a macro variable). Declaring `mod child;` is not an
//! import.

use crate::lex::{tokens, Token};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One module of a crate.
#[derive(Debug)]
pub struct Module {
    /// Its path from the crate root: `crate::comm::tcp`.
    pub name: String,
    /// The file it is in (an inline module's is its parent's).
    pub file: PathBuf,
    /// Its parent, `None` for the crate root.
    pub parent: Option<usize>,
    /// Its child modules by name.
    pub children: BTreeMap<String, usize>,
    /// Where the files of its `mod child;` declarations are.
    child_dir: PathBuf,
    /// The paths its code names, unresolved; a glob import's ends in `*`.
    paths: Vec<Vec<String>>,
}

/// A crate's modules and the imports between them.
#[derive(Debug)]
pub struct Crate {
    /// Every module, the root first.
    pub modules: Vec<Module>,
    /// Import edges: (importer, imported), by index into `modules`.
    pub imports: BTreeSet<(usize, usize)>,
    /// `mod` declarations whose file was not found (cfg'd-out ones, say).
    pub missing: Vec<PathBuf>,
}

/// Loads the crate whose root file is `root`, reading files with `read`
/// (the file system, or a table in tests).
pub fn load(root: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Crate {
    let mut krate = Crate {
        modules: Vec::new(),
        imports: BTreeSet::new(),
        missing: Vec::new(),
    };
    let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
    krate.modules.push(Module {
        name: "crate".into(),
        file: root.to_path_buf(),
        parent: None,
        children: BTreeMap::new(),
        child_dir: dir,
        paths: Vec::new(),
    });
    if let Some(source) = read(root) {
        scan(&mut krate, 0, &tokens(&source), read);
    }
    krate.imports = resolve_all(&krate.modules);
    krate
}

/// Adds a child module of `parent` and returns its index.
fn add_child(
    krate: &mut Crate,
    parent: usize,
    name: &str,
    file: PathBuf,
    child_dir: PathBuf,
) -> usize {
    let index = krate.modules.len();
    let full = format!("{}::{name}", krate.modules[parent].name);
    krate.modules.push(Module {
        name: full,
        file,
        parent: Some(parent),
        children: BTreeMap::new(),
        child_dir,
        paths: Vec::new(),
    });
    krate.modules[parent]
        .children
        .insert(name.to_string(), index);
    index
}

/// Walks one file's tokens (module `top`'s), adding the modules it declares
/// (loading their files) and the paths each module names.
fn scan(krate: &mut Crate, top: usize, toks: &[Token], read: &dyn Fn(&Path) -> Option<String>) {
    let mut walk = Walk {
        open: vec![(top, 0)],
        depth: 0,
        path_attr: None,
    };
    let mut i = 0;
    while i < toks.len() {
        let here = walk.module();
        match &toks[i] {
            Token::Punct("{") => walk.depth += 1,
            Token::Punct("}") => walk.close_brace(),
            Token::Punct("#") => {
                if let Some(p) = path_attribute(&toks[i..]) {
                    walk.path_attr = Some(p);
                }
            }
            Token::Ident(word) if word == "mod" => {
                i = declare_mod(krate, &mut walk, toks, i, read);
                continue;
            }
            Token::Ident(word) if word == "use" => {
                i += 1;
                use_tree(toks, &mut i, Vec::new(), &mut krate.modules[here].paths);
                continue;
            }
            Token::Ident(_) if starts_path(toks, i) => {
                let path = code_path(toks, &mut i);
                krate.modules[here].paths.push(path);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Where the walk of one file is.
struct Walk {
    /// The inline modules open at this point, with the brace depth each
    /// opened at; the file's own module first.
    open: Vec<(usize, usize)>,
    /// How many braces are open.
    depth: usize,
    /// A `#[path]` attribute waiting for its `mod` declaration.
    path_attr: Option<String>,
}

impl Walk {
    /// The module the walk is in.
    fn module(&self) -> usize {
        self.open.last().expect("the file's module stays open").0
    }

    /// A `}`, which may close an inline module.
    fn close_brace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.open.len() > 1 && self.open.last().is_some_and(|&(_, d)| d == self.depth) {
            self.open.pop();
        }
    }
}

/// A `mod` at `toks[i]`: opens an inline module (the walk goes on at its
/// name), or loads a declared module's file (the walk goes on after its
/// `;`). Returns where the walk goes on.
fn declare_mod(
    krate: &mut Crate,
    walk: &mut Walk,
    toks: &[Token],
    i: usize,
    read: &dyn Fn(&Path) -> Option<String>,
) -> usize {
    let Some(Token::Ident(name)) = toks.get(i + 1) else {
        return i + 1;
    };
    let here = walk.module();
    match toks.get(i + 2) {
        Some(Token::Punct("{")) => {
            let dir = krate.modules[here].child_dir.join(name);
            let file = krate.modules[here].file.clone();
            let child = add_child(krate, here, name, file, dir);
            walk.open.push((child, walk.depth));
        }
        Some(Token::Punct(";")) => {
            declare_file(krate, here, name, walk.path_attr.take(), read);
            return i + 3;
        }
        _ => {}
    }
    i + 1
}

/// Whether a path in code starts at `toks[i]`: a name followed by `::`,
/// where a bare name must not continue a path, a field or method access,
/// or a macro variable (`$crate::` is a path).
fn starts_path(toks: &[Token], i: usize) -> bool {
    if toks.get(i + 1) != Some(&Token::Punct("::")) {
        return false;
    }
    let anchored =
        matches!(&toks[i], Token::Ident(w) if matches!(w.as_str(), "crate" | "super" | "self"));
    anchored || i == 0 || !matches!(toks[i - 1], Token::Punct("::" | "." | "$"))
}

/// The path of a `#[path = "..."]` attribute starting at `toks[0]`.
fn path_attribute(toks: &[Token]) -> Option<String> {
    match toks {
        [Token::Punct("#"), Token::Punct("["), Token::Ident(p), Token::Punct("="), Token::Str(s), Token::Punct("]"), ..]
            if p == "path" =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

/// Loads the file of `mod name;` declared in module `parent`.
fn declare_file(
    krate: &mut Crate,
    parent: usize,
    name: &str,
    path_attr: Option<String>,
    read: &dyn Fn(&Path) -> Option<String>,
) {
    let base = krate.modules[parent].child_dir.clone();
    let candidates = match &path_attr {
        Some(p) => {
            let file_dir = krate.modules[parent]
                .file
                .parent()
                .unwrap_or(Path::new(""))
                .to_path_buf();
            vec![file_dir.join(p)]
        }
        None => vec![
            base.join(format!("{name}.rs")),
            base.join(name).join("mod.rs"),
        ],
    };
    let found = candidates
        .iter()
        .find_map(|c| read(c).map(|s| (c.clone(), s)));
    let Some((file, source)) = found else {
        krate.missing.push(candidates[0].clone());
        return;
    };
    let child_dir = if path_attr.is_some() {
        file.parent().unwrap_or(Path::new("")).to_path_buf()
    } else {
        base.join(name)
    };
    let child = add_child(krate, parent, name, file, child_dir);
    scan(krate, child, &tokens(&source), read);
}

/// The leaves of a use tree starting at `toks[*i]`, each a full path (a
/// glob's ending in `*`); leaves `*i` after the tree (past the `;` at the
/// top level).
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, leaves: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut grouped = false;
    while let Some(tok) = toks.get(*i) {
        match tok {
            Token::Punct("::") if path.is_empty() => {
                path.push("::".into());
                *i += 1;
            }
            Token::Punct("::") => *i += 1,
            Token::Punct("*") => {
                path.push("*".into());
                *i += 1;
            }
            Token::Ident(word) if word == "as" => *i += 2,
            Token::Ident(word) => {
                path.push(word.clone());
                *i += 1;
            }
            Token::Punct("{") => {
                grouped = true;
                *i += 1;
                while let Some(inner) = toks.get(*i) {
                    match inner {
                        Token::Punct("}") => {
                            *i += 1;
                            break;
                        }
                        Token::Punct(",") => *i += 1,
                        _ => use_tree(toks, i, path.clone(), leaves),
                    }
                }
            }
            Token::Punct(";") => {
                *i += 1;
                break;
            }
            _ => break,
        }
    }
    if !grouped {
        leaves.push(path);
    }
}

/// The names of a path in code (`crate::a::b`, `wire::encode`) starting
/// at `toks[*i]`; leaves `*i` after it.
fn code_path(toks: &[Token], i: &mut usize) -> Vec<String> {
    let mut segments = Vec::new();
    while let Some(Token::Ident(word)) = toks.get(*i) {
        segments.push(word.clone());
        *i += 1;
        if toks.get(*i) != Some(&Token::Punct("::")) {
            break;
        }
        *i += 1;
    }
    segments
}

/// The import edges of every module's paths.
fn resolve_all(modules: &[Module]) -> BTreeSet<(usize, usize)> {
    // Globs first: they say which bare names a module sees besides its
    // children. A glob's own first segment is looked up among children
    // only, so that globs need no order among themselves.
    let globs: Vec<Vec<usize>> = modules
        .iter()
        .enumerate()
        .map(|(from, module)| {
            let bare = Bare::Children;
            let globbed = module
                .paths
                .iter()
                .filter(|p| p.last().is_some_and(|s| s == "*"));
            globbed
                .filter_map(|p| resolve(modules, from, p, bare))
                .collect()
        })
        .collect();
    let mut imports = BTreeSet::new();
    for (from, module) in modules.iter().enumerate() {
        for path in &module.paths {
            let bare = Bare::Visible(&globs[from]);
            if let Some(to) = resolve(modules, from, path, bare) {
                if to != from {
                    imports.insert((from, to));
                }
            }
        }
    }
    imports
}

/// Where a path's first segment, when it is a bare name, is looked up.
#[derive(Clone, Copy)]
enum Bare<'a> {
    /// Among the module's children.
    Children,
    /// Among its children, then among the children of the modules it
    /// glob-imports (these).
    Visible(&'a [usize]),
}

/// The deepest module `path` walks through from module `from`, if it
/// names one of this crate's.
fn resolve(modules: &[Module], from: usize, path: &[String], bare: Bare) -> Option<usize> {
    let (first, rest) = path.split_first()?;
    let mut at = match first.as_str() {
        "crate" => 0,
        "super" => modules[from].parent?,
        "self" => from,
        name => visible(modules, from, name, bare)?,
    };
    for segment in rest {
        match segment.as_str() {
            "super" => at = modules[at].parent?,
            "self" => {}
            name => match modules[at].children.get(name) {
                Some(&child) => at = child,
                None => break,
            },
        }
    }
    Some(at)
}

/// The module that the bare `name` is in module `from`, if any.
fn visible(modules: &[Module], from: usize, name: &str, bare: Bare) -> Option<usize> {
    let child = modules[from].children.get(name).copied();
    match bare {
        Bare::Children => child,
        Bare::Visible(globs) => child.or_else(|| {
            globs
                .iter()
                .find_map(|&g| modules[g].children.get(name).copied())
        }),
    }
}
