//! Bindings for the IPC endpoints of movelab-host (`movelab_host::ipc`): conversion glue only.
//!
//! A posted buffer is held (a `PyBuffer`, which keeps the exporting object alive and its memory
//! pinned) from `iwrite`/`iread` until `wait` returns, or until the connection is closed.
//! Blocking calls (accept, connect, wait, the benchmark sides) are interruptible by Ctrl-C (see
//! [`Signals`]); an interrupted wait leaves its operation in flight and its buffer held.
use crate::host::{int_arg, Signals};
use movelab_host::ipc::{self, Connection, IpcError, Listener, Options, Transfer, TransferPath};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{
    PyConnectionError, PyOSError, PyPermissionError, PyRuntimeError, PyTimeoutError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

fn to_py(e: IpcError) -> PyErr {
    let msg = e.to_string();
    match &e {
        IpcError::Timeout { .. } | IpcError::WaitTimeout { .. } => PyTimeoutError::new_err(msg),
        IpcError::Auth(_) => PyPermissionError::new_err(msg),
        IpcError::AddrInUse { .. } => PyOSError::new_err((e.errno().unwrap_or(0), msg)),
        IpcError::PeerClosed | IpcError::Closed(_) => PyConnectionError::new_err(msg),
        IpcError::UnknownCookie(_)
        | IpcError::SizeMismatch { .. }
        | IpcError::BadBuffer(_)
        | IpcError::InvalidOption(_)
        | IpcError::BadPath { .. } => PyValueError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

fn duration(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        // Infinite, or too large for a Duration: no limit.
        Some(t) if t >= 0.0 => Ok(Duration::try_from_secs_f64(t).ok()),
        Some(t) => Err(PyValueError::new_err(format!(
            "timeout must be a non-negative number of seconds or None, got {t}"
        ))),
    }
}

/// "No limit" for the connection options (about a century).
const NO_LIMIT: Duration = Duration::from_secs(3_000_000_000);

fn options(
    path: &str,
    deny_single_copy: bool,
    ring_slots: Option<&Bound<'_, PyAny>>,
    slot_size: Option<&Bound<'_, PyAny>>,
    timeout: f64,
) -> PyResult<Options> {
    let d = Options::default();
    let o = Options {
        path: TransferPath::parse(path).map_err(to_py)?,
        deny_single_copy,
        ring_slots: match ring_slots {
            Some(v) => int_arg(v, "ring_slots", 1, 1024)? as usize,
            None => d.ring_slots,
        },
        slot_size: match slot_size {
            Some(v) => int_arg(v, "slot_size", 4096, 64 << 20)? as usize,
            None => d.slot_size,
        },
        timeout: duration(Some(timeout))?.unwrap_or(NO_LIMIT),
    };
    if !o.slot_size.is_multiple_of(4096) {
        return Err(PyValueError::new_err(format!(
            "slot_size = {}: expected a multiple of 4096 in 4096..=67108864",
            o.slot_size
        )));
    }
    Ok(o)
}

fn cookie_arg(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(int_arg(obj, "cookie", 0, u64::MAX as i128)? as u64)
}

fn transfer_dict<'py>(py: Python<'py>, t: &Transfer) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("cookie", t.cookie)?;
    d.set_item(
        "direction",
        match t.direction {
            ipc::Direction::Write => "write",
            ipc::Direction::Read => "read",
        },
    )?;
    d.set_item("bytes", t.bytes)?;
    d.set_item("path", t.path.as_str())?;
    d.set_item("note", t.note.clone())?;
    Ok(d)
}

/// A listening IPC endpoint.
#[pyclass(module = "movelab._core", name = "IpcListener")]
pub struct PyListener {
    inner: Mutex<Option<Listener>>,
}

#[pymethods]
impl PyListener {
    /// Accept one peer (waiting at most `timeout` seconds) and return the connection.
    #[pyo3(signature = (timeout=None))]
    fn accept(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PyConnection> {
        let t = duration(timeout)?;
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let l = guard
            .as_ref()
            .ok_or_else(|| PyConnectionError::new_err("the listener is closed"))?;
        let conn = Signals::detach(py, |sig| l.accept_with(t, sig))?.map_err(to_py)?;
        Ok(PyConnection::new(conn))
    }

    #[getter]
    fn path(&self) -> PyResult<String> {
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        guard
            .as_ref()
            .map(|l| l.path().display().to_string())
            .ok_or_else(|| PyConnectionError::new_err("the listener is closed"))
    }

    /// Stop listening and remove the socket file.
    fn close(&self) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// One end of an IPC connection.
#[pyclass(module = "movelab._core", name = "IpcConnection")]
pub struct PyConnection {
    inner: Connection,
    held: Mutex<HashMap<u64, PyBuffer<u8>>>,
}

impl PyConnection {
    fn new(inner: Connection) -> Self {
        PyConnection {
            inner,
            held: Mutex::new(HashMap::new()),
        }
    }

    fn hold(&self, cookie: u64, buf: PyBuffer<u8>) {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cookie, buf);
    }

    fn release(&self, py: Python<'_>, cookie: u64) {
        let b = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&cookie);
        if let Some(b) = b {
            b.release(py);
        }
    }
}

fn contiguous(buf: &PyBuffer<u8>) -> PyResult<()> {
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "the buffer is not C-contiguous; pass a contiguous array or a copy of it",
        ));
    }
    Ok(())
}

#[pymethods]
impl PyConnection {
    /// Post a write of the buffer's bytes; returns a cookie. The buffer is held until `wait`.
    fn iwrite(&self, buf: &Bound<'_, PyAny>) -> PyResult<u64> {
        let b = PyBuffer::<u8>::get(buf)?;
        contiguous(&b)?;
        // SAFETY: `b` (which keeps the exporter alive and its memory in place) is stored in `held`
        // until the operation has completed (wait) or the connection is closed; callers must not
        // modify it meanwhile (documented in the Python API).
        let cookie = unsafe {
            self.inner
                .iwrite_raw(b.buf_ptr() as *const u8, b.len_bytes())
        }
        .map_err(to_py)?;
        self.hold(cookie, b);
        Ok(cookie)
    }

    /// Post a read into a writable buffer; returns a cookie. The buffer is held until `wait`.
    fn iread(&self, buf: &Bound<'_, PyAny>) -> PyResult<u64> {
        let b = PyBuffer::<u8>::get(buf)?;
        contiguous(&b)?;
        if b.readonly() {
            return Err(PyValueError::new_err(
                "the read buffer is read-only (bytes?); pass a bytearray, a writable memoryview or an array",
            ));
        }
        // SAFETY: as for iwrite; the buffer is writable (checked above) and held until completion.
        let cookie = unsafe { self.inner.iread_raw(b.buf_ptr() as *mut u8, b.len_bytes()) }
            .map_err(to_py)?;
        self.hold(cookie, b);
        Ok(cookie)
    }

    /// True once the operation has finished; `wait` then returns at once.
    fn check(&self, cookie: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.inner.check(cookie_arg(cookie)?).map_err(to_py)
    }

    /// Block (without the GIL, without spinning) until the operation finishes; returns
    /// {cookie, direction, bytes, path, note}. On timeout the operation stays in flight.
    #[pyo3(signature = (cookie, timeout=None))]
    fn wait<'py>(
        &self,
        py: Python<'py>,
        cookie: &Bound<'py, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let cookie = cookie_arg(cookie)?;
        let t = duration(timeout)?;
        // Interrupted (Ctrl-C): the operation stays in flight and its buffer stays held.
        let r = Signals::detach(py, |sig| self.inner.wait_with(cookie, t, sig))?;
        if !matches!(r, Err(IpcError::WaitTimeout { .. })) {
            self.release(py, cookie);
        }
        transfer_dict(py, &r.map_err(to_py)?)
    }

    /// Close the connection; operations still in flight fail with ConnectionError.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.inner.close());
        let held: Vec<PyBuffer<u8>> = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, b)| b)
            .collect();
        for b in held {
            b.release(py);
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The authenticated peer's credentials (SO_PEERCRED): {pid, uid, gid}.
    #[getter]
    fn peer<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.peer();
        let d = PyDict::new(py);
        d.set_item("pid", p.pid)?;
        d.set_item("uid", p.uid)?;
        d.set_item("gid", p.gid)?;
        Ok(d)
    }

    /// The path preference in force ("single-copy" means: where the kernel allows it).
    #[getter]
    fn preferred_path(&self) -> &'static str {
        self.inner.preferred_path().as_str()
    }

    /// Run the measuring side of the IPC benchmark; returns one dict per size.
    #[pyo3(signature = (sizes, quick=false))]
    fn bench_drive<'py>(
        &self,
        py: Python<'py>,
        sizes: Vec<usize>,
        quick: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let rows = Signals::detach(py, |sig| ipc::bench::drive(&self.inner, &sizes, quick, sig))?
            .map_err(to_py)?;
        rows.iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("size_bytes", r.size_bytes)?;
                d.set_item("path", r.path.as_str())?;
                d.set_item("latency_ns", r.latency_ns)?;
                d.set_item("bandwidth_mb_s", r.bandwidth_mb_s)?;
                d.set_item("latency_iters", r.latency_iters)?;
                d.set_item("bandwidth_iters", r.bandwidth_iters)?;
                d.set_item("window", r.window)?;
                d.set_item("note", r.note.clone())?;
                Ok(d)
            })
            .collect()
    }

    /// Run the echoing side of the IPC benchmark.
    #[pyo3(signature = (sizes, quick=false))]
    fn bench_serve(&self, py: Python<'_>, sizes: Vec<usize>, quick: bool) -> PyResult<()> {
        Signals::detach(py, |sig| ipc::bench::serve(&self.inner, &sizes, quick, sig))?
            .map_err(to_py)
    }
}

/// Listen on a Unix socket path.
#[pyfunction]
#[pyo3(signature = (path, *, prefer="auto", deny_single_copy=false, ring_slots=None, slot_size=None, timeout=10.0))]
fn ipc_listen(
    path: &str,
    prefer: &str,
    deny_single_copy: bool,
    ring_slots: Option<Bound<'_, PyAny>>,
    slot_size: Option<Bound<'_, PyAny>>,
    timeout: f64,
) -> PyResult<PyListener> {
    let o = options(
        prefer,
        deny_single_copy,
        ring_slots.as_ref(),
        slot_size.as_ref(),
        timeout,
    )?;
    let l = Listener::bind(path, o).map_err(to_py)?;
    Ok(PyListener {
        inner: Mutex::new(Some(l)),
    })
}

/// Connect to a listener (retrying until it exists, within `timeout` seconds).
#[pyfunction]
#[pyo3(signature = (path, *, prefer="auto", deny_single_copy=false, ring_slots=None, slot_size=None, timeout=10.0))]
fn ipc_connect(
    py: Python<'_>,
    path: &str,
    prefer: &str,
    deny_single_copy: bool,
    ring_slots: Option<Bound<'_, PyAny>>,
    slot_size: Option<Bound<'_, PyAny>>,
    timeout: f64,
) -> PyResult<PyConnection> {
    let o = options(
        prefer,
        deny_single_copy,
        ring_slots.as_ref(),
        slot_size.as_ref(),
        timeout,
    )?;
    let c = Signals::detach(py, |sig| ipc::connect_with(path, o, sig))?.map_err(to_py)?;
    Ok(PyConnection::new(c))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyListener>()?;
    m.add_class::<PyConnection>()?;
    m.add_function(wrap_pyfunction!(ipc_listen, m)?)?;
    m.add_function(wrap_pyfunction!(ipc_connect, m)?)?;
    Ok(())
}
