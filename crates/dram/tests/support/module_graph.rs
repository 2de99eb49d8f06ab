//! The module graph of a crate's sources, read from its files, and the import cycles in it.
//!
//! Generic over the crate: [`module_edges`] takes a `src` directory, so any crate's layering test
//! can include this file (`#[path = ".../module_graph.rs"] mod module_graph;`).
//!
//! Modules: `lib.rs` / `main.rs` is `crate`, `a.rs` or `a/mod.rs` is `a`, `a/b.rs` is `a::b`, and
//! an inline `mod t { ... }` in module `m` is `m::t` (so a `#[cfg(test)] mod tests` block is its
//! own module: what the tests import is not charged to the code they test).
//!
//! Edges: every path written `crate::...`, `super::...` or `self::...` (in `use` items, groups
//! `{a, b::c}` included, and in expressions and types) is an edge from the module it is written in
//! to the longest known module that prefixes the path (`crate::a::b::Item` -> `a::b`; an item
//! re-exported at a module's top -> that module). Comments, string and character literals are
//! skipped. A module declaring or re-exporting a child through a bare `mod x;` / `pub use x::Y;`
//! is not an edge (that is the parent exposing its children, not depending on them).
//!
//! A cycle is a strongly connected component of two or more modules.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Module -> modules it refers to (self-references left out).
pub type Edges = BTreeMap<String, BTreeSet<String>>;

/// Reads every `.rs` file under `src` and returns the module graph.
pub fn module_edges(src: &Path) -> Result<Edges, String> {
    let mut files = Vec::new();
    collect_rs(src, &mut files)?;
    if files.is_empty() {
        return Err(format!("no .rs files under {}", src.display()));
    }
    // Pass 1: module names (files and inline modules), with each file's cleaned text.
    let mut modules: BTreeSet<String> = BTreeSet::new();
    let mut parsed = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src).map_err(|e| e.to_string())?;
        let name = file_module(rel);
        let text = fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let tokens = tokenize(&strip(&text));
        for m in inline_modules(&name, &tokens) {
            modules.insert(m);
        }
        modules.insert(name.clone());
        parsed.push((name, tokens));
    }
    // Pass 2: edges.
    let mut edges: Edges = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (name, tokens) in &parsed {
        for (from, path) in paths(name, tokens) {
            let to = resolve(&path, &modules);
            if to != from {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    Ok(edges)
}

/// The import cycles of `edges`: each a strongly connected component of two or more modules,
/// sorted, with one closed walk through it for the message.
pub fn import_cycles(edges: &Edges) -> Vec<(Vec<String>, Vec<String>)> {
    let names: Vec<&String> = edges.keys().collect();
    let index: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            edges[*n]
                .iter()
                .filter_map(|t| index.get(t).copied())
                .collect()
        })
        .collect();
    let comps = tarjan(&adj);
    let mut out = Vec::new();
    for comp in comps {
        if comp.len() < 2 {
            continue;
        }
        let set: BTreeSet<usize> = comp.iter().copied().collect();
        let mut members: Vec<String> = comp.iter().map(|&i| names[i].clone()).collect();
        members.sort();
        let start = index[&members[0]];
        let walk = cycle_through(start, &adj, &set)
            .into_iter()
            .map(|i| names[i].clone())
            .collect();
        out.push((members, walk));
    }
    out.sort();
    out
}

/// A readable report of `cycles` (empty when there are none).
pub fn describe(cycles: &[(Vec<String>, Vec<String>)]) -> String {
    cycles
        .iter()
        .map(|(members, walk)| {
            format!(
                "import cycle among {{{}}}: {}",
                members.join(", "),
                walk.join(" -> ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn collect_rs(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), String> {
    let rd = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_rs(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// `a/b.rs` -> `a::b`, `a/mod.rs` -> `a`, `lib.rs` -> `crate`.
fn file_module(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs").to_string();
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return "crate".into();
    }
    if stem != "mod" {
        parts.push(stem);
    }
    parts.join("::")
}

/// Removes comments and the contents of string and character literals (keeping line structure
/// irrelevant: only tokens matter).
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !b[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokenize(s: &str) -> Vec<Tok> {
    let b: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_alphabetic() || c == '_' {
            let mut j = i;
            while j < b.len() && (b[j].is_alphanumeric() || b[j] == '_') {
                j += 1;
            }
            out.push(Tok::Ident(b[i..j].iter().collect()));
            i = j;
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(Tok::PathSep);
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_ident(t: Option<&Tok>, s: &str) -> bool {
    matches!(t, Some(Tok::Ident(x)) if x == s)
}

/// The inline modules (`mod x { ... }`) of a file whose module is `file_mod`, as full names.
fn inline_modules(file_mod: &str, toks: &[Tok]) -> Vec<String> {
    let mut out = Vec::new();
    walk_scopes(file_mod, toks, |_, _, _| {}, &mut out);
    out
}

/// Calls `f(module, token index, tokens)` for every token with the module it sits in, and
/// collects the inline modules' names.
fn walk_scopes(
    file_mod: &str,
    toks: &[Tok],
    mut f: impl FnMut(&str, usize, &[Tok]),
    inline: &mut Vec<String>,
) {
    // Stack of (module name, brace depth at which it closes).
    let mut stack: Vec<(String, usize)> = vec![(file_mod.to_string(), 0)];
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let cur = stack.last().map(|s| s.0.clone()).unwrap_or_default();
        match &toks[i] {
            Tok::Ident(k) if k == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Punct('{'))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    let full = join(&cur, name);
                    inline.push(full.clone());
                    depth += 1;
                    stack.push((full, depth));
                    i += 3;
                    continue;
                }
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if stack.len() > 1 && stack.last().is_some_and(|s| s.1 == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        f(&cur, i, toks);
        i += 1;
    }
}

fn join(parent: &str, child: &str) -> String {
    if parent == "crate" {
        child.to_string()
    } else {
        format!("{parent}::{child}")
    }
}

/// Every `crate::` / `super::` / `self::` path of a file, as (module written in, absolute path
/// segments below `crate`).
fn paths(file_mod: &str, toks: &[Tok]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut inline = Vec::new();
    walk_scopes(
        file_mod,
        toks,
        |cur, i, toks| {
            let Some(Tok::Ident(head)) = toks.get(i) else {
                return;
            };
            if !matches!(head.as_str(), "crate" | "super" | "self") {
                return;
            }
            // Only the start of a path: not `a::crate`, and followed by `::`.
            if i > 0 && toks[i - 1] == Tok::PathSep {
                return;
            }
            if toks.get(i + 1) != Some(&Tok::PathSep) {
                return;
            }
            // `pub(crate)` / `pub(super)` are visibilities, not paths (no `::` follows them, so
            // they are already skipped above).
            let mut base: Vec<String> = if cur == "crate" {
                vec![]
            } else {
                cur.split("::").map(String::from).collect()
            };
            let mut j = i;
            match head.as_str() {
                "crate" => {
                    base.clear();
                    j += 2;
                }
                "self" => j += 2,
                _ => {
                    while is_ident(toks.get(j), "super") && toks.get(j + 1) == Some(&Tok::PathSep) {
                        base.pop();
                        j += 2;
                    }
                }
            }
            for tail in path_tails(toks, j) {
                let mut p = base.clone();
                p.extend(tail);
                out.push((cur.to_string(), p));
            }
        },
        &mut inline,
    );
    out
}

/// The paths starting at token `j`: `a::b::C`, or a group `{a::B, c::{D, E}}`.
fn path_tails(toks: &[Tok], mut j: usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    loop {
        match toks.get(j) {
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                if toks.get(j + 1) == Some(&Tok::PathSep) {
                    j += 2;
                } else {
                    return vec![prefix];
                }
            }
            Some(Tok::Punct('{')) => {
                let mut out = Vec::new();
                let mut k = j + 1;
                // Each top-level item of the group.
                loop {
                    for tail in path_tails(toks, k) {
                        let mut p = prefix.clone();
                        p.extend(tail);
                        out.push(p);
                    }
                    // Skip to the next top-level comma or the closing brace.
                    let mut d = 0;
                    while let Some(t) = toks.get(k) {
                        match t {
                            Tok::Punct('{') => d += 1,
                            Tok::Punct('}') if d == 0 => break,
                            Tok::Punct('}') => d -= 1,
                            Tok::Punct(',') if d == 0 => break,
                            _ => {}
                        }
                        k += 1;
                    }
                    match toks.get(k) {
                        Some(Tok::Punct(',')) => k += 1,
                        _ => break,
                    }
                }
                if out.is_empty() {
                    out.push(prefix);
                }
                return out;
            }
            _ => return vec![prefix],
        }
    }
}

/// The longest known module prefixing `path` (`crate` when none does).
fn resolve(path: &[String], modules: &BTreeSet<String>) -> String {
    for n in (1..=path.len()).rev() {
        let name = path[..n].join("::");
        if modules.contains(&name) {
            return name;
        }
    }
    "crate".into()
}

/// Tarjan's strongly connected components (iterative).
fn tarjan(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = adj.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on = vec![false; n];
    let mut stack = Vec::new();
    let mut comps = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on[root] = true;
        while let Some(&mut (v, ref mut ei)) = call.last_mut() {
            if *ei < adj[v].len() {
                let w = adj[v][*ei];
                *ei += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    call.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comps.push(comp);
                }
            }
        }
    }
    comps
}

/// A closed walk from `start` back to itself inside the component `set` (breadth-first, so the
/// shortest one).
fn cycle_through(start: usize, adj: &[Vec<usize>], set: &BTreeSet<usize>) -> Vec<usize> {
    let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &adj[v] {
            if !set.contains(&w) {
                continue;
            }
            if w == start {
                // start -> ... -> v -> start: follow `prev` back from v.
                let mut back = Vec::new();
                let mut x = v;
                while x != start {
                    back.push(x);
                    x = prev[&x];
                }
                let mut walk = vec![start];
                walk.extend(back.into_iter().rev());
                walk.push(start);
                return walk;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = prev.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}
