//! Systems: components and agents wired together with a run loop. [`platform`] is the platform of
//! cores, caches, agents and DRAM; [`cluster`] several platforms joined by Ethernet links (in the
//! registry: two copies of a platform, a sender and a receiver); [`udp_pair`] Wun & Crowley's
//! configurations against an iperf peer: two `ixp-host` platforms (a host core beside
//! microengines and their MAC) on one wire, run by [`cluster`]. The platform's is the one run
//! loop: Larsen & Lee's two hosts over PCIe are two platforms with a NIC or an iDMA on a cluster
//! link (the system `io-pair`, a model of its own, was retired: [`RETIRED`] names what replaces
//! it).
//!
//! The registry ([`SYSTEMS`], [`simulate`]) runs any of them by name through one call that takes a
//! configuration (a built-in preset or a file), overrides, a workload and its parameters, and
//! returns the one [`Report`]. A built-in preset's name says which system it belongs to.
pub mod cluster;
pub mod platform;
pub mod udp_pair;

use crate::config::network::BUILTIN_NETWORK_PLATFORMS;
use crate::config::platform::{builtin_platform_names, PlatformConfig};
use crate::config::workload::{builtin_workload_names, Workload};
use crate::sim::error::PlatformError;
use crate::sim::Report;
use serde::Serialize;
use std::collections::BTreeMap;

/// Workload parameters: name to value (integers, and for the network system the configuration's
/// name).
pub type Params = BTreeMap<String, toml::Value>;

/// A system in the registry.
pub struct System {
    pub name: &'static str,
    pub about: &'static str,
    /// Its built-in presets.
    pub presets: fn() -> Vec<&'static str>,
    /// The workloads it runs, with their parameters (`name=default`).
    pub workloads: fn() -> Vec<(String, String)>,
    /// Runs a workload: config, overrides, workload, params and `progress(done, planned)`.
    run: fn(&str, &toml::Value, &str, &Params, &mut Progress<'_>) -> Result<Report, PlatformError>,
}

/// A run's progress callback: `(done, planned)`, the operations fed to the cores so far and in
/// all (the network system, whose runs last a simulated time, does not call it).
pub type Progress<'a> = dyn FnMut(u64, u64) + 'a;

/// Every system, by name.
pub const SYSTEMS: &[System] = &[
    System {
        name: "platform",
        about: "cores, caches, interconnect, copy engines, RowClone and DRAM",
        presets: builtin_platform_names,
        workloads: platform_workloads,
        run: run_platform,
    },
    System {
        name: "cluster",
        about: "two copies of a platform with a NIC (e.g. larsen-io) on one Ethernet link: a sender's driver and NIC, the wire, a receiver's NIC and driver (its configurations are the platform's)",
        // Its configurations are the platform's (name the system: `--system cluster`).
        presets: Vec::new,
        workloads: || {
            vec![(
                "pair".into(),
                "messages=8, gap=20000, buffers=64, meters=3".into(),
            )]
        },
        run: run_cluster_pair,
    },
    System {
        name: "network-io",
        about: "Wun & Crowley's emu nic, softnic or onloader against an iperf UDP peer, on the platform: two ixp-host platforms (a host core beside microengines and their MAC) on one wire",
        presets: || BUILTIN_NETWORK_PLATFORMS.iter().map(|(n, _)| *n).collect(),
        workloads: || {
            ["udp-rx", "udp-tx"]
                .map(|w| (w.to_string(), "config=onloader, payload=1472, app=1".into()))
                .to_vec()
        },
        run: run_network_io,
    },
];

/// Systems no longer in the registry, each with what replaces it.
pub const RETIRED: &[(&str, &str)] = &[(
    "io-pair",
    "the two-host I/O model was retired: two platforms on one Ethernet link run Larsen & Lee's \
     hosts (`--system cluster` with the platform preset larsen-io for descriptor DMA or \
     larsen-io-idma for the integrated DMA engine, workload pair); an I/O preset's own workload \
     is nic-stream (`movelab run PRESET nic-stream`, from Python movelab.platform.io.run, which \
     runs the preset's device on that cluster)",
)];

/// The system named `name`.
pub fn system(name: &str) -> Result<&'static System, PlatformError> {
    if let Some((n, instead)) = RETIRED.iter().find(|(n, _)| *n == name) {
        return Err(PlatformError::config(
            *n,
            "(system)",
            (*instead).to_string(),
        ));
    }
    SYSTEMS
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| PlatformError::Unknown {
            kind: "system",
            name: name.into(),
            known: SYSTEMS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The system whose built-in presets include `preset`.
pub fn system_of_preset(preset: &str) -> Option<&'static System> {
    SYSTEMS.iter().find(|s| (s.presets)().contains(&preset))
}

/// Runs `workload` with `params` on `config` (a built-in preset or a file) of system `system`
/// (found from the preset's name when `None`), with `overrides` (a TOML table shaped like the
/// configuration) layered on.
pub fn simulate(
    system: Option<&str>,
    config: &str,
    overrides: &toml::Value,
    workload: &str,
    params: &Params,
) -> Result<Report, PlatformError> {
    simulate_with_progress(system, config, overrides, workload, params, &mut |_, _| {})
}

/// [`simulate`], calling `progress(done, planned)` now and then (see [`Progress`]).
pub fn simulate_with_progress(
    system: Option<&str>,
    config: &str,
    overrides: &toml::Value,
    workload: &str,
    params: &Params,
    progress: &mut Progress<'_>,
) -> Result<Report, PlatformError> {
    let sys = match system {
        Some(n) => self::system(n)?,
        None if crate::config::io::builtin_io_names().contains(&config) => {
            return Err(PlatformError::config(config, "(system)", RETIRED[0].1))
        }
        None => system_of_preset(config).ok_or_else(|| {
            // A file that cannot be read or is not TOML says so first: naming a system would not
            // help it.
            let path = std::path::Path::new(config);
            if path.exists() {
                let read = movelab_dram::config::read_config_text(path).map_err(|what| {
                    PlatformError::Io {
                        path: config.into(),
                        what,
                    }
                });
                if let Err(e) = read.and_then(|t| crate::sim::preset::parse(&t, config).map(|_| ()))
                {
                    return e;
                }
            }
            PlatformError::config(
                config,
                "(system)",
                format!(
                    "not a built-in preset of any system; name the system of a file ({})",
                    SYSTEMS
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?,
    };
    if system.is_none() && !workload.ends_with(".toml") {
        // A workload of another system run on this preset without naming that system: say which.
        let own = (sys.workloads)();
        if !own.iter().any(|(w, _)| w == workload) {
            if let Some(other) = SYSTEMS
                .iter()
                .find(|s| s.name != sys.name && (s.workloads)().iter().any(|(w, _)| w == workload))
            {
                return Err(PlatformError::config(
                    config,
                    "(workload)",
                    format!(
                        "'{workload}' is a workload of the {} system, and {config} is a {} \
                         preset, whose workloads are {}; name the system: --system {}",
                        other.name,
                        sys.name,
                        own.iter()
                            .map(|(w, _)| w.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        other.name
                    ),
                ));
            }
        }
    }
    (sys.run)(config, overrides, workload, params, progress)
}

fn has_overrides(o: &toml::Value) -> bool {
    o.as_table().is_some_and(|t| !t.is_empty())
}

fn report<T: Serialize>(
    system: &str,
    config: &str,
    workload: &str,
    time_ns: f64,
    stats: &T,
) -> Result<Report, PlatformError> {
    Ok(Report {
        system: system.into(),
        config: config.into(),
        workload: workload.into(),
        time_ns,
        stats: serde_json::to_value(stats)
            .map_err(|e| PlatformError::config(config, "(report)", e.to_string()))?,
    })
}

/// A parameter as an unsigned integer.
fn uint(workload: &str, key: &str, v: &toml::Value) -> Result<u64, PlatformError> {
    v.as_integer()
        .and_then(|i| u64::try_from(i).ok())
        .ok_or_else(|| {
            PlatformError::config(
                workload,
                format!("params.{key}"),
                format!("{v} must be a non-negative integer"),
            )
        })
}

/// Refuses parameters a workload does not take.
fn only(workload: &str, params: &Params, known: &[&str]) -> Result<(), PlatformError> {
    match params.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(PlatformError::config(
            workload,
            format!("params.{k}"),
            format!("unknown parameter (known: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn platform_workloads() -> Vec<(String, String)> {
    builtin_workload_names()
        .into_iter()
        .map(|n| {
            let p = Workload::load(n, &BTreeMap::new())
                .map(|w| {
                    w.spec
                        .params
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            (n.to_string(), p)
        })
        .collect()
}

fn run_platform(
    config: &str,
    overrides: &toml::Value,
    workload: &str,
    params: &Params,
    progress: &mut Progress<'_>,
) -> Result<Report, PlatformError> {
    let mut cfg = PlatformConfig::load(config)?;
    if has_overrides(overrides) {
        cfg = cfg.with_overrides(overrides.clone(), "overrides")?;
        cfg.refuse_unread_overrides(overrides, "overrides")?;
    }
    let ints = params
        .iter()
        .map(|(k, v)| Ok((k.clone(), uint(workload, k, v)?)))
        .collect::<Result<BTreeMap<_, _>, PlatformError>>()?;
    let w = Workload::load(workload, &ints)?;
    let s = platform::run_with_progress(&cfg, &w, progress)?;
    report("platform", config, workload, s.time_ns, &s)
}

/// Two copies of platform `config` (overrides on both) joined by a link between their NICs: the
/// sender runs `nic-tx`, the receiver `nic-rx`.
fn run_cluster_pair(
    config: &str,
    overrides: &toml::Value,
    workload: &str,
    params: &Params,
    progress: &mut Progress<'_>,
) -> Result<Report, PlatformError> {
    if workload != "pair" {
        return Err(PlatformError::Unknown {
            kind: "cluster workload",
            name: workload.into(),
            known: "pair".into(),
        });
    }
    only(workload, params, &["messages", "gap", "buffers", "meters"])?;
    let mut cfg = PlatformConfig::load(config)?;
    if has_overrides(overrides) {
        cfg = cfg.with_overrides(overrides.clone(), "overrides")?;
        cfg.refuse_unread_overrides(overrides, "overrides")?;
    }
    let mut tx = BTreeMap::new();
    for k in ["messages", "gap"] {
        if let Some(v) = params.get(k) {
            tx.insert(k.to_string(), uint(workload, k, v)?);
        }
    }
    let mut rx = BTreeMap::new();
    if let Some(v) = params.get("buffers") {
        rx.insert("buffers".to_string(), uint(workload, "buffers", v)?);
    }
    let meters = match params.get("meters") {
        None => 3.0,
        Some(v) => v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .ok_or_else(|| {
                PlatformError::config(workload, "params.meters", format!("{v} must be a number"))
            })?,
    };
    let progs = vec![
        vec![Workload::load("nic-tx", &tx)?],
        vec![Workload::load("nic-rx", &rx)?],
    ];
    // Each platform's one device with a port (a NIC or an iDMA).
    let end = |host| cluster::End {
        host,
        agent: String::new(),
    };
    let link = cluster::LinkSpec {
        a: end(0),
        b: end(1),
        meters,
        ns_per_meter: 5.0,
        gbps: None,
    };
    let mut ps = vec![
        platform::Platform::new(&cfg)?,
        platform::Platform::new(&cfg)?,
    ];
    for p in &mut ps {
        p.sys.track_values();
    }
    let planned = ps
        .iter()
        .zip(&progs)
        .fold(0u64, |n, (p, w)| n.saturating_add(p.planned_ops(w)));
    let s = cluster::run(&mut ps, &progs, &[link], &mut |n| progress(n, planned))?;
    let t = s.hosts.iter().map(|h| h.time_ns).fold(0.0, f64::max);
    report("cluster", config, workload, t, &s)
}

/// The `udp-rx` and `udp-tx` workloads of a network platform (`presets/network`): its settings
/// on two `ixp-host` platforms on one wire (`udp_pair.rs`), the report's `stats` the run's
/// figures beside both platforms' full statistics and the link's.
fn run_network_io(
    config: &str,
    overrides: &toml::Value,
    workload: &str,
    params: &Params,
    _progress: &mut Progress<'_>,
) -> Result<Report, PlatformError> {
    let direction = match workload {
        "udp-rx" => udp_pair::Direction::Rx,
        "udp-tx" => udp_pair::Direction::Tx,
        _ => {
            return Err(PlatformError::Unknown {
                kind: "network-io workload",
                name: workload.into(),
                known: "udp-rx, udp-tx".into(),
            })
        }
    };
    only(workload, params, &["config", "payload", "app"])?;
    let cfg = udp_pair::load(config, overrides)?;
    let conf = match params.get("config") {
        None => "onloader".to_string(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(PlatformError::config(
                workload,
                "params.config",
                format!("{v} must be a configuration's name"),
            ))
        }
    };
    let payload = params
        .get("payload")
        .map_or(Ok(1472), |v| uint(workload, "payload", v))?;
    if !(crate::net::udp_peer::MIN_PAYLOAD as u64..=crate::net::udp_peer::MAX_PAYLOAD as u64)
        .contains(&payload)
    {
        return Err(PlatformError::config(
            workload,
            "params.payload",
            format!(
                "{payload} is outside {}..={} (UDP payload bytes in one 1500-byte Ethernet frame)",
                crate::net::udp_peer::MIN_PAYLOAD,
                crate::net::udp_peer::MAX_PAYLOAD
            ),
        ));
    }
    let app = params
        .get("app")
        .map_or(Ok(1), |v| uint(workload, "app", v))?;
    if app > 1 {
        return Err(PlatformError::config(
            workload,
            "params.app",
            format!(
                "{app} must be 1 (with the application) or 0 (the onloader's receive blocks alone)"
            ),
        ));
    }
    let spec = udp_pair::RunSpec {
        config: conf,
        direction,
        payload: usize::try_from(payload).unwrap_or(usize::MAX),
        with_app: app != 0,
    };
    udp_pair::refuse_unread_overrides(overrides, &spec)?;
    let s = udp_pair::run(&cfg, &spec)?;
    report(
        "network-io",
        config,
        workload,
        s.stats.sim_time_us * 1000.0,
        &s,
    )
}
