//! The network-I/O platform's settings as data (`presets/network/*.toml`): the values of Wun &
//! Crowley's IXP2350 that a user may change and that reach the one platform the network runs on
//! (`systems/udp_pair.rs`): the host core's clock, its calibrated cycles per counted kernel
//! instruction, the L2 push and the onloader's mapping cache; the microengines' clock, count and
//! contexts; the wire's rate and how long the peer sends. Nothing else is held here: the host's
//! per-packet costs are the host programs' (`presets/network/wun-programs`), the caches, the
//! memory, the microengines' other parameters, the MSF and the MAC are `ixp-host`'s
//! (`presets/platforms/ixp-host.toml`), each value cited where it is set. An override of a key
//! that is not here is refused by name ([`NetworkIoConfig::validate`] bounds the rest).
use crate::sim::error::PlatformError;
use crate::sim::preset::{merge_known, PresetSet};
use serde::{Deserialize, Serialize};

/// The longest a network peer may send, simulated microseconds (`wire.duration_us`).
pub const MAX_WIRE_DURATION_US: f64 = 100_000.0;

/// The built-in network platforms: (name, TOML text).
pub const BUILTIN_NETWORK_PLATFORMS: &[(&str, &str)] = &[(
    "ixp2350",
    include_str!("../../../../presets/network/ixp2350.toml"),
)];

const NETWORK_PLATFORMS: PresetSet = PresetSet {
    kind: "network platform",
    unknown: "network platform preset",
    unknown_or_file: "network platform preset or file",
    dir: "network",
    presets: BUILTIN_NETWORK_PLATFORMS,
};

/// The host core (`ixp-host`'s platform core; its host programs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The core's clock (`ixp-host`'s `core.clock_mhz` per run).
    pub clock_mhz: f64,
    /// Cycles per counted instruction of kernel and application code in the host programs
    /// (`param cpi`, rounded to whole cycles).
    pub cpi: f64,
    /// iperf's own work per datagram (sequence, loss and jitter accounting, gettimeofday), in
    /// counted instructions: every host program's `param app_per_datagram`.
    pub app_per_datagram: u64,
    /// The onloader's sendmsg on the host (socket layer, route and neighbour lookups, the post to
    /// the microengines), in counted instructions: the onloader's transmit program's
    /// `param onload_send`.
    pub onload_send: u64,
    /// Small-core writes into host memory are pushed into the host's L2 (the microengines'
    /// `l2_push` and the receiving host program's).
    pub l2_push: bool,
    /// The onloader's per-connection cache of user-buffer mappings (its host program's).
    pub mapping_cache: bool,
}

/// The small cores (IXP microengines) of the host under test.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SmallCoreConfig {
    pub clock_mhz: f64,
    /// Small cores on receive and on transmit.
    pub rx_cores: u32,
    pub tx_cores: u32,
    /// Hardware contexts per core.
    pub threads: u32,
}

/// The wire and the iperf peer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WireConfig {
    /// The wire's rate (both ends' MACs at it).
    pub gbps: f64,
    /// How long the peer sends on receive, microseconds of simulated time.
    pub duration_us: f64,
}

/// A network-I/O platform: the settings that reach the one platform.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetworkIoConfig {
    pub name: String,
    pub host: HostConfig,
    pub small_cores: SmallCoreConfig,
    pub wire: WireConfig,
}

fn bad(src: &str, key: &str, what: impl Into<String>) -> PlatformError {
    PlatformError::config(src, key, what)
}

fn range(src: &str, key: &str, v: f64, lo: f64, hi: f64) -> Result<(), PlatformError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(bad(src, key, format!("{v} is outside {lo}..={hi}")))
    }
}

/// Every key of `t` as a dotted path under `path` (leaves only).
fn leaves(t: &toml::Value, path: &str, out: &mut Vec<String>) {
    match t.as_table() {
        Some(tab) => {
            for (k, v) in tab {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(v, &p, out);
            }
        }
        None => out.push(path.to_string()),
    }
}

/// Whether `base` has the table path `key` leads through (every part but a leaf's own).
fn has_path(base: &toml::Value, key: &str) -> bool {
    let mut at = base;
    for part in key.split('.') {
        match at.as_table().and_then(|t| t.get(part)) {
            Some(v) => at = v,
            None => return false,
        }
    }
    true
}

crate::preset_loader!(
    NetworkIoConfig,
    NETWORK_PLATFORMS,
    merge = NetworkIoConfig::merge_overrides
);

impl NetworkIoConfig {
    pub fn from_toml_str(text: &str, src: &str) -> Result<NetworkIoConfig, PlatformError> {
        let v: toml::Value =
            toml::from_str(text).map_err(|e| bad(src, "(syntax)", e.to_string()))?;
        Self::from_value(v, src)
    }

    /// How overrides (a TOML table shaped like the config, e.g. `{host = {clock_mhz = 600}}`) go
    /// into it: they change what the preset has; any other key (a cost, a queue, a channel of
    /// the retired network model, or a typo) is refused naming its full path, since no run would
    /// read it.
    fn merge_overrides(
        &self,
        base: &mut toml::Value,
        over: toml::Value,
        src: &str,
    ) -> Result<(), PlatformError> {
        let mut keys = Vec::new();
        leaves(&over, "", &mut keys);
        if let Some(k) = keys.iter().find(|k| !has_path(base, k)) {
            let mut known = Vec::new();
            leaves(base, "", &mut known);
            known.retain(|k| k != "name");
            return Err(bad(
                src,
                k,
                format!(
                    "not read by the one platform the network runs on (the keys that reach it: {})",
                    known.join(", ")
                ),
            ));
        }
        merge_known(base, &over, src, &[])
    }

    /// Checks every value's range.
    pub fn validate(&self, src: &str) -> Result<(), PlatformError> {
        let h = &self.host;
        range(src, "host.clock_mhz", h.clock_mhz, 1.0, 10_000.0)?;
        range(src, "host.cpi", h.cpi, 0.1, 100.0)?;
        range(
            src,
            "host.app_per_datagram",
            h.app_per_datagram as f64,
            0.0,
            1e6,
        )?;
        range(src, "host.onload_send", h.onload_send as f64, 0.0, 1e6)?;
        let m = &self.small_cores;
        range(src, "small_cores.clock_mhz", m.clock_mhz, 1.0, 10_000.0)?;
        range(src, "small_cores.rx_cores", m.rx_cores as f64, 1.0, 64.0)?;
        range(src, "small_cores.tx_cores", m.tx_cores as f64, 1.0, 64.0)?;
        range(src, "small_cores.threads", m.threads as f64, 1.0, 64.0)?;
        let w = &self.wire;
        range(src, "wire.gbps", w.gbps, 0.001, 1000.0)?;
        // The longest a peer may send: the run refuses more (`systems::udp_pair`), so the config
        // says so where the key is read.
        range(
            src,
            "wire.duration_us",
            w.duration_us,
            1.0,
            MAX_WIRE_DURATION_US,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The preset holds only the keys a run reads; an override of anything else (a retired
    /// cost) is refused naming its full path, and a value out of range names its key.
    #[test]
    fn the_preset_holds_only_what_a_run_reads_and_other_keys_are_refused() {
        let c = NetworkIoConfig::preset("ixp2350").unwrap();
        let mut keys = Vec::new();
        leaves(&toml::Value::try_from(&c).unwrap(), "", &mut keys);
        assert_eq!(keys.len(), 13, "{keys:?}");
        for (over, key) in [
            ("host = { costs = { ip_rx = 5 } }", "host.costs.ip_rx"),
            ("queues = { socket = 3 }", "queues.socket"),
            ("host = { l1 = { ways = 4 } }", "host.l1.ways"),
        ] {
            let e = c
                .with_overrides(toml::from_str(over).unwrap(), "overrides")
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains("host.cpi"), "{over}: {e}");
        }
        let e = c
            .with_overrides(toml::from_str("host = { cpi = 0.0 }").unwrap(), "o")
            .unwrap_err()
            .to_string();
        assert!(e.contains("host.cpi"), "{e}");
        let ok = c
            .with_overrides(
                toml::from_str("small_cores = { threads = 4 }").unwrap(),
                "o",
            )
            .unwrap();
        assert_eq!(ok.small_cores.threads, 4);
    }
}
