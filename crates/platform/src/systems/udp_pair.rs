//! A host under test and its iperf-UDP peer on the one platform (Wun & Crowley's network I/O):
//! two `ixp-host` platforms (`presets/platforms/ixp-host.toml`: the XScale-like core, its caches,
//! DRAM, and the microengines agent with its MAC, RBUF and TBUF, `agents/microengines.rs`) joined
//! by one gigabit wire (`cluster.rs`). One runs a configuration - the emu nic, the softnic or the
//! onloader: its microengines' `rx_mode`/`tx_mode` and the host program of
//! `presets/network/wun-programs` - and the other is the peer, its microengines a UDP `source`
//! (receive runs) or `sink` (transmit runs) of iperf datagrams (`net/udp_peer.rs`). Every
//! datagram delivered is checked byte for byte, in order, with its checksums; a wrong byte or a
//! stale line read fails the run.
//!
//! The network platform's preset (`presets/network/ixp2350.toml`, `config/network.rs`) gives the
//! settings that reach the two platforms (the microengines' count, clock and contexts, the host's
//! clock, the calibrated CPI, the L2 push, the mapping cache, the wire's rate and how long the peer
//! sends) and nothing else: an override of any other key is refused by name there, since the
//! platform would not read it. `movelab network run`, the `udp-rx`/`udp-tx` workloads of the
//! registry and the `wun-onload` reproduction all run here.
use crate::config::network::NetworkIoConfig;
use crate::config::platform::PlatformConfig;
use crate::config::workload::Workload;
use crate::net::ethernet_link::{frame_wire_ps, OVERHEAD_BYTES};
use crate::net::udp_peer::{HEADER_BYTES, MAX_PAYLOAD, MIN_PAYLOAD};
use crate::sim::error::PlatformError;
use crate::stats::{is_zero, AgentStats, PlatformStats};
use crate::systems::cluster::{self, ClusterStats, LinkSpec};
use crate::systems::platform::Platform;
use serde::Serialize;
use std::collections::BTreeMap;

/// The platform at both ends of the wire.
pub const PLATFORM: &str = "ixp-host";
/// The XScale's cache line (32 B, L1 and L2: Linux arch/arm/mach-ixp23xx), in which the host
/// programs count their cache maintenance (the platform's caches have one line size, 64 B).
pub const XSCALE_LINE_BYTES: usize = 32;
/// Datagrams a transmit run's host sends.
pub const TX_MESSAGES: u64 = 100;
/// Datagrams the peer sends to the receive blocks running alone (no host on the path) per
/// `BLOCKS_ALONE_SEND_NS` of `wire.duration_us`, whatever the wire's rate (every variant of the
/// blocks alone measures as many frames; the preset's 3 ms: 500).
pub const BLOCKS_ALONE_FRAMES: u64 = 500;
pub const BLOCKS_ALONE_SEND_NS: f64 = 3_000_000.0;
/// The receive blocks alone post this many buffers up front.
const BLOCKS_ALONE_BUFFERS: u64 = 512;
/// The configurations.
pub const CONFIGS: &[&str] = &["emu", "softnic", "onloader"];
/// The peer's sending time, simulated ns, at most (a receive run simulates every frame).
pub const MAX_SEND_NS: f64 = crate::config::network::MAX_WIRE_DURATION_US * 1000.0;

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

/// Receive or transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Rx,
    Tx,
}

/// One run: a configuration, a direction, a payload size; `with_app = false` leaves the
/// receiving process out (the onloader's receive blocks alone, Fig. 5: every buffer posted up
/// front, no host on the path).
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub config: String,
    pub direction: Direction,
    pub payload: usize,
    pub with_app: bool,
}

/// What a run changes beside the network platform's settings (the reproduction's variants).
#[derive(Debug, Clone, Default)]
pub struct Variant {
    /// The microengines of the host under test (count, MHz, contexts); the peer keeps its own.
    pub engines: Option<(u32, f64, u32)>,
    /// The wire's rate, Gb/s (both ends' MACs at it).
    pub wire_gbps: Option<f64>,
    /// Section 6's mechanisms: the L2 push and the onloader's mapping cache.
    pub l2_push: Option<bool>,
    pub mapping_cache: Option<bool>,
    /// The receive buffers the host program posts ahead (its `buffers`), over the program's own:
    /// the rate counts what the host consumed, so posting more ahead must not raise it.
    pub rx_buffers: Option<u64>,
}

/// What a run measured (the wun-onload rows' figures). The peer's datagrams are followed to
/// their end, so no terminating datagram is needed: `fins_sent` and `fin_drops` are 0. The host's
/// time is the platform core's (`hosts` of the full report); the split by kernel context
/// (`host_irq` .. `host_idle`) is not measured on the platform and stays 0, as do `ring_drops`,
/// `buffer_drops` and `socket_drops` (the platform's queues do not drop: the host posts the
/// buffers and a frame that finds none is dropped at the RBUF, `rbuf_drops`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct NetStats {
    pub config: String,
    pub direction: String,
    pub payload_bytes: usize,
    /// iperf's figure at the receiver (Wun & Crowley section 5: the server counts the bytes it
    /// received, timed from its reception of the first datagram to its reception of the last):
    /// receive with the application, the payload the host consumed (recvmsg returned it and
    /// iperf's loop processed it: the program's return of the datagram's buffer) from the first
    /// consumption to the last, per second (the first datagram's bytes left out, as its time
    /// is); the receive blocks alone, the deliveries of the second half of the peer's sending
    /// (the buffers posted up front fill at the wire's rate and do not count); transmit, from
    /// the first datagram's start on the wire to the last delivery.
    pub throughput_mbps: f64,
    /// The sender's payload rate while it sends.
    pub offered_mbps: f64,
    /// Data datagrams sent, delivered (byte-checked), and lost: `sent = delivered + lost`,
    /// `lost = rbuf_drops + ring_drops + buffer_drops + socket_drops`.
    pub sent: u64,
    pub delivered: u64,
    /// Datagrams the receiving host consumed, each byte-checked again when it was (receive with
    /// the application; 0 otherwise, and absent from reports): all the delivered ones, once the
    /// host has drained them.
    #[serde(skip_serializing_if = "is_zero")]
    pub consumed: u64,
    pub lost: u64,
    pub rbuf_drops: u64,
    pub ring_drops: u64,
    pub buffer_drops: u64,
    pub socket_drops: u64,
    pub fins_sent: u64,
    pub fin_drops: u64,
    /// Interrupts the host under test took.
    pub interrupts: u64,
    pub host_irq: f64,
    pub host_softirq: f64,
    pub host_process: f64,
    pub host_spin: f64,
    pub host_idle: f64,
    /// Busy share of the microengines of the host under test, of the receiving side's and of
    /// the sending side's.
    pub small_core_busy: f64,
    pub rx_cores_busy: f64,
    pub tx_cores_busy: f64,
    /// recvmsg calls that mapped the user buffer afresh (the onloader without its mapping cache).
    pub mapping_misses: u64,
    /// Bytes the receiving microengines checked (every delivered byte) and the host's own
    /// instructions and cycles.
    pub rx_bytes_checked: u64,
    pub host_instructions: u64,
    pub host_cycles: u64,
    pub sim_time_us: f64,
}

/// A run's figures and both platforms' full statistics and the wire's.
#[derive(Debug, Clone, Serialize)]
pub struct UdpRun {
    #[serde(flatten)]
    pub stats: NetStats,
    /// The host under test's platform, the peer's, and the link.
    pub hosts: Vec<PlatformStats>,
    pub links: Vec<cluster::LinkStats>,
}

/// Loads network platform `platform` with `overrides` (its keys only: every one reaches the
/// platforms, and any other is refused by name, `config/network.rs`).
pub fn load(platform: &str, overrides: &toml::Value) -> Result<NetworkIoConfig, PlatformError> {
    let cfg = NetworkIoConfig::load(platform)?;
    if overrides.as_table().is_some_and(|t| !t.is_empty()) {
        return cfg.with_overrides(overrides.clone(), "overrides");
    }
    Ok(cfg)
}

/// A host program of the three configurations with `params` over its own, its `cpi` the
/// network platform's calibrated `host.cpi` (rounded to whole cycles) and its `app_per_datagram`
/// and `onload_send` the network platform's (calibrated with it: `presets/network/ixp2350.toml`
/// and `presets/ledger.toml`).
pub fn program(
    net: &NetworkIoConfig,
    name: &str,
    params: &[(&str, u64)],
) -> Result<Workload, PlatformError> {
    let text = PROGRAMS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| PlatformError::Unknown {
            kind: "network host program",
            name: name.into(),
            known: PROGRAMS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let src = format!("wun-programs/{name}.toml");
    let mut p: BTreeMap<String, u64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    p.insert("cpi".into(), net.host.cpi.round().max(1.0) as u64);
    // The network platform's host costs reach the programs that name them (iperf's loop is in
    // all six; the onloader's sendmsg only in its transmit program).
    let spec = Workload::spec_from_toml_str(text, &src)?;
    let h = &net.host;
    for (k, v) in [
        ("app_per_datagram", h.app_per_datagram),
        ("onload_send", h.onload_send),
    ] {
        if spec.params.contains_key(k) {
            p.insert(k.into(), v);
        }
    }
    Workload::new(spec, &src, &p)
}

/// `ixp-host` with `engines` microengines and their parameters `me` over the preset's (and the
/// network platform's small-core and host clocks, so that its overrides reach both).
pub fn ixp_host(
    net: &NetworkIoConfig,
    engines: u32,
    me: &[(&str, toml::Value)],
) -> Result<PlatformConfig, PlatformError> {
    let sc = &net.small_cores;
    let mut all = vec![
        ("count", tv_i(u64::from(engines))),
        ("threads", tv_i(u64::from(sc.threads))),
        ("clock_mhz", tv_f(sc.clock_mhz)),
    ];
    all.extend(me.iter().cloned());
    with_engines(net, &all)
}

/// The iperf peer: `ixp-host` with its preset's microengines (count, contexts, clock: the peer is
/// not the host under test, so the network platform's small-core settings do not reach it) and
/// `me` over them.
pub fn peer_host(
    net: &NetworkIoConfig,
    me: &[(&str, toml::Value)],
) -> Result<PlatformConfig, PlatformError> {
    with_engines(net, me)
}

/// `ixp-host` at the network platform's host clock with microengine parameters `me` over the
/// preset's, through the one loader's check of every agent parameter.
fn with_engines(
    net: &NetworkIoConfig,
    me: &[(&str, toml::Value)],
) -> Result<PlatformConfig, PlatformError> {
    let mut cfg = PlatformConfig::load(PLATFORM)?;
    cfg.core.clock_mhz = net.host.clock_mhz.round().max(1.0) as u64;
    let a = cfg
        .agents
        .iter_mut()
        .find(|a| a.kind == "microengines")
        .ok_or_else(|| PlatformError::config(PLATFORM, "agents", "no microengines agent"))?;
    for (k, v) in me {
        a.params.insert((*k).into(), v.clone());
    }
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

fn me_stats(s: &PlatformStats) -> Result<AgentStats, PlatformError> {
    s.agents
        .iter()
        .find(|a| a.kind == "microengines")
        .cloned()
        .ok_or_else(|| PlatformError::config(PLATFORM, "agents", "no microengines agent"))
}

fn unknown_config(c: &str) -> PlatformError {
    PlatformError::Unknown {
        kind: "network configuration",
        name: c.into(),
        known: CONFIGS.join(", "),
    }
}

/// Checks a run's spec: a configuration, a payload in one frame, and the process left out only
/// where the onloader receives.
fn check(spec: &RunSpec) -> Result<(), PlatformError> {
    if !CONFIGS.contains(&spec.config.as_str()) {
        return Err(unknown_config(&spec.config));
    }
    if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&spec.payload) {
        return Err(PlatformError::config(
            "run",
            "payload_bytes",
            format!("{} is outside {MIN_PAYLOAD}..={MAX_PAYLOAD} (a UDP datagram in one 1500-byte Ethernet frame)", spec.payload),
        ));
    }
    let blocks_alone_ok = spec.direction == Direction::Rx && spec.config == "onloader";
    if !(spec.with_app || blocks_alone_ok) {
        return Err(PlatformError::config(
            "run",
            "with_app",
            "only the onloader's receive can run without the application: elsewhere the host's stack is on the path",
        ));
    }
    Ok(())
}

/// The host program a run of `spec` runs its datagrams through: `tx-CONFIG` or `rx-CONFIG`, none
/// for the onloader's receive blocks alone (its buffers are posted up front, no host on the path).
fn host_program(spec: &RunSpec) -> Option<String> {
    match (spec.direction, spec.with_app) {
        (Direction::Tx, _) => Some(format!("tx-{}", spec.config)),
        (Direction::Rx, true) => Some(format!("rx-{}", spec.config)),
        (Direction::Rx, false) => None,
    }
}

/// The overrides of the network platform's settings (`overrides`, shaped like it) that a run of
/// `spec` does not read, each with why: one side's microengine count in the other direction, how
/// long the peer sends in a transmit run, the L2 push where no frame is pushed, the mapping cache
/// where nothing maps a user buffer, the host's clock and CPI where no host program is on the
/// path, and a host cost whose program does not name it. Each would run the same as without it.
pub fn unread_overrides(
    overrides: &toml::Value,
    spec: &RunSpec,
) -> Result<Vec<(String, String)>, PlatformError> {
    check(spec)?;
    let rx = spec.direction == Direction::Rx;
    let prog = host_program(spec);
    let prog_params: Vec<String> = match &prog {
        Some(name) => {
            let (_, text) = PROGRAMS
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| unknown_config(&spec.config))?;
            Workload::spec_from_toml_str(text, &format!("wun-programs/{name}.toml"))?
                .params
                .into_keys()
                .collect()
        }
        None => Vec::new(),
    };
    let run = format!(
        "the {} {} run",
        spec.config,
        if rx { "receive" } else { "transmit" }
    );
    let mut out = Vec::new();
    let Some(t) = overrides.as_table() else {
        return Ok(out);
    };
    for (section, v) in t {
        let Some(keys) = v.as_table() else { continue };
        for key in keys.keys() {
            let why = match (section.as_str(), key.as_str()) {
                ("small_cores", "rx_cores") if !rx => Some(format!(
                    "{run} sends through its tx_cores, and the peer receives on its own microengines"
                )),
                ("small_cores", "tx_cores") if rx => Some(format!(
                    "{run} receives on its rx_cores, and the peer sends from its own microengines"
                )),
                ("wire", "duration_us") if !rx => Some(format!(
                    "{run} sends its host's {TX_MESSAGES} datagrams; duration_us is how long the peer sends to a receive run"
                )),
                ("host", "l2_push") if !rx || spec.config == "emu" => Some(format!(
                    "{run} pushes no frame into the L2 (only the softnic's and the onloader's receive do)"
                )),
                ("host", "mapping_cache") if !(rx && spec.config == "onloader" && spec.with_app) => {
                    Some(format!(
                        "{run}{} maps no user buffer (only the onloader's receive with its application does)",
                        if spec.with_app { "" } else { " without the application" }
                    ))
                }
                ("host", "cpi") if prog.is_none() => Some(format!(
                    "{run} without the application runs no host program on the path"
                )),
                ("host", k @ ("app_per_datagram" | "onload_send"))
                    if !prog_params.iter().any(|p| p == k) =>
                {
                    Some(match &prog {
                        Some(name) => format!("the host program of {run} ({name}) has no {k}"),
                        None => format!(
                            "{run} without the application runs no host program on the path"
                        ),
                    })
                }
                _ => None,
            };
            if let Some(why) = why {
                out.push((format!("{section}.{key}"), why));
            }
        }
    }
    Ok(out)
}

/// Refuses the first override [`unread_overrides`] finds, naming its key.
pub fn refuse_unread_overrides(
    overrides: &toml::Value,
    spec: &RunSpec,
) -> Result<(), PlatformError> {
    match unread_overrides(overrides, spec)?.into_iter().next() {
        Some((key, why)) => Err(PlatformError::config(
            "overrides",
            key,
            format!("not read by this run: {why}"),
        )),
        None => Ok(()),
    }
}

/// Runs one configuration at one payload on the network platform's settings.
pub fn run(net: &NetworkIoConfig, spec: &RunSpec) -> Result<UdpRun, PlatformError> {
    run_variant(net, spec, &Variant::default())
}

/// Runs `spec` with `variant` over the network platform's settings.
pub fn run_variant(
    net: &NetworkIoConfig,
    spec: &RunSpec,
    variant: &Variant,
) -> Result<UdpRun, PlatformError> {
    check(spec)?;
    let payload = spec.payload;
    let frame = (payload + HEADER_BYTES) as u64;
    let words = frame.div_ceil(4);
    let lines = frame.div_ceil(64);
    let gbps = variant.wire_gbps.unwrap_or(net.wire.gbps);
    let wire_ns = frame_wire_ps(frame as usize, gbps, OVERHEAD_BYTES) as f64 / 1000.0;
    let common = |mode: (&str, &str)| -> Vec<(&str, toml::Value)> {
        vec![
            ("iperf", tv_b(true)),
            ("frame_bytes", tv_i(frame)),
            ("rx_mode", tv_s(mode.0)),
            ("tx_mode", tv_s(mode.1)),
            ("mac_gbps", tv_f(gbps)),
        ]
    };
    let sc = &net.small_cores;
    let cfgname = spec.config.as_str();
    let (mut rx_engines, mut tx_engines) = (sc.rx_cores, sc.tx_cores);
    let mut me_over: Vec<(&str, toml::Value)> = Vec::new();
    if let Some((cores, mhz, threads)) = variant.engines {
        rx_engines = cores;
        tx_engines = cores;
        me_over.push(("clock_mhz", tv_f(mhz)));
        me_over.push(("threads", tv_i(threads as u64)));
    }
    let checksum = |on: bool| ("checksum_cycles_per_word", tv_f(if on { 1.0 } else { 0.0 }));
    // Whether each recvmsg maps its buffer afresh (the onloader without the mapping cache).
    let mut map_every_call = false;
    let rx_run = spec.direction == Direction::Rx;
    let (tx_cfg, rx_cfg, progs) = if !rx_run {
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
        let rx = peer_host(net, &common(("sink", "frame")))?;
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
        (vec![tx], rx, vec![vec![prog], vec![idle]])
    } else {
        let blocks_alone = !spec.with_app;
        let send_ns = net.wire.duration_us * 1000.0;
        if !(send_ns > 0.0 && send_ns <= MAX_SEND_NS) {
            return Err(PlatformError::config(
                &net.name,
                "wire.duration_us",
                format!(
                    "{} is outside (0, {}] (how long the peer sends, simulated us)",
                    net.wire.duration_us,
                    MAX_SEND_NS / 1000.0
                ),
            ));
        }
        let frames = if blocks_alone {
            (BLOCKS_ALONE_FRAMES as f64 * send_ns / BLOCKS_ALONE_SEND_NS).round() as u64
        } else {
            (send_ns / wire_ns).ceil() as u64
        }
        .max(2);
        // The receive blocks alone: the peer sends for half the time, then for all of it, and
        // the rate is the difference (the deliveries of the second half over its time), so the
        // buffers posted up front, which fill at the wire's rate, do not count. With the
        // application, one run: its rate is what the host consumed (below).
        let counts: &[u64] = if blocks_alone {
            &[frames / 2, frames]
        } else {
            &[frames]
        };
        let mut tx = Vec::new();
        for &n in counts {
            let mut src = common(("frame", "source"));
            src.push(("source_frames", tv_i(n)));
            tx.push(peer_host(net, &src)?);
        }
        // Section 6's mechanisms: the L2 push (the microengines' `l2_push`, and the host
        // program's, which then pays the L2's maintenance without it) and the onloader's mapping
        // cache (its host program's `mapping_cache`).
        let l2_push = variant.l2_push.unwrap_or(net.host.l2_push);
        let mapping = variant.mapping_cache.unwrap_or(net.host.mapping_cache);
        let (mode, csum, push) = match cfgname {
            "emu" => ("frame", false, false),
            "softnic" => ("frame", true, l2_push),
            "onloader" => ("onload", true, l2_push),
            c => return Err(unknown_config(c)),
        };
        let mut me = common((mode, "frame"));
        me.push(checksum(csum));
        me.push(("l2_push", tv_b(push)));
        let prog = if blocks_alone {
            // The receive blocks alone: every buffer posted up front, no host on the path.
            me.push(("rx_irq", tv_b(false)));
            program(net, "rx-onloader", &[("buffers", BLOCKS_ALONE_BUFFERS)])?
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
            if let Some(n) = variant.rx_buffers {
                ps.push(("buffers", n));
            }
            let prog = program(net, &format!("rx-{cfgname}"), &ps)?;
            // Every buffer the program returns past those it posts up front is a datagram it
            // consumed: the microengines count and check it then.
            let ahead = prog.param("buffers").unwrap_or(0);
            if ahead == 0 {
                return Err(PlatformError::config(
                    format!("wun-programs/rx-{cfgname}.toml"),
                    "params.buffers",
                    "a receiving host program posts at least one buffer up front",
                ));
            }
            me.push(("rx_posted_ahead", tv_i(ahead)));
            prog
        };
        me.extend(me_over.iter().cloned());
        let rx = ixp_host(net, rx_engines, &me)?;
        let idle = program(net, "tx-onloader", &[("messages", 0)])?;
        (tx, rx, vec![vec![idle], vec![prog]])
    };
    let mut runs = Vec::new();
    for tx in &tx_cfg {
        runs.push(pair_run(spec, tx, &rx_cfg, &progs)?);
    }
    let (s, snd, rcv) = runs.pop().expect("one run at least");
    let (sd, rd) = (
        snd.device.clone().unwrap_or_default(),
        rcv.device.clone().unwrap_or_default(),
    );
    let sent = sd.nic.tx_frames;
    let delivered = rd.nic.rx_frames;
    let bits = |n: u64| (n * payload as u64) as f64 * 8.0;
    let first = s.links[0].passages.first().map_or(0.0, |x| x.1);
    let consumed = rd.rx_consumed;
    let throughput = match runs.pop() {
        // With the application: the payload consumed after the first datagram, over the time
        // from its consumption to the last one's.
        _ if rx_run && spec.with_app => {
            let dt = rd.rx_consumed_last_ns - rd.rx_consumed_first_ns;
            if dt > 0.0 && consumed > 1 {
                bits(consumed - 1) * 1000.0 / dt
            } else {
                0.0
            }
        }
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
            let dt = rcv.last_done_ns - first;
            if dt > 0.0 {
                bits(delivered) * 1000.0 / dt
            } else {
                0.0
            }
        }
    };
    let offered = if rx_run {
        payload as f64 * 8.0 * 1000.0 / wire_ns
    } else {
        let dt = s.links[0].a_to_b.last_arrival_ps as f64 / 1000.0 - first;
        if dt > 0.0 {
            bits(sent) * 1000.0 / dt
        } else {
            0.0
        }
    };
    // The host under test: the receiver on receive, the sender on transmit.
    let dut = usize::from(rx_run);
    let host = &s.hosts[dut];
    let busy = |a: &AgentStats| a.small_cores.as_ref().map_or(0.0, |c| c.busy_share);
    let time_ns = s.hosts.iter().map(|h| h.time_ns).fold(0.0, f64::max);
    let stats = NetStats {
        config: spec.config.clone(),
        direction: if rx_run { "rx" } else { "tx" }.into(),
        payload_bytes: payload,
        throughput_mbps: throughput,
        offered_mbps: offered,
        sent,
        delivered,
        consumed,
        lost: sent - delivered.min(sent),
        rbuf_drops: rd.nic.rx_drops,
        interrupts: host.interrupts,
        small_core_busy: if rx_run { busy(&rcv) } else { busy(&snd) },
        rx_cores_busy: busy(&rcv),
        tx_cores_busy: busy(&snd),
        mapping_misses: if map_every_call { delivered } else { 0 },
        rx_bytes_checked: rd.rx_bytes_checked,
        host_instructions: host.instructions,
        host_cycles: host.core_cycles,
        sim_time_us: time_ns / 1000.0,
        ..Default::default()
    };
    let mut hosts = s.hosts;
    let links = s.links;
    hosts.swap(0, dut);
    Ok(UdpRun {
        stats,
        hosts,
        links,
    })
}

/// One run of a pair: `tx` and `rx` on a gigabit wire between their microengines' MACs, running
/// `progs`; fails if a delivered byte was wrong or a line read stale.
fn pair_run(
    spec: &RunSpec,
    tx: &PlatformConfig,
    rx: &PlatformConfig,
    progs: &[Vec<Workload>],
) -> Result<(ClusterStats, AgentStats, AgentStats), PlatformError> {
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
    if rd.rx_consumed_bytes_wrong > 0 || rd.rx_consumed_unmatched > 0 {
        return Err(PlatformError::config(
            PLATFORM,
            "(run)",
            format!(
                "{} {:?} at {} B: {} consumed bytes failed the check, {} buffers returned with no datagram delivered",
                spec.config,
                spec.direction,
                spec.payload,
                rd.rx_consumed_bytes_wrong,
                rd.rx_consumed_unmatched
            ),
        ));
    }
    if rd.rx_bytes_wrong > 0 || sd.stale_lines > 0 || rd.stale_lines > 0 {
        return Err(PlatformError::config(
            PLATFORM,
            "(run)",
            format!(
                "{} {:?} at {} B: {} delivered bytes failed the check, {} stale lines read",
                spec.config,
                spec.direction,
                spec.payload,
                rd.rx_bytes_wrong,
                sd.stale_lines + rd.stale_lines
            ),
        ));
    }
    Ok((s, snd, rcv))
}
