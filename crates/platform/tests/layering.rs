//! The crate's layers, enforced: every `crate::`, `super::` and `self::` path in `src` is an edge
//! from the module that names it to the module it names (read by movelab-dram's
//! `tests/support/module_graph.rs`, the one reader of module graphs; test modules are modules of
//! their own). The test fails on an edge from a layer to a higher one, on a circle between
//! modules, and on a circle between the folders of one layer. Layers, lowest first: the spine
//! (`sim`); the vocabulary (`iface`, `config`, `stats`); components (`cpu`, `memory`, `pcie`,
//! `devices`, `net`); `agents`; `systems`; `experiments`.
#[path = "../../dram/tests/support/module_graph.rs"]
mod module_graph;

use module_graph::{describe, import_cycles, module_edges, Edges};
use std::path::PathBuf;

const LAYERS: &[&[&str]] = &[
    &["sim"],
    &["iface", "config", "stats"],
    &["cpu", "memory", "pcie", "devices", "net"],
    &["agents"],
    &["systems"],
    &["experiments"],
];

fn edges() -> Edges {
    module_edges(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src"))
        .expect("read crates/platform/src")
}

fn top(m: &str) -> &str {
    m.split("::").next().unwrap_or(m)
}

fn layer(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top(m)))
}

#[test]
fn every_module_is_in_a_layer() {
    let loose: Vec<String> = edges()
        .into_keys()
        .filter(|m| m != "crate" && layer(m).is_none())
        .collect();
    assert!(
        loose.is_empty(),
        "modules in no layer (add them to LAYERS): {loose:?}"
    );
}

#[test]
fn no_module_imports_a_higher_layer() {
    let up: Vec<String> = edges()
        .iter()
        .flat_map(|(m, ds)| ds.iter().map(move |d| (m, d)))
        .filter(|(m, d)| matches!((layer(m), layer(d)), (Some(a), Some(b)) if b > a))
        .map(|(m, d)| format!("{m} -> {d}"))
        .collect();
    assert!(up.is_empty(), "upward imports: {up:?}");
}

#[test]
fn no_circle_between_modules() {
    let cycles = import_cycles(&edges());
    assert!(cycles.is_empty(), "{}", describe(&cycles));
}

#[test]
fn no_circle_between_folders() {
    let mut g = Edges::new();
    for (m, ds) in edges() {
        if m == "crate" {
            continue;
        }
        let e = g.entry(top(&m).to_string()).or_default();
        e.extend(
            ds.iter()
                .map(|d| top(d).to_string())
                .filter(|d| d != top(&m) && d != "crate"),
        );
    }
    let cycles = import_cycles(&g);
    assert!(cycles.is_empty(), "{}", describe(&cycles));
}

/// The checks can fail: the graph has the edges the code has, a planted back edge closes a circle,
/// and the layer of a component is below the systems'.
#[test]
fn the_checks_see_a_planted_circle_and_an_upward_edge() {
    let mut g = edges();
    assert!(g
        .get("systems::platform")
        .is_some_and(|d| d.contains("memory::memory_system")));
    g.entry("memory::memory_system".into())
        .or_default()
        .insert("systems::platform".into());
    assert!(!import_cycles(&g).is_empty());
    assert!(layer("memory::memory_system") < layer("systems::platform"));
}
