//! `replay`: a frame source that needs no privileges. It hands the engine pre-built frames,
//! cycling through a pool, released on a schedule paced at a configured line rate, and it
//! plays the NIC's receive ring: when the engine falls more than `rx_ring` frames behind the
//! schedule, the oldest frames are dropped and counted, as a NIC drops when its ring is full.
//! Transmitted frames are counted and, on request, captured for inspection (tests).
//!
//! Pacing counts what a frame occupies on an Ethernet wire: the frame (at least 60 bytes) plus
//! 24 bytes of preamble, start delimiter, FCS and inter-frame gap (IEEE 802.3 clauses 3-4).
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::source::{FrameSource, SourceStats};
use crate::sys;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes a frame costs on the wire beyond its own (8 preamble + SFD, 4 FCS, 12 inter-frame gap).
pub const WIRE_OVERHEAD: usize = 24;
/// Upper bound on the frames a replay may release (keeps every counter far from overflow).
pub const MAX_COUNT: u64 = 1 << 40;

/// How a replay runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayConfig {
    /// Line rate in Mb/s (10^6 bit/s); 0 releases every frame at once (the engine takes them as
    /// fast as it can and nothing is dropped at the source).
    pub rate_mbps: f64,
    /// Frames to release in all, cycling through the pool.
    pub count: u64,
    /// Frames the simulated NIC ring holds for a late engine before it drops (paced runs).
    pub rx_ring: usize,
    /// Keep up to this many transmitted frames (see [`ReplayHandle::captured`]).
    pub capture_tx: usize,
    /// Hold every frame back until [`ReplayHandle::go`] is called (so that a test can bind and
    /// post before the first frame arrives).
    pub gated: bool,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            rate_mbps: 0.0,
            count: 0,
            rx_ring: 4096,
            capture_tx: 0,
            gated: false,
        }
    }
}

/// Progress of a replay, readable from other threads while the engine owns the source.
#[derive(Debug, Default)]
pub struct ReplayShared {
    go: std::sync::atomic::AtomicBool,
    handed: AtomicU64,
    dropped: AtomicU64,
    tx_frames: AtomicU64,
    tx_bytes: AtomicU64,
    captured: Mutex<Vec<Vec<u8>>>,
}

/// A handle on a running replay.
#[derive(Debug, Clone)]
pub struct ReplayHandle(Arc<ReplayShared>, u64);

impl ReplayHandle {
    /// Open the gate of a gated replay: the schedule starts now.
    pub fn go(&self) {
        self.0.go.store(true, Ordering::Release);
    }
    /// Frames handed to the engine plus frames dropped: once this equals the count, the replay
    /// is over.
    pub fn finished(&self) -> bool {
        self.0.handed.load(Ordering::Acquire) + self.0.dropped.load(Ordering::Acquire) >= self.1
    }
    /// Frames handed to the engine so far.
    pub fn handed(&self) -> u64 {
        self.0.handed.load(Ordering::Acquire)
    }
    /// Frames dropped because the engine was too far behind.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Acquire)
    }
    /// Frames and bytes transmitted through the source.
    pub fn transmitted(&self) -> (u64, u64) {
        (
            self.0.tx_frames.load(Ordering::Acquire),
            self.0.tx_bytes.load(Ordering::Acquire),
        )
    }
    /// Take the captured transmitted frames.
    pub fn captured(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.captured.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The replay source.
pub struct ReplaySource {
    frames: Arc<Vec<Vec<u8>>>,
    config: ReplayConfig,
    /// Release offset of frame i of a lap (ns from the lap's start), and a lap's duration.
    offsets: Vec<f64>,
    lap_ns: f64,
    start_ns: Option<u64>,
    /// Frames released so far by the schedule / taken by the engine (or dropped).
    released: u64,
    taken: u64,
    stats: SourceStats,
    shared: Arc<ReplayShared>,
}

impl ReplaySource {
    /// A replay of `frames` (cycled) under `config`. Errors name the bad setting.
    pub fn new(frames: Arc<Vec<Vec<u8>>>, config: ReplayConfig) -> OnloadResult<Self> {
        let bad = |m: String| Err(OnloadError::InvalidArgument(m));
        if frames.is_empty() && config.count > 0 {
            return bad("replay: the frame pool is empty".into());
        }
        if !(config.rate_mbps.is_finite() && (0.0..=1e7).contains(&config.rate_mbps)) {
            return bad(format!(
                "replay rate_mbps {}: expected 0 (unpaced) ..= 10,000,000",
                config.rate_mbps
            ));
        }
        if config.count > MAX_COUNT {
            return bad(format!("replay count {}: at most 2^40", config.count));
        }
        if !(1..=1 << 20).contains(&config.rx_ring) {
            return bad(format!(
                "replay rx_ring {}: expected 1 ..= 1048576",
                config.rx_ring
            ));
        }
        if config.capture_tx > 1 << 20 {
            return bad(format!(
                "replay capture_tx {}: at most 1048576",
                config.capture_tx
            ));
        }
        let mut offsets = Vec::with_capacity(frames.len());
        let mut t = 0.0f64;
        for f in frames.iter() {
            offsets.push(t);
            if config.rate_mbps > 0.0 {
                let bits = ((f.len().max(60) + WIRE_OVERHEAD) * 8) as f64;
                t += bits * 1e3 / config.rate_mbps; // bits / (Mb/s) in ns
            }
        }
        Ok(ReplaySource {
            frames,
            config,
            offsets,
            lap_ns: t,
            start_ns: None,
            released: 0,
            taken: 0,
            stats: SourceStats::default(),
            shared: Arc::new(ReplayShared::default()),
        })
    }

    /// A handle to follow the replay from another thread.
    pub fn handle(&self) -> ReplayHandle {
        ReplayHandle(self.shared.clone(), self.config.count)
    }

    fn release_ns(&self, i: u64) -> u64 {
        let k = self.frames.len() as u64;
        let lap = (i / k) as f64 * self.lap_ns;
        self.start_ns.unwrap_or(0) + (lap + self.offsets[(i % k) as usize]) as u64
    }
}

impl FrameSource for ReplaySource {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn poll(&mut self, max: usize, deliver: &mut dyn FnMut(&[u8], u64)) -> OnloadResult<usize> {
        if self.config.gated && !self.shared.go.load(Ordering::Acquire) {
            return Ok(0);
        }
        let now = sys::now_ns();
        let start = *self.start_ns.get_or_insert(now);
        let paced = self.config.rate_mbps > 0.0;
        if paced {
            while self.released < self.config.count && self.release_ns(self.released) <= now {
                self.released += 1;
            }
            // The NIC ring holds rx_ring frames; older ones were overwritten.
            let backlog = self.released - self.taken;
            if backlog > self.config.rx_ring as u64 {
                let lost = backlog - self.config.rx_ring as u64;
                self.taken += lost;
                self.stats.rx_dropped += lost;
                self.shared.dropped.fetch_add(lost, Ordering::Release);
            }
        } else {
            self.released = self.config.count;
        }
        let k = self.frames.len() as u64;
        let mut n = 0;
        while n < max && self.taken < self.released {
            let i = self.taken;
            let at = if paced {
                self.release_ns(i)
            } else {
                now.max(start)
            };
            deliver(&self.frames[(i % k) as usize], at);
            self.taken += 1;
            n += 1;
        }
        self.stats.rx_frames += n as u64;
        if n > 0 {
            self.shared.handed.fetch_add(n as u64, Ordering::Release);
        }
        Ok(n)
    }

    fn transmit(&mut self, frame: &[u8]) -> OnloadResult<()> {
        self.stats.tx_frames += 1;
        if self.config.capture_tx > 0 {
            let mut c = self
                .shared
                .captured
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if c.len() < self.config.capture_tx {
                c.push(frame.to_vec());
            }
        }
        self.shared
            .tx_bytes
            .fetch_add(frame.len() as u64, Ordering::Relaxed);
        self.shared.tx_frames.fetch_add(1, Ordering::Release);
        Ok(())
    }

    fn stats(&self) -> SourceStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(n: usize, len: usize) -> Arc<Vec<Vec<u8>>> {
        Arc::new((0..n).map(|i| vec![i as u8; len]).collect())
    }

    #[test]
    fn unpaced_releases_everything_in_order() {
        let mut s = ReplaySource::new(
            frames(3, 64),
            ReplayConfig {
                count: 7,
                ..Default::default()
            },
        )
        .unwrap();
        let h = s.handle();
        let mut seen = Vec::new();
        while s.poll(2, &mut |f, _| seen.push(f[0])).unwrap() > 0 {}
        assert_eq!(seen, vec![0, 1, 2, 0, 1, 2, 0]);
        assert!(h.finished());
        assert_eq!(s.stats().rx_dropped, 0);
    }

    #[test]
    fn paced_release_follows_the_line_rate_and_a_late_engine_loses_frames() {
        // 1000-byte frames at 10 Mb/s: (1000 + 24) * 8 bits = 819.2 us each.
        let mut s = ReplaySource::new(
            frames(1, 1000),
            ReplayConfig {
                rate_mbps: 10.0,
                count: 100,
                rx_ring: 2,
                ..Default::default()
            },
        )
        .unwrap();
        let mut times = Vec::new();
        assert_eq!(s.poll(10, &mut |_, t| times.push(t)).unwrap(), 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        // About 6 frames are due; the ring keeps 2 and the rest are lost.
        let n = s.poll(10, &mut |_, t| times.push(t)).unwrap();
        assert_eq!(n, 2);
        assert!(s.stats().rx_dropped >= 3, "{:?}", s.stats());
        assert_eq!(times[2] - times[1], 819_200);
    }

    #[test]
    fn bad_settings_are_named() {
        let e = |c: ReplayConfig| {
            ReplaySource::new(frames(1, 60), c)
                .err()
                .unwrap()
                .to_string()
        };
        assert!(e(ReplayConfig {
            rate_mbps: -1.0,
            ..Default::default()
        })
        .contains("rate_mbps"));
        assert!(e(ReplayConfig {
            rx_ring: 0,
            ..Default::default()
        })
        .contains("rx_ring"));
        assert!(ReplaySource::new(
            Arc::new(vec![]),
            ReplayConfig {
                count: 1,
                ..Default::default()
            }
        )
        .is_err());
    }
}
