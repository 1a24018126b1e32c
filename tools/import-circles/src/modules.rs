//! A crate's module tree and the imports between its modules.
//!
//! A module is a file or an inline `mod name { ... }`. Module A imports B
//! when A's code names B through a `use` declaration (re-exports included;
//! relative ones resolved against A's children) or through a `crate::`,
//! `super::` or `self::` path anywhere in its code. A path names the
//! deepest module it walks through: `crate::comm::Communicator` imports
//! `comm`. Declaring `mod child;` is not an import; a bare `child::f()` in
//! code is not counted either (only `use` and the three anchored forms are).

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
    /// The paths its code names, unresolved.
    paths: Vec<Named>,
}

/// A path as written, with whether it came from a `use` declaration
/// (which may start at a child's name).
#[derive(Debug)]
struct Named {
    segments: Vec<String>,
    in_use: bool,
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
    // The inline modules open at this point, with the brace depth each
    // opened at.
    let mut open: Vec<(usize, usize)> = vec![(top, 0)];
    let mut depth: usize = 0;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        let here = open.last().expect("the file's module stays open").0;
        match &toks[i] {
            Token::Punct("{") => depth += 1,
            Token::Punct("}") => {
                depth = depth.saturating_sub(1);
                if open.len() > 1 && open.last().is_some_and(|&(_, d)| d == depth) {
                    open.pop();
                }
            }
            Token::Punct("#") => {
                if let Some(p) = path_attribute(&toks[i..]) {
                    path_attr = Some(p);
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let Some(Token::Ident(name)) = toks.get(i + 1) {
                    let dir = krate.modules[here].child_dir.join(name);
                    match toks.get(i + 2) {
                        Some(Token::Punct("{")) => {
                            let file = krate.modules[here].file.clone();
                            let child = add_child(krate, here, name, file, dir);
                            open.push((child, depth));
                        }
                        Some(Token::Punct(";")) => {
                            let attr = path_attr.take();
                            declare_file(krate, here, name, attr, read);
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Token::Ident(word) if word == "use" => {
                i += 1;
                let mut leaves = Vec::new();
                use_tree(toks, &mut i, Vec::new(), &mut leaves);
                for segments in leaves {
                    krate.modules[here].paths.push(Named {
                        segments,
                        in_use: true,
                    });
                }
                continue;
            }
            Token::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1) == Some(&Token::Punct("::")) =>
            {
                let segments = anchored_path(toks, &mut i);
                krate.modules[here].paths.push(Named {
                    segments,
                    in_use: false,
                });
                continue;
            }
            _ => {}
        }
        i += 1;
    }
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

/// The leaves of a use tree starting at `toks[*i]`, each a full path;
/// leaves `*i` after the tree (past the `;` at the top level).
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, leaves: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut grouped = false;
    while let Some(tok) = toks.get(*i) {
        match tok {
            Token::Punct("::") if path.is_empty() => {
                path.push("::".into());
                *i += 1;
            }
            Token::Punct("::") | Token::Punct("*") => *i += 1,
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

/// A `crate::a::b`, `super::a` or `self::a` path in code starting at
/// `toks[*i]`; leaves `*i` after it.
fn anchored_path(toks: &[Token], i: &mut usize) -> Vec<String> {
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
    let mut imports = BTreeSet::new();
    for (from, module) in modules.iter().enumerate() {
        for named in &module.paths {
            if let Some(to) = resolve(modules, from, named) {
                if to != from {
                    imports.insert((from, to));
                }
            }
        }
    }
    imports
}

/// The deepest module `named` walks through from module `from`, if it
/// names one of this crate's.
fn resolve(modules: &[Module], from: usize, named: &Named) -> Option<usize> {
    let mut segments = named.segments.iter();
    let first = segments.next()?;
    let mut at = match first.as_str() {
        "crate" => 0,
        "super" => modules[from].parent?,
        "self" => from,
        other if named.in_use => *modules[from].children.get(other)?,
        _ => return None,
    };
    for segment in segments {
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
