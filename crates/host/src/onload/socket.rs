//! The application's side of the onload engine: a socket-like handle bound to a UDP port.
//!
//! Receive: the application posts buffers (`post`: an owned `Vec<u8>`, or `post_raw` for the C
//! and Python bindings); the engine writes each datagram's payload straight into the next posted
//! buffer and appends a completion to the socket's completion ring; `try_recv` polls that ring,
//! `recv` waits for it (spinning briefly, then sleeping until the engine wakes it: the engine
//! makes a wake-up call only when a receiver sleeps). Transmit: `send` hands a buffer to the
//! engine, which builds the headers and checksums around it and transmits the frame.
//!
//! Buffers posted with `post` belong to the socket until a completion hands them back (or the
//! socket closes); the engine writes only into posted buffers, and closing a socket waits until
//! the engine has let go of it, so the safe API cannot race with the engine.
use crate::onload::engine::Shared;
use crate::onload::error::{OnloadError, OnloadResult};
use crate::onload::wait::Notify;
use crate::ring::Ring;
use serde::Serialize;
use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the engine reaches the application's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Access {
    /// Registered buffers: the engine writes them directly (the paper's mapping cache, on).
    Registered,
    /// No mapping cache: every packet is written with `process_vm_writev` into process `pid`
    /// (transmit reads with `process_vm_readv`), which looks the pages up again each time.
    VmWritev { pid: i32 },
}

/// A buffer the application posted for receiving.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posted {
    pub addr: usize,
    pub cap: usize,
    pub tag: u64,
}

/// One received datagram (or a failed delivery) as the completion ring holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxCompletion {
    /// The tag the buffer was posted with.
    pub tag: u64,
    /// Payload bytes written at the start of the buffer.
    pub len: usize,
    /// The datagram's whole payload length: more than `len` when the buffer was too small and
    /// the payload was cut short (the kernel's MSG_TRUNC); the rest is discarded.
    pub datagram_len: usize,
    /// Sender's address and port.
    pub from: SocketAddrV4,
    /// When the frame reached the host ([`crate::sys::now_ns`] clock).
    pub arrival_ns: u64,
    /// False when the engine could not write the buffer (process_vm_writev failed): the buffer
    /// is handed back with `len` 0.
    pub ok: bool,
}

/// A transmit request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxRequest {
    pub addr: usize,
    pub len: usize,
    pub to: SocketAddrV4,
    pub tag: u64,
}

/// A finished transmit request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxCompletion {
    pub tag: u64,
    /// False when the frame could not be built or sent (unreadable buffer, source refused).
    pub ok: bool,
}

/// Per-socket counters.
#[derive(Debug, Default)]
pub(crate) struct SockCounters {
    pub delivered: AtomicU64,
    pub delivered_bytes: AtomicU64,
    pub no_buffer: AtomicU64,
    pub too_small: AtomicU64,
    pub faults: AtomicU64,
    pub wakeups: AtomicU64,
    pub tx_frames: AtomicU64,
    pub tx_failed: AtomicU64,
}

/// A snapshot of a socket's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SocketStats {
    /// Datagrams written into posted buffers.
    pub delivered: u64,
    pub delivered_bytes: u64,
    /// Datagrams dropped because no buffer was posted (the application's buffer was full).
    pub no_buffer: u64,
    /// Datagrams delivered cut short because their buffer was smaller than the payload (also
    /// counted in `delivered`; the completion's `datagram_len` exceeds its `len`).
    pub too_small: u64,
    /// Deliveries that failed writing the buffer (process_vm_writev errors).
    pub faults: u64,
    /// Wake-up calls the engine made for this socket.
    pub wakeups: u64,
    pub tx_frames: u64,
    pub tx_failed: u64,
}

/// State shared by a socket and the engine.
pub(crate) struct SockState {
    pub port: u16,
    pub access: Access,
    pub posted: Ring<Posted>,
    pub rx_done: Ring<RxCompletion>,
    pub tx: Ring<TxRequest>,
    pub tx_done: Ring<TxCompletion>,
    pub rx_notify: Notify,
    pub tx_notify: Notify,
    pub counters: SockCounters,
}

/// A datagram received into a buffer posted with [`OnloadSocket::post`].
#[derive(Debug)]
pub struct Datagram {
    /// The posted buffer; the payload is `buf[..len]`. `None` for a buffer posted raw.
    pub buf: Option<Vec<u8>>,
    pub tag: u64,
    pub len: usize,
    /// The datagram's whole payload length (more than `len` when it was cut short).
    pub datagram_len: usize,
    pub from: SocketAddrV4,
    pub arrival_ns: u64,
    pub ok: bool,
}

impl Datagram {
    /// True when the buffer was smaller than the payload and the datagram was cut short.
    pub fn truncated(&self) -> bool {
        self.ok && self.datagram_len > self.len
    }
}

impl Datagram {
    /// The payload (empty for a raw buffer).
    pub fn payload(&self) -> &[u8] {
        self.buf.as_deref().map_or(&[], |b| &b[..self.len])
    }
}

/// A UDP port bound on an onload engine.
pub struct OnloadSocket {
    shared: Arc<Shared>,
    state: Arc<SockState>,
    capacity: usize,
    /// Buffers posted (or sends queued) and not yet completed: bounded by the ring capacity so
    /// that the completion rings can never overflow.
    rx_outstanding: AtomicUsize,
    tx_outstanding: AtomicUsize,
    owned: Mutex<HashMap<u64, Vec<u8>>>,
    next_tag: AtomicU64,
    /// Serialises consumers of the completion rings (the rings allow one consumer).
    rx_lock: Mutex<()>,
    tx_lock: Mutex<()>,
    closed: AtomicBool,
    wait_spin: Duration,
}

/// Tags of owned buffers have the top bit set; raw tags must leave it clear.
const OWNED_TAG: u64 = 1 << 63;

impl OnloadSocket {
    pub(crate) fn new(shared: Arc<Shared>, port: u16, access: Access) -> (Self, Arc<SockState>) {
        let cap = shared.config.ring_capacity;
        let state = Arc::new(SockState {
            port,
            access,
            posted: Ring::new(cap),
            rx_done: Ring::new(cap),
            tx: Ring::new(cap),
            tx_done: Ring::new(cap),
            rx_notify: Notify::default(),
            tx_notify: Notify::default(),
            counters: SockCounters::default(),
        });
        let capacity = state.posted.capacity().min(state.rx_done.capacity());
        let wait_spin = Duration::from_micros(shared.config.wait_spin_us);
        (
            OnloadSocket {
                shared,
                state: state.clone(),
                capacity,
                rx_outstanding: AtomicUsize::new(0),
                tx_outstanding: AtomicUsize::new(0),
                owned: Mutex::new(HashMap::new()),
                next_tag: AtomicU64::new(OWNED_TAG),
                rx_lock: Mutex::new(()),
                tx_lock: Mutex::new(()),
                closed: AtomicBool::new(false),
                wait_spin,
            },
            state,
        )
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.state.port
    }

    /// How the engine reaches this socket's buffers.
    pub fn access(&self) -> Access {
        self.state.access
    }

    /// Buffers that may be posted (or sends queued) at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Buffers posted and not yet received.
    pub fn posted(&self) -> usize {
        self.rx_outstanding.load(Ordering::Acquire)
    }

    fn check_open(&self) -> OnloadResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(OnloadError::InvalidArgument("the socket is closed".into()));
        }
        if self.shared.stopped() {
            return Err(OnloadError::Stopped(String::new()));
        }
        Ok(())
    }

    fn reserve(counter: &AtomicUsize, capacity: usize, what: &'static str) -> OnloadResult<()> {
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < capacity).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| OnloadError::RingFull { what, capacity })
    }

    /// Post `buf` (its whole length) to receive one datagram; it comes back in a [`Datagram`].
    pub fn post(&self, buf: Vec<u8>) -> OnloadResult<()> {
        if buf.is_empty() {
            return Err(OnloadError::InvalidArgument(
                "buf: a posted buffer must hold at least one byte".into(),
            ));
        }
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed) | OWNED_TAG;
        let (addr, cap) = (buf.as_ptr() as usize, buf.len());
        self.owned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tag, buf);
        // SAFETY: the buffer is owned by the socket (in `owned`) until its completion is
        // received or the socket is closed after the engine let go of it.
        let r = unsafe { self.post_raw(addr as *mut u8, cap, tag) };
        if r.is_err() {
            self.owned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&tag);
        }
        r
    }

    /// Post raw memory for one datagram, named by `tag` (top bit clear).
    ///
    /// # Safety
    /// With [`Access::Registered`], `ptr` must be valid for writes of `len` bytes and not be
    /// accessed by anyone else until its completion is received or the socket is closed. With
    /// [`Access::VmWritev`], `ptr` is an address in the target process and the kernel checks it.
    pub unsafe fn post_raw(&self, ptr: *mut u8, len: usize, tag: u64) -> OnloadResult<()> {
        self.check_open()?;
        if ptr.is_null() || len == 0 {
            return Err(OnloadError::InvalidArgument(
                "buf: a posted buffer must be non-null and hold at least one byte".into(),
            ));
        }
        Self::reserve(&self.rx_outstanding, self.capacity, "receive")?;
        let p = Posted {
            addr: ptr as usize,
            cap: len,
            tag,
        };
        if self.state.posted.push(p).is_err() {
            self.rx_outstanding.fetch_sub(1, Ordering::AcqRel);
            return Err(OnloadError::RingFull {
                what: "receive",
                capacity: self.capacity,
            });
        }
        Ok(())
    }

    fn pop_rx(&self) -> Option<RxCompletion> {
        let _g = self.rx_lock.lock().unwrap_or_else(|e| e.into_inner());
        let c = self.state.rx_done.pop()?;
        self.rx_outstanding.fetch_sub(1, Ordering::AcqRel);
        Some(c)
    }

    fn to_datagram(&self, c: RxCompletion) -> Datagram {
        let buf = if c.tag & OWNED_TAG != 0 {
            self.owned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&c.tag)
        } else {
            None
        };
        Datagram {
            buf,
            tag: c.tag,
            len: c.len,
            datagram_len: c.datagram_len,
            from: c.from,
            arrival_ns: c.arrival_ns,
            ok: c.ok,
        }
    }

    /// The next completion, if one is ready (never blocks).
    pub fn try_recv_raw(&self) -> Option<RxCompletion> {
        self.pop_rx()
    }

    /// The next datagram, if one is ready (never blocks).
    pub fn try_recv(&self) -> Option<Datagram> {
        self.pop_rx().map(|c| self.to_datagram(c))
    }

    /// Wait up to `timeout` (None: forever) for a completion. Ok(None) on timeout; an error when
    /// the socket is closed, the engine stopped with nothing left to receive, or nothing is posted.
    pub fn recv_raw(&self, timeout: Option<Duration>) -> OnloadResult<Option<RxCompletion>> {
        if self.closed.load(Ordering::Acquire) {
            // Closing released every posted buffer: nothing can arrive, so waiting would hang.
            return Err(OnloadError::InvalidArgument("the socket is closed".into()));
        }
        if let Some(c) = self.pop_rx() {
            return Ok(Some(c));
        }
        if self.rx_outstanding.load(Ordering::Acquire) == 0 {
            return Err(OnloadError::InvalidArgument(
                "recv: no buffer is posted, so nothing can arrive (post a buffer first)".into(),
            ));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let stopped = || self.shared.stopped();
        self.state.rx_notify.wait(self.wait_spin, deadline, &|| {
            !self.state.rx_done.is_empty() || stopped()
        });
        match self.pop_rx() {
            Some(c) => Ok(Some(c)),
            None if stopped() => Err(OnloadError::Stopped(String::new())),
            None => Ok(None),
        }
    }

    /// As [`Self::recv_raw`], handing back the posted `Vec`.
    pub fn recv(&self, timeout: Option<Duration>) -> OnloadResult<Option<Datagram>> {
        Ok(self.recv_raw(timeout)?.map(|c| self.to_datagram(c)))
    }

    /// Queue `len` bytes at `ptr` for transmission to `to`, named by `tag`.
    ///
    /// # Safety
    /// With [`Access::Registered`], `ptr` must be valid for reads of `len` bytes and unchanged
    /// until the transmit completion for `tag` is received (or the socket is closed).
    pub unsafe fn send_raw(
        &self,
        ptr: *const u8,
        len: usize,
        to: SocketAddrV4,
        tag: u64,
    ) -> OnloadResult<()> {
        self.check_open()?;
        let max = self.shared.config.max_payload;
        if len > max {
            return Err(OnloadError::InvalidArgument(format!(
                "data: {len} bytes exceeds the engine's largest payload ({max} bytes)"
            )));
        }
        if ptr.is_null() && len > 0 {
            return Err(OnloadError::InvalidArgument("data: null pointer".into()));
        }
        if to.port() == 0 {
            return Err(OnloadError::InvalidArgument(
                "to: destination port 0 is not a valid UDP port".into(),
            ));
        }
        Self::reserve(&self.tx_outstanding, self.capacity, "transmit")?;
        let r = TxRequest {
            addr: ptr as usize,
            len,
            to,
            tag,
        };
        if self.state.tx.push(r).is_err() {
            self.tx_outstanding.fetch_sub(1, Ordering::AcqRel);
            return Err(OnloadError::RingFull {
                what: "transmit",
                capacity: self.capacity,
            });
        }
        self.shared.kick();
        Ok(())
    }

    /// The next transmit completion, if any (never blocks).
    pub fn try_sent(&self) -> Option<TxCompletion> {
        let _g = self.tx_lock.lock().unwrap_or_else(|e| e.into_inner());
        let c = self.state.tx_done.pop()?;
        self.tx_outstanding.fetch_sub(1, Ordering::AcqRel);
        Some(c)
    }

    /// Wait up to `timeout` for a transmit completion (Ok(None) on timeout).
    pub fn wait_sent(&self, timeout: Option<Duration>) -> OnloadResult<Option<TxCompletion>> {
        if let Some(c) = self.try_sent() {
            return Ok(Some(c));
        }
        if self.tx_outstanding.load(Ordering::Acquire) == 0 {
            return Err(OnloadError::InvalidArgument(
                "wait_sent: nothing is being sent".into(),
            ));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        self.state.tx_notify.wait(self.wait_spin, deadline, &|| {
            !self.state.tx_done.is_empty() || self.shared.stopped()
        });
        match self.try_sent() {
            Some(c) => Ok(Some(c)),
            None if self.shared.stopped() => Err(OnloadError::Stopped(String::new())),
            None => Ok(None),
        }
    }

    /// Send `data` to `to` and wait until the engine has built and transmitted the frame.
    pub fn send(&self, data: &[u8], to: SocketAddrV4) -> OnloadResult<()> {
        if self.state.access != Access::Registered {
            return Err(OnloadError::InvalidArgument(
                "send: a VmWritev socket sends with send_raw (its buffers are in another process)"
                    .into(),
            ));
        }
        let _g = self.tx_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.tx_outstanding.load(Ordering::Acquire) != 0 {
            return Err(OnloadError::InvalidArgument(
                "send: asynchronous sends are outstanding; wait for them first".into(),
            ));
        }
        drop(_g);
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed) | OWNED_TAG;
        // SAFETY: `data` stays borrowed until this call returns, and it returns only after the
        // engine completed the request or stopped (a stopped engine never reads requests again).
        unsafe { self.send_raw(data.as_ptr(), data.len(), to, tag)? };
        loop {
            match self.wait_sent(None) {
                Ok(Some(c)) if c.ok => return Ok(()),
                Ok(Some(_)) => {
                    return Err(OnloadError::Os(
                        "send: the frame source refused the frame".into(),
                    ))
                }
                Ok(None) => continue,
                Err(e) => {
                    // Stopped: the engine drained its transmit rings before stopping, so the
                    // completion is there unless it never took the request.
                    if let Some(c) = self.try_sent() {
                        return if c.ok { Ok(()) } else { Err(e) };
                    }
                    return Err(e);
                }
            }
        }
    }

    /// This socket's counters.
    pub fn stats(&self) -> SocketStats {
        let c = &self.state.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Acquire);
        SocketStats {
            delivered: l(&c.delivered),
            delivered_bytes: l(&c.delivered_bytes),
            no_buffer: l(&c.no_buffer),
            too_small: l(&c.too_small),
            faults: l(&c.faults),
            wakeups: l(&c.wakeups),
            tx_frames: l(&c.tx_frames),
            tx_failed: l(&c.tx_failed),
        }
    }

    /// Unbind: after this returns the engine no longer touches any buffer of this socket
    /// (posted raw buffers may be freed; owned ones are dropped). Idempotent.
    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shared.unbind(self.state.port);
        self.owned.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl Drop for OnloadSocket {
    fn drop(&mut self) {
        self.close();
    }
}
