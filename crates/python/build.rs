//! Embeds every file of the repository's `presets/` folder (the one source of truth for presets,
//! paper data and example sweep specs) in the extension module, so that an installed wheel finds
//! them without the repository: `movelab._core.package_files()` lists them and
//! `movelab._core.package_file(NAME)` returns one (read by the Python package's `movelab.data`).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let root = root
        .canonicalize()
        .expect("the presets folder beside crates/");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut code = String::from("/// Every preset file, by its path under `presets/`.\n");
    code.push_str("pub(crate) const FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        let rel = f.strip_prefix(&root).expect("under presets/");
        let rel = rel
            .to_str()
            .expect("a UTF-8 preset path")
            .replace('\\', "/");
        writeln!(
            code,
            "    ({rel:?}, include_str!({:?})),",
            f.display().to_string()
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("package_files.rs");
    std::fs::write(out, code).expect("write package_files.rs");
}
