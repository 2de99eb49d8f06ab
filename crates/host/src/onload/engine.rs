//! The onload engine: a thread pinned to its own core that owns a frame source and runs the
//! UDP/IPv4 receive and transmit paths (Wun & Crowley's "onloader" on the IXP's microengines).
//!
//! Receive, per frame: verify lengths and checksums ([`frame::parse`]), look up the bound port
//! (one array index: the control-block lookup), take the next buffer the application posted
//! on that socket and copy the payload straight into it with the copy kernels (cached stores,
//! the paper's "L2 push", or streaming stores), then append a completion to the socket's ring.
//! After each burst it notifies the sockets it delivered to; a notification is a system call
//! only when a receiver sleeps. Faults (bad checksums, truncated / oversized frames, unbound
//! ports, no or too small a buffer) are counted and the frame dropped, never delivered.
//!
//! Transmit: for each queued request, write the headers, copy the payload from the
//! application's buffer behind them, compute the UDP checksum and hand the frame to the source.
//!
//! In `Delivery::Pool` mode the engine plays the softnic instead: it verifies each frame and
//! copies it whole into a buffer of a pool, and the host core does the rest
//! ([`crate::onload::softnic`]).
//!
//! Shutdown stops taking frames, completes every queued transmit request, wakes every waiter
//! and returns the counters; frames still in the source are left there.
use crate::kernel;
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::frame::{self, Flow, Reject};
use crate::onload::socket::{Access, OnloadSocket, RxCompletion, SockState, TxCompletion};
use crate::onload::softnic::Pool;
use crate::onload::source::{FrameSource, SourceStats};
use crate::onload::wait;
use crate::sys;
use serde::Serialize;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How received payloads reach the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Delivery {
    /// Onload: straight into buffers posted on bound sockets.
    Direct,
    /// Softnic: verified frames copied into a pool of `buffers` engine buffers; the host demuxes.
    Pool { buffers: usize },
}

/// Settings of an onload engine (every field has a default).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OnloadConfig {
    /// Core for the engine thread (None: the last online core).
    pub cpu: Option<usize>,
    /// Pin the engine thread to its core.
    pub pin: bool,
    /// This host's address: frames to other addresses are not ours.
    pub local_ip: Ipv4Addr,
    /// This host's MAC (source of transmitted frames).
    pub local_mac: [u8; 6],
    /// The next hop's MAC (destination of transmitted frames; a static neighbour, no ARP).
    pub peer_mac: [u8; 6],
    /// Largest UDP payload received or sent (8972: a 9000-byte MTU jumbo frame).
    pub max_payload: usize,
    /// Frames taken from the source per burst.
    pub burst: usize,
    /// Entries of each socket's rings (posted buffers, completions, transmit requests).
    pub ring_capacity: usize,
    /// Write payloads with cached stores (true, the paper's push into the host's cache) or with
    /// streaming stores that bypass the caches (false; used from 256 bytes up).
    pub push: bool,
    /// An idle engine polls its source continuously for this long, then polls every `nap_us`.
    pub idle_spin_us: u64,
    pub nap_us: u64,
    /// An application waiting for data spins this long before it sleeps.
    pub wait_spin_us: u64,
    /// Direct delivery (onload) or a buffer pool (softnic).
    pub delivery: Delivery,
    /// Run the engine thread with SCHED_FIFO priority (needs CAP_SYS_NICE; refused: an error).
    pub realtime: bool,
}

impl Default for OnloadConfig {
    fn default() -> Self {
        OnloadConfig {
            cpu: None,
            pin: true,
            local_ip: Ipv4Addr::new(10, 77, 0, 1),
            local_mac: [0x02, 0x6d, 0x6c, 0, 0, 1],
            peer_mac: [0x02, 0x6d, 0x6c, 0, 0, 2],
            max_payload: 8972,
            burst: 32,
            ring_capacity: 1024,
            push: true,
            idle_spin_us: 200,
            nap_us: 20,
            wait_spin_us: 50,
            delivery: Delivery::Direct,
            realtime: false,
        }
    }
}

impl OnloadConfig {
    /// Check every setting; the error names the field.
    pub fn validate(&self) -> OnloadResult<()> {
        let bad = |m: String| Err(OnloadError::InvalidArgument(m));
        if !(1..=frame::MAX_UDP_PAYLOAD).contains(&self.max_payload) {
            return bad(format!(
                "max_payload {}: expected 1 ..= {}",
                self.max_payload,
                frame::MAX_UDP_PAYLOAD
            ));
        }
        if !(1..=4096).contains(&self.burst) {
            return bad(format!("burst {}: expected 1 ..= 4096", self.burst));
        }
        if !(2..=1 << 16).contains(&self.ring_capacity) {
            return bad(format!(
                "ring_capacity {}: expected 2 ..= 65536",
                self.ring_capacity
            ));
        }
        if self.idle_spin_us > 60_000_000
            || self.nap_us > 1_000_000
            || self.wait_spin_us > 1_000_000
        {
            return bad("idle_spin_us <= 60 s, nap_us and wait_spin_us <= 1 s".into());
        }
        if let Some(c) = self.cpu {
            if !sys::available_cpus().contains(&c) {
                return bad(format!("cpu {c}: not an online core of this machine"));
            }
        }
        if let Delivery::Pool { buffers } = self.delivery {
            if !(2..=1 << 16).contains(&buffers) {
                return bad(format!("pool buffers {buffers}: expected 2 ..= 65536"));
            }
        }
        Ok(())
    }

    /// Largest frame accepted (headers + max_payload).
    pub fn max_frame(&self) -> usize {
        frame::frame_len(self.max_payload)
    }
}

/// Engine-wide counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EngineStats {
    /// Frames taken from the source.
    pub frames: u64,
    /// Datagrams delivered into application buffers (or into the pool).
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub truncated: u64,
    pub oversized: u64,
    pub malformed: u64,
    pub not_ours: u64,
    pub bad_ip_checksum: u64,
    pub bad_udp_checksum: u64,
    pub unbound_port: u64,
    /// No buffer posted on the socket (or pool exhausted): the application's buffer was full.
    pub no_buffer: u64,
    /// Datagrams delivered cut short: the posted buffer was smaller than the payload (counted
    /// in `delivered` too, not a drop).
    pub too_small: u64,
    pub faults: u64,
    /// Wake-up system calls made for sleeping receivers.
    pub wakeups: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub tx_failed: u64,
    /// CPU time spent on bursts that had work (frames or transmit requests), ns, less the cost
    /// of reading the clock.
    pub busy_ns: u64,
}

impl EngineStats {
    /// Frames dropped for any reason.
    pub fn dropped(&self) -> u64 {
        self.truncated
            + self.oversized
            + self.malformed
            + self.not_ours
            + self.bad_ip_checksum
            + self.bad_udp_checksum
            + self.unbound_port
            + self.no_buffer
            + self.faults
    }
    fn count(&mut self, r: Reject) {
        match r {
            Reject::Truncated => self.truncated += 1,
            Reject::Oversized => self.oversized += 1,
            Reject::Malformed => self.malformed += 1,
            Reject::NotOurs => self.not_ours += 1,
            Reject::BadIpChecksum => self.bad_ip_checksum += 1,
            Reject::BadUdpChecksum => self.bad_udp_checksum += 1,
        }
    }
}

/// What the engine thread returns when it stops.
#[derive(Debug, Clone, Serialize)]
pub struct EngineReport {
    pub stats: EngineStats,
    pub source: SourceStats,
    /// Why the engine stopped early (the source failed), if it did.
    pub error: Option<String>,
}

/// State shared by the engine thread, the handle and the sockets.
pub(crate) struct Shared {
    pub config: OnloadConfig,
    sockets: Mutex<HashMap<u16, Arc<SockState>>>,
    gen: AtomicU64,
    seen_gen: AtomicU64,
    stop: AtomicBool,
    stopped: AtomicBool,
    /// Bumped by senders so that a napping engine can notice work sooner (never a syscall).
    kicks: AtomicU32,
    stats: Mutex<EngineStats>,
    pinned: AtomicUsize,
    pub pool: Option<Arc<Pool>>,
}

const NOT_PINNED: usize = usize::MAX;

impl Shared {
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
    pub fn kick(&self) {
        self.kicks.fetch_add(1, Ordering::Release);
    }
    /// Remove a port and wait until the engine thread has dropped it from its table.
    pub fn unbind(&self, port: u16) {
        let removed = self
            .sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&port)
            .is_some();
        if !removed {
            return;
        }
        let g = self.gen.fetch_add(1, Ordering::AcqRel) + 1;
        self.wait_seen(g);
    }

    /// Wait until the engine thread has loaded table generation `g` (or stopped).
    fn wait_seen(&self, g: u64) {
        self.kick();
        while self.seen_gen.load(Ordering::Acquire) < g && !self.stopped() {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// A running onload engine.
pub struct OnloadEngine {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<EngineReport>>,
    source_name: &'static str,
}

impl OnloadEngine {
    /// Start the engine thread on its core with `source`.
    pub fn start(config: OnloadConfig, source: Box<dyn FrameSource>) -> OnloadResult<Self> {
        config.validate()?;
        let pool = match config.delivery {
            Delivery::Pool { buffers } => Some(Arc::new(Pool::new(
                buffers,
                config.max_frame(),
                config.ring_capacity,
            ))),
            Delivery::Direct => None,
        };
        let shared = Arc::new(Shared {
            config: config.clone(),
            sockets: Mutex::new(HashMap::new()),
            gen: AtomicU64::new(0),
            seen_gen: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            kicks: AtomicU32::new(0),
            stats: Mutex::new(EngineStats::default()),
            pinned: AtomicUsize::new(NOT_PINNED),
            pool,
        });
        let cpu = if config.pin {
            config.cpu.or_else(|| sys::available_cpus().last().copied())
        } else {
            None
        };
        let source_name = source.name();
        let s = shared.clone();
        let (rt_tx, rt_rx) = std::sync::mpsc::channel();
        let realtime = config.realtime;
        let thread = std::thread::Builder::new()
            .name("movelab-onload".into())
            .spawn(move || {
                let rt = if realtime {
                    sys::set_realtime(true)
                } else {
                    Ok(())
                };
                let refused = rt.is_err();
                let _ = rt_tx.send(rt);
                if refused {
                    return EngineReport {
                        stats: EngineStats::default(),
                        source: source.stats(),
                        error: Some("real-time priority refused".into()),
                    };
                }
                run(s, source, cpu)
            })
            .map_err(|e| OnloadError::Os(format!("cannot start the onload engine thread: {e}")))?;
        if let Ok(Err(e)) = rt_rx.recv() {
            shared.stopped.store(true, Ordering::Release);
            let _ = thread.join();
            return Err(OnloadError::Os(e));
        }
        Ok(OnloadEngine {
            shared,
            thread: Some(thread),
            source_name,
        })
    }

    /// The engine's settings.
    pub fn config(&self) -> &OnloadConfig {
        &self.shared.config
    }

    /// Name of the frame source.
    pub fn source_name(&self) -> &'static str {
        self.source_name
    }

    /// The core the engine thread is pinned to (None until it pinned itself, or if refused).
    pub fn pinned_cpu(&self) -> Option<usize> {
        match self.shared.pinned.load(Ordering::Acquire) {
            NOT_PINNED => None,
            c => Some(c),
        }
    }

    /// Has the engine stopped (shut down, or its source failed)?
    pub fn stopped(&self) -> bool {
        self.shared.stopped()
    }

    /// Bind `port` (1 ..= 65535) with registered buffers.
    pub fn bind(&self, port: u16) -> OnloadResult<OnloadSocket> {
        self.bind_with(port, Access::Registered)
    }

    /// Bind `port` with the given buffer access.
    pub fn bind_with(&self, port: u16, access: Access) -> OnloadResult<OnloadSocket> {
        if port == 0 {
            return Err(OnloadError::InvalidArgument(
                "port: 0 is not a bindable UDP port (expected 1 ..= 65535)".into(),
            ));
        }
        if self.shared.pool.is_some() {
            return Err(OnloadError::InvalidArgument(
                "bind: this engine delivers into a buffer pool (softnic); the host demultiplexes"
                    .into(),
            ));
        }
        if let Access::VmWritev { pid } = access {
            if pid <= 0 {
                return Err(OnloadError::InvalidArgument(format!(
                    "access: process id {pid} is not valid"
                )));
            }
        }
        if self.shared.stopped() {
            return Err(OnloadError::Stopped(String::new()));
        }
        let mut table = self
            .shared
            .sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if table.contains_key(&port) {
            return Err(OnloadError::PortInUse(port));
        }
        let (sock, state) = OnloadSocket::new(self.shared.clone(), port, access);
        table.insert(port, state);
        let g = self.shared.gen.fetch_add(1, Ordering::AcqRel) + 1;
        drop(table);
        // Once bind returns, frames for the port are delivered to it.
        self.shared.wait_seen(g);
        Ok(sock)
    }

    /// The buffer pool of a softnic engine.
    pub fn pool(&self) -> Option<Arc<Pool>> {
        self.shared.pool.clone()
    }

    /// Counters so far (published by the engine after every burst with work).
    pub fn stats(&self) -> EngineStats {
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// CPU time the engine thread has used so far, ns (its thread CPU clock).
    pub fn cpu_ns(&self) -> Option<u64> {
        let t = self.thread.as_ref()?;
        if self.shared.stopped() {
            return None;
        }
        wait::pthread_cpu_ns(t.as_pthread_t())
    }

    /// Stop the engine (see the module doc) and return its counters.
    pub fn shutdown(mut self) -> OnloadResult<EngineReport> {
        self.stop()
    }

    fn stop(&mut self) -> OnloadResult<EngineReport> {
        self.shared.stop.store(true, Ordering::Release);
        let Some(t) = self.thread.take() else {
            return Err(OnloadError::Stopped(" (already shut down)".into()));
        };
        t.join()
            .map_err(|_| OnloadError::Stopped(": the engine thread panicked".into()))
    }
}

impl Drop for OnloadEngine {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop();
        }
    }
}

/// The engine thread's table entry for a bound port.
struct Entry {
    sock: Arc<SockState>,
    touched: bool,
    tx_touched: bool,
}

struct Worker {
    shared: Arc<Shared>,
    source: Box<dyn FrameSource>,
    /// Port -> index + 1 into `entries` (0: unbound): the control-block lookup is one load.
    ports: Vec<u16>,
    entries: Vec<Entry>,
    stats: EngineStats,
    scratch: Vec<u8>,
    max_frame: usize,
    ip_id: u16,
    pool_touched: bool,
    /// Table generation this thread last loaded.
    seen: u64,
    /// Completions of the current burst (entry index, completion): appended to the sockets'
    /// rings only after the counters are published, so that whoever sees a completion also
    /// sees the counters that include it.
    pending_rx: Vec<(usize, RxCompletion)>,
    pending_tx: Vec<(usize, TxCompletion)>,
}

fn run(shared: Arc<Shared>, source: Box<dyn FrameSource>, cpu: Option<usize>) -> EngineReport {
    if let Some(c) = cpu {
        if sys::pin_current_thread(c).is_ok() {
            shared.pinned.store(c, Ordering::Release);
        }
    }
    sys::set_timer_slack_ns(1_000);
    let max_frame = shared.config.max_frame();
    let mut w = Worker {
        source,
        ports: vec![0; 1 << 16],
        entries: Vec::new(),
        stats: EngineStats::default(),
        scratch: vec![0u8; max_frame],
        max_frame,
        ip_id: 0,
        pool_touched: false,
        seen: u64::MAX,
        pending_rx: Vec::new(),
        pending_tx: Vec::new(),
        shared,
    };
    let error = w.main_loop().err().map(|e| e.to_string());
    // Complete every queued transmit request, then publish and wake everyone.
    w.refresh();
    while w.transmit_all() > 0 {}
    w.publish();
    w.flush();
    w.notify();
    w.shared.stopped.store(true, Ordering::Release);
    for e in &w.entries {
        e.sock.rx_notify.notify();
        e.sock.tx_notify.notify();
    }
    if let Some(p) = &w.shared.pool {
        p.notify.notify();
    }
    EngineReport {
        stats: w.stats,
        source: w.source.stats(),
        error,
    }
}

impl Worker {
    fn refresh(&mut self) {
        if self.shared.gen.load(Ordering::Acquire) == self.seen {
            return;
        }
        let table = self
            .shared
            .sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let g = self.shared.gen.load(Ordering::Acquire);
        for e in &self.entries {
            self.ports[e.sock.port as usize] = 0;
        }
        let mut old: HashMap<u16, Entry> =
            self.entries.drain(..).map(|e| (e.sock.port, e)).collect();
        for (port, s) in table.iter() {
            let entry = match old.remove(port) {
                Some(e) if Arc::ptr_eq(&e.sock, s) => e,
                _ => Entry {
                    sock: s.clone(),
                    touched: false,
                    tx_touched: false,
                },
            };
            self.entries.push(entry);
            self.ports[*port as usize] = self.entries.len() as u16;
        }
        drop(table);
        // Entries of unbound sockets are dropped here, before the unbinding thread is told the
        // engine let go.
        drop(old);
        self.seen = g;
        self.shared.seen_gen.store(g, Ordering::Release);
    }

    fn main_loop(&mut self) -> OnloadResult<()> {
        let spin = Duration::from_micros(self.shared.config.idle_spin_us);
        let nap = Duration::from_micros(self.shared.config.nap_us);
        let burst = self.shared.config.burst;
        let mut idle_since: Option<std::time::Instant> = None;
        let mut kicks = 0u32;
        // What one pair of CPU-clock reads costs (a system call in a VM), taken off each busy
        // burst so that the busy time is the work's, not the measurement's.
        let clock_cost = {
            let mut d: Vec<u64> = (0..63)
                .map(|_| {
                    let a = wait::thread_cpu_ns();
                    wait::thread_cpu_ns().saturating_sub(a)
                })
                .collect();
            d.sort_unstable();
            d[d.len() / 2]
        };
        while !self.shared.stop.load(Ordering::Acquire) {
            self.refresh();
            // Busy time is the thread's own CPU time (not wall time, which a preempted engine
            // would overstate).
            let t0 = wait::thread_cpu_ns();
            let n = self.receive(burst)?;
            let t = self.transmit_all();
            if n + t > 0 {
                // Counters first, so that whoever a notification wakes sees them.
                self.stats.busy_ns += wait::thread_cpu_ns()
                    .saturating_sub(t0)
                    .saturating_sub(clock_cost);
                self.publish();
                self.flush();
                self.notify();
                idle_since = None;
                continue;
            }
            let since = *idle_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() < spin {
                std::hint::spin_loop();
            } else {
                let k = self.shared.kicks.load(Ordering::Acquire);
                if k == kicks {
                    std::thread::sleep(nap);
                }
                kicks = k;
            }
        }
        Ok(())
    }

    fn receive(&mut self, burst: usize) -> OnloadResult<usize> {
        let mut source = std::mem::replace(&mut self.source, Box::new(NoSource));
        let r = source.poll(burst, &mut |f, at| self.on_frame(f, at));
        self.source = source;
        r
    }

    fn on_frame(&mut self, f: &[u8], arrival_ns: u64) {
        self.stats.frames += 1;
        let d = match frame::parse(f, self.max_frame, Some(self.shared.config.local_ip)) {
            Ok(d) => d,
            Err(r) => return self.stats.count(r),
        };
        if let Some(pool) = &self.shared.pool {
            if pool.put(f, arrival_ns, self.shared.config.push) {
                self.stats.delivered += 1;
                self.stats.delivered_bytes += d.payload_len as u64;
                self.pool_touched = true;
            } else {
                self.stats.no_buffer += 1;
            }
            return;
        }
        let idx = self.ports[d.dst.port() as usize];
        if idx == 0 {
            self.stats.unbound_port += 1;
            return;
        }
        let at = idx as usize - 1;
        let e = &mut self.entries[at];
        let s = &e.sock;
        let Some(p) = s.posted.pop() else {
            self.stats.no_buffer += 1;
            s.counters.no_buffer.fetch_add(1, Ordering::Relaxed);
            return;
        };
        // A buffer smaller than the payload takes its first `cap` bytes and the completion says
        // the datagram was cut short, as the kernel's recvmsg does (MSG_TRUNC); the rest is
        // discarded. The buffer is used up either way, so later datagrams go to later buffers.
        let n = d.payload_len.min(p.cap);
        if n < d.payload_len {
            self.stats.too_small += 1;
            s.counters.too_small.fetch_add(1, Ordering::Relaxed);
        }
        let payload = &f[d.payload_offset..d.payload_offset + n];
        let ok = match s.access {
            Access::Registered => {
                // SAFETY: the application posted [addr, addr + cap) for the engine to write
                // until this completion (post_raw's contract; the safe API owns the buffer),
                // and payload.len() <= cap.
                unsafe {
                    if self.shared.config.push {
                        kernel::copy(p.addr as *mut u8, payload.as_ptr(), payload.len());
                    } else {
                        kernel::copy_nt(p.addr as *mut u8, payload.as_ptr(), payload.len());
                    }
                }
                true
            }
            // SAFETY: `payload` is valid for reads; the kernel checks the remote range.
            Access::VmWritev { pid } => unsafe {
                crate::ipc::sys::vm_write(pid, payload.as_ptr(), p.addr as u64, payload.len())
                    .is_ok()
            },
        };
        let c = RxCompletion {
            tag: p.tag,
            len: if ok { payload.len() } else { 0 },
            datagram_len: d.payload_len,
            from: d.src,
            arrival_ns,
            ok,
        };
        e.touched = true;
        if ok {
            self.stats.delivered += 1;
            self.stats.delivered_bytes += payload.len() as u64;
            s.counters.delivered.fetch_add(1, Ordering::Relaxed);
            s.counters
                .delivered_bytes
                .fetch_add(payload.len() as u64, Ordering::Relaxed);
        } else {
            self.stats.faults += 1;
            s.counters.faults.fetch_add(1, Ordering::Relaxed);
        }
        self.pending_rx.push((at, c));
    }

    /// Append the burst's completions to the sockets' rings (which the sockets keep from
    /// overflowing: outstanding posts and sends are bounded by their capacity).
    fn flush(&mut self) {
        for (i, c) in self.pending_rx.drain(..) {
            let _ = self.entries[i].sock.rx_done.push(c);
        }
        for (i, c) in self.pending_tx.drain(..) {
            let _ = self.entries[i].sock.tx_done.push(c);
        }
    }

    /// Build and send every queued transmit request (up to a burst per socket, and a burst of
    /// the softnic pool's frames).
    fn transmit_all(&mut self) -> usize {
        let burst = self.shared.config.burst;
        let cfg = &self.shared.config;
        let mut n = 0;
        if let Some(pool) = &self.shared.pool {
            for _ in 0..burst {
                let Some(len) = pool.take_tx(&mut self.scratch) else {
                    break;
                };
                if self.source.transmit(&self.scratch[..len]).is_ok() {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += len.saturating_sub(frame::HEADERS) as u64;
                } else {
                    self.stats.tx_failed += 1;
                }
                n += 1;
            }
            if n > 0 && pool.tx_notify.notify() {
                self.stats.wakeups += 1;
            }
        }
        for (at, e) in self.entries.iter_mut().enumerate() {
            let s = &e.sock;
            for _ in 0..burst {
                let Some(r) = s.tx.pop() else { break };
                let flow = Flow {
                    src_mac: cfg.local_mac,
                    dst_mac: cfg.peer_mac,
                    src: SocketAddrV4::new(cfg.local_ip, s.port),
                    dst: r.to,
                };
                let len = frame::frame_len(r.len);
                let buf = &mut self.scratch[..len];
                frame::write_headers(buf, &flow, r.len, self.ip_id);
                self.ip_id = self.ip_id.wrapping_add(1);
                let body = buf[frame::HEADERS..].as_mut_ptr();
                let read_ok = match s.access {
                    Access::Registered => {
                        // SAFETY: send_raw's contract: [addr, addr + len) is readable and
                        // unchanged until this request completes; the scratch buffer holds
                        // max_frame >= HEADERS + len bytes (len <= max_payload was checked).
                        unsafe { kernel::copy(body, r.addr as *const u8, r.len) };
                        true
                    }
                    // SAFETY: `body` is valid for writes of r.len bytes (as above).
                    Access::VmWritev { pid } => unsafe {
                        crate::ipc::sys::vm_read(pid, body, r.addr as u64, r.len).is_ok()
                    },
                };
                let ok = read_ok && {
                    frame::finish_udp_checksum(buf, &flow, r.len);
                    self.source.transmit(buf).is_ok()
                };
                if ok {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += r.len as u64;
                    s.counters.tx_frames.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.stats.tx_failed += 1;
                    s.counters.tx_failed.fetch_add(1, Ordering::Relaxed);
                }
                self.pending_tx.push((at, TxCompletion { tag: r.tag, ok }));
                e.tx_touched = true;
                n += 1;
            }
        }
        n
    }

    fn notify(&mut self) {
        for e in &mut self.entries {
            if std::mem::take(&mut e.touched) && e.sock.rx_notify.notify() {
                self.stats.wakeups += 1;
                e.sock.counters.wakeups.fetch_add(1, Ordering::Relaxed);
            }
            if std::mem::take(&mut e.tx_touched) && e.sock.tx_notify.notify() {
                self.stats.wakeups += 1;
                e.sock.counters.wakeups.fetch_add(1, Ordering::Relaxed);
            }
        }
        if std::mem::take(&mut self.pool_touched) {
            if let Some(p) = &self.shared.pool {
                if p.notify.notify() {
                    self.stats.wakeups += 1;
                }
            }
        }
    }

    fn publish(&self) {
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner()) = self.stats;
    }
}

/// Placeholder while the real source is borrowed out during a poll.
struct NoSource;

impl FrameSource for NoSource {
    fn name(&self) -> &'static str {
        "none"
    }
    fn poll(&mut self, _: usize, _: &mut dyn FnMut(&[u8], u64)) -> OnloadResult<usize> {
        Ok(0)
    }
    fn transmit(&mut self, _: &[u8]) -> OnloadResult<()> {
        Ok(())
    }
    fn stats(&self) -> SourceStats {
        SourceStats::default()
    }
}
