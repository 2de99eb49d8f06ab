//! The onload engine's C ABI (declared in `include/movelab_host.h`): start an engine from a JSON
//! spec, bind UDP ports, post receive buffers, receive with or without blocking, send.
//! Same conventions as the copy API: 0 or a positive result on success, a negative `MOVELAB_E*`
//! code on failure with the message in `movelab_last_error()`, no panic across the boundary.
//! An engine and its sockets belong to the process that made them: in a child after `fork()`
//! (where the engine's thread does not exist) every call returns `MOVELAB_EFORKED` at once, and
//! destroying or closing one there only lets go of it (nothing is joined or waited for).
use crate::capi::{guarded, set_error, MOVELAB_EFORKED, MOVELAB_EINVAL, MOVELAB_EOS, MOVELAB_OK};
use crate::onload::error::OnloadError;
use crate::onload::socket::OnloadSocket;
use crate::onload::source_replay::ReplayHandle;
use crate::onload::spec::{self, EngineSpec};
use crate::onload::OnloadEngine;
use std::ffi::{c_char, c_int, CStr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// The engine has stopped (its own code: -5 is `MOVELAB_EFORKED`).
pub const MOVELAB_ESTOPPED: c_int = -8;
/// A ring is full (too many buffers posted or sends queued).
pub const MOVELAB_EFULL: c_int = -6;
/// The port is already bound.
pub const MOVELAB_EINUSE: c_int = -7;

/// Opaque onload engine handle.
pub struct MovelabOnload {
    engine: OnloadEngine,
    replay: Option<ReplayHandle>,
    /// The process that made it.
    owner: u32,
}

/// Opaque UDP socket handle (the socket and the process that bound it).
pub struct MovelabUdpSocket(OnloadSocket, u32);

/// `MOVELAB_EFORKED` (with the message) when called in a child forked from `owner`.
fn refuse_forked(owner: u32, what: &str) -> Option<c_int> {
    let me = std::process::id();
    (me != owner).then(|| {
        set_error(format!(
            "this onload {what} belongs to process {owner}, not to this forked child ({me}); \
             create a new engine in the child"
        ));
        MOVELAB_EFORKED
    })
}

/// The engine behind a live handle (or NULL), refused in a forked child.
fn engine<'a>(o: *const MovelabOnload) -> Result<&'a MovelabOnload, c_int> {
    // SAFETY: non-null handles come from movelab_onload_create and live until destroyed.
    let Some(o) = (unsafe { o.as_ref() }) else {
        return Err(null("onload handle"));
    };
    match refuse_forked(o.owner, "engine") {
        Some(c) => Err(c),
        None => Ok(o),
    }
}

/// A receive completion as C sees it.
#[repr(C)]
pub struct MovelabUdpCompletion {
    pub tag: u64,
    pub len: usize,
    /// Sender's IPv4 address in host byte order, and port.
    pub src_ip: u32,
    pub src_port: u16,
    /// 1 when the payload was written, 0 when the delivery failed (len is then 0).
    pub ok: u8,
    /// 1 when the buffer was smaller than the payload: its first `len` bytes were written and
    /// the rest discarded (the kernel's MSG_TRUNC). Fills what was padding before.
    pub truncated: u8,
    pub arrival_ns: u64,
}

/// Engine counters as C sees them.
#[repr(C)]
pub struct MovelabOnloadStats {
    pub frames: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub bad_checksum: u64,
    pub unbound_port: u64,
    pub no_buffer: u64,
    pub wakeups: u64,
    pub tx_frames: u64,
}

fn code(e: OnloadError) -> c_int {
    let c = match e {
        OnloadError::Stopped(_) => MOVELAB_ESTOPPED,
        OnloadError::RingFull { .. } => MOVELAB_EFULL,
        OnloadError::PortInUse(_) => MOVELAB_EINUSE,
        OnloadError::Os(_) | OnloadError::Unavailable { .. } => MOVELAB_EOS,
        OnloadError::InvalidArgument(_) => MOVELAB_EINVAL,
    };
    set_error(e.to_string());
    c
}

fn null(what: &str) -> c_int {
    set_error(format!("null {what}"));
    MOVELAB_EINVAL
}

/// Start an engine from a JSON spec (NULL or "" for the defaults: a replay source). NULL on
/// error.
///
/// # Safety
/// `spec_json` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn movelab_onload_create(spec_json: *const c_char) -> *mut MovelabOnload {
    let json = if spec_json.is_null() {
        String::new()
    } else {
        // SAFETY: the caller passes a NUL-terminated string.
        unsafe { CStr::from_ptr(spec_json) }
            .to_string_lossy()
            .into_owned()
    };
    let r = std::panic::catch_unwind(|| {
        let s = EngineSpec::parse(&json)?;
        spec::start(&s, None)
    });
    match r {
        Ok(Ok(s)) => Box::into_raw(Box::new(MovelabOnload {
            engine: s.engine,
            replay: s.replay,
            owner: std::process::id(),
        })),
        Ok(Err(e)) => {
            code(e);
            std::ptr::null_mut()
        }
        Err(_) => {
            set_error("internal error (panic) starting the onload engine".into());
            std::ptr::null_mut()
        }
    }
}

/// Stop the engine (queued sends complete) and free it. Sockets must be closed first. NULL is
/// ignored. In a forked child it only lets go: the engine's thread is the parent's.
///
/// # Safety
/// `o` comes from movelab_onload_create and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn movelab_onload_destroy(o: *mut MovelabOnload) {
    if !o.is_null() {
        // SAFETY: created by Box::into_raw in movelab_onload_create.
        let o = unsafe { Box::from_raw(o) };
        if o.owner != std::process::id() {
            std::mem::forget(o); // stopping would join a thread this child does not have
        }
    }
}

/// Open a gated replay (spec `"replay": {"gated": true}`): its frames start arriving now.
///
/// # Safety
/// `o` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn movelab_onload_go(o: *const MovelabOnload) -> c_int {
    guarded(|| {
        let o = match engine(o) {
            Ok(o) => o,
            Err(c) => return c,
        };
        match &o.replay {
            Some(h) => {
                h.go();
                MOVELAB_OK
            }
            None => {
                set_error("the source is not a replay".into());
                MOVELAB_EINVAL
            }
        }
    })
}

/// Copy the engine's counters into `*out`.
///
/// # Safety
/// `o` is a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn movelab_onload_stats(
    o: *const MovelabOnload,
    out: *mut MovelabOnloadStats,
) -> c_int {
    guarded(|| {
        let o = match engine(o) {
            Ok(o) => o,
            Err(c) => return c,
        };
        if out.is_null() {
            return null("stats pointer");
        }
        let s = o.engine.stats();
        // SAFETY: checked non-null; the caller passes writable storage.
        unsafe {
            *out = MovelabOnloadStats {
                frames: s.frames,
                delivered: s.delivered,
                delivered_bytes: s.delivered_bytes,
                dropped: s.dropped(),
                bad_checksum: s.bad_ip_checksum + s.bad_udp_checksum,
                unbound_port: s.unbound_port,
                no_buffer: s.no_buffer,
                wakeups: s.wakeups,
                tx_frames: s.tx_frames,
            }
        };
        MOVELAB_OK
    })
}

/// Bind a UDP port (1 ..= 65535). NULL on error (MOVELAB_EINUSE: see movelab_last_error).
///
/// # Safety
/// `o` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn movelab_udp_bind(
    o: *const MovelabOnload,
    port: u16,
) -> *mut MovelabUdpSocket {
    let Ok(o) = engine(o) else {
        return std::ptr::null_mut();
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| o.engine.bind(port))) {
        Ok(Ok(s)) => Box::into_raw(Box::new(MovelabUdpSocket(s, o.owner))),
        Ok(Err(e)) => {
            code(e);
            std::ptr::null_mut()
        }
        Err(_) => {
            set_error("internal error (panic) binding".into());
            std::ptr::null_mut()
        }
    }
}

/// Unbind and free a socket: when it returns, the engine no longer touches any posted buffer.
/// In a forked child it only lets go: unbinding would wait on the parent's engine.
///
/// # Safety
/// `s` comes from movelab_udp_bind and is not used afterwards; its engine is still alive.
#[no_mangle]
pub unsafe extern "C" fn movelab_udp_close(s: *mut MovelabUdpSocket) {
    if !s.is_null() {
        // SAFETY: created by Box::into_raw in movelab_udp_bind.
        let s = unsafe { Box::from_raw(s) };
        if s.1 != std::process::id() {
            std::mem::forget(s);
        }
    }
}

fn sock<'a>(s: *const MovelabUdpSocket) -> Result<&'a OnloadSocket, c_int> {
    // SAFETY: non-null handles come from movelab_udp_bind and live until movelab_udp_close.
    match unsafe { s.as_ref() } {
        Some(s) => match refuse_forked(s.1, "socket") {
            Some(c) => Err(c),
            None => Ok(&s.0),
        },
        None => Err(null("socket handle")),
    }
}

/// Post `len` bytes at `buf` for one datagram, named by `tag` (below 2^63).
///
/// # Safety
/// `buf` stays valid and untouched until its completion is received or the socket is closed.
#[no_mangle]
pub unsafe extern "C" fn movelab_udp_post(
    s: *const MovelabUdpSocket,
    buf: *mut u8,
    len: usize,
    tag: u64,
) -> c_int {
    guarded(|| {
        let s = match sock(s) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if tag >> 63 != 0 {
            set_error("tag: must be below 2^63".into());
            return MOVELAB_EINVAL;
        }
        // SAFETY: forwarded caller guarantee.
        unsafe { s.post_raw(buf, len, tag) }.map_or_else(code, |_| MOVELAB_OK)
    })
}

/// Receive one completion into `*out`: `timeout_ms` < 0 blocks, 0 polls. Returns 1 when a
/// completion was stored, 0 on timeout, negative on error.
///
/// # Safety
/// `s` is a live socket and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn movelab_udp_recv(
    s: *const MovelabUdpSocket,
    timeout_ms: i64,
    out: *mut MovelabUdpCompletion,
) -> c_int {
    guarded(|| {
        let s = match sock(s) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if out.is_null() {
            return null("completion pointer");
        }
        let r = match timeout_ms {
            0 => Ok(s.try_recv_raw()),
            t if t < 0 => s.recv_raw(None),
            t => s.recv_raw(Some(Duration::from_millis(t as u64))),
        };
        match r {
            Ok(Some(c)) => {
                // SAFETY: checked non-null; the caller passes writable storage.
                unsafe {
                    *out = MovelabUdpCompletion {
                        tag: c.tag,
                        len: c.len,
                        src_ip: u32::from(*c.from.ip()),
                        src_port: c.from.port(),
                        ok: c.ok as u8,
                        truncated: (c.ok && c.datagram_len > c.len) as u8,
                        arrival_ns: c.arrival_ns,
                    }
                };
                1
            }
            Ok(None) => 0,
            Err(e) => code(e),
        }
    })
}

/// Send `len` bytes to `dst_ip` (host byte order) : `dst_port`; returns when the engine has
/// transmitted the frame.
///
/// # Safety
/// `s` is a live socket; `data` valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn movelab_udp_send(
    s: *const MovelabUdpSocket,
    data: *const u8,
    len: usize,
    dst_ip: u32,
    dst_port: u16,
) -> c_int {
    guarded(|| {
        let s = match sock(s) {
            Ok(s) => s,
            Err(c) => return c,
        };
        if data.is_null() && len > 0 {
            return null("data pointer");
        }
        let slice = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller guarantees `data` is valid for `len` bytes.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        let to = SocketAddrV4::new(Ipv4Addr::from(dst_ip), dst_port);
        s.send(slice, to).map_or_else(code, |_| MOVELAB_OK)
    })
}

/// The CPU the engine thread is pinned to, or -1.
///
/// # Safety
/// `o` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn movelab_onload_cpu(o: *const MovelabOnload) -> c_int {
    // SAFETY: live handle or NULL (checked).
    match unsafe { o.as_ref() } {
        Some(o) => o.engine.pinned_cpu().map_or(-1, |c| c as c_int),
        None => null("onload handle"),
    }
}
