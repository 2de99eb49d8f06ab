//! `movelab bench host onload`'s timing loops: the paper's three configurations on this
//! machine, receive and transmit, against UDP payload size, on the replay or the veth source.
//!
//! * `kernel` (the paper's emu nic): the application uses a kernel UDP socket (`recvmmsg` /
//!   `sendmmsg`); the frames come from a "wire" thread on the engine core sending with kernel
//!   UDP sockets (over loopback for replay, from the peer namespace for veth).
//! * `softnic`: the engine verifies and copies each frame into a buffer pool; the host core
//!   demultiplexes and copies into the application's buffer ([`crate::onload::softnic`]).
//! * `onload`: the engine delivers straight into registered application buffers (mapping
//!   cache on); `onload-nocache`: it writes every payload with `process_vm_writev` (off).
//!
//! The host thread runs on `host_cpu`, the engine (or the wire thread) on `engine_cpu`.
//! CPU time is each thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID); with veth and `kernel`,
//! the protocol processing is steered to the host core by RPS and the host core's softirq time
//! (sampled from /proc/stat) is reported beside the host's. Every received payload is checked
//! byte for byte.
use crate::onload::engine::{Delivery, OnloadConfig, OnloadEngine};
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::frame::{self, Flow};
use crate::onload::kernel_udp::{self, Receiver};
use crate::onload::pattern;
use crate::onload::socket::Access;
use crate::onload::softnic::SoftnicHost;
use crate::onload::source::FrameSource;
use crate::onload::source_replay::{ReplayConfig, ReplayHandle, ReplaySource, WIRE_OVERHEAD};
use crate::onload::source_veth::{self, Side, VethLab, VethSource};
use crate::onload::spec::REPLAY_PEER;
use crate::onload::wait::{pthread_cpu_ns, realtime_offset_ns, thread_cpu_ns};
use crate::sys;
use serde::{Deserialize, Serialize};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::OwnedFd;
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to measure (every field has a default).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BenchSpec {
    /// `rx` and/or `tx`.
    pub directions: Vec<String>,
    /// `kernel`, `softnic`, `onload`, `onload-nocache`.
    pub configs: Vec<String>,
    /// `replay` and/or `veth`.
    pub sources: Vec<String>,
    /// UDP payload sizes in bytes (1 ..= 8972).
    pub sizes: Vec<usize>,
    /// Measured seconds per point.
    pub seconds: f64,
    /// Offered line rate in Mb/s of the receive path's sender (0: as fast as it can).
    pub rate_mbps: f64,
    /// Core of the application thread (default: the first) and of the engine / wire thread
    /// (default: the last).
    pub host_cpu: Option<usize>,
    pub engine_cpu: Option<usize>,
    /// Receive buffers posted (and sends in flight) at once.
    pub window: usize,
    /// Cached (true, the paper's push) or streaming stores for the engine's payload copies.
    pub push: bool,
    /// Run the application, engine and wire threads with SCHED_FIFO priority (root), so that
    /// other tasks on a busy machine do not preempt them; points are then separated by a
    /// short pause to stay under the kernel's real-time throttle.
    pub realtime: bool,
}

impl Default for BenchSpec {
    fn default() -> Self {
        BenchSpec {
            directions: vec!["rx".into(), "tx".into()],
            configs: CONFIGS.iter().map(|s| s.to_string()).collect(),
            sources: vec!["replay".into()],
            sizes: vec![18, 64, 256, 512, 1024, 1472, 8972],
            seconds: 1.0,
            // The paper's link: gigabit Ethernet (IXP2350 <-> GbE switch <-> PC, section 5.1).
            rate_mbps: 1000.0,
            host_cpu: None,
            engine_cpu: None,
            window: 256,
            push: true,
            realtime: false,
        }
    }
}

/// The configurations, in the paper's order.
pub const CONFIGS: [&str; 4] = ["kernel", "softnic", "onload", "onload-nocache"];
/// Largest payload (a 9000-byte MTU jumbo frame).
pub const MAX_PAYLOAD: usize = 8972;

/// One measured point.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub direction: String,
    pub config: String,
    pub source: String,
    pub payload_bytes: usize,
    pub seconds: f64,
    /// Datagrams offered (sent by the wire / posted by the application) and completed.
    pub offered_packets: u64,
    pub packets: u64,
    pub offered_mbps: f64,
    /// UDP payload throughput (10^6 bit/s) and packets per second.
    pub throughput_mbps: f64,
    pub packets_per_s: f64,
    /// Fraction of offered datagrams not delivered (receive ring overflow, no buffer, socket
    /// buffer full, ...).
    pub loss: f64,
    /// Receive: per delivered packet; transmit: per packet the application sent.
    pub host_cpu_ns_per_packet: f64,
    /// Per packet delivered (receive) or transmitted by the engine / wire (transmit).
    pub engine_cpu_ns_per_packet: f64,
    /// Engine time on bursts with work, per packet (onload/softnic only).
    pub engine_busy_ns_per_packet: Option<f64>,
    pub wakeups_per_packet: f64,
    /// veth + kernel: softirq time /proc/stat sampled on the host core (the steered protocol
    /// processing), per packet. Tick-sampled; the part that ran while the application thread
    /// was on the core is already in `host_cpu_ns_per_packet`, so it is reported beside it,
    /// not added.
    pub host_softirq_ns_per_packet: Option<f64>,
    /// Delivery latency: from the frame's arrival at the host to the application holding it.
    pub latency_p50_ns: Option<u64>,
    pub latency_p99_ns: Option<u64>,
    /// Payloads that failed the byte-for-byte check (must be 0).
    pub corrupted: u64,
    pub host_cpu: Option<usize>,
    pub engine_cpu: Option<usize>,
    pub note: String,
}

impl BenchSpec {
    fn validate(&self) -> OnloadResult<()> {
        let bad = |m: String| Err(OnloadError::InvalidArgument(m));
        for d in &self.directions {
            if d != "rx" && d != "tx" {
                return bad(format!("direction '{d}': expected \"rx\" or \"tx\""));
            }
        }
        for c in &self.configs {
            if !CONFIGS.contains(&c.as_str()) {
                return bad(format!(
                    "config '{c}': expected one of {}",
                    CONFIGS.join(", ")
                ));
            }
        }
        for s in &self.sources {
            if s != "replay" && s != "veth" {
                return bad(format!("source '{s}': expected \"replay\" or \"veth\""));
            }
        }
        if let Some(s) = self.sizes.iter().find(|&&s| s == 0 || s > MAX_PAYLOAD) {
            return bad(format!("size {s}: expected 1 ..= {MAX_PAYLOAD} bytes"));
        }
        if !(0.01..=600.0).contains(&self.seconds) {
            return bad(format!("seconds {}: expected 0.01 ..= 600", self.seconds));
        }
        if !(self.rate_mbps.is_finite() && (0.0..=1e6).contains(&self.rate_mbps)) {
            return bad(format!(
                "rate_mbps {}: expected 0 ..= 1000000",
                self.rate_mbps
            ));
        }
        if !(8..=4096).contains(&self.window) {
            return bad(format!("window {}: expected 8 ..= 4096", self.window));
        }
        let cpus = sys::available_cpus();
        for c in [self.host_cpu, self.engine_cpu].into_iter().flatten() {
            if !cpus.contains(&c) {
                return bad(format!("cpu {c}: not an online core"));
            }
        }
        Ok(())
    }
    fn cores(&self) -> (usize, usize) {
        let cpus = sys::available_cpus();
        let host = self.host_cpu.unwrap_or(cpus[0]);
        let engine = self.engine_cpu.unwrap_or(*cpus.last().unwrap_or(&host));
        (host, engine)
    }
}

/// Can the veth source run here? Err: why not, in one line.
pub fn veth_available() -> Result<(), String> {
    VethLab::create(false)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Run every point of `spec_json`; returns the rows as JSON.
pub fn run(spec_json: &str) -> OnloadResult<String> {
    let spec: BenchSpec = if spec_json.trim().is_empty() {
        BenchSpec::default()
    } else {
        serde_json::from_str(spec_json)
            .map_err(|e| OnloadError::InvalidArgument(format!("onload benchmark spec: {e}")))?
    };
    spec.validate()?;
    let (host, engine) = spec.cores();
    let before = sys::current_affinity();
    let _ = sys::pin_current_thread(host);
    if spec.realtime {
        if let Err(e) = sys::set_realtime(true) {
            sys::set_affinity(&before);
            return Err(OnloadError::Os(e));
        }
    }
    let mut rows = Vec::new();
    let mut result = Ok(());
    'all: for source in &spec.sources {
        for direction in &spec.directions {
            for config in &spec.configs {
                for &size in &spec.sizes {
                    let p = Point {
                        spec: &spec,
                        direction,
                        config,
                        source,
                        size,
                        host,
                        engine,
                    };
                    if spec.realtime && !rows.is_empty() {
                        std::thread::sleep(Duration::from_millis(150));
                    }
                    if spec.realtime {
                        let _ = sys::set_realtime(p.realtime());
                    }
                    match p.run() {
                        Ok(r) => rows.push(r),
                        Err(e) => {
                            result = Err(e);
                            break 'all;
                        }
                    }
                }
            }
        }
    }
    if spec.realtime {
        let _ = sys::set_realtime(false);
    }
    sys::set_affinity(&before);
    result?;
    serde_json::to_string(&rows).map_err(|e| OnloadError::Os(format!("serialising rows: {e}")))
}

struct Point<'a> {
    spec: &'a BenchSpec,
    direction: &'a str,
    config: &'a str,
    source: &'a str,
    size: usize,
    host: usize,
    engine: usize,
}

/// Latency samples (bounded) and their percentiles.
struct Latency(Vec<u64>);

impl Latency {
    const CAP: usize = 1 << 20;
    fn add(&mut self, ns: u64) {
        if self.0.len() < Self::CAP {
            self.0.push(ns);
        }
    }
    fn percentiles(mut self) -> (Option<u64>, Option<u64>) {
        if self.0.is_empty() {
            return (None, None);
        }
        self.0.sort_unstable();
        let at = |q: f64| self.0[((self.0.len() - 1) as f64 * q).round() as usize];
        (Some(at(0.5)), Some(at(0.99)))
    }
}

/// Counters of an application loop.
#[derive(Default)]
struct AppCounts {
    packets: u64,
    corrupted: u64,
    host_cpu_ns: u64,
    secs: f64,
}

fn check(payload: &[u8], size: usize) -> bool {
    payload.len() == size
        && match pattern::seq_of(payload) {
            Some(seq) => pattern::matches(payload, seq),
            None => false,
        }
}

/// Per-core softirq time from /proc/stat, ns (USER_HZ = 100 ticks per second on Linux).
fn softirq_ns(cpu: usize) -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let tag = format!("cpu{cpu} ");
    s.lines()
        .find(|l| l.starts_with(&tag))
        .and_then(|l| l.split_whitespace().nth(7))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |t| t * 10_000_000)
}

/// A sender of datagrams on a kernel UDP socket, on its own pinned thread: paced at `rate`
/// Mb/s (wire bits of the frame that will carry it), or as fast as the kernel takes them.
struct Wire {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Wire {
    fn start(fd: OwnedFd, size: usize, rate_mbps: f64, cpu: usize, realtime: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let (st, se) = (stop.clone(), sent.clone());
        let thread = std::thread::spawn(move || {
            let _ = sys::pin_current_thread(cpu);
            if realtime {
                let _ = sys::set_realtime(true);
            }
            let pool: Vec<Vec<u8>> = (0..1024).map(|i| pattern::make(i, size)).collect();
            let bits = ((frame::frame_len(size) + WIRE_OVERHEAD) * 8) as f64;
            let ns_per = if rate_mbps > 0.0 {
                bits * 1e3 / rate_mbps
            } else {
                0.0
            };
            let t0 = Instant::now();
            let mut i = 0usize;
            while !st.load(Ordering::Relaxed) {
                let due = if ns_per > 0.0 {
                    let now = t0.elapsed().as_nanos() as f64;
                    ((now / ns_per) as usize).saturating_sub(i).min(32)
                } else {
                    32
                };
                if due == 0 {
                    std::hint::spin_loop();
                    continue;
                }
                let batch: Vec<&[u8]> = (0..due).map(|k| pool[(i + k) % 1024].as_slice()).collect();
                match kernel_udp::send_batch(&fd, &batch) {
                    Ok(0) => std::thread::yield_now(),
                    Ok(n) => {
                        i += n;
                        se.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(_) => break,
                }
            }
        });
        Wire {
            stop,
            sent,
            thread: Some(thread),
        }
    }
    fn cpu_ns(&self) -> u64 {
        self.thread
            .as_ref()
            .and_then(|t| pthread_cpu_ns(t.as_pthread_t()))
            .unwrap_or(0)
    }
    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
    fn stop(&mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.sent()
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A receiver on a kernel UDP socket on its own thread (the peer of the transmit tests):
/// counts and checks every datagram.
struct Sink {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(u64, u64)>>,
}

impl Sink {
    fn start(fd: OwnedFd, size: usize, cpu: usize, realtime: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let _ = sys::pin_current_thread(cpu);
            if realtime {
                let _ = sys::set_realtime(true);
            }
            let mut r = Receiver::new(32, size.max(64) + 64);
            let (mut got, mut bad) = (0u64, 0u64);
            let mut idle_since: Option<Instant> = None;
            loop {
                let n = r.recv(&fd, 5).unwrap_or(0);
                for i in 0..n {
                    got += 1;
                    if !check(r.payload(i), size) {
                        bad += 1;
                    }
                }
                if st.load(Ordering::Relaxed) {
                    // Drain what is still queued, then stop.
                    if n == 0
                        && idle_since.get_or_insert_with(Instant::now).elapsed()
                            > Duration::from_millis(20)
                    {
                        break;
                    }
                }
            }
            (got, bad)
        });
        Sink {
            stop,
            thread: Some(thread),
        }
    }
    fn finish(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or((0, 0))
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const PORT: u16 = 9000;
const TX_PORT: u16 = 6000;

impl Point<'_> {
    /// Real-time priority applies to the replay source only, and not to kernel transmit: where
    /// the kernel's stack carries the packets on a core a real-time thread keeps busy (veth's
    /// peer and engine share a core; a looped-back send's receive processing on the sender's
    /// core) its deferred work runs in ksoftirqd, an ordinary thread those threads would starve
    /// (packets then wait in the backlog and are dropped).
    fn realtime(&self) -> bool {
        self.spec.realtime
            && self.source == "replay"
            && !(self.config == "kernel" && self.direction == "tx")
    }

    fn row(&self) -> Row {
        Row {
            direction: self.direction.into(),
            config: self.config.into(),
            source: self.source.into(),
            payload_bytes: self.size,
            host_cpu: Some(self.host),
            engine_cpu: Some(self.engine),
            ..Row::default()
        }
    }

    fn run(&self) -> OnloadResult<Row> {
        let veth = self.source == "veth";
        let lab = if veth {
            Some(VethLab::create(self.config == "kernel")?)
        } else {
            None
        };
        let mut row = match (self.direction, self.config) {
            ("rx", "kernel") => self.rx_kernel(lab.as_ref())?,
            ("rx", _) => self.rx_engine(lab.as_ref())?,
            ("tx", "kernel") => self.tx_kernel(lab.as_ref())?,
            _ => self.tx_engine(lab.as_ref())?,
        };
        let secs = row.seconds.max(1e-9);
        let p = row.packets.max(1) as f64;
        let host_p = if self.direction == "tx" {
            row.offered_packets.max(1) as f64
        } else {
            p
        };
        row.packets_per_s = row.packets as f64 / secs;
        row.throughput_mbps = row.packets as f64 * self.size as f64 * 8.0 / secs / 1e6;
        row.offered_mbps = row.offered_packets as f64 * self.size as f64 * 8.0 / secs / 1e6;
        row.host_cpu_ns_per_packet /= host_p;
        row.engine_cpu_ns_per_packet /= p;
        row.wakeups_per_packet /= p;
        if let Some(b) = row.engine_busy_ns_per_packet.as_mut() {
            *b /= p;
        }
        Ok(row)
    }

    fn config(&self, veth: bool) -> OnloadConfig {
        OnloadConfig {
            cpu: Some(self.engine),
            push: self.spec.push,
            ring_capacity: self.spec.window.next_power_of_two(),
            // The engine owns its core (replay); with veth the peer shares that core, so the
            // engine sleeps briefly when idle instead of spinning the peer out.
            idle_spin_us: if veth { 20 } else { 60_000_000 },
            nap_us: 10,
            // Sleep as soon as nothing is there (as a blocked recvmmsg does).
            wait_spin_us: 0,
            realtime: self.realtime(),
            delivery: if self.config == "softnic" {
                Delivery::Pool {
                    buffers: self.spec.window.next_power_of_two(),
                }
            } else {
                Delivery::Direct
            },
            ..OnloadConfig::default()
        }
    }

    fn source_for(
        &self,
        lab: Option<&VethLab>,
        cfg: &OnloadConfig,
    ) -> OnloadResult<(Box<dyn FrameSource>, Option<ReplayHandle>)> {
        match lab {
            Some(l) => Ok((Box::new(VethSource::open(l, cfg.max_frame())?), None)),
            None => {
                let flow = Flow {
                    src_mac: cfg.peer_mac,
                    dst_mac: cfg.local_mac,
                    src: REPLAY_PEER,
                    dst: SocketAddrV4::new(cfg.local_ip, PORT),
                };
                let frames: Vec<Vec<u8>> = (0..1024u64)
                    .map(|i| frame::build(&flow, &pattern::make(i, self.size), i as u16))
                    .collect();
                let rate = if self.direction == "rx" {
                    self.spec.rate_mbps
                } else {
                    0.0
                };
                let src = ReplaySource::new(
                    Arc::new(frames),
                    ReplayConfig {
                        rate_mbps: rate,
                        count: if self.direction == "rx" {
                            crate::onload::source_replay::MAX_COUNT
                        } else {
                            0
                        },
                        rx_ring: 4096,
                        gated: true,
                        capture_tx: 0,
                    },
                )?;
                let h = src.handle();
                Ok((Box::new(src), Some(h)))
            }
        }
    }

    /// The peer's sending socket in namespace b (veth).
    fn peer_sender(lab: &VethLab) -> OnloadResult<OwnedFd> {
        lab.in_ns(Side::Peer, || {
            kernel_udp::udp_socket(
                SocketAddrV4::new(source_veth::PEER_IP, 40_000),
                Some(SocketAddrV4::new(source_veth::HOST_IP, PORT)),
                4 << 20,
            )
        })?
    }

    fn rx_engine(&self, lab: Option<&VethLab>) -> OnloadResult<Row> {
        let cfg = self.config(lab.is_some());
        let (source, replay) = self.source_for(lab, &cfg)?;
        let eng = OnloadEngine::start(cfg.clone(), source)?;
        let size = self.size;
        let mut lat = Latency(Vec::new());
        let mut c = AppCounts::default();
        let win = self.spec.window;
        let deadline_secs = self.spec.seconds;
        let mut row = self.row();
        if self.config == "softnic" {
            let pool = eng
                .pool()
                .ok_or_else(|| OnloadError::Os("no pool".into()))?;
            let mut host = SoftnicHost::new(pool, Duration::ZERO);
            host.bind(PORT)?;
            for _ in 0..win {
                host.post(PORT, vec![0u8; size.max(64)])?;
            }
            let mut wire = self.start_wire(lab, replay.as_ref())?;
            let (t0, cpu0, e0) = (Instant::now(), thread_cpu_ns(), eng.cpu_ns().unwrap_or(0));
            let st0 = eng.stats();
            while t0.elapsed().as_secs_f64() < deadline_secs {
                if let Some(d) = host.recv(Some(Duration::from_millis(5))) {
                    lat.add(sys::now_ns().saturating_sub(d.arrival_ns));
                    c.packets += 1;
                    if !check(&d.buf[..d.len], size) {
                        c.corrupted += 1;
                    }
                    host.post(PORT, d.buf)?;
                }
            }
            c.secs = t0.elapsed().as_secs_f64();
            c.host_cpu_ns = thread_cpu_ns() - cpu0;
            let st1 = eng.stats();
            row.engine_cpu_ns_per_packet = (eng.cpu_ns().unwrap_or(e0) - e0) as f64;
            row.engine_busy_ns_per_packet = Some((st1.busy_ns - st0.busy_ns) as f64);
            row.wakeups_per_packet = (st1.wakeups - st0.wakeups) as f64;
            let offered_by_wire = wire.as_mut().map(|w| w.stop());
            let report = eng.shutdown()?;
            // Frames still in the pool when the engine stopped count as delivered late.
            let mut late = 0;
            while let Some(d) = host.try_recv() {
                late += 1;
                if !check(&d.buf[..d.len], size) {
                    c.corrupted += 1;
                }
            }
            let offered =
                offered_by_wire.unwrap_or(report.source.rx_frames + report.source.rx_dropped);
            row.offered_packets = offered;
            row.loss = loss(offered, c.packets + late);
        } else {
            let access = if self.config == "onload-nocache" {
                Access::VmWritev {
                    pid: std::process::id() as i32,
                }
            } else {
                Access::Registered
            };
            let sock = eng.bind_with(PORT, access)?;
            let mut bufs: Vec<Vec<u8>> = (0..win).map(|_| vec![0u8; size.max(64)]).collect();
            for (i, b) in bufs.iter_mut().enumerate() {
                // SAFETY: the buffers outlive the socket (closed below before they drop).
                unsafe { sock.post_raw(b.as_mut_ptr(), b.len(), i as u64)? };
            }
            let mut wire = self.start_wire(lab, replay.as_ref())?;
            let (t0, cpu0, e0) = (Instant::now(), thread_cpu_ns(), eng.cpu_ns().unwrap_or(0));
            let st0 = eng.stats();
            while t0.elapsed().as_secs_f64() < deadline_secs {
                let Some(comp) = sock.recv_raw(Some(Duration::from_millis(5)))? else {
                    continue;
                };
                let mut next = Some(comp);
                while let Some(d) = next {
                    lat.add(sys::now_ns().saturating_sub(d.arrival_ns));
                    let b = &mut bufs[d.tag as usize];
                    c.packets += 1;
                    if !d.ok || !check(&b[..d.len], size) {
                        c.corrupted += 1;
                    }
                    // SAFETY: as above; the buffer is ours again until re-posted here.
                    unsafe { sock.post_raw(b.as_mut_ptr(), b.len(), d.tag)? };
                    next = sock.try_recv_raw();
                }
            }
            c.secs = t0.elapsed().as_secs_f64();
            c.host_cpu_ns = thread_cpu_ns() - cpu0;
            let st1 = eng.stats();
            row.engine_cpu_ns_per_packet = (eng.cpu_ns().unwrap_or(e0) - e0) as f64;
            row.engine_busy_ns_per_packet = Some((st1.busy_ns - st0.busy_ns) as f64);
            row.wakeups_per_packet = (st1.wakeups - st0.wakeups) as f64;
            let offered_by_wire = wire.as_mut().map(|w| w.stop());
            let report = eng.shutdown()?;
            let mut late = 0;
            while let Some(d) = sock.try_recv_raw() {
                late += 1;
                if !d.ok || !check(&bufs[d.tag as usize][..d.len], size) {
                    c.corrupted += 1;
                }
            }
            sock.close();
            let offered =
                offered_by_wire.unwrap_or(report.source.rx_frames + report.source.rx_dropped);
            row.offered_packets = offered;
            row.loss = loss(offered, c.packets + late);
            if report.stats.faults > 0 {
                row.note = format!("{} process_vm_writev failures", report.stats.faults);
            }
        }
        let (p50, p99) = lat.percentiles();
        row.latency_p50_ns = p50;
        row.latency_p99_ns = p99;
        row.packets = c.packets;
        row.corrupted = c.corrupted;
        row.seconds = c.secs;
        row.host_cpu_ns_per_packet = c.host_cpu_ns as f64;
        Ok(row)
    }

    /// Start the frames: open the replay's gate, or start the peer's sender (veth).
    fn start_wire(
        &self,
        lab: Option<&VethLab>,
        replay: Option<&ReplayHandle>,
    ) -> OnloadResult<Option<Wire>> {
        if let Some(h) = replay {
            h.go();
        }
        match lab {
            Some(l) => {
                let fd = Self::peer_sender(l)?;
                Ok(Some(Wire::start(
                    fd,
                    self.size,
                    self.spec.rate_mbps,
                    self.engine,
                    self.realtime(),
                )))
            }
            None => Ok(None),
        }
    }

    fn rx_kernel(&self, lab: Option<&VethLab>) -> OnloadResult<Row> {
        let size = self.size;
        let mut row = self.row();
        let (app, wire_fd, softirq_cpu) = match lab {
            Some(l) => {
                // The kernel's receive processing on the application's core (RPS).
                l.set_rps(Side::Host, 1u64 << self.host)?;
                let app = l.in_ns(Side::Host, || {
                    kernel_udp::udp_socket(
                        SocketAddrV4::new(source_veth::HOST_IP, PORT),
                        None,
                        4 << 20,
                    )
                })??;
                (app, Self::peer_sender(l)?, Some(self.host))
            }
            None => {
                let lo = Ipv4Addr::LOCALHOST;
                let app = kernel_udp::udp_socket(SocketAddrV4::new(lo, 0), None, 4 << 20)?;
                let port = kernel_udp::local_port(&app)?;
                let tx = kernel_udp::udp_socket(
                    SocketAddrV4::new(lo, 0),
                    Some(SocketAddrV4::new(lo, port)),
                    4 << 20,
                )?;
                (app, tx, None)
            }
        };
        let rt = realtime_offset_ns();
        let mut r = Receiver::new(32, size.max(64) + 64);
        let mut lat = Latency(Vec::new());
        let mut c = AppCounts::default();
        let mut wire = Wire::start(
            wire_fd,
            size,
            self.spec.rate_mbps,
            self.engine,
            self.realtime(),
        );
        let si0 = softirq_cpu.map_or(0, softirq_ns);
        let (t0, cpu0, e0) = (Instant::now(), thread_cpu_ns(), wire.cpu_ns());
        let sleeps0 = r.sleeps;
        while t0.elapsed().as_secs_f64() < self.spec.seconds {
            let n = r.recv(&app, 5)?;
            let now_rt = (sys::now_ns() as i64 + rt) as u64;
            for i in 0..n {
                lat.add(now_rt.saturating_sub(r.stamps[i]));
                c.packets += 1;
                if !check(r.payload(i), size) {
                    c.corrupted += 1;
                }
            }
        }
        c.secs = t0.elapsed().as_secs_f64();
        c.host_cpu_ns = thread_cpu_ns() - cpu0;
        let si = softirq_cpu.map_or(0, |cpu| softirq_ns(cpu).saturating_sub(si0));
        row.engine_cpu_ns_per_packet = wire.cpu_ns().saturating_sub(e0) as f64;
        row.wakeups_per_packet = (r.sleeps - sleeps0) as f64;
        let offered = wire.stop();
        // Drain what is still queued.
        let mut late = 0;
        loop {
            let n = r.recv(&app, 20)?;
            if n == 0 {
                break;
            }
            for i in 0..n {
                late += 1;
                if !check(r.payload(i), size) {
                    c.corrupted += 1;
                }
            }
        }
        row.offered_packets = offered;
        row.loss = loss(offered, c.packets + late);
        let (p50, p99) = lat.percentiles();
        row.latency_p50_ns = p50;
        row.latency_p99_ns = p99;
        row.packets = c.packets;
        row.corrupted = c.corrupted;
        row.seconds = c.secs;
        row.host_cpu_ns_per_packet = c.host_cpu_ns as f64;
        if softirq_cpu.is_some() {
            row.host_softirq_ns_per_packet = Some(si as f64 / c.packets.max(1) as f64);
        }
        row.note = if lab.is_some() {
            "kernel protocol processing steered to the host core (RPS); see host_softirq_ns_per_packet".into()
        } else {
            "loopback: the kernel's receive processing runs on the wire core, not the host's".into()
        };
        Ok(row)
    }

    fn tx_dest(lab: Option<&VethLab>) -> SocketAddrV4 {
        match lab {
            Some(_) => SocketAddrV4::new(source_veth::PEER_IP, TX_PORT),
            None => SocketAddrV4::new(REPLAY_PEER.ip().to_owned(), TX_PORT),
        }
    }

    /// The peer's receiving socket (veth) and its sink thread on the engine core.
    fn peer_sink(&self, lab: &VethLab) -> OnloadResult<Sink> {
        let fd = lab.in_ns(Side::Peer, || {
            kernel_udp::udp_socket(
                SocketAddrV4::new(source_veth::PEER_IP, TX_PORT),
                None,
                8 << 20,
            )
        })??;
        Ok(Sink::start(fd, self.size, self.engine, self.realtime()))
    }

    fn tx_engine(&self, lab: Option<&VethLab>) -> OnloadResult<Row> {
        let cfg = self.config(lab.is_some());
        let (source, _replay) = self.source_for(lab, &cfg)?;
        let eng = OnloadEngine::start(cfg.clone(), source)?;
        let size = self.size;
        let to = Self::tx_dest(lab);
        let sink = match lab {
            Some(l) => {
                // The peer's receive processing on the engine core, as a remote host's would be.
                l.set_rps(Side::Peer, 1u64 << self.engine)?;
                Some(self.peer_sink(l)?)
            }
            None => None,
        };
        let payloads: Vec<Vec<u8>> = (0..self.spec.window as u64)
            .map(|i| pattern::make(i, size))
            .collect();
        let mut row = self.row();
        let mut posted = 0u64;
        let (t0, cpu0, e0);
        let st0;
        if self.config == "softnic" {
            let mut host = SoftnicHost::new(
                eng.pool()
                    .ok_or_else(|| OnloadError::Os("no pool".into()))?,
                Duration::ZERO,
            );
            let flow = Flow {
                src_mac: cfg.local_mac,
                dst_mac: cfg.peer_mac,
                src: SocketAddrV4::new(cfg.local_ip, PORT),
                dst: to,
            };
            st0 = eng.stats();
            (t0, cpu0, e0) = (Instant::now(), thread_cpu_ns(), eng.cpu_ns().unwrap_or(0));
            let mut i = 0usize;
            while t0.elapsed().as_secs_f64() < self.spec.seconds {
                host.send(&flow, &payloads[i % payloads.len()], i as u16)?;
                i += 1;
                posted += 1;
            }
        } else {
            let access = if self.config == "onload-nocache" {
                Access::VmWritev {
                    pid: std::process::id() as i32,
                }
            } else {
                Access::Registered
            };
            let sock = eng.bind_with(PORT, access)?;
            st0 = eng.stats();
            (t0, cpu0, e0) = (Instant::now(), thread_cpu_ns(), eng.cpu_ns().unwrap_or(0));
            let mut free: Vec<usize> = (0..payloads.len()).collect();
            while t0.elapsed().as_secs_f64() < self.spec.seconds {
                while let Some(i) = free.pop() {
                    let p = &payloads[i];
                    // SAFETY: `payloads` outlives the socket and is never written.
                    unsafe { sock.send_raw(p.as_ptr(), p.len(), to, i as u64)? };
                    posted += 1;
                }
                if let Some(c) = sock.wait_sent(Some(Duration::from_millis(5)))? {
                    free.push(c.tag as usize);
                    while let Some(c) = sock.try_sent() {
                        free.push(c.tag as usize);
                    }
                }
            }
            // Let the sends in flight finish before the sockets' buffers go.
            while free.len() < payloads.len() {
                match sock.wait_sent(Some(Duration::from_millis(100)))? {
                    Some(c) => free.push(c.tag as usize),
                    None => break,
                }
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        let host_cpu = thread_cpu_ns() - cpu0;
        let st1 = eng.stats();
        row.engine_cpu_ns_per_packet = (eng.cpu_ns().unwrap_or(e0) - e0) as f64;
        let report = eng.shutdown()?;
        let sent = report.stats.tx_frames - st0.tx_frames;
        row.engine_busy_ns_per_packet = Some((st1.busy_ns - st0.busy_ns) as f64);
        row.wakeups_per_packet = (st1.wakeups - st0.wakeups) as f64;
        row.seconds = secs;
        row.host_cpu_ns_per_packet = host_cpu as f64;
        row.offered_packets = posted;
        match sink {
            Some(s) => {
                let (got, bad) = s.finish();
                row.packets = got;
                row.corrupted = bad;
                row.loss = loss(posted, got);
            }
            None => {
                row.packets = sent;
                row.loss = loss(posted, sent);
            }
        }
        Ok(row)
    }

    fn tx_kernel(&self, lab: Option<&VethLab>) -> OnloadResult<Row> {
        let size = self.size;
        let mut row = self.row();
        let (app, sink) = match lab {
            Some(l) => {
                l.set_rps(Side::Peer, 1u64 << self.engine)?;
                let sink = self.peer_sink(l)?;
                let app = l.in_ns(Side::Host, || {
                    kernel_udp::udp_socket(
                        SocketAddrV4::new(source_veth::HOST_IP, PORT),
                        Some(SocketAddrV4::new(source_veth::PEER_IP, TX_PORT)),
                        4 << 20,
                    )
                })??;
                (app, sink)
            }
            None => {
                let lo = Ipv4Addr::LOCALHOST;
                let rx = kernel_udp::udp_socket(SocketAddrV4::new(lo, 0), None, 8 << 20)?;
                let port = kernel_udp::local_port(&rx)?;
                let app = kernel_udp::udp_socket(
                    SocketAddrV4::new(lo, 0),
                    Some(SocketAddrV4::new(lo, port)),
                    4 << 20,
                )?;
                (app, Sink::start(rx, size, self.engine, self.realtime()))
            }
        };
        let payloads: Vec<Vec<u8>> = (0..1024u64).map(|i| pattern::make(i, size)).collect();
        let (t0, cpu0) = (Instant::now(), thread_cpu_ns());
        let mut sent = 0u64;
        let mut i = 0usize;
        while t0.elapsed().as_secs_f64() < self.spec.seconds {
            let batch: Vec<&[u8]> = (0..32)
                .map(|k| payloads[(i + k) % 1024].as_slice())
                .collect();
            let n = kernel_udp::send_batch(&app, &batch)?;
            if n == 0 {
                std::thread::yield_now();
            }
            i += n;
            sent += n as u64;
        }
        row.seconds = t0.elapsed().as_secs_f64();
        row.host_cpu_ns_per_packet = (thread_cpu_ns() - cpu0) as f64;
        let (got, bad) = sink.finish();
        row.offered_packets = sent;
        row.packets = got;
        row.corrupted = bad;
        row.loss = loss(sent, got);
        row.note = if lab.is_some() {
            "the peer's receive processing steered to the engine core (RPS)".into()
        } else {
            "loopback: the host's send also runs the receive processing of the looped-back datagram"
                .into()
        };
        Ok(row)
    }
}

fn loss(offered: u64, delivered: u64) -> f64 {
    if offered == 0 {
        return 0.0;
    }
    offered.saturating_sub(delivered) as f64 / offered as f64
}
