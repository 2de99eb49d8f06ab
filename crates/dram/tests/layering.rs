//! The crate's modules form no import cycle: every `crate::` / `super::` / `self::` path in
//! `src` is an edge between modules (see `support/module_graph.rs`, which any crate can include
//! for its own layering test), and the graph must have no strongly connected component of two or
//! more modules.
#[path = "support/module_graph.rs"]
mod module_graph;

use module_graph::{describe, import_cycles, module_edges};
use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn dram_modules_have_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = module_edges(&src).expect("read crates/dram/src");
    // The graph was read: the modules the crate is built from are there, with edges.
    for m in [
        "controller",
        "system",
        "checker",
        "bulk",
        "bulk::split",
        "port",
    ] {
        assert!(edges.contains_key(m), "module {m} not found in the graph");
    }
    assert!(
        edges["system"].contains("controller"),
        "system -> controller edge not read"
    );
    let cycles = import_cycles(&edges);
    assert!(cycles.is_empty(), "{}", describe(&cycles));
}

#[test]
fn port_does_not_import_system() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = module_edges(&src).expect("read crates/dram/src");
    assert!(
        !edges["port"].contains("system"),
        "port imports system: the step-driven port and the trace-driven run share code through \
         the modules below them, not through each other"
    );
}

/// A scratch crate `src` under the target directory, one per test.
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("layering-{name}"));
    let _ = fs::remove_dir_all(&root);
    for (path, text) in files {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    root
}

#[test]
fn a_two_module_cycle_is_found() {
    let src = scratch(
        "two",
        &[
            ("lib.rs", "pub mod a;\npub mod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n",
            ),
        ],
    );
    let cycles = import_cycles(&module_edges(&src).unwrap());
    assert_eq!(cycles.len(), 1, "{}", describe(&cycles));
    assert_eq!(cycles[0].0, vec!["a".to_string(), "b".to_string()]);
    let walk = &cycles[0].1;
    assert_eq!(walk.first(), walk.last());
    assert_eq!(walk.len(), 3, "{walk:?}");
}

#[test]
fn groups_super_and_folders_are_resolved() {
    // x/mod.rs -> x::y through a group; x::y -> x through super: a parent/child cycle.
    let src = scratch(
        "groups",
        &[
            ("lib.rs", "pub mod x;\npub mod z;\n"),
            (
                "x/mod.rs",
                "pub mod y;\nuse crate::{z::Z, x::y::{Y, W}};\npub struct X;\n",
            ),
            ("x/y.rs", "use super::X;\npub struct Y;\npub struct W;\n"),
            ("z.rs", "pub struct Z;\n"),
        ],
    );
    let edges = module_edges(&src).unwrap();
    assert!(
        edges["x"].contains("z") && edges["x"].contains("x::y"),
        "{edges:?}"
    );
    assert!(edges["x::y"].contains("x"), "{edges:?}");
    let cycles = import_cycles(&edges);
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].0, vec!["x".to_string(), "x::y".to_string()]);
}

#[test]
fn comments_strings_and_test_modules_are_not_edges() {
    // b's inline test module imports a: that is b::tests -> a, not b -> a, so no cycle.
    let src = scratch(
        "quiet",
        &[
            ("lib.rs", "pub mod a;\npub mod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                "// use crate::a::A;\n/* crate::a::A */\npub struct B;\n\
                 const S: &str = \"crate::a::A\";\nconst R: &str = r#\"crate::a::A\"#;\n\
                 fn l<'a>(x: &'a str) -> char { let _ = x; '}' }\n\
                 #[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n\
                 pub(crate) fn g() {}\n",
            ),
        ],
    );
    let edges = module_edges(&src).unwrap();
    assert!(!edges["b"].contains("a"), "{edges:?}");
    assert!(edges["b::tests"].contains("a"), "{edges:?}");
    assert!(import_cycles(&edges).is_empty());
}

#[test]
fn a_longer_cycle_is_found() {
    let src = scratch(
        "three",
        &[
            ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n"),
            ("a.rs", "use crate::b::B;\n"),
            ("b.rs", "pub struct B;\nuse crate::c::C;\n"),
            ("c.rs", "pub struct C;\nuse crate::a;\nuse crate::d::D;\n"),
            ("d.rs", "pub struct D;\n"),
        ],
    );
    let cycles = import_cycles(&module_edges(&src).unwrap());
    assert_eq!(cycles.len(), 1, "{}", describe(&cycles));
    assert_eq!(cycles[0].0, vec!["a", "b", "c"]);
    assert_eq!(cycles[0].1, vec!["a", "b", "c", "a"]);
}
