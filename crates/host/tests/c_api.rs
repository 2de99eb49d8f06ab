//! Compiles the C programs in tests/c/ with the system C compiler against the freshly built
//! libmovelab_host.so and runs them, checking every line they print.
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

/// Compile `tests/c/<name>.c`, run it and return its output lines (None: skipped, with a note).
fn compile_and_run(name: &str) -> Option<Vec<String>> {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the C API test is written for Linux");
        return None;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler ({cc})");
        return None;
    }
    let lib_dir = find_library().expect("libmovelab_host.so was not built next to the test binary");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = std::env::temp_dir().join(format!("movelab-capi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join(name);
    let status = Command::new(&cc)
        .arg("-std=c11")
        .arg("-Wall")
        .arg("-Werror")
        .arg(manifest.join(format!("tests/c/{name}.c")))
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
    assert!(status.success(), "C program {name} failed to compile");
    let out = Command::new(&exe).output().expect("running the C program");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "C program failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&out_dir);
    Some(text.lines().map(str::to_owned).collect())
}

#[test]
fn c_program_uses_the_api() {
    let Some(lines) = compile_and_run("smoke") else {
        return;
    };
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
    assert_eq!(lines, expected, "C program output:\n{}", lines.join("\n"));
}

#[test]
fn c_program_uses_the_onload_api() {
    let Some(lines) = compile_and_run("onload") else {
        return;
    };
    let expected = [
        "bad spec: rejected",
        "double bind: rejected",
        "post null: EINVAL",
        "poll before go: empty",
        "receive: ok",
        "timeout: nothing posted",
        "send: ok",
        "stats: ok",
        "destroy: ok",
    ];
    assert_eq!(lines, expected, "C program output:\n{}", lines.join("\n"));
}

/// A datagram received into a too-small buffer comes back with `truncated` set and only the
/// buffer's bytes written; the next datagram arrives whole in the next buffer.
#[test]
fn c_program_sees_truncated_datagrams() {
    let Some(lines) = compile_and_run("truncated") else {
        return;
    };
    let expected = [
        "posted and received: ok",
        "buffer of 100 B: truncated, payload intact",
        "buffer of 2048 B: whole, payload intact",
        "buffer of 1471 B: truncated, payload intact",
        "buffer of 1472 B: whole, payload intact",
        "buffer of 1 B: truncated, payload intact",
        "stats: ok",
    ];
    assert_eq!(lines, expected, "C program output:\n{}", lines.join("\n"));
}

/// In a forked child every onload call on the parent's engine and socket returns
/// `MOVELAB_EFORKED` at once (a blocking receive included) and the child exits; the parent keeps
/// receiving.
#[test]
fn c_program_onload_refuses_a_forked_child() {
    let Some(lines) = compile_and_run("onload_fork") else {
        return;
    };
    let expected = [
        "codes distinct: ok",
        "child: every call refused",
        "child exit: 0",
        "parent: received",
    ];
    assert_eq!(lines, expected, "C program output:\n{}", lines.join("\n"));
}
