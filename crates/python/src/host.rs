//! Bindings for the host copy runtime (`movelab_host::Runtime`): conversion glue only.
//!
//! Buffers are taken through the buffer protocol (bytes, bytearray, memoryview, NumPy arrays:
//! any C-contiguous exporter). An asynchronous operation holds both buffer exports (which keeps
//! the objects alive, and stops a bytearray from being resized) from `icopy` until `wait` or
//! `wait_all` returns. The GIL is released while bytes move or while waiting.
//!
//! Every blocking call waits in short slices and re-acquires the GIL between them to run
//! Python's signal handlers ([`Signals`]): Ctrl-C raises `KeyboardInterrupt` within a fraction of
//! a second, and the operation being waited for stays in flight (its buffers stay held). Integer
//! arguments are checked here ([`int_arg`]): out of range is a `ValueError` naming the argument,
//! the value and what is allowed, never an `OverflowError`.
use movelab_host::cancel::Cancel;
use movelab_host::{Cookie, EngineConfig, HostError, Op, Runtime};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt};
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

fn to_py(e: HostError) -> PyErr {
    let msg = e.to_string();
    match e {
        HostError::Os(_) => PyOSError::new_err(msg),
        HostError::Aborted(_)
        | HostError::Forked { .. }
        | HostError::Interrupted(_)
        | HostError::Stopped(_) => PyRuntimeError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// A [`Cancel`] that asks Python: between the slices of a blocking call it re-acquires the GIL
/// and runs the signal handlers; the exception they raise (KeyboardInterrupt) is kept for the
/// caller to re-raise. It asks at most every [`ASK_EVERY`], starting that long after the call
/// began: a call that returns sooner never touches the GIL, and a loop that asks often (the IPC
/// protocol asks once per message) pays a clock read, not a GIL round trip.
pub(crate) struct Signals {
    raised: Mutex<Option<PyErr>>,
    start: Instant,
    /// Nanoseconds after `start` before which the next question is not put to Python.
    next_ns: AtomicU64,
}

/// How often a blocking call asks Python about signals: a fraction of a second, as Ctrl-C must be.
const ASK_EVERY: Duration = Duration::from_millis(20);

impl Default for Signals {
    fn default() -> Self {
        Signals {
            raised: Mutex::new(None),
            start: Instant::now(),
            next_ns: AtomicU64::new(ASK_EVERY.as_nanos() as u64),
        }
    }
}

impl Cancel for Signals {
    fn cancelled(&self) -> bool {
        let now = self.start.elapsed().as_nanos() as u64;
        if now < self.next_ns.load(Ordering::Relaxed) {
            return false;
        }
        self.next_ns
            .store(now + ASK_EVERY.as_nanos() as u64, Ordering::Relaxed);
        let mut raised = self.raised.lock().unwrap_or_else(|p| p.into_inner());
        if raised.is_some() {
            return true;
        }
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            *raised = Some(e);
            return true;
        }
        false
    }
}

impl Signals {
    /// Run `f` without the GIL, interruptible by signals. Returns `f`'s result, or the
    /// exception a signal handler raised if `f` gave up because of it.
    pub(crate) fn detach<T: Send, E: Send>(
        py: Python<'_>,
        f: impl FnOnce(&Signals) -> Result<T, E> + Send,
    ) -> Result<Result<T, E>, PyErr> {
        let sig = Signals::default();
        let r = py.detach(|| f(&sig));
        match sig.raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) if r.is_err() => Err(e),
            Some(e) => {
                // Finished anyway: the signal still counts (raise it now, as Python would).
                e.restore(py);
                Ok(r)
            }
            None => Ok(r),
        }
    }
}

/// An integer argument in `lo..=hi`: anything else is a `ValueError` (out of range, however
/// large) or a `TypeError` (not an integer) naming the argument, the value and what is allowed.
pub(crate) fn int_arg(obj: &Bound<'_, PyAny>, name: &str, lo: i128, hi: i128) -> PyResult<i128> {
    if !obj.is_instance_of::<PyInt>() {
        let t = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return Err(PyTypeError::new_err(format!(
            "{name} must be an integer, got {t} ({})",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        )));
    }
    match obj.extract::<i128>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(PyValueError::new_err(format!(
            "{name} = {}: expected an integer in {lo}..={hi}",
            obj.str().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// Largest buffer length (bytes) the host API accepts: what a Python buffer can be.
pub(crate) const MAX_LEN: i128 = isize::MAX as i128;

fn opt_len(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<usize>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => Ok(Some(int_arg(o, name, 0, MAX_LEN)? as usize)),
    }
}

fn cookie_arg(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(int_arg(obj, "cookie", 0, u64::MAX as i128)? as u64)
}

fn byte_arg(obj: &Bound<'_, PyAny>) -> PyResult<u8> {
    Ok(int_arg(obj, "value", 0, 255)? as u8)
}

/// One buffer export (`PyObject_GetBuffer`), released when dropped.
struct Held {
    view: Box<ffi::Py_buffer>,
}

// SAFETY: the export pins the object's memory for as long as the view exists; the pointer is only
// used by the copy engine (which the runtime synchronises) and released with the GIL held.
unsafe impl Send for Held {}
// SAFETY: as above; the view is never mutated after creation.
unsafe impl Sync for Held {}

impl Held {
    /// Export `obj`'s memory, writable for destinations. `what` names it in error messages.
    fn get(obj: &Bound<'_, PyAny>, writable: bool, what: &str) -> PyResult<Held> {
        let py = obj.py();
        let try_get = |flags: i32| -> Result<Held, PyErr> {
            let mut view: Box<MaybeUninit<ffi::Py_buffer>> = Box::new(MaybeUninit::uninit());
            // SAFETY: obj is a live object (we hold the GIL); `view` is writable storage for a
            // Py_buffer, filled by the call when it returns 0.
            let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) };
            if rc != 0 {
                return Err(PyErr::fetch(py));
            }
            // SAFETY: rc == 0: the view was initialised by PyObject_GetBuffer.
            let view = unsafe { Box::from_raw(Box::into_raw(view) as *mut ffi::Py_buffer) };
            Ok(Held { view })
        };
        // PyBUF_SIMPLE: the exporter must hand out one contiguous block (or refuse).
        let flags = if writable {
            ffi::PyBUF_WRITABLE
        } else {
            ffi::PyBUF_SIMPLE
        };
        match try_get(flags) {
            Ok(h) => Ok(h),
            Err(first) => {
                let type_name = obj
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                if writable && try_get(ffi::PyBUF_SIMPLE).is_ok() {
                    return Err(PyTypeError::new_err(format!(
                        "{what} ({type_name}) is read-only: pass a writable buffer such as a bytearray \
                         or a writable NumPy array"
                    )));
                }
                Err(PyTypeError::new_err(format!(
                    "{what} ({type_name}) must be a C-contiguous object supporting the buffer \
                     protocol (bytes, bytearray, memoryview, NumPy array): {first}"
                )))
            }
        }
    }
    fn ptr(&self) -> *mut u8 {
        self.view.buf as *mut u8
    }
    fn len(&self) -> usize {
        self.view.len.max(0) as usize
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        Python::attach(|_| {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer and is released once.
            unsafe { ffi::PyBuffer_Release(&mut *self.view) }
        });
    }
}

/// Resolve the byte count of a copy: `nbytes`, or both lengths when they match.
fn count(src: usize, dst: usize, nbytes: Option<usize>) -> PyResult<usize> {
    match nbytes {
        None if src == dst => Ok(src),
        None => Err(to_py(HostError::LengthMismatch { src, dst })),
        Some(n) if n <= src && n <= dst => Ok(n),
        Some(n) => Err(PyValueError::new_err(format!(
            "nbytes = {n} exceeds the source ({src} bytes) or destination ({dst} bytes)"
        ))),
    }
}

/// A copy engine with its cookie table (movelab.host.Engine wraps this).
#[pyclass(module = "movelab._core", name = "HostEngine")]
pub struct PyEngine {
    // Declared first: dropped first, and the runtime's drop waits for in-flight operations
    // before the buffers below are released. None once closed.
    rt: RwLock<Option<Arc<Runtime>>>,
    held: Mutex<HashMap<u64, Vec<Held>>>,
    name: &'static str,
}

impl PyEngine {
    /// The runtime, or a clear error once the engine is closed.
    fn rt(&self) -> PyResult<Arc<Runtime>> {
        self.rt
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "the {} engine is closed: create a new Engine to copy again",
                    self.name
                ))
            })
    }
    fn hold(&self, cookie: Cookie, bufs: Vec<Held>) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cookie.0, bufs);
    }
    fn release(&self, cookie: u64) {
        let bufs = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&cookie);
        drop(bufs);
    }
    fn copy_op(
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        nbytes: Option<usize>,
        cache: bool,
    ) -> PyResult<(Op, Vec<Held>)> {
        let d = Held::get(dst, true, "destination")?;
        let s = Held::get(src, false, "source")?;
        let n = count(s.len(), d.len(), nbytes)?;
        Ok((Op::copy(s.ptr(), d.ptr(), n).in_cache(cache), vec![s, d]))
    }
    fn fill_op(
        dst: &Bound<'_, PyAny>,
        value: u8,
        nbytes: Option<usize>,
        cache: bool,
    ) -> PyResult<(Op, Vec<Held>)> {
        let d = Held::get(dst, true, "destination")?;
        let n = match nbytes {
            None => d.len(),
            Some(n) if n <= d.len() => n,
            Some(n) => {
                return Err(PyValueError::new_err(format!(
                    "nbytes = {n} exceeds the destination ({} bytes)",
                    d.len()
                )))
            }
        };
        Ok((Op::fill(d.ptr(), value, n).in_cache(cache), vec![d]))
    }
    /// A blocking operation: start it, then wait interruptibly. On Ctrl-C the operation stays in
    /// flight with its buffers held (released by wait_all, close or drop) and the
    /// KeyboardInterrupt propagates.
    fn run_blocking(&self, py: Python<'_>, op: Op, bufs: Vec<Held>) -> PyResult<()> {
        let c = self.start(op, bufs)?;
        self.wait_cookie(py, c)
    }
    fn start(&self, op: Op, bufs: Vec<Held>) -> PyResult<u64> {
        let rt = self.rt()?;
        // SAFETY: `bufs` is stored under the cookie and released only after wait/wait_all (or
        // after the runtime, which waits for every operation, has been dropped).
        let c = unsafe { rt.submit_raw(&[op], false) }.map_err(to_py)?[0];
        self.hold(c, bufs);
        Ok(c.0)
    }
    fn wait_cookie(&self, py: Python<'_>, cookie: u64) -> PyResult<()> {
        let rt = self.rt()?;
        let r = Signals::detach(py, |sig| rt.wait_with(Cookie(cookie), sig))?;
        if !matches!(
            r,
            Err(HostError::UnknownCookie(_)) | Err(HostError::Forked { .. })
        ) {
            self.release(cookie);
        }
        r.map_err(to_py)
    }
    /// Wait for everything, interruptibly; then release every held buffer.
    fn wait_everything(&self, py: Python<'_>, rt: &Runtime) -> PyResult<()> {
        let r = Signals::detach(py, |sig| rt.wait_all_with(sig))?;
        if matches!(r, Err(HostError::Forked { .. })) {
            return r.map_err(to_py);
        }
        let bufs: Vec<_> = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        drop(bufs);
        r.map_err(to_py)
    }
}

#[pymethods]
impl PyEngine {
    /// `config_json`: a JSON object of `EngineConfig` fields (missing fields take defaults).
    #[new]
    #[pyo3(signature = (name = "thread", config_json = "{}"))]
    fn new(name: &str, config_json: &str) -> PyResult<Self> {
        let cfg: EngineConfig = serde_json::from_str(config_json)
            .map_err(|e| PyValueError::new_err(format!("invalid engine configuration: {e}")))?;
        let rt = Runtime::new(name, &cfg).map_err(to_py)?;
        Ok(PyEngine {
            name: rt.name(),
            rt: RwLock::new(Some(Arc::new(rt))),
            held: Mutex::new(HashMap::new()),
        })
    }

    /// The engine's registry name.
    #[getter]
    fn name(&self) -> &'static str {
        self.name
    }

    /// The engine's configuration as a JSON string.
    fn config_json(&self) -> PyResult<String> {
        serde_json::to_string(self.rt()?.config())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Cookies issued and not yet waited for (0 once closed).
    #[getter]
    fn outstanding(&self) -> usize {
        self.rt().map_or(0, |rt| rt.outstanding())
    }

    /// True once `close` has been called.
    #[getter]
    fn closed(&self) -> bool {
        self.rt.read().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    /// Wait for every outstanding operation, release the buffers and stop the engine's workers.
    /// Idempotent. Interrupted by Ctrl-C, the engine stays open (nothing was lost).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(rt) = self.rt.read().unwrap_or_else(|p| p.into_inner()).clone() else {
            return Ok(());
        };
        // In a forked child the parent's operations are not ours to wait for: just let go.
        let r = match rt.usable_here() {
            Ok(()) => self.wait_everything(py, &rt),
            Err(_) => Ok(()),
        };
        if let Err(e) = &r {
            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                return r;
            }
        }
        let taken = self.rt.write().unwrap_or_else(|p| p.into_inner()).take();
        // Joining the workers is quick once every operation is done.
        py.detach(move || drop(taken));
        r
    }

    #[pyo3(signature = (src, dst, nbytes = None, cache = false))]
    fn copy(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        nbytes: Option<Bound<'_, PyAny>>,
        cache: bool,
    ) -> PyResult<()> {
        let nbytes = opt_len(nbytes.as_ref(), "nbytes")?;
        let (op, bufs) = Self::copy_op(src, dst, nbytes, cache)?;
        self.run_blocking(py, op, bufs)
    }

    #[pyo3(signature = (src, dst, nbytes = None, cache = false))]
    fn icopy(
        &self,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        nbytes: Option<Bound<'_, PyAny>>,
        cache: bool,
    ) -> PyResult<u64> {
        let nbytes = opt_len(nbytes.as_ref(), "nbytes")?;
        let (op, bufs) = Self::copy_op(src, dst, nbytes, cache)?;
        self.start(op, bufs)
    }

    #[pyo3(signature = (dst, value, nbytes = None, cache = false))]
    fn fill(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        nbytes: Option<Bound<'_, PyAny>>,
        cache: bool,
    ) -> PyResult<()> {
        let (value, nbytes) = (byte_arg(value)?, opt_len(nbytes.as_ref(), "nbytes")?);
        let (op, bufs) = Self::fill_op(dst, value, nbytes, cache)?;
        self.run_blocking(py, op, bufs)
    }

    #[pyo3(signature = (dst, value, nbytes = None, cache = false))]
    fn ifill(
        &self,
        dst: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        nbytes: Option<Bound<'_, PyAny>>,
        cache: bool,
    ) -> PyResult<u64> {
        let (value, nbytes) = (byte_arg(value)?, opt_len(nbytes.as_ref(), "nbytes")?);
        let (op, bufs) = Self::fill_op(dst, value, nbytes, cache)?;
        self.start(op, bufs)
    }

    /// Start several copies at once; `pairs` is a sequence of (src, dst). All-or-nothing on bad input.
    fn icopy_batch(&self, pairs: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>) -> PyResult<Vec<u64>> {
        let mut ops = Vec::with_capacity(pairs.len());
        let mut all = Vec::with_capacity(pairs.len());
        for (s, d) in &pairs {
            let (op, bufs) = Self::copy_op(s, d, None, false)?;
            ops.push(op);
            all.push(bufs);
        }
        let rt = self.rt()?;
        // SAFETY: each op's buffers are stored under its cookie right below and released only
        // after wait/wait_all.
        let cookies = unsafe { rt.submit_raw(&ops, false) }.map_err(to_py)?;
        for (c, bufs) in cookies.iter().zip(all) {
            self.hold(*c, bufs);
        }
        Ok(cookies.into_iter().map(|c| c.0).collect())
    }

    fn check(&self, cookie: &Bound<'_, PyAny>) -> PyResult<bool> {
        let cookie = cookie_arg(cookie)?;
        self.rt()?.check(Cookie(cookie)).map_err(to_py)
    }

    fn wait(&self, py: Python<'_>, cookie: &Bound<'_, PyAny>) -> PyResult<()> {
        let cookie = cookie_arg(cookie)?;
        self.wait_cookie(py, cookie)
    }

    fn wait_all(&self, py: Python<'_>) -> PyResult<()> {
        let rt = self.rt()?;
        self.wait_everything(py, &rt)
    }
}

/// Run a host benchmark kernel: `name` and a JSON spec in, JSON rows out (GIL released;
/// Ctrl-C stops it within a fraction of a second).
#[pyfunction]
fn host_bench(py: Python<'_>, name: &str, spec_json: &str) -> PyResult<String> {
    let (name, spec) = (name.to_string(), spec_json.to_string());
    Signals::detach(py, move |sig| {
        movelab_host::bench::run_with(&name, &spec, sig)
    })?
    .map_err(to_py)
}

/// The registered engines as (name, description) pairs.
#[pyfunction]
fn host_engines() -> Vec<(&'static str, &'static str)> {
    movelab_host::registry()
        .iter()
        .map(|e| (e.name, e.description))
        .collect()
}

/// CPUs this process may run on.
#[pyfunction]
fn host_cpus() -> Vec<usize> {
    movelab_host::sys::available_cpus()
}

/// Native-endian bytes as numbers (the arrays numpy's `tobytes()` gives; no unsafe cast).
fn from_ne<T, const N: usize>(name: &str, b: &[u8], f: fn([u8; N]) -> T) -> PyResult<Vec<T>> {
    if !b.len().is_multiple_of(N) {
        return Err(PyValueError::new_err(format!(
            "{name}: {} bytes is not a whole number of {N}-byte values",
            b.len()
        )));
    }
    Ok(b.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks_exact gives N bytes")))
        .collect())
}

/// The distinct-line reuse distance of every touch (`movelab_host::reuse`): `row`, `prev`
/// (int64) and `weight` (float64) as native-endian bytes; returns float64 bytes. Runs without the
/// GIL.
#[pyfunction]
fn reuse_distances<'py>(
    py: Python<'py>,
    row: &[u8],
    prev: &[u8],
    weight: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let row = from_ne("row", row, i64::from_ne_bytes)?;
    let prev = from_ne("prev", prev, i64::from_ne_bytes)?;
    let weight = from_ne("weight", weight, f64::from_ne_bytes)?;
    let d = py
        .detach(|| movelab_host::reuse::distinct_line_distances(&row, &prev, &weight))
        .map_err(to_py)?;
    let bytes: Vec<u8> = d.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_function(wrap_pyfunction!(reuse_distances, m)?)?;
    m.add_function(wrap_pyfunction!(host_bench, m)?)?;
    m.add_function(wrap_pyfunction!(host_engines, m)?)?;
    m.add_function(wrap_pyfunction!(host_cpus, m)?)?;
    Ok(())
}
