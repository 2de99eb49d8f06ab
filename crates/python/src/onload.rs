//! Bindings for the network onload engine (`movelab_host::onload`): conversion glue only.
//!
//! A posted receive buffer is held (its buffer export keeps the object alive and its memory in
//! place) from `post` until its datagram is received or the socket is closed. Blocking calls
//! release the GIL and wait in slices of 50 ms, checking for signals between slices, so that
//! Ctrl-C interrupts them.
//!
//! The engine and its sockets belong to the process that made them (the engine's thread does not
//! exist in a child after `fork()`): in a forked child every call raises RuntimeError at once, and
//! dropping them there lets go without joining or waiting for anything.
use movelab_host::onload::spec::{self, EngineSpec};
use movelab_host::onload::{
    frame, pattern, Access, OnloadEngine, OnloadError, OnloadSocket, ReplayHandle,
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A posted buffer: its export and the object handed back on receipt.
type Held = (PyBuffer<u8>, Py<PyAny>);
/// What `recv` returns: (buffer, nbytes, src_ip, src_port, arrival_ns).
type Received = (Py<PyAny>, usize, String, u16, u64, usize);

const SLICE: Duration = Duration::from_millis(50);

fn to_py(e: OnloadError) -> PyErr {
    let msg = e.to_string();
    match e {
        OnloadError::InvalidArgument(_)
        | OnloadError::PortInUse(_)
        | OnloadError::RingFull { .. } => PyValueError::new_err(msg),
        OnloadError::Os(_) | OnloadError::Unavailable { .. } => PyOSError::new_err(msg),
        OnloadError::Stopped(_) => PyRuntimeError::new_err(msg),
    }
}

/// Refuses a call made in a forked child of the process `owner` that made the object.
fn in_owner(owner: u32, what: &str) -> PyResult<()> {
    let me = std::process::id();
    if me == owner {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(format!(
        "this {what} belongs to process {owner}, not to this forked child ({me}); \
         create a new engine in the child"
    )))
}

fn addr(ip: &str, port: u16, what: &str) -> PyResult<SocketAddrV4> {
    let ip: Ipv4Addr = ip
        .parse()
        .map_err(|_| PyValueError::new_err(format!("{what}: '{ip}' is not an IPv4 address")))?;
    Ok(SocketAddrV4::new(ip, port))
}

/// An onload engine (movelab.host.onload.OnloadEngine wraps this).
#[pyclass(module = "movelab._core", name = "OnloadEngine")]
pub struct PyOnloadEngine {
    engine: Mutex<Option<OnloadEngine>>,
    replay: Option<ReplayHandle>,
    /// The process that made the engine.
    owner: u32,
}

impl PyOnloadEngine {
    fn with<T>(&self, f: impl FnOnce(&OnloadEngine) -> PyResult<T>) -> PyResult<T> {
        in_owner(self.owner, "onload engine")?;
        let g = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(e) => f(e),
            None => Err(PyRuntimeError::new_err("the onload engine is closed")),
        }
    }
    fn replay(&self) -> PyResult<&ReplayHandle> {
        in_owner(self.owner, "onload engine")?;
        self.replay
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("the engine's source is not a replay"))
    }
}

#[pymethods]
impl PyOnloadEngine {
    /// Start an engine from a JSON spec; `frames` replaces the replay's own frames.
    #[new]
    #[pyo3(signature = (spec_json, frames=None))]
    fn new(py: Python<'_>, spec_json: &str, frames: Option<Vec<Vec<u8>>>) -> PyResult<Self> {
        let s = EngineSpec::parse(spec_json).map_err(to_py)?;
        let started = py.detach(|| spec::start(&s, frames)).map_err(to_py)?;
        Ok(PyOnloadEngine {
            engine: Mutex::new(Some(started.engine)),
            replay: started.replay,
            owner: std::process::id(),
        })
    }

    /// Open a gated replay.
    fn go(&self) -> PyResult<()> {
        self.replay()?.go();
        Ok(())
    }

    /// Has the replay handed over (or dropped) every frame?
    fn replay_finished(&self) -> PyResult<bool> {
        Ok(self.replay()?.finished())
    }

    /// Transmitted frames the replay captured (spec `replay.capture_tx`).
    fn captured<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        Ok(self
            .replay()?
            .captured()
            .iter()
            .map(|f| PyBytes::new(py, f))
            .collect())
    }

    /// The engine's counters as JSON.
    fn stats_json(&self) -> PyResult<String> {
        self.with(|e| {
            serde_json::to_string(&e.stats()).map_err(|e| PyRuntimeError::new_err(e.to_string()))
        })
    }

    #[getter]
    fn cpu(&self) -> PyResult<Option<usize>> {
        self.with(|e| Ok(e.pinned_cpu()))
    }

    #[getter]
    fn source(&self) -> PyResult<&'static str> {
        self.with(|e| Ok(e.source_name()))
    }

    /// Bind a port; `pid` switches the socket to process_vm_writev delivery into that process.
    #[pyo3(signature = (port, pid=None))]
    fn bind(&self, py: Python<'_>, port: u16, pid: Option<i32>) -> PyResult<PyUdpSocket> {
        let access = pid.map_or(Access::Registered, |pid| Access::VmWritev { pid });
        let sock = self.with(|e| py.detach(|| e.bind_with(port, access)).map_err(to_py))?;
        Ok(PyUdpSocket {
            sock: Some(sock),
            held: Mutex::new(HashMap::new()),
            next_tag: Mutex::new(0),
            closed: AtomicBool::new(false),
            owner: self.owner,
        })
    }

    /// Stop the engine (queued sends complete); returns the final counters as JSON.
    fn shutdown(&self, py: Python<'_>) -> PyResult<Option<String>> {
        in_owner(self.owner, "onload engine")?;
        let e = self.engine.lock().unwrap_or_else(|e| e.into_inner()).take();
        match e {
            Some(e) => {
                let r = py.detach(|| e.shutdown()).map_err(to_py)?;
                Ok(Some(
                    serde_json::to_string(&r)
                        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
                ))
            }
            None => Ok(None),
        }
    }
}

impl Drop for PyOnloadEngine {
    fn drop(&mut self) {
        if std::process::id() != self.owner {
            // A forked child: the engine's thread is the parent's; joining it would wait forever.
            std::mem::forget(
                self.engine
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .take(),
            );
            std::mem::forget(self.replay.take());
        }
    }
}

/// A bound UDP port.
#[pyclass(module = "movelab._core", name = "UdpSocket")]
pub struct PyUdpSocket {
    /// Always Some, except while dropping.
    sock: Option<OnloadSocket>,
    /// Posted buffers by tag: the export and the object handed back on receipt.
    held: Mutex<HashMap<u64, Held>>,
    next_tag: Mutex<u64>,
    /// Set by `close`: every later call but `close` and the counters is an error.
    closed: AtomicBool,
    /// The process that made the engine.
    owner: u32,
}

impl PyUdpSocket {
    /// The socket, in the process that owns it.
    fn sock(&self) -> PyResult<&OnloadSocket> {
        in_owner(self.owner, "onload socket")?;
        self.sock
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the socket is closed"))
    }

    /// The socket, open, in the process that owns it.
    fn open(&self) -> PyResult<&OnloadSocket> {
        let s = self.sock()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(PyValueError::new_err("the socket is closed"));
        }
        Ok(s)
    }

    fn release_all(&self, py: Python<'_>) {
        let held: Vec<_> = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (_, (b, _)) in held {
            b.release(py);
        }
    }
}

#[pymethods]
impl PyUdpSocket {
    #[getter]
    fn port(&self) -> PyResult<u16> {
        Ok(self.sock()?.port())
    }

    #[getter]
    fn posted(&self) -> PyResult<usize> {
        Ok(self.sock()?.posted())
    }

    #[getter]
    fn capacity(&self) -> PyResult<usize> {
        Ok(self.sock()?.capacity())
    }

    /// Post a writable, C-contiguous buffer for one datagram.
    fn post(&self, buf: &Bound<'_, PyAny>) -> PyResult<()> {
        let sock = self.open()?;
        let b = PyBuffer::<u8>::get(buf).map_err(|e| {
            PyValueError::new_err(format!(
                "buf: must support the buffer protocol (bytearray, memoryview, NumPy array): {e}"
            ))
        })?;
        if b.readonly() {
            return Err(PyValueError::new_err(
                "buf: the buffer is read-only (bytes?); pass a bytearray or a writable array",
            ));
        }
        if !b.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "buf: the buffer must be C-contiguous",
            ));
        }
        if b.len_bytes() == 0 {
            return Err(PyValueError::new_err("buf: the buffer is empty"));
        }
        let tag = {
            let mut t = self.next_tag.lock().unwrap_or_else(|e| e.into_inner());
            *t = (*t + 1) & !(1 << 63);
            *t
        };
        // SAFETY: the export (held below until the completion is received or the socket is
        // closed, which waits for the engine to let go) keeps the memory valid and in place.
        unsafe { sock.post_raw(b.buf_ptr() as *mut u8, b.len_bytes(), tag) }.map_err(to_py)?;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tag, (b, buf.clone().unbind()));
        Ok(())
    }

    /// Receive one datagram: (buffer, nbytes, src_ip, src_port, arrival_ns, datagram_nbytes), or
    /// None when nothing arrived (block=False, or the timeout passed). datagram_nbytes > nbytes
    /// when the buffer was smaller than the payload and the datagram was cut short.
    #[pyo3(signature = (block=true, timeout=None))]
    fn recv(
        &self,
        py: Python<'_>,
        block: bool,
        timeout: Option<f64>,
    ) -> PyResult<Option<Received>> {
        let sock = self.open()?;
        let deadline = match timeout {
            None => None,
            Some(t) if t >= 0.0 && t.is_finite() => {
                Some(Instant::now() + Duration::from_secs_f64(t))
            }
            Some(t) => {
                return Err(PyValueError::new_err(format!(
                    "timeout: must be a non-negative number of seconds or None, got {t}"
                )))
            }
        };
        let c = loop {
            if !block {
                break sock.try_recv_raw();
            }
            let slice = deadline.map_or(SLICE, |d| {
                d.saturating_duration_since(Instant::now()).min(SLICE)
            });
            match py.detach(|| sock.recv_raw(Some(slice))).map_err(to_py)? {
                Some(c) => break Some(c),
                None if deadline.is_some_and(|d| Instant::now() >= d) => break None,
                None => py.check_signals()?,
            }
        };
        let Some(c) = c else { return Ok(None) };
        let Some((b, obj)) = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&c.tag)
        else {
            return Err(PyRuntimeError::new_err(format!(
                "completion for unknown buffer tag {}",
                c.tag
            )));
        };
        b.release(py);
        if !c.ok {
            return Err(PyOSError::new_err(
                "the engine could not write the posted buffer (process_vm_writev failed)",
            ));
        }
        Ok(Some((
            obj,
            c.len,
            c.from.ip().to_string(),
            c.from.port(),
            c.arrival_ns,
            c.datagram_len,
        )))
    }

    /// Send a buffer's bytes to (ip, port); returns once the frame is transmitted.
    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>, ip: &str, port: u16) -> PyResult<()> {
        let sock = self.open()?;
        let to = addr(ip, port, "addr")?;
        let b = PyBuffer::<u8>::get(data).map_err(|e| {
            PyValueError::new_err(format!("data: must support the buffer protocol: {e}"))
        })?;
        if !b.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "data: the buffer must be C-contiguous",
            ));
        }
        let (ptr, len) = (b.buf_ptr() as usize, b.len_bytes());
        // SAFETY: the export `b` keeps the memory valid until this call returns, which is after
        // the engine transmitted the frame (or stopped).
        let r = py.detach(|| {
            let s = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
            sock.send(s, to)
        });
        b.release(py);
        r.map_err(to_py)
    }

    /// The socket's counters as JSON.
    fn stats_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.sock()?.stats())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Unbind and release every posted buffer.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let sock = self.sock()?;
        self.closed.store(true, Ordering::Release);
        py.detach(|| sock.close());
        self.release_all(py);
        Ok(())
    }
}

impl Drop for PyUdpSocket {
    fn drop(&mut self) {
        let sock = self.sock.take();
        if std::process::id() != self.owner {
            // A forked child: the engine that would let go of the buffers is the parent's.
            std::mem::forget(sock);
            return;
        }
        if let Some(s) = &sock {
            s.close();
        }
        drop(sock);
        Python::attach(|py| self.release_all(py));
    }
}

/// Build an Ethernet/IPv4/UDP frame around `payload` (tests and examples).
#[pyfunction]
#[pyo3(signature = (payload, src_ip, src_port, dst_ip, dst_port, ip_id=0))]
fn onload_frame<'py>(
    py: Python<'py>,
    payload: &[u8],
    src_ip: &str,
    src_port: u16,
    dst_ip: &str,
    dst_port: u16,
    ip_id: u16,
) -> PyResult<Bound<'py, PyBytes>> {
    if payload.len() > frame::MAX_UDP_PAYLOAD {
        return Err(PyValueError::new_err(format!(
            "payload: {} bytes exceeds the UDP maximum of {}",
            payload.len(),
            frame::MAX_UDP_PAYLOAD
        )));
    }
    let c = movelab_host::onload::OnloadConfig::default();
    let f = frame::build(
        &frame::Flow {
            src_mac: c.peer_mac,
            dst_mac: c.local_mac,
            src: addr(src_ip, src_port, "src_ip")?,
            dst: addr(dst_ip, dst_port, "dst_ip")?,
        },
        payload,
        ip_id,
    );
    Ok(PyBytes::new(py, &f))
}

/// The payload the replay sends with sequence number `seq`.
#[pyfunction]
fn onload_payload<'py>(py: Python<'py>, seq: u64, nbytes: usize) -> PyResult<Bound<'py, PyBytes>> {
    if nbytes > frame::MAX_UDP_PAYLOAD {
        return Err(PyValueError::new_err(format!(
            "nbytes: {nbytes} exceeds the UDP maximum of {}",
            frame::MAX_UDP_PAYLOAD
        )));
    }
    Ok(PyBytes::new(py, &pattern::make(seq, nbytes)))
}

/// Run onload benchmark points (JSON spec in, JSON rows out); the GIL is released.
#[pyfunction]
fn onload_bench(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    py.detach(|| movelab_host::onload::bench::run(spec_json))
        .map_err(to_py)
}

/// (True, "") when the veth source can run here, else (False, why).
#[pyfunction]
fn onload_veth_available(py: Python<'_>) -> (bool, String) {
    match py.detach(movelab_host::onload::bench::veth_available) {
        Ok(()) => (true, String::new()),
        Err(why) => (false, why),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyOnloadEngine>()?;
    m.add_class::<PyUdpSocket>()?;
    m.add_function(wrap_pyfunction!(onload_frame, m)?)?;
    m.add_function(wrap_pyfunction!(onload_payload, m)?)?;
    m.add_function(wrap_pyfunction!(onload_bench, m)?)?;
    m.add_function(wrap_pyfunction!(onload_veth_available, m)?)?;
    Ok(())
}
