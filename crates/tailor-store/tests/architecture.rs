//! The store's files import each other without a cycle (issue 31, item 7): a newcomer can read
//! them leaves first, and a change to one reaches only the files above it.
//!
//! Reads `src/**/*.rs`, maps every `crate::NAME` (and every name in `use crate::{...}`) to the
//! top-level module it names, and fails naming the cycle if the graph of top-level modules has
//! one. As `/work/cycles.py` does: a file belongs to its first path component under `src/`
//! (`replica/queue.rs` is `replica`), a module's own name is no edge, comment lines (`//`,
//! `///`, `//!`) are skipped, and so is everything from a file's first `#[cfg(test)]` on (unit
//! tests may reach anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges the test does not count, as (from, to): none.
const EXEMPT: &[(&str, &str)] = &[];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under `src` belongs to (`lib` for `lib.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.into_iter().next().unwrap_or_else(|| "lib".into())
}

/// A file's code as the graph sees it: up to its first `#[cfg(test)]`, without comment lines.
fn code(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or("");
    before_tests.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn word_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The top-level names `code` reaches through `crate::`.
fn uses(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a, b::c, d::{e, f}}`: the names at the group's top level
            let (mut depth, mut start) = (0usize, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start => {
                        start = false;
                        let w = word_at(&group[i..]);
                        if !w.is_empty() {
                            names.insert(w.to_string());
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let w = word_at(rest);
            if !w.is_empty() {
                names.insert(w.to_string());
            }
        }
    }
    names
}

fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g = Graph::new();
    for f in &files {
        let module = module_of(src, f);
        let used = uses(&code(&std::fs::read_to_string(f).unwrap()));
        g.entry(module.clone()).or_default().extend(used.into_iter().filter(|u| *u != module));
    }
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for (from, to) in g.iter_mut() {
        to.retain(|t| modules.contains(t) && !EXEMPT.contains(&(from.as_str(), t.as_str())));
    }
    g
}

/// A cycle in `g`, as the modules along it with the first repeated at the end, if there is one.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    // depth-first search; a back edge to a module on the current path closes a cycle
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(g: &Graph, m: &str, marks: &mut BTreeMap<String, Mark>, path: &mut Vec<String>) -> Option<Vec<String>> {
        marks.insert(m.to_string(), Mark::OnPath);
        path.push(m.to_string());
        for next in &g[m] {
            match marks[next] {
                Mark::OnPath => {
                    let from = path.iter().position(|p| p == next).unwrap();
                    let mut c = path[from..].to_vec();
                    c.push(next.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(g, next, marks, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(m.to_string(), Mark::Done);
        None
    }
    let mut marks: BTreeMap<String, Mark> = g.keys().map(|k| (k.clone(), Mark::New)).collect();
    for m in g.keys() {
        if marks[m] == Mark::New {
            if let Some(c) = visit(g, m, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_stores_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.len() > 20, "the store's modules were found: {:?}", g.keys());
    if let Some(c) = cycle(&g) {
        panic!("import cycle among the store's modules: {}", c.join(" -> "));
    }
}

#[test]
fn the_reader_finds_uses_and_cycles() {
    let text = "//! crate::doc\nuse crate::{a, b::c, d::{e, f}};\nfn x() { crate::g::h(); }\n\
                #[cfg(test)]\nmod tests { use crate::t; }";
    let found: Vec<String> = uses(&code(text)).into_iter().collect();
    assert_eq!(found, ["a", "b", "d", "g"]);
    let g: Graph = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]
        .iter()
        .map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect()))
        .collect();
    assert_eq!(cycle(&g).unwrap().join(" -> "), "a -> b -> c -> a");
    let mut acyclic = g.clone();
    acyclic.get_mut("c").unwrap().clear();
    assert_eq!(cycle(&acyclic), None);
}
