//! Programs that cooperate: shared-memory rings under producer/consumer pressure (polling and
//! doorbell), interrupts and their cost, uncached loads and stores.
use movelab_platform::config::workload::Workload;
use movelab_platform::{Platform, PlatformConfig, PlatformStats};
use std::collections::BTreeMap;

fn cfg(over: &str) -> PlatformConfig {
    PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(toml::from_str(over).unwrap(), "test")
        .unwrap()
}

fn w(text: &str) -> Workload {
    Workload::from_toml_str(text, "test.toml", &BTreeMap::new()).unwrap()
}

fn run(over: &str, programs: Vec<Workload>, track: bool) -> (PlatformStats, Platform) {
    let mut p = Platform::new(&cfg(over)).unwrap();
    if track {
        p.sys.track_values();
    }
    let s = p.run_programs(programs, &mut |_| {}).unwrap();
    (s, p)
}

fn producer(items: u64, work: u64) -> Workload {
    w(&format!(
        "name = \"producer\"\niterations = {items}\n[[ops]]\nkind = \"compute\"\nn = {work}\n[[ops]]\nkind = \"ring_push\"\nring = \"q\"\n"
    ))
}

fn consumer(items: u64, work: u64) -> Workload {
    w(&format!(
        "name = \"consumer\"\niterations = {items}\n[[ops]]\nkind = \"ring_pop\"\nring = \"q\"\n[[ops]]\nkind = \"compute\"\nn = {work}\n"
    ))
}

const TWO_GROUPS: &str = "[[cores]]\ncount = 1\n[[cores]]\ncount = 1\n";

fn ring_over(slots: u32, doorbell: bool) -> String {
    format!(
        "{TWO_GROUPS}[[rings]]\nname = \"q\"\nbase = 0x7000_0000\nslots = {slots}\nslot_bytes = 128\ndoorbell = {doorbell}\n"
    )
}

#[test]
fn a_ring_under_pressure_blocks_the_fast_side() {
    // A fast producer and a slow consumer: the ring fills, the producer polls a full ring,
    // everything pushed is popped, and the producer finishes only a ring's worth before the
    // consumer. Every poll and slot access is coherent (the value shadow checks each load).
    let (s, p) = run(
        &ring_over(4, false),
        vec![producer(200, 10), consumer(200, 400)],
        true,
    );
    let r = &s.rings[0];
    assert_eq!((r.pushes, r.pops), (200, 200));
    assert!(r.full_polls > 50, "{r:?}");
    let (prod, cons) = (&s.per_core[0], &s.per_core[1]);
    assert!(prod.time_ns < cons.time_ns);
    assert!(
        prod.time_ns > cons.time_ns * 0.9,
        "the producer is held back: {} vs {}",
        prod.time_ns,
        cons.time_ns
    );
    assert!(
        s.coherence.unwrap().cache_to_cache > 100,
        "{:?}",
        s.coherence
    );
    assert!(p.sys.shadow.as_ref().unwrap().violations.is_empty());
    // A slow producer: the consumer finds the ring empty and polls.
    let (s, _) = run(
        &ring_over(4, false),
        vec![producer(100, 2000), consumer(100, 10)],
        false,
    );
    assert!(s.rings[0].empty_polls > 50, "{:?}", s.rings[0]);
    // The same with a doorbell: the consumer sleeps instead of polling.
    let (s, _) = run(
        &ring_over(4, true),
        vec![producer(100, 2000), consumer(100, 10)],
        false,
    );
    let r = &s.rings[0];
    assert_eq!(r.empty_polls, 0);
    assert!(r.sleeps > 50 && r.doorbells > 50, "{r:?}");
    assert_eq!(r.pops, 100);
    // A ring big enough for everything is never full; a small one is.
    let (small, _) = run(
        &ring_over(2, false),
        vec![producer(200, 10), consumer(200, 400)],
        false,
    );
    let (big, _) = run(
        &ring_over(256, false),
        vec![producer(200, 10), consumer(200, 400)],
        false,
    );
    assert!(small.rings[0].full_polls > 50, "{:?}", small.rings[0]);
    assert_eq!(big.rings[0].full_polls, 0);
}

#[test]
fn a_ring_name_the_platform_lacks_is_an_error() {
    let mut p = Platform::new(&cfg(TWO_GROUPS)).unwrap();
    let e = p
        .run_programs(vec![producer(2, 1), consumer(2, 1)], &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("ring 'q'"), "{e}");
}

fn interrupter(n: u64, target: u32) -> Workload {
    w(&format!(
        "name = \"src\"\niterations = {n}\n[[ops]]\nkind = \"compute\"\nn = 2000\n[[ops]]\nkind = \"interrupt\"\ntarget = {target}\n"
    ))
}

fn worker(handler: u64) -> Workload {
    w(&format!(
        "name = \"worker\"\niterations = 400\n[[ops]]\nkind = \"compute\"\nn = 100\n[[handler]]\nkind = \"compute\"\nn = {handler}\n"
    ))
}

#[test]
fn an_interrupt_costs_entry_handler_and_return() {
    let cost = |entry: u32, handler: u64, n: u64| {
        let over = format!(
            "interrupts = {{ entry_cycles = {entry}, exit_cycles = 100, delivery_ns = 50.0 }}\n{TWO_GROUPS}"
        );
        let (s, _) = run(&over, vec![interrupter(n, 1), worker(handler)], false);
        assert_eq!(s.per_core[1].interrupts, n);
        s.per_core[1].cycles
    };
    let base = cost(300, 200, 0);
    let with = cost(300, 200, 10);
    let per = (with - base) as f64 / 10.0;
    // Entry and return: 400 cycles; the handler: 200 instructions at the core's IPC (about 2).
    assert!((420.0..700.0).contains(&per), "{per} cycles per interrupt");
    // The entry cost and the handler's length move it.
    let longer_entry = (cost(1300, 200, 10) - base) as f64 / 10.0;
    assert!(
        (longer_entry - per - 1000.0).abs() < 60.0,
        "{longer_entry} vs {per}"
    );
    let longer_handler = (cost(300, 2200, 10) - base) as f64 / 10.0;
    assert!(longer_handler > per + 600.0, "{longer_handler} vs {per}");
}

#[test]
fn an_interrupt_to_a_missing_core_is_an_error() {
    let mut p = Platform::new(&cfg(TWO_GROUPS)).unwrap();
    let e = p
        .run_programs(vec![interrupter(1, 7), worker(10)], &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("core 7"), "{e}");
}

#[test]
fn uncached_accesses_pay_their_latency_in_order() {
    let prog = |n: u64| {
        w(&format!(
            "name = \"mmio\"\niterations = {n}\n[[regions]]\nname = \"regs\"\nbase = 0xf000_0000\nsize = 4096\n[[ops]]\nkind = \"uncached\"\nat = {{ region = \"regs\" }}\n[[ops]]\nkind = \"uncached\"\nat = {{ region = \"regs\", offset = 8 }}\nwrite = true\n"
        ))
    };
    let t = |ns: f64, n: u64| {
        let over = format!("interconnect = {{ uncached_ns = {ns} }}\n");
        let mut p = Platform::new(&cfg(&over)).unwrap();
        let s = p.run(&prog(n)).unwrap();
        assert_eq!(s.uncached_accesses, 2 * n);
        assert_eq!(s.caches.l1_hits + s.caches.l1_misses, 0);
        s.time_ns
    };
    // 100 accesses one after another: each its latency (plus its address-phase turn, 10 ns).
    let a = t(200.0, 50);
    assert!((a / 100.0 - 210.0).abs() < 5.0, "{a}");
    let b = t(1000.0, 50);
    assert!((b - a - 100.0 * 800.0).abs() < 500.0, "{a} {b}");
}

fn missing_loads(n: u64) -> Workload {
    w(&format!(
        "name = \"lookup\"\niterations = {n}\nseed = 5\n[[regions]]\nname = \"table\"\nbase = 0x1000_0000\nsize = \"16MiB\"\n[[ops]]\nkind = \"load\"\nat = {{ region = \"table\", random = true }}\n[[ops]]\nkind = \"compute\"\nn = 20\n"
    ))
}

fn microengine(threads: u32, switch: u32) -> PlatformStats {
    // An IXP-like microengine: single-issue, in order, 1.4 GHz, hardware contexts swapping on
    // each memory reference; every context looks up its own table.
    let over = format!(
        "[[cores]]\ncount = 1\ncore = {{ kind = \"multithreaded\", threads = {threads}, switch_cycles = {switch}, width = 1, clock_mhz = 1400 }}\nstride = 0x100_0000\n"
    );
    let (s, _) = run(&over, vec![missing_loads(100)], false);
    s
}

#[test]
fn a_multithreaded_core_switches_context_on_a_miss() {
    let one = microengine(1, 1);
    let eight = microengine(8, 1);
    assert_eq!(eight.per_core.len(), 8);
    assert!(eight.per_core.iter().all(|c| c.engine == 0));
    assert_eq!(eight.instructions, 8 * one.instructions);
    // Eight contexts hide each other's misses: eight times the work in far less than eight
    // times the time.
    assert!(
        eight.time_ns < one.time_ns * 2.5,
        "8 contexts {} ns, 1 context {} ns",
        eight.time_ns,
        one.time_ns
    );
    let sw = eight.per_core[0].context_switches;
    assert!(sw >= 8 * 100 - 8, "{sw} swaps for 800 misses");
    // The swap cost is paid on every swap.
    let slow = microengine(8, 40);
    let extra_cycles = (slow.time_ns - eight.time_ns) * 1.4;
    assert!(
        extra_cycles > 0.5 * 39.0 * sw as f64,
        "{extra_cycles} cycles more for {sw} swaps"
    );
}

#[test]
fn an_interrupt_in_the_middle_of_a_cpu_copy_resumes_it() {
    // The worker copies 64 KiB at a time on the core; its handler copies 256 bytes; interrupts
    // land in the middle of the big copies, and every instruction of both still retires.
    let worker = w(
        "name = \"copier\"\niterations = 4\n[[regions]]\nname = \"s\"\nbase = 0x100_0000\nsize = \"1MiB\"\nstride = \"64KiB\"\n[[regions]]\nname = \"d\"\nbase = 0x200_0000\nsize = \"1MiB\"\nstride = \"64KiB\"\n[[ops]]\nkind = \"copy\"\nsrc = { region = \"s\" }\ndst = { region = \"d\" }\nbytes = \"64KiB\"\n[[handler]]\nkind = \"copy\"\nsrc = { region = \"s\" }\ndst = { region = \"d\", offset = 512 }\nbytes = 256\n",
    );
    let instr = |n: u64| {
        let (s, _) = run(TWO_GROUPS, vec![interrupter(n, 1), worker.clone()], false);
        assert_eq!(s.per_core[1].interrupts, n);
        s.per_core[1].instructions
    };
    let (none, five) = (instr(0), instr(5));
    let per = (five - none) / 5;
    assert_eq!(five - none, 5 * per);
    // 256 bytes in 4-byte registers: 64 loads, 64 stores, 64 loop instructions; entry and return.
    assert_eq!(per, 192 + 2);
    let big = "name = \"h\"\niterations = 1\n[[regions]]\nname = \"a\"\nbase = 0\nsize = \"64MiB\"\n[[ops]]\nkind = \"compute\"\nn = 1\n[[handler]]\nkind = \"init\"\ndst = { region = \"a\" }\nbytes = \"2MiB\"\n";
    let e = Workload::from_toml_str(big, "h.toml", &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("handler[0]") && e.contains("1 MiB"), "{e}");
}
