//! The crate's layers, enforced: every `crate::` path in `src/` (test modules left out) is an edge
//! from the module that names it to the module it names. The test fails on an edge from a layer
//! to a higher one, on a circle between modules, and on a circle between the folders of one
//! layer. Layers, lowest first: the spine (`sim`); the vocabulary (`iface`, `config`, `stats`);
//! components (`cpu`, `memory`, `pcie`, `devices`, `net`, `small_cores`); `agents`; `systems`;
//! `experiments`.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: &[&[&str]] = &[
    &["sim"],
    &["iface", "config", "stats"],
    &["cpu", "memory", "pcie", "devices", "net", "small_cores"],
    &["agents"],
    &["systems"],
    &["experiments"],
];

/// Module path (`a::b`) of every `.rs` file under `src`.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("src readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(src).expect("under src").with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            (parts.join("::"), p)
        })
        .collect()
}

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a `use crate::{...}` group names, each as `a::b::c`.
fn group(prefix: &str, body: &str, out: &mut Vec<String>) {
    let (mut depth, mut cur, mut items) = (0, String::new(), Vec::new());
    for ch in body.chars() {
        match ch {
            '{' => {
                depth += 1;
                cur.push(ch)
            }
            '}' => {
                depth -= 1;
                cur.push(ch)
            }
            ',' if depth == 0 => items.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    items.push(cur);
    for it in items {
        let it = it.trim();
        if it.is_empty() {
            continue;
        }
        if let Some(i) = it.find("::{") {
            let inner = &it[i + 3..it.len() - 1];
            group(&format!("{prefix}::{}", &it[..i]), inner, out);
        } else {
            let name = it.split(" as ").next().unwrap_or(it).trim();
            out.push(format!("{prefix}::{name}"));
        }
    }
}

fn ident_path(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(s.len());
    s[..end].trim_end_matches(':')
}

/// Edges between modules: `from -> {to}`. A parent's declaration of its children is no edge.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let resolve = |path: &str| -> Option<String> {
        let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        (1..=parts.len())
            .rev()
            .map(|k| parts[..k].join("::"))
            .find(|m| mods.contains_key(m))
    };
    let mut out = BTreeMap::new();
    for (m, p) in &mods {
        let text = code(&std::fs::read_to_string(p).expect("readable"));
        let mut paths = Vec::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + 7..];
            if let Some(body) = after.strip_prefix('{') {
                let mut depth = 1;
                let end = body
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(body.len(), |(j, _)| j);
                group("", &body[..end], &mut paths);
            } else {
                paths.push(ident_path(after).to_string());
            }
            rest = after;
        }
        let mut rest = text.as_str();
        while let Some(i) = rest.find("super::") {
            let before = rest[..i].chars().last();
            let after = &rest[i + 7..];
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                let parent: Vec<&str> = m.split("::").collect();
                let base = parent[..parent.len().saturating_sub(1)].join("::");
                paths.push(format!("{base}::{}", ident_path(after)));
            }
            rest = after;
        }
        let is_parent = p
            .file_name()
            .is_some_and(|f| f == "mod.rs" || f == "lib.rs");
        let deps: BTreeSet<String> = paths
            .iter()
            .filter_map(|q| resolve(q))
            .filter(|d| d != m && !d.is_empty())
            .filter(|d| !(is_parent && (m.is_empty() || d.starts_with(&format!("{m}::")))))
            .collect();
        out.insert(m.clone(), deps);
    }
    out
}

fn top(m: &str) -> &str {
    m.split("::").next().unwrap_or(m)
}

fn layer(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top(m)))
}

/// A circle in `g`, if it has one.
fn circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        stack.push(v.to_string());
        for w in g.get(v).into_iter().flatten() {
            match state.get(w.as_str()).copied().unwrap_or(0) {
                1 => {
                    let i = stack.iter().position(|s| s == w).unwrap_or(0);
                    let mut c = stack[i..].to_vec();
                    c.push(w.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(w, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in g.keys() {
        if state.get(v.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_module_is_in_a_layer() {
    let loose: Vec<String> = modules(&src())
        .into_keys()
        .filter(|m| !m.is_empty() && layer(m).is_none())
        .collect();
    assert!(
        loose.is_empty(),
        "modules in no layer (add them to LAYERS): {loose:?}"
    );
}

#[test]
fn no_module_imports_a_higher_layer() {
    let up: Vec<String> = edges(&src())
        .iter()
        .flat_map(|(m, ds)| ds.iter().map(move |d| (m, d)))
        .filter(|(m, d)| matches!((layer(m), layer(d)), (Some(a), Some(b)) if b > a))
        .map(|(m, d)| format!("{m} -> {d}"))
        .collect();
    assert!(up.is_empty(), "upward imports: {up:?}");
}

#[test]
fn no_circle_between_modules() {
    let g = edges(&src());
    assert!(circle(&g).is_none(), "import circle: {:?}", circle(&g));
}

#[test]
fn no_circle_between_folders() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, ds) in edges(&src()) {
        let e = g.entry(top(&m).to_string()).or_default();
        e.extend(
            ds.iter()
                .map(|d| top(d).to_string())
                .filter(|d| d != top(&m)),
        );
    }
    assert!(
        circle(&g).is_none(),
        "circle between folders: {:?}",
        circle(&g)
    );
}

/// The checks can fail: an upward edge and a circle planted in a copy of the graph are found.
#[test]
fn the_checks_see_a_planted_circle_and_an_upward_edge() {
    let mut g = edges(&src());
    assert!(g
        .get("systems::platform")
        .is_some_and(|d| d.contains("memory::memory_system")));
    g.entry("memory::memory_system".into())
        .or_default()
        .insert("systems::platform".into());
    assert!(circle(&g).is_some());
    assert!(layer("memory::memory_system") < layer("systems::platform"));
    let mut paths = Vec::new();
    group("", "a::{b, c::{d, e as f}}, g", &mut paths);
    assert_eq!(paths, ["::a::b", "::a::c::d", "::a::c::e", "::g"]);
}
