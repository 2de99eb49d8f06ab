//! The off-die synchronous engine's snoops and memory accesses (`copy.snoop_order`, Zhao et al.
//! section 5.3.1: the engine sends its snoops and performs speculative memory reads and writes
//! "in parallel", so "the latencies are overlapped"). In the serial form a line goes to memory
//! after its snoop's address-phase turn, so a longer turn delays every line's read and write; in
//! the parallel form a one-line copy's snoop turn is hidden behind its memory access, far
//! shorter than a DRAM access.
mod common;
use common::mean_engine_copy;
use movelab_platform::PlatformConfig;

/// Mean copy time (ns) of 8 separate one-line (64 B) engine copies in `mode` with snoops
/// `order` and address-phase turns of `address_ns`.
fn one_line_copy(mode: &str, order: &str, address_ns: f64) -> f64 {
    let over = format!(
        "copy = {{ mechanism = \"ce\", mode = \"{mode}\", snoop_order = \"{order}\" }}\n\
         interconnect = {{ address_ns = {address_ns} }}"
    );
    mean_engine_copy(&over, 8, 64)
}

#[test]
fn parallel_snoops_hide_a_longer_address_turn_behind_the_memory_access() {
    for mode in ["SYNC_NLB", "SYNC_WLB"] {
        let par = one_line_copy(mode, "parallel", 30.0) - one_line_copy(mode, "parallel", 10.0);
        let ser = one_line_copy(mode, "serial", 30.0) - one_line_copy(mode, "serial", 10.0);
        println!(
            "{mode}: one-line copy, 10 -> 30 ns turns: parallel +{par:.1} ns, serial +{ser:.1} ns"
        );
        // Serial: the read and the write each wait 20 ns more for their snoop before going to
        // memory.
        assert!(ser >= 40.0, "{mode}: serial snoops cost only +{ser:.1} ns");
        // Parallel: a 30 ns turn ends before a DRAM access (50 ns or more) does; what is left is
        // the ecpy request and completion, bus transactions of their own.
        assert!(
            par < ser - 30.0 && par < 15.0,
            "{mode}: parallel snoops cost +{par:.1} ns (serial +{ser:.1} ns)"
        );
    }
}

#[test]
fn a_line_is_not_done_before_its_snoop() {
    // With turns far longer than a DRAM access, the snoop sets the line's time in both forms:
    // the parallel form gains only the memory access it overlaps.
    let par = one_line_copy("SYNC_WLB", "parallel", 400.0);
    let ser = one_line_copy("SYNC_WLB", "serial", 400.0);
    println!("400 ns turns: parallel {par:.0} ns, serial {ser:.0} ns");
    assert!(
        par >= 2.0 * 400.0,
        "a read and a write snooped in {par:.0} ns"
    );
    assert!(par < ser, "parallel {par:.0} ns, serial {ser:.0} ns");
}

#[test]
fn an_asynchronous_copy_takes_no_line_snoops_in_either_form() {
    let par = one_line_copy("ASYNC", "parallel", 30.0);
    let ser = one_line_copy("ASYNC", "serial", 30.0);
    assert_eq!(par, ser);
}

#[test]
fn an_unknown_snoop_order_is_refused_by_name() {
    let e = PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(
            toml::from_str("copy = { snoop_order = \"sideways\" }").unwrap(),
            "test",
        )
        .and_then(|c| c.validate("test").map(|_| c))
        .expect_err("an unknown snoop_order must be refused");
    let m = e.to_string();
    assert!(
        m.contains("copy.snoop_order") && m.contains("sideways"),
        "{m}"
    );
}
