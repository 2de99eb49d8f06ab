//! An engine and its frame source from one JSON object: what the C API, the Python binding and
//! the benchmark use to start an onload engine (every field has a default; unknown fields and
//! out-of-range values are errors that name the field).
use crate::onload::engine::{OnloadConfig, OnloadEngine};
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::frame::{self, Flow};
use crate::onload::pattern;
use crate::onload::source::FrameSource;
use crate::onload::source_replay::{ReplayConfig, ReplayHandle, ReplaySource};
use serde::Deserialize;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

/// Largest replay pool in bytes (frames are built up front).
pub const MAX_POOL_BYTES: usize = 256 << 20;

/// The engine's settings and its source, as JSON.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSpec {
    /// `replay` (no privileges) or `veth` (needs CAP_NET_ADMIN).
    pub source: String,
    pub cpu: Option<usize>,
    pub pin: bool,
    pub max_payload: usize,
    pub burst: usize,
    pub ring_capacity: usize,
    pub push: bool,
    pub idle_spin_us: u64,
    pub nap_us: u64,
    pub wait_spin_us: u64,
    /// The replay source's settings.
    pub replay: ReplaySpec,
}

/// Frames the replay source makes: `count` datagrams of `payload_bytes` from 10.77.0.2:40000 to
/// 10.77.0.1:`port`, payload `i` being [`pattern::make`]`(i % pool_frames, ...)`. Without
/// `count`, a replay of given frames plays each once and a replay of its own frames plays none.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySpec {
    pub payload_bytes: usize,
    pub count: Option<u64>,
    pub rate_mbps: f64,
    pub port: u16,
    pub pool_frames: usize,
    pub rx_ring: usize,
    pub gated: bool,
    pub capture_tx: usize,
}

impl Default for EngineSpec {
    fn default() -> Self {
        let c = OnloadConfig::default();
        EngineSpec {
            source: "replay".into(),
            cpu: c.cpu,
            pin: c.pin,
            max_payload: c.max_payload,
            burst: c.burst,
            ring_capacity: c.ring_capacity,
            push: c.push,
            idle_spin_us: c.idle_spin_us,
            nap_us: c.nap_us,
            wait_spin_us: c.wait_spin_us,
            replay: ReplaySpec::default(),
        }
    }
}

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            payload_bytes: 64,
            count: None,
            rate_mbps: 0.0,
            port: 9000,
            pool_frames: 1024,
            rx_ring: 4096,
            gated: false,
            capture_tx: 0,
        }
    }
}

/// The replay's sender (the far end of the simulated wire).
pub const REPLAY_PEER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 2), 40_000);

impl EngineSpec {
    /// Parse a JSON object ("" or "{}" gives the defaults).
    pub fn parse(json: &str) -> OnloadResult<Self> {
        if json.trim().is_empty() {
            return Ok(EngineSpec::default());
        }
        serde_json::from_str(json)
            .map_err(|e| OnloadError::InvalidArgument(format!("onload engine spec: {e}")))
    }

    /// The engine configuration.
    pub fn config(&self) -> OnloadConfig {
        OnloadConfig {
            cpu: self.cpu,
            pin: self.pin,
            max_payload: self.max_payload,
            burst: self.burst,
            ring_capacity: self.ring_capacity,
            push: self.push,
            idle_spin_us: self.idle_spin_us,
            nap_us: self.nap_us,
            wait_spin_us: self.wait_spin_us,
            ..OnloadConfig::default()
        }
    }
}

impl ReplaySpec {
    /// Build the pool of frames (checked against the engine's largest payload).
    pub fn frames(&self, config: &OnloadConfig) -> OnloadResult<Vec<Vec<u8>>> {
        let bad = |m: String| Err(OnloadError::InvalidArgument(m));
        if self.payload_bytes > config.max_payload {
            return bad(format!(
                "replay payload_bytes {}: exceeds max_payload {}",
                self.payload_bytes, config.max_payload
            ));
        }
        if self.port == 0 {
            return bad("replay port: 0 is not a UDP port".into());
        }
        let n = self.pool_frames.max(1);
        if n.saturating_mul(frame::frame_len(self.payload_bytes)) > MAX_POOL_BYTES {
            return bad(format!(
                "replay pool_frames {n} x {} bytes exceeds {} MiB",
                frame::frame_len(self.payload_bytes),
                MAX_POOL_BYTES >> 20
            ));
        }
        let flow = Flow {
            src_mac: config.peer_mac,
            dst_mac: config.local_mac,
            src: REPLAY_PEER,
            dst: SocketAddrV4::new(config.local_ip, self.port),
        };
        Ok((0..n)
            .map(|i| {
                frame::build(
                    &flow,
                    &pattern::make(i as u64, self.payload_bytes),
                    i as u16,
                )
            })
            .collect())
    }

    /// A replay source over `frames` (or the spec's own frames when None).
    pub fn source(
        &self,
        config: &OnloadConfig,
        frames: Option<Vec<Vec<u8>>>,
    ) -> OnloadResult<ReplaySource> {
        let (frames, count) = match frames {
            Some(f) => {
                let n = self.count.unwrap_or(f.len() as u64);
                (f, n)
            }
            None => (self.frames(config)?, self.count.unwrap_or(0)),
        };
        ReplaySource::new(
            Arc::new(frames),
            ReplayConfig {
                rate_mbps: self.rate_mbps,
                count,
                rx_ring: self.rx_ring,
                capture_tx: self.capture_tx,
                gated: self.gated,
            },
        )
    }
}

/// An engine started from a spec, with the replay's handle when the source is a replay.
pub struct Started {
    pub engine: OnloadEngine,
    pub replay: Option<ReplayHandle>,
}

/// Start the engine a spec describes. `frames` replaces the replay's own frames (tests).
pub fn start(spec: &EngineSpec, frames: Option<Vec<Vec<u8>>>) -> OnloadResult<Started> {
    let config = spec.config();
    config.validate()?;
    let (source, replay): (Box<dyn FrameSource>, _) = match spec.source.as_str() {
        "replay" => {
            let s = spec.replay.source(&config, frames)?;
            let h = s.handle();
            (Box::new(s), Some(h))
        }
        other => {
            return Err(OnloadError::InvalidArgument(format!(
                "source '{other}': expected \"replay\" (the veth source is started by the \
                 benchmark, which creates its network namespace)"
            )))
        }
    };
    Ok(Started {
        engine: OnloadEngine::start(config, source)?,
        replay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_errors_name_the_field() {
        let e = |j: &str| match EngineSpec::parse(j).and_then(|s| start(&s, None).map(|_| ())) {
            Err(e) => e.to_string(),
            Ok(()) => "ok".into(),
        };
        assert!(e(r#"{"bogus": 1}"#).contains("bogus"));
        assert!(e(r#"{"source": "warp"}"#).contains("warp"));
        assert!(e(r#"{"burst": 0}"#).contains("burst"));
        assert!(e(r#"{"replay": {"payload_bytes": 9000}}"#).contains("payload_bytes"));
        assert!(e(r#"{"replay": {"rate_mbps": -3}}"#).contains("rate_mbps"));
        assert!(
            e(r#"{"replay": {"pool_frames": 100000, "payload_bytes": 8972}}"#)
                .contains("pool_frames")
        );
        assert_eq!(e(r#"{"replay": {"count": 10}}"#), "ok");
    }
}
