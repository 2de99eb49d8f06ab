//! Wun & Crowley, "Network I/O Acceleration in Heterogeneous Multicore Processors": receive and
//! transmit throughput of the emu nic, the softnic and the onloader against the UDP payload size
//! (Fig. 3, 4, 6), the onloader's receive blocks with and without the user program (Fig. 5), the
//! per-connection mapping cache on and off, and the L2 push on and off (section 6), on the
//! IXP2350-like platform of `presets/network/ixp2350.toml` (`systems/network_io.rs`).
use crate::config::network::NetworkIoConfig;
use crate::sim::error::PlatformError;
use crate::systems::network_io::{self, Direction, NetStats, RunSpec};
use serde::{Deserialize, Serialize};

/// The experiments, as the rows' `experiment` names them.
pub const EXPERIMENTS: &[&str] = &["rx", "tx", "rx-components", "mapping-cache", "l2-push"];
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
    let mut cfg = cfg.clone();
    let mut with_app = true;
    match p.variant.as_deref() {
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

/// Loads platform `platform` with `overrides` and runs `points`.
pub fn run(
    platform: &str,
    overrides: &toml::Value,
    points: &[Point],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Row>, PlatformError> {
    let mut cfg = NetworkIoConfig::load(platform)?;
    if overrides.as_table().is_some_and(|t| !t.is_empty()) {
        cfg = cfg.with_overrides(overrides, "overrides")?;
    }
    let mut rows = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        rows.push(run_point(&cfg, p)?);
        progress(i + 1, points.len());
    }
    Ok(rows)
}
