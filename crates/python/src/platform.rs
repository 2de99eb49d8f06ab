//! Bindings for movelab-platform: platform configs, workloads, runs and the system-level paper
//! reproductions. Values cross as JSON strings; errors become `ValueError`.
use crate::dram::{json, strip_nulls, verr};
use crate::interrupt::{call_progress, detach_interruptible};
use movelab_platform::config::io::IDMA_NIC_KEYS;
use movelab_platform::config::platform::{
    builtin_platform_names, PlatformConfig, BUILTIN_PLATFORMS,
};
use movelab_platform::config::workload::{builtin_workload_names, Workload, BUILTIN_WORKLOADS};
use movelab_platform::experiments::{composition, larsen_idma, rowclone_fork, zhao_copy_engine};
use pyo3::prelude::*;
use std::collections::BTreeMap;

pub(crate) fn overrides(o: Option<&str>) -> PyResult<toml::Value> {
    match o {
        None => Ok(toml::Value::Table(Default::default())),
        Some(s) => {
            let v: serde_json::Value = serde_json::from_str(s).map_err(verr)?;
            toml::Value::try_from(strip_nulls(v)).map_err(|e| verr(format!("overrides: {e}")))
        }
    }
}

fn load(platform: &str, o: Option<&str>) -> PyResult<PlatformConfig> {
    let cfg = PlatformConfig::load(platform).map_err(verr)?;
    let ov = overrides(o)?;
    if ov.as_table().is_some_and(|t| t.is_empty()) {
        return Ok(cfg);
    }
    cfg.with_overrides(ov, "overrides").map_err(verr)
}

/// [`load`] for a run that takes the config as it is: an override nothing on the platform reads
/// is refused, naming its key.
/// `side` ("sender", "receiver"; empty for a single platform) goes in front of that refusal.
fn load_for_run(platform: &str, o: Option<&str>, side: &str) -> PyResult<PlatformConfig> {
    let cfg = load(platform, o)?;
    cfg.refuse_unread_overrides(&overrides(o)?, "overrides")
        .map_err(|e| match side {
            "" => verr(e),
            _ => verr(format!("{side}: {e}")),
        })?;
    Ok(cfg)
}

pub(crate) fn params(p: Option<&str>) -> PyResult<BTreeMap<String, u64>> {
    match p {
        None => Ok(BTreeMap::new()),
        Some(s) => serde_json::from_str(s).map_err(|e| {
            verr(format!(
                "workload parameters must be non-negative integers: {e}"
            ))
        }),
    }
}

/// The platform config after presets and overrides, as JSON.
#[pyfunction]
#[pyo3(signature = (platform, overrides=None))]
fn platform_config(platform: &str, overrides: Option<&str>) -> PyResult<String> {
    json(&load(platform, overrides)?)
}

/// Which of the dotted `[copy]` keys in `keys` (a JSON list) nothing on `platform` with `overrides`
/// would read (`PlatformConfig::unread_copy_overrides`), as a JSON list.
#[pyfunction]
#[pyo3(signature = (platform, keys, overrides=None))]
fn platform_unread_keys(platform: &str, keys: &str, overrides: Option<&str>) -> PyResult<String> {
    let cfg = load(platform, overrides)?;
    let keys: Vec<String> = serde_json::from_str(keys).map_err(verr)?;
    let mut copy = toml::Table::new();
    for k in &keys {
        if let Some(name) = k.strip_prefix("copy.") {
            copy.insert(name.to_string(), toml::Value::Boolean(true));
        }
    }
    let given = toml::Value::Table(toml::Table::from_iter([(
        "copy".to_string(),
        toml::Value::Table(copy),
    )]));
    let unread = cfg
        .unread_copy_overrides(&given, "overrides")
        .map_err(verr)?;
    json(&unread.into_iter().map(|(k, _)| k).collect::<Vec<_>>())
}

/// The `[copy]` keys only a copy engine reads (`config::platform::ENGINE_KEYS`), as JSON.
#[pyfunction]
fn platform_engine_keys() -> PyResult<String> {
    json(&movelab_platform::config::platform::ENGINE_KEYS)
}

/// Built-in platforms and workloads: names, descriptions, sources.
#[pyfunction]
fn platform_presets() -> PyResult<String> {
    let mut plats = Vec::new();
    for (name, _) in BUILTIN_PLATFORMS {
        let c = PlatformConfig::preset(name).map_err(verr)?;
        plats.push(
            serde_json::json!({"name": name, "description": c.description, "source": c.source,
            "core": c.core.kind, "interconnect": c.interconnect.kind}),
        );
    }
    let mut works = Vec::new();
    for (name, _) in BUILTIN_WORKLOADS {
        let w = Workload::load(name, &BTreeMap::new()).map_err(verr)?;
        works.push(serde_json::json!({"name": name, "description": w.spec.description, "params": w.spec.params}));
    }
    let _ = (builtin_platform_names(), builtin_workload_names());
    json(&serde_json::json!({"platforms": plats, "workloads": works}))
}

/// Runs `workload` (a built-in name or a TOML path) with `params` (JSON object of integers) on
/// `platform` (a built-in name or a TOML path) with `overrides` (JSON object); stats as JSON.
/// An override nothing on the platform reads (`PlatformConfig::refuse_unread_overrides`: a copy
/// engine's keys without an engine, a core key no core reads, ...) is refused, naming the key,
/// unless `unread_ok` (callers that lay their own mechanism settings over a user's, which may
/// leave some unread on purpose).
///
/// `progress(done, planned)`, if given, is called now and then with the operations fed to the
/// cores so far and the operations the run feeds in all.
#[pyfunction]
#[pyo3(signature = (platform, workload, overrides=None, params_json=None, unread_ok=false, progress=None))]
fn platform_run(
    py: Python<'_>,
    platform: &str,
    workload: &str,
    overrides: Option<&str>,
    params_json: Option<&str>,
    unread_ok: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let cfg = if unread_ok {
        load(platform, overrides)?
    } else {
        load_for_run(platform, overrides, "")?
    };
    let w = Workload::load(workload, &self::params(params_json)?).map_err(verr)?;
    let s = detach_interruptible(py, || {
        movelab_platform::systems::platform::run_with_progress(&cfg, &w, &mut |n, planned| {
            call_progress(&progress, (n, planned))
        })
    })?
    .map_err(verr)?;
    json(&s)
}

/// Zhao et al. Table 3, Fig. 11, Table 4, Fig. 15: rows as JSON.
#[pyfunction]
#[pyo3(signature = (overrides=None, packets=200, payloads=None, progress=None, cores=None, figures=true))]
fn reproduce_zhao(
    py: Python<'_>,
    overrides: Option<&str>,
    packets: u64,
    payloads: Option<Vec<u64>>,
    progress: Option<Py<PyAny>>,
    cores: Option<Vec<String>>,
    figures: bool,
) -> PyResult<String> {
    if packets == 0 {
        return Err(verr("packets must be at least 1"));
    }
    let mut o = zhao_copy_engine::Options {
        packets,
        overrides: self::overrides(overrides)?,
        ..Default::default()
    };
    if let Some(p) = payloads {
        if p.is_empty() || p.contains(&0) {
            return Err(verr("payloads must be positive byte counts"));
        }
        o.payloads = p;
    }
    if let Some(c) = cores {
        o.cores = c;
    }
    o.figures = figures;
    let rows = detach_interruptible(py, || {
        zhao_copy_engine::run(&o, &mut |d, t| call_progress(&progress, (d, t)))
    })?
    .map_err(verr)?;
    json(&rows)
}

/// RowClone forkbench and bulk-zero: rows as JSON; with `raw`, the runs unrelated to their
/// baselines (a part of a run split per mechanism; `rowclone_fork_rows` relates them).
#[pyfunction]
#[pyo3(signature = (overrides=None, sizes_mb=None, n_pages=None, zero_pages=1024, progress=None, bulk_zero=true,
                    mechanisms=None, raw=false))]
#[allow(clippy::too_many_arguments)]
fn reproduce_rowclone_fork(
    py: Python<'_>,
    overrides: Option<&str>,
    sizes_mb: Option<Vec<u64>>,
    n_pages: Option<Vec<u64>>,
    zero_pages: u64,
    progress: Option<Py<PyAny>>,
    bulk_zero: bool,
    mechanisms: Option<Vec<String>>,
    raw: bool,
) -> PyResult<String> {
    let mut o = rowclone_fork::Options {
        overrides: self::overrides(overrides)?,
        zero_pages,
        bulk_zero,
        mechanisms: mechanisms.unwrap_or_default(),
        ..Default::default()
    };
    if let Some(s) = sizes_mb {
        // An empty list runs no forkbench (only bulk zeroing): one of the points of a split run.
        if s.iter().any(|&v| v == 0 || v > 4096) {
            return Err(verr("sizes_mb must be between 1 and 4096"));
        }
        o.sizes_mb = s;
    }
    if let Some(n) = n_pages {
        if n.is_empty() || n.contains(&0) {
            return Err(verr("n_pages must be positive"));
        }
        o.n_pages = n;
    }
    if zero_pages == 0 {
        return Err(verr("zero_pages must be at least 1"));
    }
    let runs = detach_interruptible(py, || {
        rowclone_fork::runs(&o, &mut |d, t| call_progress(&progress, (d, t)))
    })?
    .map_err(verr)?;
    if raw {
        return json(&runs);
    }
    json(&rowclone_fork::rows(&runs).map_err(verr)?)
}

/// The rows (JSON) of RowClone forkbench runs (JSON, from `reproduce_rowclone_fork(raw=True)`),
/// each related to its baseline run.
#[pyfunction]
fn rowclone_fork_rows(runs: &str) -> PyResult<String> {
    let runs: Vec<rowclone_fork::Run> =
        serde_json::from_str(runs).map_err(|e| verr(format!("rowclone-fork runs: {e}")))?;
    json(&rowclone_fork::rows(&runs).map_err(verr)?)
}

fn io_config(platform: &str, o: Option<&str>) -> PyResult<movelab_platform::config::io::IoConfig> {
    let cfg = movelab_platform::config::io::IoConfig::load(platform).map_err(verr)?;
    let ov = overrides(o)?;
    if ov.as_table().is_some_and(|t| t.is_empty()) {
        return Ok(cfg);
    }
    cfg.with_overrides(ov, "overrides").map_err(verr)
}

/// An I/O preset (`presets/io/`) after overrides, as JSON.
#[pyfunction]
#[pyo3(signature = (platform, overrides=None))]
fn io_platform_config(platform: &str, overrides: Option<&str>) -> PyResult<String> {
    json(&io_config(platform, overrides)?)
}

/// The built-in I/O presets (the devices' link, root complex and NIC on the cluster's
/// platforms): names, descriptions, sources.
#[pyfunction]
fn io_presets() -> PyResult<String> {
    let mut out = Vec::new();
    for name in movelab_platform::config::io::builtin_io_names() {
        let c = movelab_platform::config::io::IoConfig::preset(name).map_err(verr)?;
        out.push(
            serde_json::json!({"name": name, "description": c.description, "source": c.source,
            "gen": c.link.gen, "lanes": c.link.lanes, "nic": c.nic.kind}),
        );
    }
    json(&out)
}

/// Host 0 sends `count` messages of `nbytes` (TCP payload, behind the preset's
/// `driver.header_bytes`) to host 1, their devices on I/O preset `platform`: a thin wrapper over
/// the cluster (two platforms on one Ethernet link, `experiments/larsen_idma.rs`'s
/// `cluster_stream`), each host `larsen-io` (device "descriptor") or `larsen-io-idma` ("idma"),
/// by `devices` or the preset's `nic.kind`. `overrides` are shaped like an I/O preset: its `link`
/// and `nic` keys reach both devices; other sections are refused by name (the platform's own
/// configuration sets its host side). Statistics as JSON: a summary (time, devices, frames, the
/// receiver's checked bytes, the sender's first TX stack, each host's link bytes by category)
/// and the whole cluster run under `cluster`.
#[pyfunction]
#[pyo3(signature = (platform, count, nbytes, devices=None, overrides=None))]
fn io_run(
    py: Python<'_>,
    platform: &str,
    count: u64,
    nbytes: u64,
    devices: Option<Vec<String>>,
    overrides: Option<&str>,
) -> PyResult<String> {
    let cfg = io_config(platform, overrides)?;
    let kinds = match devices {
        None => [cfg.nic.kind.clone(), cfg.nic.kind.clone()],
        Some(d) if d.len() == 2 => [d[0].clone(), d[1].clone()],
        Some(d) => {
            return Err(verr(format!(
                "devices: give two device kinds (one per host), not {}",
                d.len()
            )))
        }
    };
    let host = |k: &str| match k {
        "descriptor" => Ok(larsen_idma::FIG8_PLATFORM),
        "idma" => Ok(larsen_idma::FIG9_PLATFORM),
        other => Err(verr(format!(
            "devices: '{other}' must be \"descriptor\" or \"idma\""
        ))),
    };
    let (tx, rx) = (host(&kinds[0])?, host(&kinds[1])?);
    let (mut link, mut nic) = (toml::Table::new(), toml::Table::new());
    if let Some(t) = self::overrides(overrides)?.as_table() {
        for (k, v) in t {
            let into = match k.as_str() {
                "link" => &mut link,
                "nic" => &mut nic,
                _ => {
                    return Err(verr(format!(
                        "overrides.{k}: the cluster reads an I/O preset's link and nic only (the \
                         platform presets larsen-io and larsen-io-idma set the host side)"
                    )))
                }
            };
            if let Some(sub) = v.as_table() {
                into.extend(sub.clone());
            }
        }
    }
    // The device kind picks the platform; the platform's device has no `kind` key to set.
    nic.remove("kind");
    // A descriptor NIC's key with no descriptor NIC in the run would change nothing.
    if kinds.iter().all(|k| k == "idma") {
        if let Some(k) = nic.keys().find(|k| !IDMA_NIC_KEYS.contains(&k.as_str())) {
            return Err(verr(format!(
                "overrides.nic.{k}: not read: both devices are iDMA adapters, which take only \
                 {} of [nic] (the rest are a descriptor NIC's)",
                IDMA_NIC_KEYS[1..].join(", ")
            )));
        }
    }
    let send = u32::try_from(nbytes + u64::from(cfg.driver.header_bytes))
        .map_err(|_| verr(format!("nbytes: {nbytes} is too large")))?;
    let acks = kinds.iter().all(|k| k == "descriptor");
    let none = toml::Value::Table(Default::default());
    let s = detach_interruptible(py, || {
        larsen_idma::cluster_stream(
            tx,
            rx,
            &none,
            platform,
            cfg.nic.mac_gbps,
            &link,
            &nic,
            count,
            send,
            0,
            acks,
        )
    })?
    .map_err(verr)?;
    let dev = |h: usize| s.hosts.get(h).and_then(|p| p.devices.first());
    let (Some(d0), Some(d1)) = (dev(0), dev(1)) else {
        return Err(verr("the cluster run has a host without a device"));
    };
    let link_of = |d: &movelab_platform::stats::DeviceStats| {
        let mut by: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in d.bytes_up.iter().chain(&d.bytes_down) {
            *by.entry(k.clone()).or_default() += v;
        }
        let total: u64 = by.values().sum();
        serde_json::json!({"categories": by.into_iter().collect::<Vec<_>>(), "total": total})
    };
    let out = serde_json::json!({
        "time_ns": s.hosts.iter().map(|h| h.time_ns).fold(0.0, f64::max),
        "kind": format!("{}/{}", kinds[0], kinds[1]),
        "platforms": [tx, rx],
        "messages_total": count,
        "frames": d0.frames,
        "frame_bytes": d0.frame_bytes,
        "bytes_checked": d1.rx_bytes_checked,
        "bytes_wrong": d1.rx_bytes_wrong,
        "tx_stack": {"parts": d0.tx_stack, "total": d0.tx_stack_total_ns},
        "hosts": [{"link": link_of(d0)}, {"link": link_of(d1)}],
        "cluster": s,
    });
    json(&out)
}

/// Larsen & Lee (CACHES 2011): Fig. 8, 9, Table 1, Fig. 10 and the sensitivity runs; rows as JSON.
#[pyfunction]
#[pyo3(signature = (parts=None, small_count=None, large_count=None, progress=None, overrides=None))]
fn reproduce_larsen_idma(
    py: Python<'_>,
    parts: Option<Vec<String>>,
    small_count: Option<u64>,
    large_count: Option<u64>,
    progress: Option<Py<PyAny>>,
    overrides: Option<&str>,
) -> PyResult<String> {
    let mut o = larsen_idma::Options::paper().map_err(verr)?;
    o.platform = self::overrides(overrides)?;
    if let Some(p) = parts {
        if let Some(bad) = p
            .iter()
            .find(|x| !["latency", "fig10", "sensitivity", "pcie-model"].contains(&x.as_str()))
        {
            return Err(verr(format!(
                "parts: '{bad}' is not one of latency, fig10, sensitivity, pcie-model"
            )));
        }
        o.parts = p;
    }
    // Bounds are checked by the run (`larsen_idma::stream_limits`).
    o.small_count = small_count.unwrap_or(o.small_count);
    o.large_count = large_count.unwrap_or(o.large_count);
    let rows = detach_interruptible(py, || {
        larsen_idma::run(&o, &mut |d, t| call_progress(&progress, (d, t)))
    })?
    .map_err(verr)?;
    json(&rows)
}

/// The most messages a Larsen & Lee Fig. 10 stream takes, 64 B and 64 KB (the defaults), as JSON.
#[pyfunction]
fn larsen_idma_stream_limits() -> PyResult<String> {
    let o = larsen_idma::Options::paper().map_err(verr)?;
    let (small, large) = larsen_idma::stream_limits(&o.bandwidth);
    json(&serde_json::json!({"small_count": small, "large_count": large}))
}

/// The composed receive server (`experiments::composition`): each mechanism alone and all
/// together, as JSON rows.
#[pyfunction]
#[pyo3(signature = (frames, overrides=None, progress=None))]
fn platform_composition(
    py: Python<'_>,
    frames: u64,
    overrides: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let ov = self::overrides(overrides)?;
    let rows = detach_interruptible(py, || {
        composition::run(&ov, frames, &mut |d, t| call_progress(&progress, (d, t)))
    })?
    .map_err(verr)?;
    json(&rows)
}

/// Two platforms on one Ethernet link (`systems::cluster`): `tx_workload` on the sender,
/// `rx_workload` on the receiver, their NICs joined; the cluster's statistics as JSON.
#[pyfunction]
#[pyo3(signature = (sender, receiver, tx_workload, rx_workload, tx_params=None, rx_params=None,
                    sender_overrides=None, receiver_overrides=None, meters=3.0, ns_per_meter=5.0,
                    agent="", progress=None))]
#[allow(clippy::too_many_arguments)]
fn platform_pair(
    py: Python<'_>,
    sender: &str,
    receiver: &str,
    tx_workload: &str,
    rx_workload: &str,
    tx_params: Option<&str>,
    rx_params: Option<&str>,
    sender_overrides: Option<&str>,
    receiver_overrides: Option<&str>,
    meters: f64,
    ns_per_meter: f64,
    agent: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    use movelab_platform::systems::cluster::{self, End, LinkSpec};
    let cfgs = [
        load_for_run(sender, sender_overrides, "sender")?,
        load_for_run(receiver, receiver_overrides, "receiver")?,
    ];
    let progs = vec![
        vec![Workload::load(tx_workload, &self::params(tx_params)?).map_err(verr)?],
        vec![Workload::load(rx_workload, &self::params(rx_params)?).map_err(verr)?],
    ];
    let link = LinkSpec {
        a: End {
            host: 0,
            agent: agent.into(),
        },
        b: End {
            host: 1,
            agent: agent.into(),
        },
        meters,
        ns_per_meter,
        gbps: None,
    };
    let s = detach_interruptible(py, || {
        let mut ps = Vec::new();
        for c in &cfgs {
            let mut p = movelab_platform::Platform::new(c)?;
            p.sys.track_values();
            ps.push(p);
        }
        cluster::run(&mut ps, &progs, &[link], &mut |d| {
            call_progress(&progress, (d,))
        })
    })?
    .map_err(verr)?;
    json(&s)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(platform_pair, m)?)?;
    m.add_function(wrap_pyfunction!(platform_composition, m)?)?;
    m.add_function(wrap_pyfunction!(io_platform_config, m)?)?;
    m.add_function(wrap_pyfunction!(io_presets, m)?)?;
    m.add_function(wrap_pyfunction!(io_run, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_larsen_idma, m)?)?;
    m.add_function(wrap_pyfunction!(larsen_idma_stream_limits, m)?)?;
    m.add_function(wrap_pyfunction!(platform_config, m)?)?;
    m.add_function(wrap_pyfunction!(platform_presets, m)?)?;
    m.add_function(wrap_pyfunction!(platform_engine_keys, m)?)?;
    m.add_function(wrap_pyfunction!(platform_unread_keys, m)?)?;
    m.add_function(wrap_pyfunction!(platform_run, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_zhao, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_rowclone_fork, m)?)?;
    m.add_function(wrap_pyfunction!(rowclone_fork_rows, m)?)?;
    Ok(())
}
