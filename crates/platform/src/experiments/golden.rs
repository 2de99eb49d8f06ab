//! Golden lines: one line per case of every simulator (the platform, its cluster with Larsen &
//! Lee's PCIe devices on every I/O preset, and the network-I/O platform) and per row of every system-level reproduction, each with a digest of
//! its DRAM command log (where it has one) and of its JSON results. `tests/golden.rs` compares them
//! with the files in `tests/golden/`; `cargo run --release -p movelab-platform --example
//! platform_digest` prints them. A refactor that leaves every line equal changed no number.
use crate::config::io::{builtin_io_names, IoConfig};
use crate::config::network::BUILTIN_NETWORK_PLATFORMS;
use crate::config::platform::builtin_platform_names;
use crate::config::workload::builtin_workload_names;
use crate::experiments::larsen_idma::{
    cluster_stream, large_send, small_frame, FIG8_PLATFORM, FIG9_PLATFORM, LANE_FRAME,
    LARGE_FRAMES_PER_MESSAGE,
};
use crate::experiments::{
    larsen_idma, pcie_model_check, platform, rowclone_apps, rowclone_fork, rowclone_multicore,
    wun_onload, zhao_copy_engine,
};
use crate::sim::digest::{simulated_json, CommandLogDigest, Fnv};
use crate::sim::error::PlatformError;
use crate::systems::udp_pair::{self, Direction, RunSpec};
use crate::{Platform, Workload};
use serde::Serialize;
use std::collections::BTreeMap;

/// The sections of the golden files, in order.
pub const SECTIONS: &[&str] = &["platform", "io", "network", "reproductions"];

/// The golden lines of `section` (one of [`SECTIONS`]).
pub fn lines(section: &str) -> Result<Vec<String>, PlatformError> {
    match section {
        "platform" => Ok([platform_lines(), cluster_lines()].concat()),
        "io" => io_lines(),
        "network" => network_lines(),
        "reproductions" => reproduction_lines(),
        _ => Err(PlatformError::Unknown {
            kind: "golden section",
            name: section.into(),
            known: SECTIONS.join(", "),
        }),
    }
}

fn digest<T: Serialize>(v: &T) -> u64 {
    Fnv::text(&simulated_json(
        &serde_json::to_value(v).unwrap_or_default(),
    ))
}

/// Small parameters per workload, so that every case runs in well under a second.
fn params(workload: &str) -> BTreeMap<String, u64> {
    let kv: &[(&str, u64)] = match workload {
        "tcp-rx" => &[("packets", 60)],
        "forkbench" => &[("s_mb", 2), ("n_pages", 32)],
        "bulk-copy" => &[("pages", 24)],
        "bulk-zero" => &[("pages", 24)],
        _ => &[],
    };
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The copy mechanisms and core kinds every platform preset runs under.
const VARIANTS: &[(&str, &str)] = &[
    ("base", "copy = { mechanism = \"base\" }"),
    ("base-inorder", "core = { kind = \"in-order\" }\ncopy = { mechanism = \"base\" }"),
    ("ce-offdie-nlb", "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"SYNC_NLB\" }"),
    ("ce-offdie-wlb", "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"SYNC_WLB\" }"),
    ("ce-offdie-async", "copy = { mechanism = \"ce\", placement = \"off-die\", mode = \"ASYNC\" }"),
    ("ce-ondie-async", "copy = { mechanism = \"ce\", placement = \"on-die\", mode = \"ASYNC\", snoop_ack = \"after\" }"),
    ("ce-ondie-cache", "copy = { mechanism = \"ce\", placement = \"on-die\", mode = \"SYNC_WLB\", dest_to_cache = true }"),
    ("rowclone", "copy = { mechanism = \"rowclone\" }"),
    ("rowclone-zi", "copy = { mechanism = \"rowclone-zi\" }"),
    ("mc-dma", "copy = { mechanism = \"mc-dma\" }"),
];

/// A preset that lists its own agents runs as listed (a copy mechanism on top would clash with
/// them).
const AS_LISTED: &[(&str, &str)] = &[("as-listed", "")];

/// Every built-in platform preset under every variant and built-in workload: the command log's
/// length and digest, the stats' digest, the simulated time and instructions.
fn platform_lines() -> Vec<String> {
    let none = toml::Value::Table(Default::default());
    let mut out = Vec::new();
    for plat in builtin_platform_names() {
        let listed = platform(plat, &none, "").is_ok_and(|c| !c.agents.is_empty());
        for (variant, extra) in if listed { AS_LISTED } else { VARIANTS } {
            let cfg = platform(plat, &none, extra);
            for wname in builtin_workload_names() {
                let line = cfg.as_ref().map_err(|e| e.to_string()).and_then(|cfg| {
                    let w = Workload::load(wname, &params(wname)).map_err(|e| e.to_string())?;
                    let mut p = Platform::new(cfg).map_err(|e| e.to_string())?;
                    let (sink, cell) = CommandLogDigest::new();
                    p.mem_mut().set_command_log(Box::new(sink));
                    let s = p.run(&w).map_err(|e| e.to_string())?;
                    let json = serde_json::to_string(&s).unwrap_or_default();
                    let (log, n) = cell.lock().map(|g| (g.0 .0, g.1)).unwrap_or((0, 0));
                    Ok(format!(
                        "cmds={n} log={log:016x} stats={:016x} time_ns={:.1} instr={}",
                        Fnv::text(&json),
                        s.time_ns,
                        s.instructions
                    ))
                });
                let line = line.unwrap_or_else(|e| format!("error: {e}"));
                out.push(format!("run {plat} {variant} {wname} {line}"));
            }
        }
    }
    out
}

/// Platforms on an Ethernet link (`systems/cluster.rs`): a sender running `nic-tx` (8 frames back
/// to back) and a receiver running `nic-rx`, with a NIC, an iDMA or microengines at the receiving
/// end; each line digests both platforms' and the link's statistics and both DRAM command logs.
fn cluster_lines() -> Vec<String> {
    use crate::config::platform::PlatformConfig;
    use crate::systems::cluster::{self, LinkSpec};
    let cases: &[(&str, &str, &str, &str)] = &[
        ("larsen-io", "", "larsen-io", ""),
        ("larsen-io-idma", "", "larsen-io-idma", ""),
        ("larsen-io", "[io.nic]\nmac_gbps = 1.0", "ixp-host", ""),
        (
            "larsen-io",
            "[io.nic]\nmac_gbps = 1.0",
            "ixp-host",
            "[[agents]]\nkind = \"microengines\"\n[agents.params]\ncount = 1\nthreads = 1\nclock_mhz = 25.0",
        ),
    ];
    let mut out = Vec::new();
    for (tx, tx_over, rx, rx_over) in cases {
        let line = (|| -> Result<String, PlatformError> {
            let load = |name: &str, over: &str| -> Result<PlatformConfig, PlatformError> {
                let c = PlatformConfig::preset(name)?;
                if over.is_empty() {
                    return Ok(c);
                }
                let t: toml::Table = over
                    .parse()
                    .map_err(|e| PlatformError::config("golden", "overrides", format!("{e}")))?;
                c.with_overrides(toml::Value::Table(t), "golden")
            };
            let mut ps = vec![
                Platform::new(&load(tx, tx_over)?)?,
                Platform::new(&load(rx, rx_over)?)?,
            ];
            let mut cells = Vec::new();
            for p in &mut ps {
                p.sys.track_values();
                let (sink, cell) = CommandLogDigest::new();
                p.mem_mut().set_command_log(Box::new(sink));
                cells.push(cell);
            }
            let kv = |k: &str, v: u64| BTreeMap::from([(k.to_string(), v)]);
            let mut txp = kv("messages", 8);
            txp.insert("gap".into(), 0);
            let progs = vec![
                vec![Workload::load("nic-tx", &txp)?],
                vec![Workload::load("nic-rx", &BTreeMap::new())?],
            ];
            let link = LinkSpec::between(0, 1, 3.0, 5.0);
            let s = cluster::run(&mut ps, &progs, &[link], &mut |_| {})?;
            let logs: Vec<String> = cells
                .iter()
                .map(|c| {
                    let (log, n) = c.lock().map(|g| (g.0 .0, g.1)).unwrap_or((0, 0));
                    format!("{n}:{log:016x}")
                })
                .collect();
            let json = serde_json::to_string(&s).unwrap_or_default();
            Ok(format!(
                "cmds={} stats={:016x} time_ns={:.1}",
                logs.join(","),
                Fnv::text(&json),
                s.hosts.iter().map(|h| h.time_ns).fold(0.0, f64::max)
            ))
        })()
        .unwrap_or_else(|e| format!("error: {e}"));
        let name = if rx_over.is_empty() {
            *rx
        } else {
            "ixp-host-slow"
        };
        out.push(format!("cluster {tx} -> {name} nic-tx/nic-rx 8x {line}"));
    }
    out
}

/// Every I/O preset with descriptor DMA and the iDMA, on the cluster: two `larsen-io` (or
/// `larsen-io-idma`) platforms with their device on the preset (`cluster_stream` of
/// `experiments/larsen_idma.rs`), sending one 64 B message (one frame of it behind the preset's
/// headers), one 1500 B frame, a stream of 16 of them and a 64 KB message (the NIC: one TSO send of 64 KiB behind the preset's headers; the
/// iDMA, which does not segment: its 1514 B frames). The descriptor NIC's receiver sends TCP ACKs
/// back over the wire; the iDMA's sends none.
fn io_lines() -> Result<Vec<String>, PlatformError> {
    let mut out = Vec::new();
    let none = toml::Value::Table(Default::default());
    for name in builtin_io_names() {
        let io = IoConfig::preset(name)?;
        for (kind, platform) in [("descriptor", FIG8_PLATFORM), ("idma", FIG9_PLATFORM)] {
            let large = if kind == "idma" {
                (LARGE_FRAMES_PER_MESSAGE, LANE_FRAME)
            } else {
                (1, large_send(&io))
            };
            for (sends, send) in [(1, small_frame(&io)), (1, 1500), (16, 1500), large] {
                let line = match cluster_stream(
                    platform,
                    platform,
                    &none,
                    name,
                    io.nic.mac_gbps,
                    &toml::Table::new(),
                    &toml::Table::new(),
                    sends,
                    send,
                    0,
                    kind == "descriptor",
                ) {
                    Ok(s) => format!(
                        "time_ns={:.3} stats={:016x}",
                        s.hosts.iter().map(|h| h.time_ns).fold(0.0, f64::max),
                        digest(&s)
                    ),
                    Err(e) => format!("error: {e}"),
                };
                out.push(format!("io {name} {kind} {sends}x{send} {line}"));
            }
        }
    }
    Ok(out)
}

/// The network platform's three configurations on the one platform (`systems/udp_pair.rs`),
/// receive and transmit, small and full datagrams, with the user program and (the onloader's
/// receive) without it; on receive the peer sends for `SMALL_SEND_US` at 64 B (hundreds of
/// datagrams) and for the preset's time at 1472 B (more than the buffers the host posts).
fn network_lines() -> Result<Vec<String>, PlatformError> {
    let mut out = Vec::new();
    let short: toml::Value =
        toml::from_str(&format!("wire = {{ duration_us = {SMALL_SEND_US:.1} }}"))
            .map_err(|e| PlatformError::config("golden", "(overrides)", e.to_string()))?;
    for (name, _) in BUILTIN_NETWORK_PLATFORMS {
        for config in ["emu", "softnic", "onloader"] {
            for direction in [Direction::Rx, Direction::Tx] {
                for payload in [64, 1472] {
                    let cfg = if payload == 64 {
                        udp_pair::load(name, &short)?
                    } else {
                        udp_pair::load(name, &toml::Value::Table(Default::default()))?
                    };
                    for with_app in [true, false] {
                        if !with_app && (direction == Direction::Tx || config != "onloader") {
                            continue;
                        }
                        let spec = RunSpec {
                            config: config.into(),
                            direction,
                            payload,
                            with_app,
                        };
                        let line = match udp_pair::run(&cfg, &spec) {
                            Ok(s) => {
                                format!(
                                    "mbps={:.3} stats={:016x}",
                                    s.stats.throughput_mbps,
                                    digest(&s)
                                )
                            }
                            Err(e) => format!("error: {e}"),
                        };
                        out.push(format!(
                            "net {name} {config} {direction:?} {payload} app={with_app} {line}"
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// How long the peer sends 64 B datagrams in the golden network lines, simulated us.
const SMALL_SEND_US: f64 = 500.0;

fn rows<T: Serialize>(out: &mut Vec<String>, name: &str, rows: &[T]) {
    for (i, r) in rows.iter().enumerate() {
        out.push(format!("{name} {i} {:016x}", digest(r)));
    }
}

/// Every system-level reproduction's rows, with small run lengths: Zhao et al., RowClone's
/// forkbench, applications and multi-core mixes, Larsen & Lee (with the PCIe model check) and Wun
/// & Crowley.
fn reproduction_lines() -> Result<Vec<String>, PlatformError> {
    let mut out = Vec::new();
    let none = toml::Value::Table(Default::default());
    let zo = zhao_copy_engine::Options {
        packets: 40,
        ..Default::default()
    };
    rows(
        &mut out,
        "zhao-copy-engine",
        &zhao_copy_engine::run(&zo, &mut |_, _| {})?,
    );
    let fo = rowclone_fork::Options {
        sizes_mb: vec![4],
        n_pages: vec![2, 32, 512],
        zero_pages: 64,
        ..Default::default()
    };
    rows(
        &mut out,
        "rowclone-fork",
        &rowclone_fork::run(&fo, &mut |_, _| {})?,
    );
    let ao = rowclone_apps::Options {
        instructions: 4_000,
        warmup: 2_000,
        ..Default::default()
    };
    rows(
        &mut out,
        "rowclone-apps",
        &rowclone_apps::run(&ao, &mut |_, _| {})?,
    );
    let mo = rowclone_multicore::Options {
        cores: vec![2, 4],
        mixes: 2,
        apps: ao.clone(),
        ..Default::default()
    };
    rows(
        &mut out,
        "rowclone-multicore",
        &rowclone_multicore::run(&mo, &mut |_, _| {})?,
    );
    let lo = larsen_idma::Options {
        small_count: 40,
        large_count: 4,
        ..larsen_idma::Options::paper()?
    };
    rows(
        &mut out,
        "larsen-idma",
        &larsen_idma::run(&lo, &mut |_, _| {})?,
    );
    rows(
        &mut out,
        "pcie-model-check",
        &pcie_model_check::run(cluster_stream)?,
    );
    let experiments: Vec<String> = wun_onload::EXPERIMENTS
        .iter()
        .map(|e| e.to_string())
        .collect();
    let points = wun_onload::points(&experiments, &[64, 1472])?;
    let name = BUILTIN_NETWORK_PLATFORMS[0].0;
    rows(
        &mut out,
        "wun-onload",
        &wun_onload::run(name, &none, &points, &mut |_, _| {})?,
    );
    Ok(out)
}
