//! What no paper could run: one receive server with mechanisms from four papers (the preset
//! `server-composed`: Larsen & Lee's descriptor NIC, with Intel DDIO; RowClone-ZI zeroing socket
//! buffer pages in DRAM; Zhao et al.'s on-die ASYNC copy engine taking the payload copies; the
//! receive path on a small multithreaded core, as Wun & Crowley's microengines), each mechanism
//! alone, in pairs and all together, and the NIC replaced by Larsen & Lee's integrated DMA engine
//! and its FIFO+PHY adapter (receive through the pinned buffer), alone and with all the others.
//!
//! Method: the driver core sends `frames` frames back to back through the NIC's loopback peer;
//! every NIC interrupt (one per TX and one per RX write-back: the NIC has one vector) runs the
//! `server-rx` receive path on the network core, whose application work is kept minimal, so the
//! run's time is the network core working through its interrupts. Each variant is the preset with
//! agents left out (and DDIO off), never a changed parameter. The saving is 1 - the variant's time
//! over the variant without any of them; the sum of the savings alone beside the saving together
//! says whether the mechanisms add up.
use super::platform;
use crate::config::platform::PlatformConfig;
use crate::config::workload::Workload;
use crate::sim::error::PlatformError;
use crate::systems::platform::Platform;
use serde::Serialize;
use std::collections::BTreeMap;

/// The preset composed.
pub const PRESET: &str = "server-composed";

/// The variants: every combination of DDIO, RowClone-ZI and the copy engine with the descriptor
/// NIC, then the iDMA in its place alone and with the three: (name, DDIO, RowClone-ZI, copy
/// engine, iDMA).
pub const VARIANTS: &[(&str, bool, bool, bool, bool)] = &[
    ("none", false, false, false, false),
    ("ddio", true, false, false, false),
    ("rowclone-zi", false, true, false, false),
    ("copy-engine", false, false, true, false),
    ("ddio+rowclone-zi", true, true, false, false),
    ("ddio+copy-engine", true, false, true, false),
    ("rowclone-zi+copy-engine", false, true, true, false),
    ("all", true, true, true, false),
    ("idma", false, false, false, true),
    ("all+idma", true, true, true, true),
];

/// Where an iDMA variant puts the engine's pinned receive buffer (`idma.rx_buffer_bytes` of the
/// I/O preset): an address no other region of the preset uses (a layout choice, not a fact).
pub const IDMA_PINNED: u64 = 0x3800_0000;

/// The experiment's own settings (method choices, not facts about any machine): the driver core
/// sends a frame every `DRIVER_GAP` instructions, about 2 us on its 2.93 GHz core: faster than the
/// network core receives (4 us a frame at best), so the network core's interrupts are the run's
/// time, and slower than the wire sends (a 1,088 B frame takes 0.89 us at 10 Gb/s), so the driver
/// never runs a ring's length ahead of the NIC (a driver that did would overwrite descriptors the
/// NIC has not used: the run stops with a ring overrun). The receive server's application work is
/// `APP_CHUNKS` chunks of `APP_CHUNK` instructions (kept minimal: the run measures the receive path).
pub const DRIVER_GAP: u64 = 8000;
pub const APP_CHUNKS: u64 = 1;
pub const APP_CHUNK: u64 = 100;

/// One variant's run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// Which mechanisms it has ("none", one mechanism's name, or "all").
    pub variant: String,
    pub ddio: bool,
    pub rowclone_zi: bool,
    pub copy_engine: bool,
    /// The iDMA and its adapter in place of the descriptor NIC.
    pub idma: bool,
    pub frames: u64,
    /// Interrupts the network core took (TX and RX write-backs).
    pub interrupts: u64,
    /// Simulated time until the network core finished every interrupt, us.
    pub time_us: f64,
    /// Network-core time per frame received, ns.
    pub ns_per_frame: f64,
    /// Payload delivered to the application per second, Gb/s.
    pub payload_gbps: f64,
    /// 1 - time / the time of "none".
    pub saving: f64,
    /// DRAM energy and channel bytes of the run.
    pub dram_energy_uj: f64,
    pub channel_kb: f64,
    /// Offloads each agent took (zeroing, copies).
    pub zero_offloads: u64,
    pub copy_offloads: u64,
    /// The received bytes (NIC or iDMA) that were not the bytes sent (always 0).
    pub rx_bytes_wrong: u64,
}

/// The preset (with `overrides`) as variant (ddio, rowclone-zi, copy engine, iDMA): agents the
/// variant lacks left out; with `idma` the NIC's entry becomes an iDMA agent with the same link,
/// root complex, rings and buffers, and a pinned buffer at [`IDMA_PINNED`].
pub fn variant(
    overrides: &toml::Value,
    ddio: bool,
    zi: bool,
    ce: bool,
    idma: bool,
) -> Result<PlatformConfig, PlatformError> {
    let mut cfg = platform(PRESET, overrides, "")?;
    cfg.agents.retain(|a| match a.name.as_str() {
        "rowclone-zi" => zi,
        "copy-engine" => ce,
        _ => true,
    });
    for a in cfg.agents.iter_mut().filter(|a| a.kind == "nic") {
        let rc = a
            .params
            .entry("root_complex")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let Some(t) = rc.as_table_mut() {
            t.insert("ddio".into(), toml::Value::Boolean(ddio));
        }
        if idma {
            a.kind = "idma".into();
            a.name = "idma".into();
            a.params.remove("rc_read_ns");
            a.params
                .insert("pinned".into(), toml::Value::Integer(IDMA_PINNED as i64));
        }
    }
    cfg.validate(PRESET)?;
    Ok(cfg)
}

/// Runs every variant with `frames` frames.
pub fn run(
    overrides: &toml::Value,
    frames: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Row>, PlatformError> {
    if !(1..=4096).contains(&frames) {
        return Err(PlatformError::config(
            "composition",
            "frames",
            format!("{frames}: 1 to 4096"),
        ));
    }
    let app: BTreeMap<String, u64> = [("chunks", APP_CHUNKS), ("chunk", APP_CHUNK)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let w = Workload::load("server-rx", &app)?;
    // A `[copy]` key the composed engine does not read (it sets its own placement, mode and
    // snoop_ack) would change no variant: refused by name, as `platform run` refuses it.
    platform(PRESET, overrides, "")?.refuse_unread_overrides(overrides, "overrides")?;
    let mut rows: Vec<Row> = Vec::new();
    for (i, &(name, ddio, zi, ce, idma)) in VARIANTS.iter().enumerate() {
        progress(i, VARIANTS.len());
        let mut cfg = variant(overrides, ddio, zi, ce, idma)?;
        if let Some(g) = cfg.cores.first_mut() {
            g.params.insert("messages".into(), frames);
            g.params.insert("gap".into(), DRIVER_GAP);
        }
        let s = Platform::new(&cfg)?.run(&w)?;
        let by = |n: &str| s.agents.iter().find(|a| a.name == n);
        let nic = by("nic")
            .or(by("idma"))
            .and_then(|a| a.device.clone())
            .unwrap_or_default();
        if nic.rx_frames_in != frames || nic.rx_bytes_wrong != 0 {
            return Err(PlatformError::Stalled(format!(
                "composition {name}: {} of {frames} frames received, {} bytes wrong",
                nic.rx_frames_in, nic.rx_bytes_wrong
            )));
        }
        let payload = w.param("payload").unwrap_or(0);
        let base = rows.first().map_or(s.time_ns, |r| r.time_us * 1000.0);
        rows.push(Row {
            variant: name.into(),
            ddio,
            rowclone_zi: zi,
            copy_engine: ce,
            idma,
            frames,
            interrupts: s.per_core.get(1).map_or(0, |c| c.interrupts),
            time_us: s.time_ns / 1000.0,
            ns_per_frame: s.time_ns / frames as f64,
            payload_gbps: (frames * payload * 8) as f64 / s.time_ns,
            saving: 1.0 - s.time_ns / base,
            dram_energy_uj: s.dram_energy_nj / 1000.0,
            channel_kb: s.memory.channel_bytes as f64 / 1024.0,
            zero_offloads: by("rowclone-zi").map_or(0, |a| a.ops),
            copy_offloads: by("copy-engine").map_or(0, |a| a.ops),
            rx_bytes_wrong: nic.rx_bytes_wrong,
        });
    }
    progress(VARIANTS.len(), VARIANTS.len());
    Ok(rows)
}
