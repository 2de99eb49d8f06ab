//! Compiles tests/c/smoke.c with the system C compiler against the freshly built
//! libmovelab_host.so and runs it, checking every line of its output.
use std::path::{Path, PathBuf};
use std::process::Command;

fn find_library() -> Option<PathBuf> {
    // The test binary lives in <target>/<profile>/deps/; the cdylib in <profile>/ or deps/.
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [deps.to_path_buf(), deps.parent()?.to_path_buf()]
        .into_iter()
        .find(|d| d.join("libmovelab_host.so").exists())
}

#[test]
fn c_program_uses_the_api() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the C API test is written for Linux");
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler ({cc})");
        return;
    }
    let lib_dir = find_library().expect("libmovelab_host.so was not built next to the test binary");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = std::env::temp_dir().join(format!("movelab-capi-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join("smoke");
    let status = Command::new(&cc)
        .arg("-std=c11")
        .arg("-Wall")
        .arg("-Werror")
        .arg(manifest.join("tests/c/smoke.c"))
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-L")
        .arg(&lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lmovelab_host")
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("running the C compiler");
    assert!(status.success(), "C program failed to compile");
    let out = Command::new(&exe).output().expect("running the C program");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "C program failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = [
        "unknown engine: rejected",
        "icopy: ok",
        "second wait: ECOOKIE",
        "unknown check: ECOOKIE",
        "fill: ok",
        "overlap copy: ok",
        "wait_all: ok",
        "null src: EINVAL",
        "zero length: ok",
        "destroy in flight: ok",
    ];
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, expected, "C program output:\n{text}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
