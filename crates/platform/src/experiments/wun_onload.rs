//! Wun & Crowley, "Network I/O Acceleration in Heterogeneous Multicore Processors": receive and
//! transmit throughput of the emu nic, the softnic and the onloader against the UDP payload size
//! (Fig. 3, 4, 6), the onloader's receive blocks with and without the user program (Fig. 5), the
//! per-connection mapping cache on and off, and the L2 push on and off (section 6), on the
//! IXP2350-like platform of `presets/network/ixp2350.toml` (`systems/network_io.rs`); and the
//! small cores' own limits: the receive blocks alone where slow cores are the bottleneck
//! (`me-bound`: core count, clock and threads move the throughput), the receive blocks' rate
//! with both gigabit ports' worth of traffic and with an open wire (`me-ceiling`, the paper's
//! "the ME code sustains about 2 Gb/s"), and the DRAM-to-DRAM copy of the small cores against the
//! host core (`dram-copy`, section 7's "up to 10x", `small_cores/dram_copy.rs`).
use crate::config::network::NetworkIoConfig;
use crate::sim::error::PlatformError;
use crate::small_cores::dram_copy;
use crate::systems::network_io::{self, Direction, NetStats, RunSpec};
use serde::{Deserialize, Serialize};

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
                out.extend(["me", "xscale"].map(|c| pt(e, c, dram_copy::BLOCK_BYTES, None)));
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
    let mut cfg = cfg.clone();
    let mut with_app = true;
    let variant = p.variant.as_deref();
    if p.experiment == "me-bound" {
        let v = variant.unwrap_or_default();
        let (cores, mhz, threads) = parse_me_variant(v).ok_or_else(|| PlatformError::Unknown {
            kind: "wun-onload me-bound variant",
            name: v.into(),
            known: ME_BOUND.join(", "),
        })?;
        let m = &mut cfg.small_cores;
        (m.rx_cores, m.tx_cores, m.clock_mhz, m.threads) = (cores, cores, mhz, threads);
        with_app = false;
    } else if p.experiment == "me-ceiling" {
        let gbps = match variant {
            Some("wire-2gbps") => 2.0,
            Some("wire-10gbps") => 10.0,
            v => {
                return Err(PlatformError::Unknown {
                    kind: "wun-onload me-ceiling variant",
                    name: v.unwrap_or_default().into(),
                    known: ME_CEILING.join(", "),
                })
            }
        };
        cfg.wire.gbps = gbps;
        cfg.msf.mac_gbps = gbps;
        with_app = false;
    }
    match variant.filter(|_| !matches!(p.experiment.as_str(), "me-bound" | "me-ceiling")) {
        None => {}
        Some("cache-on") => cfg.host.mapping_cache = true,
        Some("cache-off") => cfg.host.mapping_cache = false,
        Some("push-on") => cfg.host.l2_push = true,
        Some("push-off") => cfg.host.l2_push = false,
        Some("with-app") => {}
        Some("without-app") => with_app = false,
        Some(v) => {
            return Err(PlatformError::Unknown {
                kind: "wun-onload variant",
                name: v.into(),
                known: "cache-on, cache-off, push-on, push-off, with-app, without-app".into(),
            })
        }
    }
    let direction = if p.experiment == "tx" {
        Direction::Tx
    } else {
        Direction::Rx
    };
    let t0 = std::time::Instant::now();
    let s = network_io::run(
        &cfg,
        &RunSpec {
            config: p.config.clone(),
            direction,
            payload: p.payload_bytes,
            with_app,
        },
    )?;
    Ok(Row {
        experiment: p.experiment.clone(),
        variant: p.variant.clone(),
        sim_packets: s.sent,
        wall_s: t0.elapsed().as_secs_f64(),
        stats: s,
    })
}

/// `me{cores}-{MHz}mhz-t{threads}` as (cores, MHz, threads).
fn parse_me_variant(v: &str) -> Option<(u32, f64, u32)> {
    let mut it = v.split('-');
    let cores = it.next()?.strip_prefix("me")?.parse().ok()?;
    let mhz = it.next()?.strip_suffix("mhz")?.parse().ok()?;
    let threads = it.next()?.strip_prefix('t')?.parse().ok()?;
    it.next().is_none().then_some((cores, mhz, threads))
}

/// A `dram-copy` point: the small cores (`me`) or the host core (`xscale`) copy the benchmark's
/// blocks from DRAM to DRAM; the row's throughput is the copy's rate.
fn copy_point(cfg: &NetworkIoConfig, p: &Point) -> Result<Row, PlatformError> {
    let t0 = std::time::Instant::now();
    let r = match p.config.as_str() {
        "me" => dram_copy::small_cores(cfg)?,
        "xscale" => dram_copy::host(cfg)?,
        c => {
            return Err(PlatformError::Unknown {
                kind: "wun-onload dram-copy config",
                name: c.into(),
                known: "me, xscale".into(),
            })
        }
    };
    let blocks = dram_copy::BLOCKS as u64;
    Ok(Row {
        experiment: p.experiment.clone(),
        variant: p.variant.clone(),
        sim_packets: 0,
        wall_s: t0.elapsed().as_secs_f64(),
        stats: NetStats {
            config: p.config.clone(),
            direction: "copy".into(),
            payload_bytes: dram_copy::BLOCK_BYTES,
            throughput_mbps: r.mbps(),
            sent: blocks,
            delivered: blocks,
            sim_time_us: r.elapsed_ps as f64 / 1e6,
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
