//! How many memory latencies `tcp-rx` exposes per packet, per copy mode (Zhao et al. section 6.5,
//! Fig. 13). Exposed latencies = (time with 30 ns more chipset latency - time as it is) / (30 ns x
//! packets), the measure Fig. 13 moves (section 6.1: the unloaded latency includes the chipset;
//! the hub's engine does not cross it).
//!
//! What the model's receive path does per packet (docs/platform.md, "The receive path, access by
//! access"): the descriptor (a miss on a quarter of the packets), the header, the TCP control block,
//! then the copy, then the socket and the sleep queue (independent of each other). Each of the first
//! three is followed by more work than the 128-entry window holds, so they form a serial chain; the
//! last two overlap. With an engine the copy issues from the window's head (it waits for the chain)
//! and its own accesses do not cross the chipset; its completion is a bus message, not a memory
//! access. So: BASE exposes the chain and its copy's misses; every engine mode exposes about the
//! path without its copy (about 3.25 latencies), no more. These tests pin that down, so that a
//! change to the path, the engine or the core that moves it is seen.
use movelab_platform::config::workload::Workload;
use movelab_platform::{run, PlatformConfig};
use std::collections::BTreeMap;

const PACKETS: u64 = 60;
const EXTRA_NS: f64 = 30.0;

/// `tcp-rx` as built in, or without its `drop`-th explicit load (0: descriptor, 1: header, 2:
/// control block, 3: socket, 4: sleep queue).
fn tcp_rx(drop: Option<usize>) -> Workload {
    let p: BTreeMap<String, u64> = [("packets", PACKETS), ("payload", 1024)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let Some(drop) = drop else {
        return Workload::load("tcp-rx", &p).unwrap();
    };
    let text = include_str!("../../../presets/workloads/tcp-rx.toml");
    let mut blocks: Vec<&str> = text.split("[[ops]]").collect();
    let loads: Vec<usize> = (1..blocks.len())
        .filter(|&i| blocks[i].trim_start().starts_with("kind = \"load\""))
        .collect();
    assert_eq!(loads.len(), 5, "tcp-rx's explicit loads");
    blocks.remove(loads[drop]);
    Workload::from_toml_str(&blocks.join("[[ops]]"), "test", &p).unwrap()
}

const ACCESSES: [&str; 5] = [
    "descriptor",
    "header",
    "control block",
    "socket",
    "sleep queue",
];

fn time_ns(mode: Option<&str>, extra_ns: f64, copies: bool) -> f64 {
    time_of(mode, extra_ns, copies, None)
}

fn time_of(mode: Option<&str>, extra_ns: f64, copies: bool, drop: Option<usize>) -> f64 {
    let mut over = format!(
        "interconnect = {{ request_ns = {}, response_ns = {} }}\n",
        12.0 + extra_ns / 2.0,
        6.0 + extra_ns / 2.0
    );
    if let Some(m) = mode {
        over += &format!("copy = {{ mechanism = \"ce\", mode = \"{m}\" }}\n");
    }
    let c = PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(toml::from_str(&over).unwrap(), "test")
        .unwrap();
    let w = tcp_rx(drop);
    let w = if copies { w } else { w.without_copies() };
    let s = run(&c, &w).unwrap();
    if mode.is_some() && copies {
        assert!(s.mean_offload_ns > 0.0, "{mode:?}: the engine copied");
    }
    s.time_ns
}

/// Latencies exposed per packet.
fn exposed(mode: Option<&str>, copies: bool) -> f64 {
    let near = time_ns(mode, 0.0, copies);
    let far = time_ns(mode, EXTRA_NS, copies);
    let e = (far - near) / (EXTRA_NS * PACKETS as f64);
    println!(
        "{:>9}{}: {near:.0} -> {far:.0} ns, {e:.2} latencies per packet",
        mode.unwrap_or("BASE"),
        if copies { "" } else { " without its copy" }
    );
    e
}

#[test]
fn the_receive_path_exposes_its_chain_of_misses_and_the_engine_adds_none() {
    let path = exposed(None, false);
    let base = exposed(None, true);
    // descriptor (1/4) + header + control block + (socket | sleep queue) = 3.25, less what the
    // window overlaps at the chain's ends.
    assert!(
        (2.5..=3.6).contains(&path),
        "the path without its copy exposes {path:.2} latencies per packet (expected about 3.25)"
    );
    assert!(
        base > path + 2.0,
        "BASE's CPU copy must expose several latencies of its own ({base:.2} vs {path:.2})"
    );
    let mut by_mode = Vec::new();
    for mode in ["SYNC_NLB", "SYNC_WLB", "ASYNC"] {
        let e = exposed(Some(mode), true);
        by_mode.push(e);
        assert!(
            e < base - 2.0,
            "{mode}: exposes {e:.2} latencies per packet, BASE {base:.2}"
        );
        // The hub's engine does not cross the chipset and its completion is a bus message: the
        // mode exposes at most what its path exposes (bypass overlaps the misses after the copy
        // with it), and at least the chain before the copy (descriptor, header, control block).
        assert!(
            e < path + 0.3 && e > 1.5,
            "{mode}: exposes {e:.2} latencies per packet, its path without the copy {path:.2}"
        );
    }
    // Without bypass the socket and sleep-queue misses wait for the copy, then go out together:
    // about one latency more than with bypass.
    assert!(
        by_mode[0] > by_mode[1] + 0.3,
        "SYNC_NLB exposes {:.2}, SYNC_WLB {:.2}: bypass must hide the misses after the copy",
        by_mode[0],
        by_mode[1]
    );
}

/// Latencies exposed per packet by `mode` (None: BASE) with access `drop` removed.
fn exposed_without(mode: Option<&str>, copies: bool, drop: usize) -> f64 {
    let near = time_of(mode, 0.0, copies, Some(drop));
    let far = time_of(mode, EXTRA_NS, copies, Some(drop));
    (far - near) / (EXTRA_NS * PACKETS as f64)
}

#[test]
fn each_access_of_the_receive_path_is_exposed_or_overlapped() {
    // What each explicit access of the path contributes to the exposed latencies: the exposure
    // with it minus the exposure without it, per mode.
    let configs: [(Option<&str>, bool, &str); 4] = [
        (None, false, "path without copy"),
        (Some("SYNC_NLB"), true, "SYNC_NLB"),
        (Some("SYNC_WLB"), true, "SYNC_WLB"),
        (Some("ASYNC"), true, "ASYNC"),
    ];
    let mut share = [[0.0f64; 5]; 4];
    for (k, (mode, copies, label)) in configs.iter().enumerate() {
        let all = {
            let near = time_of(*mode, 0.0, *copies, None);
            let far = time_of(*mode, EXTRA_NS, *copies, None);
            (far - near) / (EXTRA_NS * PACKETS as f64)
        };
        let mut line = format!("{label:>18}: {all:.2};");
        for (i, name) in ACCESSES.iter().enumerate() {
            share[k][i] = all - exposed_without(*mode, *copies, i);
            line += &format!(" {name} {:.2}", share[k][i]);
        }
        println!("{line}");
    }
    // The header and the control block are each followed by more work than the window holds:
    // each is a whole exposed latency in every mode.
    for (k, (_, _, label)) in configs.iter().enumerate() {
        for i in [1, 2] {
            assert!(
                share[k][i] > 0.6,
                "{label}: the {} should be exposed (share {:.2})",
                ACCESSES[i],
                share[k][i]
            );
        }
    }
    // The socket and the sleep queue overlap each other: neither alone is a whole latency.
    for (k, (_, _, label)) in configs.iter().enumerate() {
        for i in [3, 4] {
            assert!(
                share[k][i] < 0.7,
                "{label}: the {} should overlap the other (share {:.2})",
                ACCESSES[i],
                share[k][i]
            );
        }
    }
}
