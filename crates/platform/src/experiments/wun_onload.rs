//! Wun & Crowley, "Network I/O Acceleration in Heterogeneous Multicore Processors": receive and
//! transmit throughput of the emu nic, the softnic and the onloader against the UDP payload size
//! (Fig. 3, 4, 6), the onloader's receive blocks with and without the user program (Fig. 5,
//! `rx-components`), the receive blocks alone where slow microengines are the bottleneck
//! (`me-bound`: count, clock and contexts move the throughput) and the preset's receive blocks
//! behind both gigabit ports' worth of traffic and an open wire (`me-ceiling`, "the ME code
//! sustains about 2 Gb/s") run on the one platform: two `ixp-host` platforms on one wire
//! (`systems/cluster.rs`), one running the configuration (its microengines' `rx_mode`/`tx_mode`
//! and the host program of `presets/network/wun-programs`), the other the iperf peer (its
//! microengines a UDP `source` or `sink`). The DRAM-to-DRAM copy of the small cores against the
//! host core (`dram-copy`, section 7's "up to 10x") runs on one `ixp-host`. The per-connection
//! mapping cache and the L2 push on and off (section 6, `mapping-cache` and `l2-push`) are the
//! `rx` runs with the receiving host program's `mapping_cache` and `l2_push` parameters (and the
//! microengines' own `l2_push`) set per variant. The network platform's preset
//! (`presets/network/ixp2350.toml`) gives the settings the user may override (clocks, contexts,
//! the CPI, the push, the mapping cache, the wire's rate).
use crate::config::network::NetworkIoConfig;
use crate::config::platform::PlatformConfig;
use crate::config::workload::Workload;
use crate::net::udp_peer::HEADER_BYTES;
use crate::sim::error::PlatformError;
use crate::stats::AgentStats;
use crate::systems::cluster::{self, LinkSpec};
use crate::systems::network_io::NetStats;
use crate::systems::platform::Platform;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The experiments that run on the one platform (`ixp-host` at both ends of a gigabit wire,
/// `systems/cluster.rs`, or one `ixp-host` for `dram-copy`): all of them.
pub const ON_PLATFORM: &[&str] = EXPERIMENTS;
/// The XScale's cache line (32 B, L1 and L2: the onload facts), in which the host programs count
/// their cache maintenance (the platform's caches have one line size, 64 B).
pub const XSCALE_LINE_BYTES: usize = 32;
/// The platform the one-platform experiments run on, at both ends of the wire.
pub const PLATFORM: &str = "ixp-host";
/// How long the receive experiments' peer sends, ns of simulated time (long beside the RBUF's
/// and the rings' drain; every frame the MAC took is followed to its end).
pub const RX_SEND_NS: f64 = 3_000_000.0;
/// Datagrams the transmit experiments' host sends, and `me-bound`'s peer.
pub const TX_MESSAGES: u64 = 100;
pub const ME_BOUND_FRAMES: u64 = 500;

/// The host programs of the three configurations (`presets/network/wun-programs`).
const PROGRAMS: &[(&str, &str)] = &[
    (
        "rx-emu",
        include_str!("../../../../presets/network/wun-programs/rx-emu.toml"),
    ),
    (
        "rx-softnic",
        include_str!("../../../../presets/network/wun-programs/rx-softnic.toml"),
    ),
    (
        "rx-onloader",
        include_str!("../../../../presets/network/wun-programs/rx-onloader.toml"),
    ),
    (
        "tx-emu",
        include_str!("../../../../presets/network/wun-programs/tx-emu.toml"),
    ),
    (
        "tx-softnic",
        include_str!("../../../../presets/network/wun-programs/tx-softnic.toml"),
    ),
    (
        "tx-onloader",
        include_str!("../../../../presets/network/wun-programs/tx-onloader.toml"),
    ),
];

/// The experiments, as the rows' `experiment` names them.
pub const EXPERIMENTS: &[&str] = &[
    "rx",
    "tx",
    "rx-components",
    "mapping-cache",
    "l2-push",
    "me-bound",
    "me-ceiling",
    "dram-copy",
];
/// `me-bound`'s small cores (`me{cores}-{MHz}mhz-t{threads}`, receive and transmit alike): one
/// slow core as the base (its pipeline the bottleneck at small payloads), then twice the cores,
/// twice the clock, and one thread instead of eight (at twice the clock, against its eight-thread
/// point); then the preset's cores.
pub const ME_BOUND: &[&str] = &[
    "me1-50mhz-t8",
    "me2-50mhz-t8",
    "me1-100mhz-t8",
    "me1-100mhz-t1",
    "me2-900mhz-t8",
];
/// `me-ceiling`'s wire: both gigabit ports' worth (2 Gb/s) and an open wire (10 Gb/s), the
/// preset's small cores behind it.
pub const ME_CEILING: &[&str] = &["wire-2gbps", "wire-10gbps"];
/// The paper's configurations.
pub const CONFIGS: &[&str] = &["emu", "softnic", "onloader"];
/// Default payloads: from small datagrams to a full 1500-byte frame.
pub const PAYLOADS: &[usize] = &[64, 128, 256, 512, 1024, 1472];

/// One run of the reproduction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Point {
    pub experiment: String,
    pub config: String,
    pub payload_bytes: usize,
    pub variant: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub experiment: String,
    pub variant: Option<String>,
    /// The run's figures, with `config`, `payload_bytes` and `throughput_mbps`.
    #[serde(flatten)]
    pub stats: NetStats,
    /// Frames the run simulated (sent by the peer or the host) and the wall time it took.
    pub sim_packets: u64,
    pub wall_s: f64,
}

/// The points of `experiments` over `payloads`.
pub fn points(experiments: &[String], payloads: &[usize]) -> Result<Vec<Point>, PlatformError> {
    let mut out = Vec::new();
    let pt = |e: &str, c: &str, p: usize, v: Option<&str>| Point {
        experiment: e.into(),
        config: c.into(),
        payload_bytes: p,
        variant: v.map(str::to_string),
    };
    for e in experiments {
        if !EXPERIMENTS.contains(&e.as_str()) {
            return Err(PlatformError::Unknown {
                kind: "wun-onload experiment",
                name: e.clone(),
                known: EXPERIMENTS.join(", "),
            });
        }
        // The small cores' own limits: receive blocks alone (no host on the path), at the
        // smallest payload (most per-packet work per byte) or the largest (the paper's iperf
        // default), once each.
        let (small, large) = (
            payloads.iter().min().copied(),
            payloads.iter().max().copied(),
        );
        match (e.as_str(), small, large) {
            ("me-bound", Some(p), _) => {
                out.extend(ME_BOUND.iter().map(|v| pt(e, "onloader", p, Some(v))));
                continue;
            }
            ("me-ceiling", _, Some(p)) => {
                out.extend(ME_CEILING.iter().map(|v| pt(e, "onloader", p, Some(v))));
                continue;
            }
            ("dram-copy", _, _) => {
                out.extend(["me", "xscale"].map(|c| pt(e, c, COPY_BLOCK_BYTES, None)));
                continue;
            }
            _ => {}
        }
        for &p in payloads {
            match e.as_str() {
                "rx" | "tx" => out.extend(CONFIGS.iter().map(|c| pt(e, c, p, None))),
                "rx-components" => {
                    out.extend(["with-app", "without-app"].map(|v| pt(e, "onloader", p, Some(v))))
                }
                "mapping-cache" => {
                    out.extend(["cache-on", "cache-off"].map(|v| pt(e, "onloader", p, Some(v))))
                }
                _ => {
                    for c in ["softnic", "onloader"] {
                        out.extend(["push-on", "push-off"].map(|v| pt(e, c, p, Some(v))));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Runs one point on `cfg` (the platform with the user's overrides).
pub fn run_point(cfg: &NetworkIoConfig, p: &Point) -> Result<Row, PlatformError> {
    if p.experiment == "dram-copy" {
        return copy_point(cfg, p);
    }
    platform_point(cfg, p)
}

/// A variant's setting (`on`/`off`) of a section 6 mechanism, or the preset's outside its
/// experiment.
fn section6_switch(
    p: &Point,
    experiment: &str,
    on: &str,
    off: &str,
    preset: bool,
) -> Result<bool, PlatformError> {
    if p.experiment != experiment {
        return Ok(preset);
    }
    match p.variant.as_deref() {
        Some(v) if v == on => Ok(true),
        Some(v) if v == off => Ok(false),
        v => Err(PlatformError::Unknown {
            kind: "wun-onload variant",
            name: format!("{experiment} {}", v.unwrap_or_default()),
            known: format!("{on}, {off}"),
        }),
    }
}

/// `me{cores}-{MHz}mhz-t{threads}` as (cores, MHz, threads).
fn parse_me_variant(v: &str) -> Option<(u32, f64, u32)> {
    let mut it = v.split('-');
    let cores = it.next()?.strip_prefix("me")?.parse().ok()?;
    let mhz = it.next()?.strip_suffix("mhz")?.parse().ok()?;
    let threads = it.next()?.strip_prefix('t')?.parse().ok()?;
    it.next().is_none().then_some((cores, mhz, threads))
}

/// Blocks `dram-copy` copies and bytes per block (a packet buffer's 2 KB).
pub const COPY_BLOCKS: u64 = 128;
pub const COPY_BLOCK_BYTES: usize = 2048;

/// A `dram-copy` point on the one platform (`ixp-host`, the `bulk-copy` program: the blocks
/// copied one after another from a cold source to a cold destination): by the host core's copy
/// loop through its caches (`xscale`), or handed to the microengines (`me`: every microengine of
/// the network platform's receive and transmit pools, `takes = ["copy"]`; their contexts read
/// the source lines through the memory system and write the destination's). Every line the
/// microengines write is checked against the value the copy must deliver (the value shadow),
/// and any violation fails the run; the row's throughput is the bytes copied over the run's time.
fn copy_point(net: &NetworkIoConfig, p: &Point) -> Result<Row, PlatformError> {
    let t0 = std::time::Instant::now();
    let sc = &net.small_cores;
    let mut cfg = ixp_host(net, sc.rx_cores + sc.tx_cores, &[])?;
    match p.config.as_str() {
        "me" => {
            for a in cfg.agents.iter_mut().filter(|a| a.kind == "microengines") {
                a.takes = vec!["copy".into()];
            }
            let t = toml::Value::try_from(&cfg)
                .map_err(|e| PlatformError::config(PLATFORM, "(overrides)", e.to_string()))?;
            cfg = PlatformConfig::from_value(t, PLATFORM)?;
        }
        "xscale" => {}
        c => {
            return Err(PlatformError::Unknown {
                kind: "wun-onload dram-copy config",
                name: c.into(),
                known: "me, xscale".into(),
            })
        }
    }
    let mut pl = Platform::new(&cfg)?;
    pl.sys.track_values();
    let params: BTreeMap<String, u64> = [
        ("pages", COPY_BLOCKS),
        ("bytes", COPY_BLOCK_BYTES as u64),
        ("work", 0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let s = pl.run(&Workload::load("bulk-copy", &params)?)?;
    if let Some(sh) = pl.sys.shadow.as_ref() {
        let me = p.config == "me";
        if !sh.violations.is_empty()
            || sh.copy_lines_wrong > 0
            || (me && sh.copy_lines_checked == 0)
        {
            return Err(PlatformError::config(
                PLATFORM,
                "(run)",
                format!(
                    "dram-copy {}: {} lines copied wrong of {} checked, {} violations{}",
                    p.config,
                    sh.copy_lines_wrong,
                    sh.copy_lines_checked,
                    sh.violations.len(),
                    sh.violations
                        .first()
                        .map_or(String::new(), |v| format!(" (first: {v})"))
                ),
            ));
        }
    }
    let me_ops = s
        .agents
        .iter()
        .find(|a| a.kind == "microengines")
        .map_or(0, |a| a.ops);
    if p.config == "me" && me_ops != COPY_BLOCKS {
        return Err(PlatformError::config(
            PLATFORM,
            "(run)",
            format!("dram-copy me: the microengines took {me_ops} of {COPY_BLOCKS} copies"),
        ));
    }
    let bytes = COPY_BLOCKS * COPY_BLOCK_BYTES as u64;
    let mbps = if s.time_ns > 0.0 {
        bytes as f64 * 8.0 * 1000.0 / s.time_ns
    } else {
        0.0
    };
    let busy = s
        .agents
        .iter()
        .find(|a| a.kind == "microengines")
        .and_then(|a| a.small_cores.as_ref())
        .map_or(0.0, |c| if p.config == "me" { c.busy_share } else { 0.0 });
    Ok(Row {
        experiment: p.experiment.clone(),
        variant: p.variant.clone(),
        sim_packets: 0,
        wall_s: t0.elapsed().as_secs_f64(),
        stats: NetStats {
            config: p.config.clone(),
            direction: "copy".into(),
            payload_bytes: COPY_BLOCK_BYTES,
            throughput_mbps: mbps,
            sent: COPY_BLOCKS,
            delivered: COPY_BLOCKS,
            small_core_busy: busy,
            sim_time_us: s.time_ns / 1000.0,
            ..Default::default()
        },
    })
}

/// Loads platform `platform` with `overrides` and runs `points`.
pub fn run(
    platform: &str,
    overrides: &toml::Value,
    points: &[Point],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Row>, PlatformError> {
    let mut cfg = NetworkIoConfig::load(platform)?;
    if overrides.as_table().is_some_and(|t| !t.is_empty()) {
        cfg = cfg.with_overrides(overrides.clone(), "overrides")?;
    }
    let mut rows = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        rows.push(run_point(&cfg, p)?);
        progress(i + 1, points.len());
    }
    Ok(rows)
}

/// A host program of the three configurations with `params` over its own, and its `cpi` the
/// network platform's calibrated `host.cpi` (rounded to whole cycles; the one fitted value, in
/// `presets/network/ixp2350.toml` and `presets/ledger.toml`).
fn program(
    net: &NetworkIoConfig,
    name: &str,
    params: &[(&str, u64)],
) -> Result<Workload, PlatformError> {
    let text = PROGRAMS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| PlatformError::Unknown {
            kind: "wun-onload host program",
            name: name.into(),
            known: PROGRAMS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let mut p: BTreeMap<String, u64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    p.insert("cpi".into(), net.host.cpi.round().max(1.0) as u64);
    Workload::from_toml_str(text, &format!("wun-programs/{name}.toml"), &p)
}

/// `ixp-host` with its microengines' parameters `me` over the preset's (and the network
/// platform's small-core and host clocks, so that the reproduction's overrides reach both).
fn ixp_host(
    net: &NetworkIoConfig,
    engines: u32,
    me: &[(&str, toml::Value)],
) -> Result<PlatformConfig, PlatformError> {
    let mut cfg = PlatformConfig::load(PLATFORM)?;
    cfg.core.clock_mhz = net.host.clock_mhz.round().max(1.0) as u64;
    let a = cfg
        .agents
        .iter_mut()
        .find(|a| a.kind == "microengines")
        .ok_or_else(|| PlatformError::config(PLATFORM, "agents", "no microengines agent"))?;
    let sc = &net.small_cores;
    let mut set = |k: &str, v: toml::Value| {
        a.params.insert(k.into(), v);
    };
    set("count", toml::Value::Integer(engines as i64));
    set("threads", toml::Value::Integer(sc.threads as i64));
    set("clock_mhz", toml::Value::Float(sc.clock_mhz));
    for (k, v) in me {
        set(k, v.clone());
    }
    // Through the one loader's check of every agent parameter.
    let t = toml::Value::try_from(&cfg)
        .map_err(|e| PlatformError::config(PLATFORM, "(overrides)", e.to_string()))?;
    PlatformConfig::from_value(t, PLATFORM)
}

fn tv_i(v: u64) -> toml::Value {
    toml::Value::Integer(v as i64)
}
fn tv_f(v: f64) -> toml::Value {
    toml::Value::Float(v)
}
fn tv_b(v: bool) -> toml::Value {
    toml::Value::Boolean(v)
}
fn tv_s(v: &str) -> toml::Value {
    toml::Value::String(v.into())
}

fn me_stats(s: &crate::stats::PlatformStats) -> Result<AgentStats, PlatformError> {
    s.agents
        .iter()
        .find(|a| a.kind == "microengines")
        .cloned()
        .ok_or_else(|| PlatformError::config(PLATFORM, "agents", "no microengines agent"))
}

/// An `rx`, `tx` or `me-bound` point on the one platform: two `ixp-host`s on a gigabit wire, one
/// the configuration under test and one the iperf peer (its microengines a UDP `source` or
/// `sink`). Every datagram delivered is checked byte for byte in order (with its checksums
/// where the frame arrives whole); the row's throughput is the UDP payload delivered, from the
/// first datagram's start on the wire to the last delivery.
fn platform_point(net: &NetworkIoConfig, p: &Point) -> Result<Row, PlatformError> {
    let t0 = std::time::Instant::now();
    let payload = p.payload_bytes;
    let frame = (payload + HEADER_BYTES) as u64;
    let words = frame.div_ceil(4);
    let lines = frame.div_ceil(64);
    // `me-ceiling`: the preset's microengines behind a faster wire (both ends' MACs at its rate).
    let gbps = if p.experiment == "me-ceiling" {
        match p.variant.as_deref() {
            Some("wire-2gbps") => 2.0,
            Some("wire-10gbps") => 10.0,
            v => {
                return Err(PlatformError::Unknown {
                    kind: "wun-onload me-ceiling variant",
                    name: v.unwrap_or_default().into(),
                    known: ME_CEILING.join(", "),
                })
            }
        }
    } else {
        net.wire.gbps
    };
    let wire_ns = crate::net::ethernet_link::frame_wire_ps(
        frame as usize,
        gbps,
        crate::net::ethernet_link::OVERHEAD_BYTES,
    ) as f64
        / 1000.0;
    let sc = &net.small_cores;
    let common = |mode: (&str, &str)| -> Vec<(&str, toml::Value)> {
        vec![
            ("iperf", tv_b(true)),
            ("frame_bytes", tv_i(frame)),
            ("rx_mode", tv_s(mode.0)),
            ("tx_mode", tv_s(mode.1)),
            ("mac_gbps", tv_f(gbps)),
        ]
    };
    let cfgname = p.config.as_str();
    let (mut rx_engines, mut tx_engines) = (sc.rx_cores, sc.tx_cores);
    let mut me_over: Vec<(&str, toml::Value)> = Vec::new();
    if p.experiment == "me-bound" {
        let v = p.variant.as_deref().unwrap_or_default();
        let (cores, mhz, threads) = parse_me_variant(v).ok_or_else(|| PlatformError::Unknown {
            kind: "wun-onload me-bound variant",
            name: v.into(),
            known: ME_BOUND.join(", "),
        })?;
        rx_engines = cores;
        tx_engines = cores;
        me_over.push(("clock_mhz", tv_f(mhz)));
        me_over.push(("threads", tv_i(threads as u64)));
    } else if p.experiment == "rx-components" {
        if !matches!(p.variant.as_deref(), Some("with-app" | "without-app")) {
            return Err(PlatformError::Unknown {
                kind: "wun-onload rx-components variant",
                name: p.variant.clone().unwrap_or_default(),
                known: "with-app, without-app".into(),
            });
        }
    } else if p.variant.is_some()
        && !matches!(
            p.experiment.as_str(),
            "me-ceiling" | "mapping-cache" | "l2-push"
        )
    {
        return Err(PlatformError::Unknown {
            kind: "wun-onload variant",
            name: p.variant.clone().unwrap_or_default(),
            known: "none for rx and tx".into(),
        });
    }
    let checksum = |on: bool| ("checksum_cycles_per_word", tv_f(if on { 1.0 } else { 0.0 }));
    // Whether each recvmsg maps its buffer afresh (the onloader without the mapping cache).
    let mut map_every_call = false;
    let (tx_cfg, rx_cfg, progs, sender_is_peer) = if p.experiment == "tx" {
        let (mode, csum, irq) = match cfgname {
            "emu" => ("frame", false, false),
            "softnic" => ("frame", true, true),
            "onloader" => ("onload", true, false),
            c => return Err(unknown_config(c)),
        };
        let mut me = common(("frame", mode));
        me.push(checksum(csum));
        me.push(("tx_irq", tv_b(irq)));
        me.extend(me_over.iter().cloned());
        let tx = ixp_host(net, tx_engines, &me)?;
        let rx = ixp_host(net, rx_engines, &common(("sink", "frame")))?;
        let prog = program(
            net,
            &format!("tx-{cfgname}"),
            &[
                ("messages", TX_MESSAGES),
                ("payload", payload as u64),
                ("frame_words", words),
                ("checksum", payload.div_ceil(64) as u64 * 18),
            ]
            .into_iter()
            .filter(|(k, _)| cfgname == "emu" || !matches!(*k, "frame_words" | "checksum"))
            .filter(|(k, _)| cfgname != "onloader" || *k == "messages")
            .collect::<Vec<_>>(),
        )?;
        let idle = program(net, "tx-onloader", &[("messages", 0)])?;
        (vec![tx], rx, vec![vec![prog], vec![idle]], false)
    } else {
        // The receive blocks alone: `me-bound`, `me-ceiling`, and Fig. 5's bars without the
        // user program (`rx-components` `without-app`; `with-app` is the onloader's `rx`).
        let blocks_alone = matches!(p.experiment.as_str(), "me-bound" | "me-ceiling")
            || p.variant.as_deref() == Some("without-app");
        let frames = if blocks_alone {
            ME_BOUND_FRAMES
        } else {
            (RX_SEND_NS / wire_ns).ceil() as u64
        };
        // The peer sends for half the time, then for all of it: the rate is the difference
        // (the deliveries of the second half over its time), so the buffers the host posted up
        // front, which fill at the wire's rate, do not count.
        let mut tx = Vec::new();
        for n in [frames / 2, frames] {
            let mut src = common(("frame", "source"));
            src.push(("source_frames", tv_i(n)));
            tx.push(ixp_host(net, tx_engines, &src)?);
        }
        // Section 6's mechanisms: the L2 push (the microengines' `l2_push`, and the host
        // program's, which then pays the L2's maintenance without it) and the onloader's mapping
        // cache (its host program's `mapping_cache`); the preset's settings outside their
        // experiments.
        let l2_push = section6_switch(p, "l2-push", "push-on", "push-off", net.host.l2_push)?;
        let mapping = section6_switch(
            p,
            "mapping-cache",
            "cache-on",
            "cache-off",
            net.host.mapping_cache,
        )?;
        let (mode, csum, push) = match cfgname {
            "emu" => ("frame", false, false),
            "softnic" => ("frame", true, l2_push),
            "onloader" => ("onload", true, l2_push),
            c => return Err(unknown_config(c)),
        };
        if (p.experiment == "mapping-cache" && cfgname != "onloader")
            || (p.experiment == "l2-push" && cfgname == "emu")
        {
            return Err(PlatformError::Unknown {
                kind: "wun-onload configuration",
                name: format!("{} {cfgname}", p.experiment),
                known: if p.experiment == "l2-push" {
                    "softnic, onloader"
                } else {
                    "onloader"
                }
                .into(),
            });
        }
        let mut me = common((mode, "frame"));
        me.push(checksum(csum));
        me.push(("l2_push", tv_b(push)));
        let prog = if blocks_alone {
            // The receive blocks alone: every buffer posted up front, no host on the path.
            me.push(("rx_irq", tv_b(false)));
            program(net, "rx-onloader", &[("buffers", 512)])?
        } else {
            let mut ps = vec![("payload", payload as u64)];
            if cfgname == "emu" {
                ps.push(("frame_words", words));
                ps.push(("frame_lines", lines));
                ps.push(("checksum", payload.div_ceil(64) as u64 * 18));
            }
            if cfgname == "softnic" {
                ps.push(("l2_push", u64::from(push)));
            }
            if cfgname == "onloader" {
                map_every_call = !mapping;
                ps = vec![
                    ("l2_push", u64::from(push)),
                    ("mapping_cache", u64::from(mapping)),
                    ("user_lines", payload.div_ceil(XSCALE_LINE_BYTES) as u64),
                ];
            }
            program(net, &format!("rx-{cfgname}"), &ps)?
        };
        me.extend(me_over.iter().cloned());
        let rx = ixp_host(net, rx_engines, &me)?;
        let idle = program(net, "tx-onloader", &[("messages", 0)])?;
        (tx, rx, vec![vec![idle], vec![prog]], true)
    };
    let mut runs = Vec::new();
    for tx in &tx_cfg {
        runs.push(pair_run(p, tx, &rx_cfg, &progs)?);
    }
    let (s, snd, rcv) = runs.pop().expect("one run at least");
    let (sd, rd) = (
        snd.device.clone().unwrap_or_default(),
        rcv.device.clone().unwrap_or_default(),
    );
    let sent = sd.nic.tx_frames;
    let delivered = rd.nic.rx_frames;
    let bits = |n: u64| (n * payload as u64) as f64 * 8.0;
    let throughput = match runs.pop() {
        // The difference of the two runs: deliveries over time in the second half.
        Some((_, _, half)) => {
            let n0 = half.device.as_ref().map_or(0, |d| d.nic.rx_frames);
            let dt = rcv.last_done_ns - half.last_done_ns;
            if dt > 0.0 && delivered > n0 {
                bits(delivered - n0) * 1000.0 / dt
            } else {
                0.0
            }
        }
        // From the first datagram's start on the wire to the last delivery.
        None => {
            let first = s.links[0].passages.first().map_or(0.0, |x| x.1);
            let dt = rcv.last_done_ns - first;
            if dt > 0.0 {
                bits(delivered) * 1000.0 / dt
            } else {
                0.0
            }
        }
    };
    let mbps = |n: u64| {
        let first = s.links[0].passages.first().map_or(0.0, |x| x.1);
        let dt = s.links[0].a_to_b.last_arrival_ps as f64 / 1000.0 - first;
        if dt > 0.0 {
            bits(n) * 1000.0 / dt
        } else {
            0.0
        }
    };
    let host = if sender_is_peer {
        &s.hosts[1]
    } else {
        &s.hosts[0]
    };
    let busy = |a: &AgentStats| a.small_cores.as_ref().map_or(0.0, |c| c.busy_share);
    let me_busy = if sender_is_peer {
        busy(&rcv)
    } else {
        busy(&snd)
    };
    let time_ns = s.hosts.iter().map(|h| h.time_ns).fold(0.0, f64::max);
    let offered = if sender_is_peer {
        payload as f64 * 8.0 * 1000.0 / wire_ns
    } else {
        mbps(sent)
    };
    let stats = NetStats {
        config: p.config.clone(),
        direction: if p.experiment == "tx" { "tx" } else { "rx" }.into(),
        payload_bytes: payload,
        throughput_mbps: throughput,
        offered_mbps: offered,
        sent,
        delivered,
        lost: sent - delivered.min(sent),
        rbuf_drops: rd.nic.rx_drops,
        interrupts: host.interrupts,
        small_core_busy: me_busy,
        rx_cores_busy: busy(&rcv),
        tx_cores_busy: busy(&snd),
        mapping_misses: if map_every_call { delivered } else { 0 },
        sim_time_us: time_ns / 1000.0,
        ..Default::default()
    };
    Ok(Row {
        experiment: p.experiment.clone(),
        variant: p.variant.clone(),
        sim_packets: sent,
        wall_s: t0.elapsed().as_secs_f64(),
        stats,
    })
}

fn unknown_config(c: &str) -> PlatformError {
    PlatformError::Unknown {
        kind: "wun-onload configuration",
        name: c.into(),
        known: CONFIGS.join(", "),
    }
}

/// One run of a pair: `tx` and `rx` on a gigabit wire between their microengines' MACs, running
/// `progs`; fails if a delivered byte was wrong or a line read stale.
fn pair_run(
    p: &Point,
    tx: &PlatformConfig,
    rx: &PlatformConfig,
    progs: &[Vec<Workload>],
) -> Result<(cluster::ClusterStats, AgentStats, AgentStats), PlatformError> {
    let mut ps = vec![Platform::new(tx)?, Platform::new(rx)?];
    for pl in &mut ps {
        pl.sys.track_values();
    }
    // Each ixp-host's one port: its microengines' MAC.
    let link = LinkSpec::between(0, 1, 3.0, 5.0);
    let s = cluster::run(&mut ps, progs, &[link], &mut |_| {})?;
    let (snd, rcv) = (me_stats(&s.hosts[0])?, me_stats(&s.hosts[1])?);
    let (sd, rd) = (
        snd.device.clone().unwrap_or_default(),
        rcv.device.clone().unwrap_or_default(),
    );
    if rd.rx_bytes_wrong > 0 || sd.stale_lines > 0 || rd.stale_lines > 0 {
        return Err(PlatformError::config(
            PLATFORM,
            "(run)",
            format!(
                "{} {} at {} B: {} delivered bytes failed the check, {} stale lines read",
                p.experiment,
                p.config,
                p.payload_bytes,
                rd.rx_bytes_wrong,
                sd.stale_lines + rd.stale_lines
            ),
        ));
    }
    Ok((s, snd, rcv))
}
