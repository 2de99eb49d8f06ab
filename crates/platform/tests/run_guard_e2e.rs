//! The run guard end to end: whole runs through the public entry points (`Platform::run`,
//! `cluster::run`, `systems::simulate`) driven into each condition the guard and the run loops
//! stop (a core that waits for what never comes, a handler that interrupts its own core again
//! and again, Ctrl-C), each checked for a clear error naming what went wrong, and never a panic
//! or a hang: every run here is on a thread the test gives up on after a deadline.
use movelab_platform::config::workload::Workload;
use movelab_platform::systems::cluster::{self, LinkSpec};
use movelab_platform::{Platform, PlatformConfig, PlatformError};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `f` on its own thread and returns its result, failing the test (not hanging it) when
/// none comes within `secs` seconds.
fn within<R: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no result within {secs} s (a hang)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the run panicked"),
    }
}

fn w(text: &str) -> Workload {
    Workload::from_toml_str(text, "test.toml", &BTreeMap::new()).expect("workload")
}

fn cfg(preset: &str, over: &str) -> PlatformConfig {
    let c = PlatformConfig::preset(preset).expect("preset");
    if over.is_empty() {
        c
    } else {
        c.with_overrides(toml::from_str(over).expect("toml"), "test")
            .expect("overrides")
    }
}

/// A program whose interrupt handler interrupts its own core again: each handler's end brings
/// the next interrupt, time moves and instructions retire, and the program feeds nothing more.
const STORM: &str = "name = \"storm\"\niterations = 1\n\
    [[ops]]\nkind = \"interrupt\"\ntarget = 0\n\
    [[handler]]\nkind = \"compute\"\nn = 10\n\
    [[handler]]\nkind = \"interrupt\"\ntarget = 0\n";

/// One core popping a ring nobody pushes.
fn lonely_consumer(doorbell: bool) -> (PlatformConfig, Workload) {
    let c = cfg(
        "zhao-uma-emc",
        &format!(
            "[[rings]]\nname = \"q\"\nbase = 0x7000_0000\nslots = 4\nslot_bytes = 64\ndoorbell = {doorbell}\n"
        ),
    );
    let work =
        w("name = \"consumer\"\niterations = 2\n[[ops]]\nkind = \"ring_pop\"\nring = \"q\"\n");
    (c, work)
}

#[test]
fn a_core_waiting_for_what_never_comes_stops_as_stalled_naming_the_core() {
    for doorbell in [true, false] {
        let t = Instant::now();
        let e = within(120, "a lonely consumer", move || {
            let (c, work) = lonely_consumer(doorbell);
            movelab_platform::systems::platform::run(&c, &work)
        })
        .expect_err("a consumer of an empty ring never finishes");
        let msg = e.to_string();
        assert!(
            matches!(e, PlatformError::Stalled(_)),
            "doorbell {doorbell}: {msg}"
        );
        assert!(msg.starts_with("simulation stalled: "), "{msg}");
        // It says when, and what each core was doing.
        assert!(msg.contains(" ns") && msg.contains("core 0"), "{msg}");
        eprintln!(
            "doorbell {doorbell}: {:.1} s: {msg}",
            t.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn a_host_whose_handler_interrupts_itself_stops_the_cluster_naming_the_host() {
    // Host 0 runs the storm, host 1 the receive driver waiting for frames that never come (its
    // program ends: host 0 runs alone). The cluster's guard sees host 0 take interrupts with no
    // operation fed and no frame taken in.
    let t = Instant::now();
    let e = within(120, "a storm on a cluster", || {
        let host = || Platform::new(&cfg("larsen-io", "")).expect("platform");
        let mut ps = vec![host(), host()];
        let progs = vec![
            vec![w(STORM)],
            vec![Workload::load("nic-rx", &BTreeMap::new()).expect("nic-rx")],
        ];
        cluster::run(
            &mut ps,
            &progs,
            &[LinkSpec::between(0, 1, 3.0, 5.0)],
            &mut |_| {},
        )
        .map(|_| ())
    })
    .expect_err("a self-feeding handler never ends");
    let msg = e.to_string();
    assert!(matches!(e, PlatformError::Stalled(_)), "{msg}");
    assert!(
        msg.contains("the cluster run: party 0 did")
            && msg.contains("interrupts")
            && msg.contains("a loop that feeds itself"),
        "{msg}"
    );
    // The bound is the documented one: more than MIN_IDLE_INTERRUPTS with no progress (the loop
    // watches each host at least every WATCH_PS, so a few more may have been taken by then).
    let n: u64 = msg
        .split("party 0 did ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .expect("a count");
    assert!(
        n > cluster::MIN_IDLE_INTERRUPTS && n < cluster::MIN_IDLE_INTERRUPTS + 64,
        "{msg}"
    );
    eprintln!("{:.1} s: {msg}", t.elapsed().as_secs_f64());
}

#[test]
fn a_handler_that_interrupts_its_own_core_stops_a_lone_platform() {
    // No other host: the platform's own watch sees its cores raise every interrupt they take
    // (no device interrupt, no operation fed) and stops the run past its bound.
    let e = within(120, "a storm on one platform", || {
        Platform::new(&cfg("larsen-io", ""))
            .expect("platform")
            .run(&w(STORM))
            .map(|_| ())
    })
    .expect_err("a self-feeding handler never ends");
    let msg = e.to_string();
    assert!(matches!(e, PlatformError::Stalled(_)), "{msg}");
    assert!(
        msg.contains("the platform run: party 0 did") && msg.contains("a loop that feeds itself"),
        "{msg}"
    );
}

#[test]
fn ctrl_c_stops_a_run_that_would_not_end_on_its_own() {
    // A long program on one platform and on a cluster of two with no link: Ctrl-C ends it.
    // The front ends install the interrupt check; here it says "asked" from its 4th call.
    for (what, on_cluster) in [("one platform", false), ("a cluster with no link", true)] {
        let t = Instant::now();
        let r = within(60, what, move || {
            let calls = std::cell::Cell::new(0u32);
            movelab_dram::interrupt::with_check(
                move || {
                    calls.set(calls.get() + 1);
                    calls.get() > 3
                },
                move || {
                    let host = || Platform::new(&cfg("larsen-io", "")).expect("platform");
                    let spin = "name = \"spin\"\niterations = 100000000\n[[ops]]\nkind = \"compute\"\nn = 1000\n";
                    if on_cluster {
                        let mut ps = vec![host(), host()];
                        let progs = vec![vec![w(spin)], vec![w(spin)]];
                        cluster::run(&mut ps, &progs, &[], &mut |_| {}).map(|_| ())
                    } else {
                        host().run(&w(spin)).map(|_| ())
                    }
                },
            )
        });
        assert_eq!(r, Err(PlatformError::Interrupted), "{what}");
        assert_eq!(PlatformError::Interrupted.to_string(), "interrupted");
        // A few checks of 16,384 steps each: well under a second of work.
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{what}: {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn the_one_entry_point_reports_a_stall_as_an_error_not_a_panic() {
    // systems::simulate with a workload file: the same stall comes back as the same error.
    let dir = std::env::temp_dir().join(format!("movelab-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("consumer.toml");
    std::fs::write(
        &file,
        "name = \"consumer\"\niterations = 2\n[[ops]]\nkind = \"ring_pop\"\nring = \"q\"\n",
    )
    .expect("write");
    let f = file.to_string_lossy().to_string();
    let e = within(120, "simulate", move || {
        let over: toml::Value = toml::from_str(
            "[[rings]]\nname = \"q\"\nbase = 0x7000_0000\nslots = 4\nslot_bytes = 64\ndoorbell = true\n",
        )
        .expect("toml");
        movelab_platform::systems::simulate(None, "zhao-uma-emc", &over, &f, &BTreeMap::new())
            .map(|_| ())
    })
    .expect_err("stalls");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matches!(e, PlatformError::Stalled(_)), "{e}");
}
