//! The softnic configuration (Wun & Crowley's "softnic"): the engine core verifies each frame's
//! checksums and copies it whole into a buffer of a preallocated pool (the kernel's packet
//! buffers), then posts it on a ring; the host core does the rest, as the unmodified Linux
//! stack did on the XScale: it polls the ring until it is empty (adaptive polling, sleeping
//! only when the ring is empty), parses the headers, finds the socket by port and copies the
//! payload into the application's buffer, then returns the pool buffer.
//!
//! Why this and not RPS: it runs on every frame source (replay included, so it needs no
//! privileges), and it splits the work exactly where the paper splits it (checksum and the
//! copy into kernel buffers on the small core; demultiplexing, socket queues and the copy to
//! user space on the host), whereas RPS moves the whole protocol stack to the other core and
//! leaves the copy to user space where it is, which is neither of the paper's configurations.
use crate::kernel;
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::frame;
use crate::onload::wait::Notify;
use crate::ring::Ring;
use std::cell::UnsafeCell;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A filled pool buffer on the ready ring.
#[derive(Debug, Clone, Copy)]
struct Ready {
    idx: u32,
    len: u32,
    arrival_ns: u64,
}

/// The pool of frame buffers shared by the engine and the host: receive buffers (engine fills,
/// host empties) and transmit buffers (host fills with headers and payload, engine checksums,
/// copies out and frees them).
pub struct Pool {
    mem: Box<[UnsafeCell<u8>]>,
    buf_size: usize,
    n: usize,
    free: Ring<u32>,
    ready: Ring<Ready>,
    tx_free: Ring<u32>,
    tx_ready: Ring<Ready>,
    pub(crate) notify: Notify,
    pub(crate) tx_notify: Notify,
}

// SAFETY: a buffer is written only by the engine between taking its index from `free` and
// publishing it on `ready`, and read only by the host between taking it from `ready` and
// returning it to `free`: the rings' acquire/release hand each buffer to one side at a time.
unsafe impl Sync for Pool {}
// SAFETY: as above.
unsafe impl Send for Pool {}

impl Pool {
    pub(crate) fn new(buffers: usize, buf_size: usize, ring: usize) -> Self {
        let n = buffers.min(ring.next_power_of_two().max(2));
        let free = Ring::new(n);
        let tx_free = Ring::new(n);
        for i in 0..n {
            let _ = free.push(i as u32);
            let _ = tx_free.push((n + i) as u32);
        }
        Pool {
            mem: (0..2 * n * buf_size).map(|_| UnsafeCell::new(0)).collect(),
            buf_size,
            n,
            free,
            ready: Ring::new(n),
            tx_free,
            tx_ready: Ring::new(n),
            notify: Notify::default(),
            tx_notify: Notify::default(),
        }
    }

    /// Engine side: take the next frame the host queued for transmission, copy it into
    /// `scratch` (the engine's internal buffer), compute its UDP checksum, free the pool
    /// buffer and return the frame's length.
    pub(crate) fn take_tx(&self, scratch: &mut [u8]) -> Option<usize> {
        let r = self.tx_ready.pop()?;
        let len = (r.len as usize).min(scratch.len());
        // SAFETY: buffer r.idx came off the tx ready ring: the host finished writing it and
        // will not touch it until it is back on the free ring (below).
        unsafe { kernel::copy(scratch.as_mut_ptr(), self.buf(r.idx), len) };
        let _ = self.tx_free.push(r.idx);
        frame::fill_udp_checksum(&mut scratch[..len]);
        Some(len)
    }

    fn buf(&self, idx: u32) -> *mut u8 {
        self.mem[idx as usize * self.buf_size].get()
    }

    /// Engine side: copy a verified frame into a free buffer and post it. False: pool empty.
    pub(crate) fn put(&self, f: &[u8], arrival_ns: u64, push: bool) -> bool {
        let Some(idx) = self.free.pop() else {
            return false;
        };
        let len = f.len().min(self.buf_size);
        // SAFETY: buffer `idx` was just taken from the free ring, so only this thread touches
        // it until it is published below; it holds buf_size >= len bytes.
        unsafe {
            if push {
                kernel::copy(self.buf(idx), f.as_ptr(), len);
            } else {
                kernel::copy_nt(self.buf(idx), f.as_ptr(), len);
            }
        }
        let _ = self.ready.push(Ready {
            idx,
            len: len as u32,
            arrival_ns,
        });
        true
    }
}

/// Transmit buffers the host may fill at once.
impl Pool {
    pub fn tx_capacity(&self) -> usize {
        self.n
    }
}

/// One datagram the host stack delivered.
#[derive(Debug)]
pub struct HostDatagram {
    pub port: u16,
    pub buf: Vec<u8>,
    pub len: usize,
    /// The datagram's whole payload length (more than `len` when the buffer was too small).
    pub datagram_len: usize,
    pub from: SocketAddrV4,
    pub arrival_ns: u64,
}

/// Counters of the host side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostStats {
    pub delivered: u64,
    pub unbound_port: u64,
    pub no_buffer: u64,
    /// Datagrams delivered cut short into a buffer smaller than the payload (also in `delivered`).
    pub too_small: u64,
}

/// The host core's half: sockets (port -> posted buffers) and the receive loop.
pub struct SoftnicHost {
    pool: Arc<Pool>,
    sockets: HashMap<u16, VecDeque<Vec<u8>>>,
    stats: HostStats,
    wait_spin: Duration,
}

impl SoftnicHost {
    /// The host side of a pool-delivery engine.
    pub fn new(pool: Arc<Pool>, wait_spin: Duration) -> Self {
        SoftnicHost {
            pool,
            sockets: HashMap::new(),
            stats: HostStats::default(),
            wait_spin,
        }
    }

    /// Bind a port.
    pub fn bind(&mut self, port: u16) -> OnloadResult<()> {
        if port == 0 {
            return Err(OnloadError::InvalidArgument(
                "port: 0 is not bindable".into(),
            ));
        }
        if self.sockets.contains_key(&port) {
            return Err(OnloadError::PortInUse(port));
        }
        self.sockets.insert(port, VecDeque::new());
        Ok(())
    }

    /// Post a receive buffer on a bound port.
    pub fn post(&mut self, port: u16, buf: Vec<u8>) -> OnloadResult<()> {
        match self.sockets.get_mut(&port) {
            Some(q) => {
                q.push_back(buf);
                Ok(())
            }
            None => Err(OnloadError::InvalidArgument(format!(
                "port {port} is not bound"
            ))),
        }
    }

    pub fn stats(&self) -> HostStats {
        self.stats
    }

    /// Process ready frames until one is delivered or the ring is empty (never blocks).
    pub fn try_recv(&mut self) -> Option<HostDatagram> {
        while let Some(r) = self.pool.ready.pop() {
            let out = self.deliver(r);
            let _ = self.pool.free.push(r.idx);
            if out.is_some() {
                return out;
            }
        }
        None
    }

    fn deliver(&mut self, r: Ready) -> Option<HostDatagram> {
        // SAFETY: the buffer came off the ready ring and goes back to the free ring only after
        // this function; r.len <= buf_size.
        let f = unsafe { std::slice::from_raw_parts(self.pool.buf(r.idx), r.len as usize) };
        let d = frame::parse_trusted(f)?;
        let Some(q) = self.sockets.get_mut(&d.dst.port()) else {
            self.stats.unbound_port += 1;
            return None;
        };
        let Some(mut buf) = q.pop_front() else {
            self.stats.no_buffer += 1;
            return None;
        };
        // As the onload path and the kernel: a buffer smaller than the payload takes its first
        // bytes and the datagram is flagged as cut short.
        let n = d.payload_len.min(buf.len());
        if n < d.payload_len {
            self.stats.too_small += 1;
        }
        buf[..n].copy_from_slice(&f[d.payload_offset..d.payload_offset + n]);
        self.stats.delivered += 1;
        Some(HostDatagram {
            port: d.dst.port(),
            buf,
            len: n,
            datagram_len: d.payload_len,
            from: d.src,
            arrival_ns: r.arrival_ns,
        })
    }

    /// The host's transmit path: take a free pool buffer (waiting while the engine drains them),
    /// write the headers and copy the payload in (the kernel's user-to-kernel copy), and queue it
    /// for the engine, which checksums, copies and sends it.
    pub fn send(&mut self, flow: &frame::Flow, payload: &[u8], ip_id: u16) -> OnloadResult<()> {
        let len = frame::frame_len(payload.len());
        if len > self.pool.buf_size {
            return Err(OnloadError::InvalidArgument(format!(
                "data: {} bytes exceeds the pool's buffers",
                payload.len()
            )));
        }
        let idx = loop {
            if let Some(i) = self.pool.tx_free.pop() {
                break i;
            }
            let pool = self.pool.clone();
            pool.tx_notify.wait(
                self.wait_spin,
                Some(Instant::now() + Duration::from_millis(10)),
                &|| !pool.tx_free.is_empty(),
            );
        };
        // SAFETY: buffer idx came off the tx free ring: this thread owns it until it queues it.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.pool.buf(idx), len) };
        frame::write_headers(buf, flow, payload.len(), ip_id);
        buf[frame::HEADERS..frame::HEADERS + payload.len()].copy_from_slice(payload);
        let _ = self.pool.tx_ready.push(Ready {
            idx,
            len: len as u32,
            arrival_ns: 0,
        });
        Ok(())
    }

    /// Wait up to `timeout` for a datagram (polling the ring, sleeping only when it is empty).
    pub fn recv(&mut self, timeout: Option<Duration>) -> Option<HostDatagram> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(d) = self.try_recv() {
                return Some(d);
            }
            let pool = self.pool.clone();
            if !pool
                .notify
                .wait(self.wait_spin, deadline, &|| !pool.ready.is_empty())
            {
                return None;
            }
        }
    }
}
