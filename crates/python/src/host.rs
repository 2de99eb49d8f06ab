//! Bindings for the host copy runtime (`movelab_host::Runtime`): conversion glue only.
//!
//! Buffers are taken through the buffer protocol (bytes, bytearray, memoryview, NumPy arrays:
//! any C-contiguous exporter). An asynchronous operation holds both buffer exports (which keeps
//! the objects alive, and stops a bytearray from being resized) from `icopy` until `wait` or
//! `wait_all` returns. The GIL is released while bytes move or while waiting.
use movelab_host::{Cookie, EngineConfig, HostError, Op, Runtime};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::sync::Mutex;

fn to_py(e: HostError) -> PyErr {
    let msg = e.to_string();
    match e {
        HostError::Os(_) => PyOSError::new_err(msg),
        HostError::Aborted(_) => PyRuntimeError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
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
    // before the buffers below are released.
    rt: Runtime,
    held: Mutex<HashMap<u64, Vec<Held>>>,
}

/// Raw pointers that may cross into a GIL-free closure (their memory is held by `Held`s).
#[derive(Clone, Copy)]
struct SendOp(Op);
// SAFETY: the op's memory is pinned by buffer exports that outlive the closure.
unsafe impl Send for SendOp {}

impl PyEngine {
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
    fn run_blocking(&self, py: Python<'_>, op: Op, bufs: Vec<Held>) -> PyResult<()> {
        let op = SendOp(op);
        let rt = &self.rt;
        let r = py.detach(move || {
            let op = op;
            // SAFETY: `bufs` pins the memory until after this blocking call returns.
            unsafe { rt.run_raw(op.0) }
        });
        drop(bufs);
        r.map_err(to_py)
    }
    fn start(&self, op: Op, bufs: Vec<Held>) -> PyResult<u64> {
        // SAFETY: `bufs` is stored under the cookie and released only after wait/wait_all (or
        // after the runtime, which waits for every operation, has been dropped).
        let c = unsafe { self.rt.submit_raw(&[op], false) }.map_err(to_py)?[0];
        self.hold(c, bufs);
        Ok(c.0)
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
        Ok(PyEngine {
            rt: Runtime::new(name, &cfg).map_err(to_py)?,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// The engine's registry name.
    #[getter]
    fn name(&self) -> &'static str {
        self.rt.name()
    }

    /// The engine's configuration as a JSON string.
    fn config_json(&self) -> PyResult<String> {
        serde_json::to_string(self.rt.config()).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Cookies issued and not yet waited for.
    #[getter]
    fn outstanding(&self) -> usize {
        self.rt.outstanding()
    }

    #[pyo3(signature = (src, dst, nbytes = None, cache = false))]
    fn copy(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        nbytes: Option<usize>,
        cache: bool,
    ) -> PyResult<()> {
        let (op, bufs) = Self::copy_op(src, dst, nbytes, cache)?;
        self.run_blocking(py, op, bufs)
    }

    #[pyo3(signature = (src, dst, nbytes = None, cache = false))]
    fn icopy(
        &self,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        nbytes: Option<usize>,
        cache: bool,
    ) -> PyResult<u64> {
        let (op, bufs) = Self::copy_op(src, dst, nbytes, cache)?;
        self.start(op, bufs)
    }

    #[pyo3(signature = (dst, value, nbytes = None, cache = false))]
    fn fill(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        value: u8,
        nbytes: Option<usize>,
        cache: bool,
    ) -> PyResult<()> {
        let (op, bufs) = Self::fill_op(dst, value, nbytes, cache)?;
        self.run_blocking(py, op, bufs)
    }

    #[pyo3(signature = (dst, value, nbytes = None, cache = false))]
    fn ifill(
        &self,
        dst: &Bound<'_, PyAny>,
        value: u8,
        nbytes: Option<usize>,
        cache: bool,
    ) -> PyResult<u64> {
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
        // SAFETY: each op's buffers are stored under its cookie right below and released only
        // after wait/wait_all.
        let cookies = unsafe { self.rt.submit_raw(&ops, false) }.map_err(to_py)?;
        for (c, bufs) in cookies.iter().zip(all) {
            self.hold(*c, bufs);
        }
        Ok(cookies.into_iter().map(|c| c.0).collect())
    }

    fn check(&self, cookie: u64) -> PyResult<bool> {
        self.rt.check(Cookie(cookie)).map_err(to_py)
    }

    fn wait(&self, py: Python<'_>, cookie: u64) -> PyResult<()> {
        let rt = &self.rt;
        let r = py.detach(|| rt.wait(Cookie(cookie)));
        if !matches!(r, Err(HostError::UnknownCookie(_))) {
            self.release(cookie);
        }
        r.map_err(to_py)
    }

    fn wait_all(&self, py: Python<'_>) -> PyResult<()> {
        let rt = &self.rt;
        let r = py.detach(|| rt.wait_all());
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

/// Run a host benchmark kernel: `name` and a JSON spec in, JSON rows out (GIL released).
#[pyfunction]
fn host_bench(py: Python<'_>, name: &str, spec_json: &str) -> PyResult<String> {
    let (name, spec) = (name.to_string(), spec_json.to_string());
    py.detach(move || movelab_host::bench::run(&name, &spec))
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_function(wrap_pyfunction!(host_bench, m)?)?;
    m.add_function(wrap_pyfunction!(host_engines, m)?)?;
    m.add_function(wrap_pyfunction!(host_cpus, m)?)?;
    Ok(())
}
