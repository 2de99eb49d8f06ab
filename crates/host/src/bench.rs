//! Timing kernels of the host benchmarks (section 4 of the paper), driven from Python through
//! [`run`]: a benchmark name plus a JSON spec in, JSON rows out.
//!
//! * `latency`: blocking copy (cpu: memcpy in the caller; thread: icopy then wait) vs size, with
//!   hot buffers (the same buffers every time) or cold ones (cycled through regions much larger
//!   than the last-level cache, as the paper moves its pointers through 64 MB buffers).
//! * `bandwidth`: a window of outstanding icopy operations (the paper's 128), then wait_all.
//! * `overlap`: the paper's Overlap = (Tcopy + Tcompute - Ttotal) / Tcopy, with a compute loop that
//!   touches no memory and takes about 1.5 x Tcopy.
//! * `pollution`: time per access of a cache-resident working set (a random chain of dependent
//!   loads over its lines) right after a large copy: no copy, an equally long idle wait, cpu
//!   copy, thread engine copy (streaming stores) and thread copy into the cache.
//! * `breakdown`: where a small asynchronous copy's time goes (submit, queueing, copy,
//!   completion), with the worker spinning (busy engine) or asleep (idle engine).
//!
//! Overlap and pollution figures are unstable on a busy machine (one preemption inside a short
//! measurement moves them far), so each of their points is measured `repeats` times: a row
//! reports the median over the repetitions, the spread (`*_lo` / `*_hi`: the smallest and largest
//! repetition) and `unstable = true` when the spread is too wide to trust ([`OVERLAP_TRUST`],
//! [`POLLUTION_TRUST`]).
//!
//! The calling thread is pinned to the first available core during a run and the engine's workers
//! to the last ones, so on a 2-core machine the engine owns the other core.
use crate::cancel::{Cancel, Never, SLICE};
use crate::engine::{EngineConfig, Op};
use crate::error::{HostError, Result};
use crate::runtime::Runtime;
use crate::sys;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cell::Cell;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a benchmark run measures (every field has a default).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Spec {
    /// Engines to measure, by registry name.
    pub engines: Vec<String>,
    /// Channels of the thread engine.
    pub channels: usize,
    /// Copy sizes in bytes (latency, bandwidth, overlap, breakdown).
    pub sizes: Vec<usize>,
    /// "hot" and/or "cold" (latency, overlap).
    pub cache: Vec<String>,
    /// Bytes of each of the source and destination regions that cold buffers cycle through.
    pub cold_region: usize,
    /// Outstanding operations in the bandwidth test.
    pub window: usize,
    /// Working-set sizes of the pollution test.
    pub ws_sizes: Vec<usize>,
    /// Size of the copy in the pollution test.
    pub copy_bytes: usize,
    /// Streaming-store threshold of the thread engine (None: the engine's default).
    pub nt_threshold: Option<usize>,
    /// Split threshold of the thread engine (None: the engine's default).
    pub split_threshold: Option<usize>,
    /// Bytes moved per (engine, size) point; sets the iteration count.
    pub budget_bytes: usize,
    /// Bounds on iterations per point.
    pub min_iters: usize,
    pub max_iters: usize,
    /// Samples per repetition of the pollution and overlap measurements.
    pub reps: usize,
    /// Independent repetitions of each overlap and pollution point (median and spread reported).
    pub repeats: usize,
    /// Run the caller and the engine workers with SCHED_FIFO priority (needs CAP_SYS_NICE), so
    /// that other tasks on a busy machine do not preempt the measurement.
    pub realtime: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            engines: vec!["cpu".into(), "thread".into()],
            channels: 1,
            sizes: vec![64, 4096, 65536, 1 << 20, 4 << 20],
            cache: vec!["hot".into(), "cold".into()],
            cold_region: 256 << 20,
            window: 128,
            ws_sizes: vec![512 << 10],
            copy_bytes: 64 << 20,
            nt_threshold: None,
            split_threshold: None,
            budget_bytes: 512 << 20,
            min_iters: 5,
            max_iters: 20_000,
            reps: 15,
            repeats: 5,
            realtime: false,
        }
    }
}

impl Spec {
    fn config(&self) -> EngineConfig {
        let mut c = EngineConfig {
            channels: self.channels,
            ..Default::default()
        };
        if let Some(t) = self.nt_threshold {
            c.nt_threshold = t;
        }
        if let Some(t) = self.split_threshold {
            c.split_threshold = t;
        }
        c
    }
    fn iters(&self, size: usize) -> usize {
        (self.budget_bytes / size.max(64)).clamp(self.min_iters.max(1), self.max_iters.max(1))
    }
    fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(HostError::InvalidConfig(m));
        if let Some(c) = self.cache.iter().find(|c| *c != "hot" && *c != "cold") {
            return bad(format!("cache '{c}': expected \"hot\" or \"cold\""));
        }
        if self.sizes.iter().any(|&s| s == 0 || s > 1 << 32) {
            return bad("sizes must be between 1 byte and 4 GiB".into());
        }
        if self.cold_region < 1 << 20 || self.cold_region > 8 << 30 {
            return bad(format!(
                "cold_region {}: expected 1 MiB ..= 8 GiB",
                self.cold_region
            ));
        }
        if !(1..=50).contains(&self.repeats) {
            return bad(format!("repeats {}: expected 1..=50", self.repeats));
        }
        if !(1..=10_000).contains(&self.reps) {
            return bad(format!("reps {}: expected 1..=10000", self.reps));
        }
        if self.window == 0 || self.window > 4096 {
            return bad(format!("window {}: expected 1..=4096", self.window));
        }
        if self
            .ws_sizes
            .iter()
            .any(|&s| !(4096..=1 << 30).contains(&s))
            || self.copy_bytes > 4 << 30
        {
            return bad("ws_sizes must be 4 KiB ..= 1 GiB and copy_bytes <= 4 GiB".into());
        }
        Ok(())
    }
}

/// Run benchmark `name` with `spec_json` (a JSON object of [`Spec`] fields); returns JSON rows.
pub fn run(name: &str, spec_json: &str) -> Result<String> {
    run_with(name, spec_json, &Never)
}

/// How the kernels learn that they should stop (Ctrl-C): asked between iterations, never inside
/// a timed region, and at most every [`SLICE`] (asking Python costs a GIL round trip).
struct Stop<'a> {
    cancel: &'a dyn Cancel,
    name: &'a str,
    next: Cell<Instant>,
}

impl Stop<'_> {
    fn check(&self) -> Result<()> {
        let now = Instant::now();
        if now < self.next.get() {
            return Ok(());
        }
        self.next.set(now + SLICE);
        if self.cancel.cancelled() {
            return Err(HostError::Stopped(format!("the {} benchmark", self.name)));
        }
        Ok(())
    }
}

/// As [`run`], stopping within about [`SLICE`] (plus one operation) when `cancel` says so.
pub fn run_with(name: &str, spec_json: &str, cancel: &dyn Cancel) -> Result<String> {
    let stop = &Stop {
        cancel,
        name,
        next: Cell::new(Instant::now()),
    };
    let spec: Spec = if spec_json.trim().is_empty() {
        Spec::default()
    } else {
        serde_json::from_str(spec_json)
            .map_err(|e| HostError::InvalidConfig(format!("benchmark spec: {e}")))?
    };
    spec.validate()?;
    let _pin = PinCaller::new(spec.realtime)?;
    let rows = match name {
        "latency" => latency(&spec, stop)?,
        "bandwidth" => bandwidth(&spec, stop)?,
        "overlap" => overlap(&spec, stop)?,
        "pollution" => pollution(&spec, stop)?,
        "breakdown" => breakdown(&spec, stop)?,
        other => {
            return Err(HostError::InvalidConfig(format!(
                "unknown benchmark '{other}' (known: latency, bandwidth, overlap, pollution, breakdown)"
            )))
        }
    };
    serde_json::to_string(&rows).map_err(|e| HostError::InvalidConfig(e.to_string()))
}

/// Pins the benchmark thread to the first core (optionally with real-time priority) for the
/// duration of a run, then restores its mask and policy.
struct PinCaller(Vec<usize>, bool);
impl PinCaller {
    fn new(realtime: bool) -> Result<Self> {
        let before = sys::current_affinity();
        if let Some(&c) = sys::available_cpus().first() {
            let _ = sys::pin_current_thread(c);
        }
        let pin = PinCaller(before, realtime);
        if realtime {
            sys::set_realtime(true).map_err(HostError::Os)?;
        }
        Ok(pin)
    }
}
impl Drop for PinCaller {
    fn drop(&mut self) {
        if self.1 {
            let _ = sys::set_realtime(false);
        }
        sys::set_affinity(&self.0);
    }
}

/// Sleep a little between repetitions. A real-time thread that never sleeps is throttled by
/// the kernel after 950 ms of every second (sched_rt_runtime_us), and the 50 ms during which
/// other tasks then run would land inside some measurement; sleeping between repetitions keeps
/// the thread under its budget, and whatever runs meanwhile happens before the warm-up.
fn breathe(spec: &Spec) {
    std::thread::sleep(Duration::from_millis(if spec.realtime { 4 } else { 1 }));
}

/// Between two measured points of a real-time run: a rest long enough to reset the RT budget
/// of the current one-second period (each point then warms up again).
fn rest_between_points(spec: &Spec) {
    if spec.realtime {
        std::thread::sleep(Duration::from_millis(60));
    }
}

/// A page-aligned, pre-faulted byte region.
struct Region {
    buf: Vec<u8>,
    off: usize,
    len: usize,
}

impl Region {
    fn new(len: usize, seed: u8) -> Self {
        let mut buf = vec![0u8; len + 4096];
        let off = (4096 - buf.as_ptr() as usize % 4096) % 4096;
        // Touch every page (and give the bytes a pattern) so page faults stay out of the timing.
        for (i, b) in buf.iter_mut().enumerate().step_by(64) {
            *b = (i as u8).wrapping_add(seed);
        }
        Region { buf, off, len }
    }
    fn ptr(&mut self, at: usize) -> *mut u8 {
        debug_assert!(at <= self.len);
        self.buf[self.off + at..].as_mut_ptr()
    }
}

/// Cold regions are big; keep the last pair for the next call of the same size.
static COLD: Mutex<Option<(Region, Region)>> = Mutex::new(None);

fn with_cold<T>(len: usize, f: impl FnOnce(&mut Region, &mut Region) -> T) -> T {
    let mut g = COLD.lock().unwrap_or_else(|e| e.into_inner());
    if g.as_ref().is_none_or(|(s, _)| s.len != len) {
        *g = None;
        *g = Some((Region::new(len, 1), Region::new(len, 2)));
    }
    let (s, d) = g.as_mut().expect("just filled");
    f(s, d)
}

/// Sorted-sample statistics.
fn stats(mut v: Vec<f64>) -> (f64, f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (q(0.5), q(0.99), mean, v[0])
}

/// The median and range of one figure over the repetitions of a point.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spread {
    median: f64,
    lo: f64,
    hi: f64,
}

fn spread(v: &[f64]) -> Spread {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Spread {
        median,
        lo: v[0],
        hi: v[n - 1],
    }
}

/// An overlap point is flagged unstable when its repetitions span more than this (overlap is a
/// fraction of the copy time: 0.2 = a fifth of the copy).
pub const OVERLAP_TRUST: f64 = 0.2;
/// A pollution point is flagged unstable when its repetitions' slowdown (vs_none) spans more than
/// this fraction of its median.
pub const POLLUTION_TRUST: f64 = 0.25;

/// Buffer pair provider: hot = the same pair each time; cold = the next slot of big regions.
struct Buffers {
    hot: Option<(Region, Region)>,
    size: usize,
    slot: usize,
    slots: usize,
}

impl Buffers {
    fn new(cache: &str, size: usize, cold_region: usize) -> Self {
        let stride = size.next_multiple_of(64);
        if cache == "hot" {
            Buffers {
                hot: Some((Region::new(size, 1), Region::new(size, 2))),
                size,
                slot: 0,
                slots: 1,
            }
        } else {
            Buffers {
                hot: None,
                size,
                slot: 0,
                slots: (cold_region / stride).max(1),
            }
        }
    }
    /// Source and destination pointers for the next operation.
    fn next(&mut self, cold_region: usize) -> (*const u8, *mut u8) {
        let stride = self.size.next_multiple_of(64);
        match &mut self.hot {
            Some((s, d)) => (s.ptr(0) as *const u8, d.ptr(0)),
            None => {
                let at = (self.slot % self.slots) * stride;
                self.slot += 1;
                with_cold(cold_region.max(stride), |s, d| {
                    (s.ptr(at) as *const u8, d.ptr(at))
                })
            }
        }
    }
}

/// A blocking copy the way each engine's benchmark does it: memcpy for cpu, icopy+wait otherwise.
///
/// # Safety
/// `src`/`dst` valid and disjoint for `len` bytes.
unsafe fn round_trip(rt: &Runtime, src: *const u8, dst: *mut u8, len: usize) -> Result<()> {
    if rt.name() == "cpu" {
        // SAFETY: forwarded caller guarantee; run_raw waits before returning.
        unsafe { rt.run_raw(Op::copy(src, dst, len)) }
    } else {
        // SAFETY: forwarded caller guarantee; we wait right away.
        let c = unsafe { rt.icopy_raw(src, dst, len, false) }?;
        rt.wait(c)
    }
}

#[derive(Serialize)]
struct LatencyRow {
    engine: String,
    channels: usize,
    size_bytes: usize,
    cache: String,
    latency_ns: f64,
    p99_ns: f64,
    mean_ns: f64,
    min_ns: f64,
    iters: usize,
}

fn latency(spec: &Spec, stop: &Stop) -> Result<Vec<Value>> {
    let mut rows = Vec::new();
    for engine in &spec.engines {
        let rt = Runtime::new(engine, &spec.config())?;
        for cache in &spec.cache {
            for &size in &spec.sizes {
                rest_between_points(spec);
                let mut bufs = Buffers::new(cache, size, spec.cold_region);
                let iters = spec.iters(size);
                // Warm up for at least 20 ms (and 50 operations): the engine's core may have been
                // idle, and a virtual CPU takes a while to come back to full speed.
                let warm = Instant::now();
                let mut n = 0;
                while n < iters.min(50)
                    || (warm.elapsed() < Duration::from_millis(20) && n < iters * 4)
                {
                    let (s, d) = bufs.next(spec.cold_region);
                    // SAFETY: the pointers come from live regions of at least `size` bytes.
                    unsafe { round_trip(&rt, s, d, size) }?;
                    n += 1;
                    stop.check()?;
                }
                let mut samples = Vec::with_capacity(iters);
                for _ in 0..iters {
                    let (s, d) = bufs.next(spec.cold_region);
                    let t = Instant::now();
                    // SAFETY: as above.
                    unsafe { round_trip(&rt, s, d, size) }?;
                    samples.push(t.elapsed().as_nanos() as f64);
                    stop.check()?;
                }
                let (p50, p99, mean, min) = stats(samples);
                rows.push(LatencyRow {
                    engine: engine.clone(),
                    channels: if engine == "cpu" { 0 } else { spec.channels },
                    size_bytes: size,
                    cache: cache.clone(),
                    latency_ns: p50,
                    p99_ns: p99,
                    mean_ns: mean,
                    min_ns: min,
                    iters,
                });
            }
        }
    }
    to_values(rows)
}

#[derive(Serialize)]
struct BandwidthRow {
    engine: String,
    channels: usize,
    size_bytes: usize,
    window: usize,
    bandwidth_mb_s: f64,
    bytes: usize,
    seconds: f64,
}

fn bandwidth(spec: &Spec, stop: &Stop) -> Result<Vec<Value>> {
    let mut rows = Vec::new();
    for engine in &spec.engines {
        let rt = Runtime::new(engine, &spec.config())?;
        for &size in &spec.sizes {
            rest_between_points(spec);
            let stride = size.next_multiple_of(64);
            let region = spec.cold_region.max(stride);
            let window = spec.window.min(region / stride).max(1);
            let windows = (spec.budget_bytes / (window * size)).clamp(2, 2000);
            let slots = region / stride;
            let mut slot = 0usize;
            let mut run_window = |rt: &Runtime| -> Result<()> {
                with_cold(region, |s, d| {
                    for _ in 0..window {
                        let at = (slot % slots) * stride;
                        slot += 1;
                        let (sp, dp) = (s.ptr(at) as *const u8, d.ptr(at));
                        if rt.name() == "cpu" {
                            // SAFETY: disjoint regions, in bounds; blocking.
                            unsafe { rt.run_raw(Op::copy(sp, dp, size)) }?;
                        } else {
                            // SAFETY: the regions stay alive (COLD lock held) until wait_all below.
                            unsafe { rt.icopy_raw(sp, dp, size, false) }?;
                        }
                    }
                    rt.wait_all()
                })
            };
            run_window(&rt)?; // warm-up
            let t = Instant::now();
            for _ in 0..windows {
                run_window(&rt)?;
                stop.check()?;
            }
            let secs = t.elapsed().as_secs_f64();
            let bytes = windows * window * size;
            rows.push(BandwidthRow {
                engine: engine.clone(),
                channels: if engine == "cpu" { 0 } else { spec.channels },
                size_bytes: size,
                window,
                bandwidth_mb_s: bytes as f64 / secs / 1e6,
                bytes,
                seconds: secs,
            });
        }
    }
    to_values(rows)
}

/// A compute loop that touches no memory: a dependent chain of multiply-adds.
#[inline(never)]
fn compute(iters: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for i in 0..iters {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(i | 1);
    }
    black_box(x)
}

/// Loop iterations per nanosecond of [`compute`] on this core.
fn calibrate_compute() -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        compute(2_000_000);
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    2_000_000.0 / best.max(1.0)
}

#[derive(Serialize)]
struct OverlapRow {
    engine: String,
    channels: usize,
    size_bytes: usize,
    cache: String,
    /// Median over the repetitions.
    overlap: f64,
    /// Smallest and largest repetition.
    overlap_lo: f64,
    overlap_hi: f64,
    /// The repetitions span more than OVERLAP_TRUST: do not trust this point.
    unstable: bool,
    repeats: usize,
    /// The same formula on the minimum of each time (robust to preemption on a busy machine).
    overlap_min: f64,
    t_copy_ns: f64,
    t_compute_ns: f64,
    t_total_ns: f64,
    reps: usize,
}

/// One repetition of an overlap point: (Tcopy, Tcompute, Ttotal) medians and minima.
struct OverlapRun {
    copy: (f64, f64),
    comp: (f64, f64),
    total: (f64, f64),
}

fn overlap_once(
    stop: &Stop,
    rt: &Runtime,
    bufs: &mut Buffers,
    spec: &Spec,
    size: usize,
    reps: usize,
    per_ns: f64,
) -> Result<OverlapRun> {
    // Tcopy: icopy immediately followed by wait (memcpy for cpu).
    let mut copy = Vec::with_capacity(reps);
    for i in 0..reps + 3 {
        let (s, d) = bufs.next(spec.cold_region);
        let t = Instant::now();
        // SAFETY: live regions of at least `size` bytes.
        unsafe { round_trip(rt, s, d, size) }?;
        if i >= 3 {
            copy.push(t.elapsed().as_nanos() as f64);
        }
        stop.check()?;
    }
    let (t_copy, _, _, t_copy_min) = stats(copy);
    let n = ((t_copy * 1.5).max(2_000.0) * per_ns) as u64;
    // Tcompute and Ttotal, interleaved so that drift hits both alike.
    let (mut comp, mut total) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for i in 0..reps + 3 {
        let t = Instant::now();
        compute(n);
        let t_comp = t.elapsed().as_nanos() as f64;
        let (s, d) = bufs.next(spec.cold_region);
        let t = Instant::now();
        if rt.name() == "cpu" {
            // SAFETY: live regions; the cpu engine's copy is blocking.
            unsafe { rt.run_raw(Op::copy(s, d, size)) }?;
            compute(n);
        } else {
            // SAFETY: live regions; waited below before the next use.
            let c = unsafe { rt.icopy_raw(s, d, size, false) }?;
            compute(n);
            rt.wait(c)?;
        }
        if i >= 3 {
            comp.push(t_comp);
            total.push(t.elapsed().as_nanos() as f64);
        }
        stop.check()?;
    }
    let ((t_compute, _, _, comp_min), (t_total, _, _, total_min)) = (stats(comp), stats(total));
    Ok(OverlapRun {
        copy: (t_copy, t_copy_min),
        comp: (t_compute, comp_min),
        total: (t_total, total_min),
    })
}

fn overlap(spec: &Spec, stop: &Stop) -> Result<Vec<Value>> {
    let per_ns = calibrate_compute();
    let mut rows = Vec::new();
    for engine in &spec.engines {
        let rt = Runtime::new(engine, &spec.config())?;
        for cache in &spec.cache {
            for &size in &spec.sizes {
                rest_between_points(spec);
                let mut bufs = Buffers::new(cache, size, spec.cold_region);
                // The iteration budget of a point is shared by its repetitions.
                let reps = (spec.iters(size) / spec.repeats)
                    .clamp(spec.reps.max(3), spec.reps.max(3) * 20);
                let mut runs = Vec::with_capacity(spec.repeats);
                for _ in 0..spec.repeats {
                    runs.push(overlap_once(
                        stop, &rt, &mut bufs, spec, size, reps, per_ns,
                    )?);
                    // Only a real-time caller needs the pause (the RT throttle); otherwise the
                    // next repetition follows at once, as the samples of one run do.
                    if spec.realtime {
                        breathe(spec);
                    }
                }
                let per_run: Vec<f64> = runs
                    .iter()
                    .map(|r| (r.copy.0 + r.comp.0 - r.total.0) / r.copy.0)
                    .collect();
                let ov = spread(&per_run);
                let med = |f: fn(&OverlapRun) -> f64| {
                    spread(&runs.iter().map(f).collect::<Vec<_>>()).median
                };
                let min = |f: fn(&OverlapRun) -> f64| runs.iter().map(f).fold(f64::MAX, f64::min);
                let (c_min, p_min, t_min) =
                    (min(|r| r.copy.1), min(|r| r.comp.1), min(|r| r.total.1));
                rows.push(OverlapRow {
                    engine: engine.clone(),
                    channels: if engine == "cpu" { 0 } else { spec.channels },
                    size_bytes: size,
                    cache: cache.clone(),
                    overlap: ov.median,
                    overlap_lo: ov.lo,
                    overlap_hi: ov.hi,
                    unstable: ov.hi - ov.lo > OVERLAP_TRUST,
                    repeats: spec.repeats,
                    overlap_min: (c_min + p_min - t_min) / c_min,
                    t_copy_ns: med(|r| r.copy.0),
                    t_compute_ns: med(|r| r.comp.0),
                    t_total_ns: med(|r| r.total.0),
                    reps,
                });
            }
        }
    }
    to_values(rows)
}

/// A working set of 64-byte lines linked into one random cycle: each line's first word holds
/// the index of the next line. Walking it is a chain of dependent loads that hardware
/// prefetchers cannot predict, so the time per access is the latency of wherever the lines are
/// (L1/L2, L3 or DRAM): the walk measures how much of the set the caches still hold.
fn chain(ws_bytes: usize) -> Vec<u64> {
    let lines = ws_bytes / 64;
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for k in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(k, (x % (k as u64 + 1)) as usize);
    }
    let mut ws = vec![0u64; lines * 8];
    for k in 0..lines {
        ws[order[k] * 8] = order[(k + 1) % lines] as u64;
    }
    ws
}

/// Follow the chain once around (one dependent load per line).
#[inline(never)]
fn walk(ws: &[u64]) -> u64 {
    let mut i = 0usize;
    for _ in 0..ws.len() / 8 {
        i = ws[i * 8] as usize;
    }
    black_box(i as u64)
}

#[derive(Serialize)]
struct PollutionRow {
    engine: String,
    case: String,
    ws_bytes: usize,
    size_bytes: usize,
    /// Medians over the repetitions.
    access_ns: f64,
    walk_ns: f64,
    vs_none: f64,
    /// Smallest and largest repetition of vs_none.
    vs_none_lo: f64,
    vs_none_hi: f64,
    /// The repetitions' vs_none spans more than POLLUTION_TRUST of its median.
    unstable: bool,
    repeats: usize,
    /// As access_ns / vs_none but from the fastest repetition of each case.
    access_min_ns: f64,
    vs_none_min: f64,
    reps: usize,
}

fn pollution(spec: &Spec, stop: &Stop) -> Result<Vec<Value>> {
    // The caller spin-waits for the engine's copy (instead of sleeping), so that no other task
    // runs on its core in the meantime and the only cache traffic is the copy's own.
    let thread = Runtime::new(
        "thread",
        &EngineConfig {
            wait_spin_us: 1_000_000,
            ..spec.config()
        },
    )?;
    let cpu = Runtime::new("cpu", &EngineConfig::default())?;
    let size = spec.copy_bytes;
    let mut src = Region::new(size, 3);
    let mut dst = Region::new(size, 4);
    // "idle" is the control for the passage of time: the caller spins (touching no memory) for as
    // long as the engine's copy takes. On a quiet machine it equals "none"; if it does not, other
    // tasks on the caller's core evict the working set during any wait, copy or not.
    let cases = ["none", "idle", "cpu", "thread", "thread_cache"];
    let t = Instant::now();
    // SAFETY: src/dst are live, disjoint regions of `size` bytes; blocking call.
    unsafe { thread.run_raw(Op::copy(src.ptr(0), dst.ptr(0), size)) }?;
    let mut copy_time = t.elapsed();
    let mut rows = Vec::new();
    for &ws_bytes in &spec.ws_sizes {
        let ws_bytes = ws_bytes.next_multiple_of(4096);
        let ws = chain(ws_bytes);
        let lines = (ws_bytes / 64) as f64;
        // Per repetition and case: the median walk; across repetitions: the minimum walk.
        let mut per_rep: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
        let mut minima = vec![f64::MAX; cases.len()];
        for _ in 0..spec.repeats {
            let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
            for _ in 0..spec.reps.max(3) {
                for (k, case) in cases.iter().enumerate() {
                    stop.check()?;
                    breathe(spec);
                    for _ in 0..3 {
                        walk(&ws); // make the working set cache-resident
                    }
                    let (s, d) = (src.ptr(0) as *const u8, dst.ptr(0));
                    let op = Op::copy(s, d, size);
                    match *case {
                        "none" => {}
                        "idle" => {
                            let t = Instant::now();
                            while t.elapsed() < copy_time {
                                std::hint::spin_loop();
                            }
                        }
                        // SAFETY: src/dst are live, disjoint regions of `size` bytes; blocking calls.
                        "cpu" => unsafe { cpu.run_raw(op) }?,
                        "thread" => {
                            let t = Instant::now();
                            // SAFETY: as above.
                            unsafe { thread.run_raw(op) }?;
                            copy_time = t.elapsed();
                        }
                        // SAFETY: as above.
                        _ => unsafe { thread.run_raw(op.in_cache(true)) }?,
                    }
                    let t = Instant::now();
                    walk(&ws);
                    samples[k].push(t.elapsed().as_nanos() as f64);
                }
            }
            for (k, v) in samples.into_iter().enumerate() {
                let (median, _, _, min) = stats(v);
                per_rep[k].push(median);
                minima[k] = minima[k].min(min);
            }
        }
        let medians: Vec<f64> = per_rep.iter().map(|v| spread(v).median).collect();
        for (k, case) in cases.iter().enumerate() {
            let ratios: Vec<f64> = per_rep[k]
                .iter()
                .zip(&per_rep[0])
                .map(|(c, none)| c / none)
                .collect();
            let vs = spread(&ratios);
            rows.push(PollutionRow {
                engine: match *case {
                    "none" | "idle" => "none".into(),
                    "cpu" => "cpu".into(),
                    _ => "thread".into(),
                },
                case: case.to_string(),
                ws_bytes,
                size_bytes: if *case == "none" || *case == "idle" {
                    0
                } else {
                    size
                },
                access_ns: medians[k] / lines,
                walk_ns: medians[k],
                vs_none: vs.median,
                vs_none_lo: vs.lo,
                vs_none_hi: vs.hi,
                unstable: (vs.hi - vs.lo) > POLLUTION_TRUST * vs.median,
                repeats: spec.repeats,
                access_min_ns: minima[k] / lines,
                vs_none_min: minima[k] / minima[0],
                reps: spec.reps.max(3),
            });
        }
    }
    to_values(rows)
}

#[derive(Serialize)]
struct BreakdownRow {
    engine: String,
    size_bytes: usize,
    worker: String,
    submit_ns: f64,
    queue_ns: f64,
    copy_ns: f64,
    complete_ns: f64,
    /// A copy's total less its four traced parts (the call into `icopy` before its first stamp
    /// and the return from `wait` after its last): each column is its own median, so the parts
    /// of one copy add up to its total but the medians need not.
    other_ns: f64,
    total_ns: f64,
    iters: usize,
}

fn breakdown(spec: &Spec, stop: &Stop) -> Result<Vec<Value>> {
    let mut rows = Vec::new();
    for engine in &spec.engines {
        let rt = Runtime::new(engine, &spec.config())?;
        let cfg = rt.config().clone();
        for &size in &spec.sizes {
            let mut src = Region::new(size, 5);
            let mut dst = Region::new(size, 6);
            // The worker's idle state when the copy arrives: still spinning (back-to-back copies),
            // napping (a gap longer than the spin), or parked (a gap longer than park_after).
            let states: &[(&str, u64)] = if engine == "cpu" {
                &[("caller", 0)]
            } else {
                &[
                    ("spinning", 0),
                    ("napping", cfg.spin_us * 3 + 100),
                    ("parked", cfg.park_after_us + 3000),
                ]
            };
            for &(state, gap_us) in states {
                let gap = Duration::from_micros(gap_us);
                let iters = match state {
                    "parked" => spec
                        .iters(size)
                        .clamp(3, 40)
                        .min((spec.max_iters / 10).max(3)),
                    "napping" => spec.iters(size).min(300),
                    _ => spec.iters(size).min(5000),
                };
                let mut parts: [Vec<f64>; 6] = Default::default();
                let warm = if gap_us > 0 { 1 } else { 10 };
                for i in 0..iters + warm {
                    stop.check()?;
                    if gap_us > 0 {
                        std::thread::sleep(gap);
                    }
                    let op = Op::copy(src.ptr(0), dst.ptr(0), size);
                    let t = Instant::now();
                    // SAFETY: live, disjoint regions; waited right below.
                    let c = unsafe { rt.submit_raw(&[op], true) }?[0];
                    let tr = rt.wait_traced(c)?;
                    let total = t.elapsed().as_nanos() as f64;
                    if i >= warm {
                        let vals = [tr.submit_ns, tr.queue_ns, tr.copy_ns, tr.complete_ns];
                        for (p, v) in parts.iter_mut().zip(vals) {
                            p.push(v as f64);
                        }
                        let traced: f64 = vals.iter().map(|&v| v as f64).sum();
                        parts[4].push((total - traced).max(0.0));
                        parts[5].push(total);
                    }
                }
                let [a, b, c, d, o, e] = parts.map(|v| stats(v).0);
                rows.push(BreakdownRow {
                    engine: engine.clone(),
                    size_bytes: size,
                    worker: state.into(),
                    submit_ns: a,
                    queue_ns: b,
                    copy_ns: c,
                    complete_ns: d,
                    other_ns: o,
                    total_ns: e,
                    iters,
                });
            }
        }
    }
    to_values(rows)
}

fn to_values<T: Serialize>(rows: Vec<T>) -> Result<Vec<Value>> {
    rows.into_iter()
        .map(|r| serde_json::to_value(r).map_err(|e| HostError::InvalidConfig(e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> String {
        r#"{"sizes":[64,65536],"cold_region":4194304,"budget_bytes":1048576,"min_iters":3,"max_iters":50,
            "reps":3,"ws_sizes":[65536],"copy_bytes":2097152}"#
            .into()
    }

    #[test]
    fn every_benchmark_runs_and_reports_its_figure() {
        for (name, field) in [
            ("latency", "latency_ns"),
            ("bandwidth", "bandwidth_mb_s"),
            ("overlap", "overlap"),
            ("pollution", "access_ns"),
            ("breakdown", "total_ns"),
        ] {
            let rows: Vec<Value> = serde_json::from_str(&run(name, &quick()).unwrap()).unwrap();
            assert!(!rows.is_empty(), "{name}");
            for r in &rows {
                assert!(
                    r["engine"].is_string() && r["size_bytes"].is_u64(),
                    "{name}: {r}"
                );
                assert!(
                    r[field].as_f64().is_some_and(|v| v.is_finite()),
                    "{name}: {r}"
                );
            }
        }
    }

    #[test]
    fn spread_is_median_and_range() {
        assert_eq!(
            spread(&[3.0, -1.7, 4.6, 0.9, 1.0]),
            Spread {
                median: 1.0,
                lo: -1.7,
                hi: 4.6
            }
        );
        assert_eq!(spread(&[2.0, 1.0]).median, 1.5);
    }

    #[test]
    fn overlap_and_pollution_rows_report_repeats_and_spread() {
        let spec = quick().replace("\"reps\":3", "\"reps\":3,\"repeats\":3");
        for (name, fig) in [("overlap", "overlap"), ("pollution", "vs_none")] {
            let rows: Vec<Value> = serde_json::from_str(&run(name, &spec).unwrap()).unwrap();
            for r in &rows {
                let g = |k: &str| r[k].as_f64().unwrap();
                let (lo, mid, hi) = (g(&format!("{fig}_lo")), g(fig), g(&format!("{fig}_hi")));
                assert!(lo <= mid && mid <= hi, "{name}: {r}");
                assert_eq!(r["repeats"], 3, "{name}: {r}");
                let wide = if name == "overlap" {
                    hi - lo > OVERLAP_TRUST
                } else {
                    hi - lo > POLLUTION_TRUST * mid
                };
                assert_eq!(r["unstable"].as_bool(), Some(wide), "{name}: {r}");
            }
        }
        assert!(run("overlap", r#"{"repeats":0}"#)
            .unwrap_err()
            .to_string()
            .contains("repeats"));
    }

    #[test]
    fn every_benchmark_stops_when_cancelled() {
        let stop = crate::cancel::Flag::default();
        stop.raise();
        for name in ["latency", "bandwidth", "overlap", "pollution", "breakdown"] {
            let e = run_with(name, &quick(), &stop).unwrap_err().to_string();
            assert!(e.contains("interrupted"), "{name}: {e}");
        }
    }

    #[test]
    fn bad_specs_are_clear_errors() {
        assert!(run("nope", "{}")
            .unwrap_err()
            .to_string()
            .contains("unknown benchmark"));
        assert!(run("latency", r#"{"cache":["warm"]}"#)
            .unwrap_err()
            .to_string()
            .contains("warm"));
        assert!(run("latency", r#"{"sizez":[1]}"#)
            .unwrap_err()
            .to_string()
            .contains("sizez"));
        assert!(run("latency", r#"{"sizes":[0]}"#).is_err());
    }
}
