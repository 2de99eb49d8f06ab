//! Bindings for movelab-dram: configs, simulation, the command-log checker, presets and the
//! RowClone latency experiment. Values cross as JSON strings; the Python layer turns them into
//! dicts and DataFrames. Errors become `ValueError` (bad input) or `OSError` (files).
use crate::interrupt::{call_progress, detach_interruptible};
use movelab_dram::bulkgen::BulkGenSpec;
use movelab_dram::checker;
use movelab_dram::command::LogWriter;
use movelab_dram::command_log::LogReader;
use movelab_dram::config::{builtin_config_names, Config};
use movelab_dram::drampower;
use movelab_dram::error::{Error, TraceError};
use movelab_dram::experiments::rowclone_latency;
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::TraceItem;
use movelab_dram::spec::builtin_standards;
use movelab_dram::system::{log_header, simulate, RunOptions};
use movelab_dram::trace::{self, TraceFormat};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub(crate) fn verr(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(verr)
}

/// JSON null has no TOML counterpart: an absent key means the same.
pub(crate) fn strip_nulls(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(strip_nulls).collect())
        }
        other => other,
    }
}

/// Builds a config. `kind`: "preset" (a built-in name or SPEED/PART), "file" (a TOML path),
/// "toml" (TOML text) or "json" (a JSON object shaped like a config). `overrides`, a JSON object,
/// is layered on top.
fn load_config(kind: &str, value: &str, overrides: Option<&str>) -> PyResult<Config> {
    let cfg = match kind {
        "preset" => Config::preset(value).map_err(verr)?,
        "file" => Config::from_file(Path::new(value)).map_err(verr)?,
        "toml" => Config::from_toml_str(value, "config").map_err(verr)?,
        "json" => {
            let v: serde_json::Value = serde_json::from_str(value).map_err(verr)?;
            let t =
                toml::Value::try_from(strip_nulls(v)).map_err(|e| verr(format!("config: {e}")))?;
            Config::from_value(t, "config dict").map_err(verr)?
        }
        other => return Err(verr(format!("unknown config kind '{other}'"))),
    };
    match overrides {
        Some(o) => {
            let v: serde_json::Value = serde_json::from_str(o).map_err(verr)?;
            let t = toml::Value::try_from(strip_nulls(v))
                .map_err(|e| verr(format!("overrides: {e}")))?;
            cfg.with_overrides(t, "overrides").map_err(verr)
        }
        None => Ok(cfg),
    }
}

/// The full config (after presets and overrides) and its resolved DRAM spec, as JSON.
#[pyfunction]
#[pyo3(signature = (kind, value, overrides=None))]
fn dram_config(kind: &str, value: &str, overrides: Option<&str>) -> PyResult<String> {
    let cfg = load_config(kind, value, overrides)?;
    let spec = cfg.resolve("config").map_err(verr)?;
    json(&serde_json::json!({ "config": cfg, "spec": spec }))
}

/// Built-in speed bins, parts and configuration presets, as JSON.
#[pyfunction]
fn dram_presets() -> PyResult<String> {
    let stds = builtin_standards().map_err(verr)?;
    let mut speeds = Vec::new();
    let mut parts = Vec::new();
    for s in &stds {
        for (name, params) in &s.speed {
            speeds.push(
                serde_json::json!({ "standard": s.standard.name, "name": name, "params": params }),
            );
        }
        // A part goes with the speed bins of every standard file that lists it (LPDDR5's and
        // LPDDR6's burst-length variants repeat their parts): one entry per part, its bins joined.
        let bins: Vec<&String> = s.speed.keys().collect();
        for (name, p) in &s.part {
            let same =
                |e: &serde_json::Value| e["standard"] == s.standard.name && e["name"] == *name;
            if let Some(e) = parts.iter_mut().find(|e| same(e)) {
                if let Some(list) = e["speeds"].as_array_mut() {
                    list.extend(bins.iter().map(|b| serde_json::json!(b)));
                }
                continue;
            }
            parts.push(serde_json::json!({
                "standard": s.standard.name, "name": name, "speeds": bins, "source": p.source,
                "density_gbit": p.density_gbit,
                "device_width": p.device_width, "banks": p.banks, "rows": p.rows, "columns": p.columns,
                "tRFC_ns": p.trfc_ns, "tREFI_ns": p.trefi_ns,
            }));
        }
    }
    let mut configs = Vec::new();
    for name in builtin_config_names() {
        let c = Config::preset(name).map_err(verr)?;
        configs.push(
            serde_json::json!({ "name": name, "description": c.description, "source": c.source }),
        );
    }
    json(&serde_json::json!({ "speeds": speeds, "parts": parts, "configs": configs }))
}

/// Whether a generator spec (JSON) asks for bulk operations (`"kind": "bulk"`).
fn is_bulk_generator(value: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(value)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(|k| k == "bulk"))
        == Some(true)
}

type Stream = Box<dyn Iterator<Item = Result<TraceItem, TraceError>> + Send>;

/// A run's trace: a file read ahead, or any other stream.
enum Source {
    File(trace::ReadAhead),
    Other(Stream),
}

fn open_stream(kind: &str, value: &str, format: &str, cfg: &Config) -> PyResult<Stream> {
    let fmt = match format {
        "auto" => TraceFormat::Auto,
        "native" => TraceFormat::Native,
        "ramulator" => TraceFormat::Ramulator,
        "dramsim3" => TraceFormat::Dramsim3,
        other => {
            return Err(verr(format!(
                "unknown trace format '{other}' (auto, native, ramulator, dramsim3)"
            )))
        }
    };
    match kind {
        "file" => trace::open_trace(Path::new(value), fmt).map_err(|e| match e {
            TraceError::Io { .. } => PyOSError::new_err(e.to_string()),
            _ => verr(e),
        }),
        "text" => {
            let r = trace::from_reader(
                std::io::Cursor::new(value.as_bytes().to_vec()),
                "trace",
                fmt,
            )
            .map_err(verr)?;
            Ok(Box::new(r))
        }
        "generator" if is_bulk_generator(value) => {
            let spec = BulkGenSpec::from_json_str(value, "generator").map_err(verr)?;
            let g = spec.build(cfg).map_err(verr)?;
            Ok(Box::new(g.map(Ok)))
        }
        "generator" => {
            // One request is one burst of this device: its lines are the device's by default.
            let line = cfg.resolve("config").map_err(verr)?.org.line_bytes();
            let spec = GeneratorSpec::from_json_str_on(value, "trace", line).map_err(verr)?;
            let g = spec.build().map_err(verr)?;
            Ok(Box::new(g.map(Ok)))
        }
        other => Err(verr(format!("unknown trace kind '{other}'"))),
    }
}

/// The text a Python callable returns chunk by chunk (`next_chunk() -> str`, "" at the end), read
/// as a stream: a Python trace is never joined in memory. An exception the callable raises (a bad
/// item, Ctrl-C) is kept in `err` and re-raised after the run.
struct PyChunks {
    next_chunk: Py<PyAny>,
    buf: Vec<u8>,
    pos: usize,
    err: Arc<Mutex<Option<PyErr>>>,
}

impl std::io::Read for PyChunks {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            let chunk = Python::attach(|py| {
                self.next_chunk
                    .call0(py)
                    .and_then(|c| c.extract::<String>(py))
            });
            match chunk {
                Ok(c) => {
                    self.buf = c.into_bytes();
                    self.pos = 0;
                }
                Err(e) => {
                    if let Ok(mut slot) = self.err.lock() {
                        *slot = Some(e);
                    }
                    return Err(std::io::Error::other("the Python trace iterator raised"));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Runs a simulation. Returns the stats as JSON. `progress(n)` is called every `progress_every`
/// trace items. `trace_kind` "iter" reads the trace from `trace_iter` (see [`PyChunks`]).
#[pyfunction]
#[pyo3(signature = (config_json, trace_kind, trace_value, trace_format="auto", command_log=None, progress=None, progress_every=100_000, trace_iter=None))]
#[allow(clippy::too_many_arguments)]
fn dram_simulate(
    py: Python<'_>,
    config_json: &str,
    trace_kind: &str,
    trace_value: &str,
    trace_format: &str,
    command_log: Option<&str>,
    progress: Option<Py<PyAny>>,
    progress_every: u64,
    trace_iter: Option<Py<PyAny>>,
) -> PyResult<String> {
    let cfg = load_config("json", config_json, None)?;
    let file_format = trace_format.parse::<TraceFormat>().ok();
    let iter_err = Arc::new(Mutex::new(None));
    let stream = match (trace_kind, trace_iter) {
        ("iter", Some(next_chunk)) => {
            let fmt = trace_format.parse::<TraceFormat>().map_err(verr)?;
            let chunks = PyChunks {
                next_chunk,
                buf: Vec::new(),
                pos: 0,
                err: iter_err.clone(),
            };
            let r = trace::from_reader(std::io::BufReader::new(chunks), "trace", fmt);
            if let Some(e) = iter_err.lock().ok().and_then(|mut s| s.take()) {
                return Err(e);
            }
            Source::Other(Box::new(r.map_err(verr)?) as Stream)
        }
        // A file is parsed ahead on a second thread, beside the simulation (same items, same
        // order; see `trace::read_ahead`), and read through its own type rather than a boxed
        // stream, so that taking an item is inlined into the run loop.
        ("file", _) => Source::File(trace::read_ahead(open_stream(
            trace_kind,
            trace_value,
            trace_format,
            &cfg,
        )?)),
        _ => Source::Other(open_stream(trace_kind, trace_value, trace_format, &cfg)?),
    };
    let spec = cfg.resolve("config").map_err(verr)?;
    // The log is written beside its destination and renamed onto it only when the run
    // succeeded, so a failed or interrupted run leaves no log that looks complete.
    let tmp_log = command_log.map(|p| format!("{p}.partial-{}", std::process::id()));
    let mut writer = match &tmp_log {
        Some(p) => {
            let f = std::fs::File::create(p).map_err(|e| {
                PyOSError::new_err(format!(
                    "cannot create {}: {e}",
                    command_log.unwrap_or_default()
                ))
            })?;
            Some(
                LogWriter::new(BufWriter::new(f), &log_header(&cfg, &spec))
                    .map_err(|e| PyOSError::new_err(e.to_string()))?,
            )
        }
        None => None,
    };
    let result = detach_interruptible(py, || {
        let mut cb = |n: u64| call_progress(&progress, (n,));
        let opts = RunOptions {
            command_log: writer
                .as_mut()
                .map(|w| w as &mut dyn movelab_dram::command::CommandSink),
            progress: Some(&mut cb),
            progress_every,
            reference_schedule: false,
        };
        match stream {
            Source::File(r) => simulate(&cfg, r, opts),
            Source::Other(s) => simulate(&cfg, s, opts),
        }
    });
    let discard = |tmp: &Option<String>| {
        if let Some(t) = tmp {
            let _ = std::fs::remove_file(t);
        }
    };
    let stats = match result {
        Ok(Ok(s)) => s,
        Err(signal) => {
            // Ctrl-C (or another signal handler's exception).
            drop(writer);
            discard(&tmp_log);
            return Err(signal);
        }
        Ok(Err(e)) => {
            drop(writer);
            discard(&tmp_log);
            // The Python trace iterator's own exception (a bad item, Ctrl-C) comes first.
            if let Some(py_err) = iter_err.lock().ok().and_then(|mut s| s.take()) {
                return Err(py_err);
            }
            return Err(match e {
                Error::Trace(TraceError::Io { .. }) => PyOSError::new_err(e.to_string()),
                // An item found bad while it ran, in a file read ahead: its file and line.
                Error::Request(msg) if trace_kind == "file" => match file_format {
                    Some(f) => verr(trace::with_item_line(&msg, Path::new(trace_value), f)),
                    None => verr(msg),
                },
                _ => verr(e),
            });
        }
    };
    if let (Some(w), Some(tmp), Some(dest)) = (writer, &tmp_log, command_log) {
        let done = w
            .finish()
            .and_then(|_| std::fs::rename(tmp, dest))
            .map_err(|e| PyOSError::new_err(format!("writing the command log {dest}: {e}")));
        if done.is_err() {
            discard(&tmp_log);
        }
        done?;
    }
    json(&stats)
}

/// Checks a command log with the independent checker. Returns the report as JSON.
#[pyfunction]
fn dram_check(py: Python<'_>, path: &str) -> PyResult<String> {
    let report = detach_interruptible(py, || checker::check_log_file(Path::new(path)))?;
    match report {
        Ok(r) => json(&r),
        Err(e @ movelab_dram::error::LogError::Io { .. }) => Err(PyOSError::new_err(e.to_string())),
        Err(e) => Err(verr(e)),
    }
}

/// RowClone Table 3: 4 KB copy and zero latency/energy per mechanism, as JSON rows.
#[pyfunction]
#[pyo3(signature = (config_json, bytes=4096))]
fn dram_rowclone_latency(py: Python<'_>, config_json: &str, bytes: u64) -> PyResult<String> {
    let cfg = load_config("json", config_json, None)?;
    let rows = detach_interruptible(py, || rowclone_latency::run(&cfg, bytes))?.map_err(verr)?;
    json(&rows)
}

/// Multi-RowCopy (DSN 2024) beside RowClone FPM and the channel: replicating a page of `bytes`
/// into 1 to 31 rows, as JSON rows (`experiments::rowclone_latency::replication`).
#[pyfunction]
fn dram_replication_latency(py: Python<'_>, config_json: &str, bytes: u64) -> PyResult<String> {
    let cfg = load_config("json", config_json, None)?;
    let rows =
        detach_interruptible(py, || rowclone_latency::replication(&cfg, bytes))?.map_err(verr)?;
    json(&rows)
}

/// Writes a generated trace to a file in native format, for use by other tools. Ctrl-C stops it
/// (raising `KeyboardInterrupt`) within 64 Ki requests.
#[pyfunction]
#[pyo3(signature = (generator_json, path, format="native"))]
fn dram_write_trace(
    py: Python<'_>,
    generator_json: &str,
    path: &str,
    format: &str,
) -> PyResult<u64> {
    let spec = GeneratorSpec::from_json_str(generator_json, "generator").map_err(verr)?;
    let mut interrupted: Option<PyErr> = None;
    let mut written = 0u64;
    let g = spec.build().map_err(verr)?.map_while(|item| {
        written += 1;
        if written.is_multiple_of(1 << 16) {
            if let Err(e) = py.check_signals() {
                interrupted = Some(e);
                return None;
            }
        }
        Some(item)
    });
    let f = std::fs::File::create(path)
        .map_err(|e| PyOSError::new_err(format!("cannot create {path}: {e}")))?;
    let mut w = BufWriter::new(f);
    let n = match format {
        "native" => trace::write_native(g, &mut w),
        "ramulator" => trace::write_ramulator(g, &mut w),
        "dramsim3" => trace::write_dramsim3(g, &mut w),
        other => return Err(verr(format!("unknown trace format '{other}'"))),
    };
    if let Some(e) = interrupted {
        return Err(e);
    }
    n.map_err(|e| match e {
        // A write failed (a full disk): the half-written file is removed and the error names it.
        TraceError::Io { what, .. } => {
            if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(path);
            }
            PyOSError::new_err(format!("cannot write {path}: {what}"))
        }
        e => verr(e),
    })
}

/// Writes the command log at `log_path` as a DRAMPower command trace at `out_path` (channel
/// `channel`, closed by `END` at `end`, default the last command). Returns a JSON summary.
#[pyfunction]
#[pyo3(signature = (log_path, out_path, channel=0, end=None))]
fn dram_drampower_trace(
    py: Python<'_>,
    log_path: &str,
    out_path: &str,
    channel: u32,
    end: Option<u64>,
) -> PyResult<String> {
    let log_err = |e: movelab_dram::error::LogError| match e {
        e @ movelab_dram::error::LogError::Io { .. } => PyOSError::new_err(e.to_string()),
        e => verr(format!("{log_path}: {e}")),
    };
    let f = std::fs::File::open(log_path)
        .map_err(|e| PyOSError::new_err(format!("cannot read {log_path}: {e}")))?;
    let reader = LogReader::new(std::io::BufReader::new(f), log_path).map_err(log_err)?;
    let header = reader.header().clone();
    let out = std::fs::File::create(out_path)
        .map_err(|e| PyOSError::new_err(format!("cannot create {out_path}: {e}")))?;
    let mut w = BufWriter::new(out);
    let s = detach_interruptible(py, || {
        drampower::trace::write_trace(&header, reader, channel, end, &mut w)
    })?
    .map_err(log_err)?;
    std::io::Write::flush(&mut w)
        .map_err(|e| PyOSError::new_err(format!("cannot write {out_path}: {e}")))?;
    json(&serde_json::json!({
        "commands": s.commands, "other_channels": s.other_channels, "end": s.end,
        "standard": header.standard, "channel": channel,
    }))
}

/// Reads a DRAMPower JSON memspec; returns JSON: its type and id, the movelab overrides it gives
/// (`overrides`, nested; `settings`, as `[key, value]` pairs) and what was not carried over.
#[pyfunction]
fn dram_read_memspec(path: &str) -> PyResult<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| PyOSError::new_err(format!("cannot read {path}: {e}")))?;
    let m = drampower::memspec::read_memspec(&text, path).map_err(verr)?;
    let o = m.overrides();
    // The device's shape, which movelab takes from the config's part, not from overrides: the
    // caller compares it with the config it runs.
    let a = |k: &str| m.architecture.get(k).copied();
    json(&serde_json::json!({
        "memory_type": m.memory_type, "memory_id": m.memory_id,
        "overrides": o.value, "settings": o.settings, "notes": o.notes,
        "device": {"width": a("width"), "devices": a("nbrOfDevices"), "burst_length": a("burstLength")},
    }))
}

/// A config's device as a DRAMPower JSON memspec (DDR4 / DDR5 / LPDDR5 with currents).
#[pyfunction]
fn dram_write_memspec(config_json: &str) -> PyResult<String> {
    let cfg = load_config("json", config_json, None)?;
    let spec = cfg.resolve("config").map_err(verr)?;
    let v = drampower::memspec::memspec_json(&spec, cfg.energy.bank_rho).map_err(verr)?;
    serde_json::to_string_pretty(&v).map_err(verr)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dram_config, m)?)?;
    m.add_function(wrap_pyfunction!(dram_presets, m)?)?;
    m.add_function(wrap_pyfunction!(dram_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(dram_check, m)?)?;
    m.add_function(wrap_pyfunction!(dram_rowclone_latency, m)?)?;
    m.add_function(wrap_pyfunction!(dram_replication_latency, m)?)?;
    m.add_function(wrap_pyfunction!(dram_write_trace, m)?)?;
    m.add_function(wrap_pyfunction!(dram_drampower_trace, m)?)?;
    m.add_function(wrap_pyfunction!(dram_read_memspec, m)?)?;
    m.add_function(wrap_pyfunction!(dram_write_memspec, m)?)?;
    Ok(())
}
