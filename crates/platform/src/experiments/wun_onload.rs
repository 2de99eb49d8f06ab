//! Wun & Crowley, "Network I/O Acceleration in Heterogeneous Multicore Processors": receive and
//! transmit throughput of the emu nic, the softnic and the onloader against the UDP payload size
//! (Fig. 3, 4, 6), the onloader's receive blocks with and without the user program (Fig. 5,
//! `rx-components`), the receive blocks alone where slow microengines are the bottleneck
//! (`me-bound`: count, clock and contexts move the throughput) and the preset's receive blocks
//! behind both gigabit ports' worth of traffic and an open wire (`me-ceiling`, "the ME code
//! sustains about 2 Gb/s") run on the one platform: two `ixp-host` platforms on one wire
//! (`systems/udp_pair.rs` over `systems/cluster.rs`), one running the configuration (its microengines' `rx_mode`/`tx_mode`
//! and the host program of `presets/network/wun-programs`), the other the iperf peer (its
//! microengines a UDP `source` or `sink`). The DRAM-to-DRAM copy of the small cores against the
//! host core (`dram-copy`, section 7's "up to 10x") runs on one `ixp-host`. The per-connection
//! mapping cache and the L2 push on and off (section 6, `mapping-cache` and `l2-push`) are the
//! `rx` runs with the receiving host program's `mapping_cache` and `l2_push` parameters (and the
//! microengines' own `l2_push`) set per variant. The network platform's preset
//! (`presets/network/ixp2350.toml`) gives the settings the user may override (clocks, contexts,
//! the CPI, the push, the mapping cache, the wire's rate: `config/network.rs`); this module
//! maps the experiments' points onto `udp_pair`'s runs and variants.
use crate::config::network::NetworkIoConfig;
use crate::config::platform::PlatformConfig;
use crate::config::workload::Workload;
use crate::sim::error::PlatformError;
use crate::systems::platform::Platform;
use crate::systems::udp_pair::{self, Direction, RunSpec, Variant, BLOCKS_ALONE_FRAMES};
pub use crate::systems::udp_pair::{NetStats, CONFIGS, PLATFORM, TX_MESSAGES, XSCALE_LINE_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The experiments that run on the one platform (`ixp-host` at both ends of a gigabit wire,
/// `systems/udp_pair.rs`, or one `ixp-host` for `dram-copy`): all of them.
pub const ON_PLATFORM: &[&str] = EXPERIMENTS;
/// `me-bound`'s and `me-ceiling`'s peer: datagrams sent to the receive blocks alone.
pub const ME_BOUND_FRAMES: u64 = BLOCKS_ALONE_FRAMES;

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
    let mut cfg = udp_pair::ixp_host(net, sc.rx_cores + sc.tx_cores, &[])?;
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
    let cfg = udp_pair::load(platform, overrides)?;
    let mut rows = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        rows.push(run_point(&cfg, p)?);
        progress(i + 1, points.len());
    }
    Ok(rows)
}

/// An `rx`, `tx`, `rx-components`, `mapping-cache`, `l2-push`, `me-bound` or `me-ceiling` point:
/// the run of `systems/udp_pair.rs` (two `ixp-host`s on a gigabit wire, one the configuration
/// under test and one the iperf peer) with the point's variant.
fn platform_point(net: &NetworkIoConfig, p: &Point) -> Result<Row, PlatformError> {
    let t0 = std::time::Instant::now();
    let variant_err = |kind: &'static str, known: String| PlatformError::Unknown {
        kind,
        name: p.variant.clone().unwrap_or_default(),
        known,
    };
    let mut spec = RunSpec {
        config: p.config.clone(),
        direction: if p.experiment == "tx" {
            Direction::Tx
        } else {
            Direction::Rx
        },
        payload: p.payload_bytes,
        with_app: true,
    };
    let mut v = Variant::default();
    match p.experiment.as_str() {
        "rx" | "tx" => {
            if p.variant.is_some() {
                return Err(variant_err(
                    "wun-onload variant",
                    "none for rx and tx".into(),
                ));
            }
        }
        "rx-components" => match p.variant.as_deref() {
            Some("with-app") => {}
            Some("without-app") => spec.with_app = false,
            _ => {
                return Err(variant_err(
                    "wun-onload rx-components variant",
                    "with-app, without-app".into(),
                ))
            }
        },
        // The small cores' own limits: the receive blocks alone.
        "me-bound" => {
            let name = p.variant.as_deref().unwrap_or_default();
            v.engines =
                Some(parse_me_variant(name).ok_or_else(|| {
                    variant_err("wun-onload me-bound variant", ME_BOUND.join(", "))
                })?);
            spec.with_app = false;
        }
        // The preset's microengines behind a faster wire (both ends' MACs at its rate).
        "me-ceiling" => {
            v.wire_gbps = Some(match p.variant.as_deref() {
                Some("wire-2gbps") => 2.0,
                Some("wire-10gbps") => 10.0,
                _ => {
                    return Err(variant_err(
                        "wun-onload me-ceiling variant",
                        ME_CEILING.join(", "),
                    ))
                }
            });
            spec.with_app = false;
        }
        "mapping-cache" | "l2-push" => {
            let (ok, known) = if p.experiment == "l2-push" {
                (p.config != "emu", "softnic, onloader")
            } else {
                (p.config == "onloader", "onloader")
            };
            if !ok {
                return Err(PlatformError::Unknown {
                    kind: "wun-onload configuration",
                    name: format!("{} {}", p.experiment, p.config),
                    known: known.into(),
                });
            }
            v.l2_push = Some(section6_switch(
                p,
                "l2-push",
                "push-on",
                "push-off",
                net.host.l2_push,
            )?);
            v.mapping_cache = Some(section6_switch(
                p,
                "mapping-cache",
                "cache-on",
                "cache-off",
                net.host.mapping_cache,
            )?);
        }
        e => {
            return Err(PlatformError::Unknown {
                kind: "wun-onload experiment",
                name: e.into(),
                known: EXPERIMENTS.join(", "),
            })
        }
    }
    let r = udp_pair::run_variant(net, &spec, &v)?;
    Ok(Row {
        experiment: p.experiment.clone(),
        variant: p.variant.clone(),
        sim_packets: r.stats.sent,
        wall_s: t0.elapsed().as_secs_f64(),
        stats: r.stats,
    })
}
