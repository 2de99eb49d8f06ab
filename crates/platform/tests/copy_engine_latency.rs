//! Latency hiding by the copy engine (Zhao et al. section 5.4): the engine injects the reads of a
//! whole stream buffer into the memory queue, then the writes, so a copy of N lines pays the
//! memory latency about once per buffer, not once per line. With every line's latency raised by
//! d, an engine with N lines in flight must slow a copy by far less than N x d; an engine that
//! waited on each line in turn would slow it by about N x d.
mod common;
use common::{copy_run, mean_engine_copy};
use movelab_platform::config::workload::Workload;
use movelab_platform::PlatformConfig;
use std::collections::BTreeMap;

/// Mean copy time (ns) of `pages` copies of `bytes` with the engine in `mode`, its path to the
/// memory controller `engine_ns` each way and a stream buffer of `buffer` lines.
fn mean_copy(mode: &str, engine_ns: f64, buffer: u32, pages: u64, bytes: u64) -> f64 {
    let over = format!(
        "copy = {{ mechanism = \"ce\", mode = \"{mode}\", engine_memory_ns = {engine_ns}, \
         stream_buffer_lines = {buffer} }}"
    );
    mean_engine_copy(&over, pages, bytes)
}

#[test]
fn an_engine_with_a_buffer_of_lines_in_flight_hides_memory_latency() {
    // A 4 KB copy: 64 source and 64 destination lines. The engine's path to the controller grows by
    // 40 ns each way: +80 ns per read (request and data), +40 ns per write.
    let lines = 64.0;
    let per_line = 80.0 + 40.0;
    for mode in ["SYNC_NLB", "SYNC_WLB"] {
        let near = mean_copy(mode, 5.0, 64, 8, 4096);
        let far = mean_copy(mode, 45.0, 64, 8, 4096);
        let growth = far - near;
        println!("{mode}: 64-line copy {near:.0} -> {far:.0} ns");
        assert!(
            growth > 0.0,
            "{mode}: latency must cost something ({near} -> {far})"
        );
        // Serially it would be lines x per_line = 7,680 ns; a whole buffer in flight pays it about
        // once per phase.
        assert!(
            growth < 4.0 * per_line,
            "{mode}: a 64-line copy slowed by {growth:.0} ns for +{per_line} ns per line \
             (serial would be {:.0} ns)",
            lines * per_line
        );
    }
}

#[test]
fn an_engine_one_line_at_a_time_pays_the_latency_per_line() {
    // The oracle the test above relies on: the same measurement does see a serial engine. With a
    // one-line buffer each line's read and write wait for the previous line's, so the growth is
    // close to lines x per-line latency.
    let lines = 64.0;
    let near = mean_copy("SYNC_WLB", 5.0, 1, 4, 4096);
    let far = mean_copy("SYNC_WLB", 45.0, 1, 4, 4096);
    println!("one-line buffer: 64-line copy {near:.0} -> {far:.0} ns");
    assert!(
        far - near > 0.5 * lines * 80.0,
        "serial engine: growth {:.0} ns",
        far - near
    );
}

#[test]
fn queued_asynchronous_copies_overlap_their_latency() {
    // ASYNC: small copies (1 KB, 16 lines, a quarter of the 64-line stream buffer) issued back to
    // back queue at the engine. The queued commands share the buffer, so up to four of them have
    // their reads in flight at once and the engine's throughput, not each copy's latency, sets
    // the time. With +80 ns on every read's round trip, an engine that took one command at a time
    // would pay it once per copy (the growth per copy would be about 80 ns); sharing the buffer,
    // it pays it about once per four copies at most.
    let read_round_trip = 80.0;
    let base = copy_run(
        "copy = { mechanism = \"ce\", mode = \"ASYNC\", engine_memory_ns = 5.0 }",
        64,
        1024,
    );
    let slow = copy_run(
        "copy = { mechanism = \"ce\", mode = \"ASYNC\", engine_memory_ns = 45.0 }",
        64,
        1024,
    );
    let growth_per_copy = (slow.time_ns - base.time_ns) / 64.0;
    println!(
        "ASYNC 64 x 1 KB: {:.0} -> {:.0} ns",
        base.time_ns, slow.time_ns
    );
    assert!(
        growth_per_copy < read_round_trip / 4.0,
        "ASYNC 1 KB copies: +{growth_per_copy:.0} ns per copy for +{read_round_trip} ns per read \
         (one command at a time would be about {read_round_trip:.0})"
    );
}

#[test]
fn a_copy_of_an_earlier_copys_destination_waits_for_it() {
    // Sharing the buffer must not reorder dependent copies: each iteration stores to the first
    // line of a page of A, then copies it to B and B to C, queued back to back in ASYNC mode.
    // With the value shadow on, C's first lines must end up with the values stored into A (an
    // engine that read B before the first copy wrote it would leave C with B's old value, 0).
    let c = PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(
            toml::from_str("copy = { mechanism = \"ce\", mode = \"ASYNC\" }").unwrap(),
            "test",
        )
        .unwrap();
    let text = r#"
name = "chained-copies"
iterations = 4
[[regions]]
name = "a"
base = 0x100_0000
size = "64KiB"
stride = 4096
[[regions]]
name = "b"
base = 0x200_0000
size = "64KiB"
stride = 4096
[[regions]]
name = "c"
base = 0x300_0000
size = "64KiB"
stride = 4096
[[ops]]
kind = "store"
at = { region = "a" }
[[ops]]
kind = "copy"
src = { region = "a" }
dst = { region = "b" }
bytes = 1024
[[ops]]
kind = "copy"
src = { region = "b" }
dst = { region = "c" }
bytes = 1024
"#;
    let w = Workload::from_toml_str(text, "chained.toml", &BTreeMap::new()).unwrap();
    let mut p = movelab_platform::Platform::new(&c).unwrap();
    p.sys.track_values();
    let s = p.run(&w).unwrap();
    assert_eq!(s.offloads, 8, "every copy went to the engine");
    for i in 0..4u64 {
        let a = p.sys.read_value((0x100_0000 + i * 4096) / 64, true);
        let c = p.sys.read_value((0x300_0000 + i * 4096) / 64, true);
        assert!(
            a.is_some_and(|v| v > 0),
            "page {i}: A holds its store ({a:?})"
        );
        assert_eq!(c, a, "page {i}: C holds what was stored into A");
    }
}

/// Mean copy time (ns) of `pages` copies of `bytes` by the off-die engine in `mode` with the
/// interconnect's `key` set to `value` (ns).
fn mean_copy_with_interconnect(mode: &str, key: &str, value: f64, pages: u64, bytes: u64) -> f64 {
    let over = format!(
        "copy = {{ mechanism = \"ce\", mode = \"{mode}\" }}\n\
         interconnect = {{ {key} = {value} }}"
    );
    mean_engine_copy(&over, pages, bytes)
}

/// Mean copy time (ns) of 4 KB copies by the off-die engine in `mode` with each bus transaction
/// taking `address_ns` in the address and snoop phase.
fn mean_copy_with_bus_turn(mode: &str, address_ns: f64) -> f64 {
    mean_copy_with_interconnect(mode, "address_ns", address_ns, 4, 4096)
}

#[test]
fn only_the_synchronous_off_die_engine_snoops_each_line_on_the_bus() {
    // Sections 5.2.1 and 5.3: on the front-side bus every node latches the copy request, and for an
    // asynchronous copy that request is the multiline snoop (the copy is globally observed once it
    // is on the bus), so the hub's engine then reads and writes its lines without bus transactions.
    // A synchronous engine snoops each line it reads or writes (section 5.3.1), a turn each in the
    // address phase. A 4 KB copy is 64 reads and 64 writes: 40 ns more per turn costs the
    // synchronous copy about 128 x 40 ns and the asynchronous one only its request's turn.
    let extra = 40.0;
    let sync = mean_copy_with_bus_turn("SYNC_WLB", 10.0 + extra)
        - mean_copy_with_bus_turn("SYNC_WLB", 10.0);
    let asynchronous =
        mean_copy_with_bus_turn("ASYNC", 10.0 + extra) - mean_copy_with_bus_turn("ASYNC", 10.0);
    println!(
        "4 KB copy, +{extra} ns per bus turn: SYNC_WLB +{sync:.0} ns, ASYNC +{asynchronous:.0} ns"
    );
    assert!(
        sync > 64.0 * extra,
        "SYNC_WLB: per-line snoops must cost about 128 turns (+{sync:.0} ns)"
    );
    assert!(
        asynchronous < 4.0 * extra,
        "ASYNC: no per-line bus turns after the copy request (+{asynchronous:.0} ns)"
    );
}

#[test]
fn a_copy_lasts_until_its_completion_notification_reaches_the_core() {
    // Section 5.2.1: the ecpy request travels to the engine as a bus transaction and the engine
    // "will place the completion status on the bus"; a synchronous ecpy retires when that
    // notification arrives, so the copy the core waits for ends there, not when the engine's
    // last write is accepted. With every message slower by d, a copy's time grows by d twice
    // (request and notification); counted to the last write it would grow by d once.
    let d = 50.0;
    for mode in ["SYNC_NLB", "SYNC_WLB"] {
        let growth = mean_copy_with_interconnect(mode, "engine_message_ns", 20.0 + d, 8, 1024)
            - mean_copy_with_interconnect(mode, "engine_message_ns", 20.0, 8, 1024);
        println!("{mode}: +{d} ns per engine message -> copy +{growth:.0} ns");
        assert!(
            (growth - 2.0 * d).abs() < 0.25 * d,
            "{mode}: a copy's time must include the request and the completion notification \
             (+{growth:.0} ns for +{d} ns per message)"
        );
    }
}
