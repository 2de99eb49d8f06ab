//! Zhao et al. (IEEE TC 2007): TCP/IP receive processing with copy engines. Table 3 (off-die
//! engine on the UMA/EMC platform, in-order and out-of-order cores, three modes, three payload
//! sizes, with the reduction split into faster copies and overlap), Fig. 11 (on-die on NUMA/IMC
//! versus off-die), Table 4 (early notification before or after the multiline snoop) and Fig. 15
//! (destination written into the cache).
//!
//! The split: the copies' cost in the base system is `C_base = T_base - T_nocopy` (the same run
//! with the copies removed); an engine run's copy time `C_mode` is the summed time from each
//! `ecpy` issuing to the copy's completion notification reaching the core (when a synchronous
//! `ecpy` retires: the copy as the core sees it, as `C_base` is).
//! `faster_copy = (C_base - C_mode) / T_base`, and `overlap = reduction - faster_copy`: the rest
//! of the gain comes from work done meanwhile.
//! ASYNC's faster copy is SYNC_WLB's (the same engine under the same scheduling, section 6.2:
//! ASYNC "assume[s] load bypass"): the paper's Table 3 gives the two modes one faster-copy
//! figure in every cell, so what ASYNC gains beyond it is overlap (its early retirement).
use super::platform;
use crate::config::workload::Workload;
use crate::sim::error::PlatformError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const PAPER_TOML: &str = include_str!("../../../../presets/papers/zhao-copy-engine.toml");

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PaperRow {
    pub core: String,
    pub payload_bytes: u64,
    pub mode: String,
    pub reduction: f64,
    pub faster_copy: f64,
    pub overlap: f64,
}

#[derive(Debug, Deserialize)]
struct PaperFile {
    table3: Vec<PaperRow>,
    table4: BTreeMap<String, f64>,
    fig15: BTreeMap<String, f64>,
}

/// The paper's Table 3.
pub fn paper_table3() -> Vec<PaperRow> {
    toml::from_str::<PaperFile>(PAPER_TOML)
        .map(|f| f.table3)
        .unwrap_or_default()
}

/// One row of the reproduction.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// "table3", "fig11", "table4" or "fig15".
    pub figure: String,
    pub core: String,
    pub payload_bytes: u64,
    /// "BASE", "SYNC_NLB", "SYNC_WLB" or "ASYNC".
    pub mode: String,
    pub placement: String,
    /// Variant within the figure: "" or "dest-to-cache" or "ack-after-snoop".
    pub variant: String,
    pub reduction: f64,
    pub faster_copy: f64,
    pub overlap: f64,
    pub time_ns: f64,
    pub base_time_ns: f64,
    pub ipc: f64,
    pub mean_copy_ns: f64,
    pub paper_reduction: Option<f64>,
    pub paper_faster_copy: Option<f64>,
    pub paper_overlap: Option<f64>,
    /// Fig. 15: the further reduction (fraction of the UMA base time) from writing the
    /// destination into the cache instead of memory.
    pub cache_gain: Option<f64>,
    pub paper_cache_gain: Option<f64>,
}

/// Options of the reproduction.
#[derive(Debug, Clone)]
pub struct Options {
    /// Packets per run.
    pub packets: u64,
    /// Overrides layered on both platforms.
    pub overrides: toml::Value,
    pub payloads: Vec<u64>,
    /// Table 3's cores ("in-order", "out-of-order"); empty runs no Table 3 cell.
    pub cores: Vec<String>,
    /// Whether to run Fig. 11, Table 4 and Fig. 15. With the table's cells split over several
    /// runs (one point each on an executor), the figures are a point of their own.
    pub figures: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            packets: 200,
            overrides: toml::Value::Table(Default::default()),
            payloads: vec![512, 1024, 1400],
            cores: CORES.iter().map(|c| c.to_string()).collect(),
            figures: true,
        }
    }
}

/// Table 3's cores.
pub const CORES: [&str; 2] = ["in-order", "out-of-order"];

struct Measured {
    time: f64,
    ipc: f64,
    copy_time: f64,
    mean_copy: f64,
}

fn measure(plat: &str, o: &Options, extra: &str, w: &Workload) -> Result<Measured, PlatformError> {
    let cfg = platform(plat, &o.overrides, extra)?;
    let s = crate::systems::platform::run(&cfg, w)?;
    Ok(Measured {
        time: s.time_ns,
        ipc: s.ipc,
        copy_time: s.offload_time_ns,
        mean_copy: s.mean_offload_ns,
    })
}

/// The copy time a mode's faster copy is computed from: its own, except ASYNC's, which is the
/// SYNC_WLB run's of the same setting (`wlb`, recorded when that run passes through here first).
fn split_copy_time(mode: &str, m: &Measured, wlb: &mut Option<f64>) -> f64 {
    match mode {
        "SYNC_WLB" => {
            *wlb = Some(m.copy_time);
            m.copy_time
        }
        "ASYNC" => wlb.unwrap_or(m.copy_time),
        _ => m.copy_time,
    }
}

/// Runs every experiment; `progress(done, total)` after each run.
pub fn run(o: &Options, progress: &mut dyn FnMut(usize, usize)) -> Result<Vec<Row>, PlatformError> {
    let paper = paper_table3();
    let pf: Option<PaperFile> = toml::from_str(PAPER_TOML).ok();
    if let Some(c) = o.cores.iter().find(|c| !CORES.contains(&c.as_str())) {
        return Err(PlatformError::config(
            "experiment",
            "cores",
            format!("unknown core '{c}' (in-order, out-of-order)"),
        ));
    }
    let cores = &o.cores;
    let modes = ["SYNC_NLB", "SYNC_WLB", "ASYNC"];
    let figures = if o.figures { 1 + 1 + 3 + 1 + 2 + 2 } else { 0 };
    let total = cores.len() * o.payloads.len() * (2 + modes.len()) + figures;
    let mut done = 0;
    let mut tick = |done: &mut usize| {
        *done += 1;
        progress(*done, total);
    };
    let mut rows = Vec::new();
    let uma = "zhao-uma-emc";
    let numa = "zhao-numa-imc";
    let load = |payload: u64| {
        let mut p = BTreeMap::new();
        p.insert("payload".to_string(), payload);
        p.insert("packets".to_string(), o.packets);
        Workload::load("tcp-rx", &p)
    };
    let row = |figure: &str,
               core: &str,
               payload: u64,
               mode: &str,
               placement: &str,
               variant: &str,
               base: f64,
               c_base: f64,
               m: &Measured,
               copy_time: f64| {
        let reduction = 1.0 - m.time / base;
        let faster = if mode == "BASE" {
            reduction
        } else {
            (c_base - copy_time) / base
        };
        let p = paper.iter().find(|r| {
            figure == "table3" && r.core == core && r.payload_bytes == payload && r.mode == mode
        });
        Row {
            figure: figure.into(),
            core: core.into(),
            payload_bytes: payload,
            mode: mode.into(),
            placement: placement.into(),
            variant: variant.into(),
            reduction,
            faster_copy: faster,
            overlap: reduction - faster,
            time_ns: m.time,
            base_time_ns: base,
            ipc: m.ipc,
            mean_copy_ns: m.mean_copy,
            paper_reduction: p.map(|p| p.reduction),
            paper_faster_copy: p.map(|p| p.faster_copy),
            paper_overlap: p.map(|p| p.overlap),
            cache_gain: None,
            paper_cache_gain: None,
        }
    };

    // Table 3: off-die engine, UMA/EMC.
    let mut uma_ooo_1k = None;
    for core in cores.iter().map(String::as_str) {
        for &payload in &o.payloads {
            let w = load(payload)?;
            let core_kv = format!("core = {{ kind = \"{core}\" }}");
            let base = measure(uma, o, &core_kv, &w)?;
            tick(&mut done);
            let nocopy = measure(uma, o, &core_kv, &w.without_copies())?;
            tick(&mut done);
            let c_base = base.time - nocopy.time;
            let mut wlb_copy = None;
            for mode in modes {
                let extra = format!("{core_kv}\ncopy = {{ mechanism = \"ce\", mode = \"{mode}\", placement = \"off-die\" }}");
                let m = measure(uma, o, &extra, &w)?;
                tick(&mut done);
                let copy_time = split_copy_time(mode, &m, &mut wlb_copy);
                rows.push(row(
                    "table3", core, payload, mode, "off-die", "", base.time, c_base, &m, copy_time,
                ));
            }
            if core == "out-of-order" && payload == 1024 {
                uma_ooo_1k = Some((base.time, c_base));
            }
        }
    }

    if !o.figures {
        return Ok(rows);
    }
    // Fig. 11, Table 4, Fig. 15: 1 KB packets, out-of-order core, against BASE on UMA/EMC.
    let w = load(1024)?;
    let (uma_base, _) = match uma_ooo_1k {
        Some(v) => v,
        None => {
            // The same runs as Table 3's out-of-order 1 KB cell, so a split run gives the same rows.
            let ooo = "core = { kind = \"out-of-order\" }";
            let b = measure(uma, o, ooo, &w)?;
            let n = measure(uma, o, ooo, &w.without_copies())?;
            (b.time, b.time - n.time)
        }
    };
    tick(&mut done);
    let nb = measure(numa, o, "copy = { mechanism = \"base\" }", &w)?;
    tick(&mut done);
    let nn = measure(
        numa,
        o,
        "copy = { mechanism = \"base\" }",
        &w.without_copies(),
    )?;
    let numa_c_base = nb.time - nn.time;
    // Copy cost measured on NUMA, gain measured against BASE on UMA (as the figure does).
    let c_base_for_numa = numa_c_base + (uma_base - nb.time);
    rows.push(row(
        "fig11",
        "out-of-order",
        1024,
        "BASE",
        "on-die",
        "",
        uma_base,
        0.0,
        &nb,
        nb.copy_time,
    ));
    let mut numa_wlb_copy = None;
    for mode in modes {
        let extra = format!("copy = {{ mechanism = \"ce\", mode = \"{mode}\" }}");
        let m = measure(numa, o, &extra, &w)?;
        tick(&mut done);
        let copy_time = split_copy_time(mode, &m, &mut numa_wlb_copy);
        rows.push(row(
            "fig11",
            "out-of-order",
            1024,
            mode,
            "on-die",
            "",
            uma_base,
            c_base_for_numa,
            &m,
            copy_time,
        ));
    }
    for r in rows.clone() {
        if r.figure == "table3" && r.core == "out-of-order" && r.payload_bytes == 1024 {
            let mut r2 = r.clone();
            r2.figure = "fig11".into();
            r2.paper_reduction = None;
            r2.paper_faster_copy = None;
            r2.paper_overlap = None;
            rows.push(r2);
        }
    }
    // Table 4: ASYNC on-die, acknowledgment after the multiline snoop. Gains relative to the
    // NUMA base, as the table's 40.7% / 37.8% are.
    let t4 = pf.as_ref().map(|p| p.table4.clone()).unwrap_or_default();
    for (variant, ack) in [("ack-before-snoop", "before"), ("ack-after-snoop", "after")] {
        let extra =
            format!("copy = {{ mechanism = \"ce\", mode = \"ASYNC\", snoop_ack = \"{ack}\" }}");
        let m = measure(numa, o, &extra, &w)?;
        tick(&mut done);
        let mut r = row(
            "table4",
            "out-of-order",
            1024,
            "ASYNC",
            "on-die",
            variant,
            nb.time,
            numa_c_base,
            &m,
            numa_wlb_copy.unwrap_or(m.copy_time),
        );
        r.paper_reduction = t4
            .get(if ack == "before" {
                "before_snoop"
            } else {
                "after_snoop"
            })
            .copied();
        rows.push(r);
    }
    // Fig. 15: on-die engine writing the destination into the cache (gain over the same engine
    // writing to memory).
    let f15 = pf.as_ref().map(|p| p.fig15.clone()).unwrap_or_default();
    let mut cached_wlb_copy = None;
    for mode in ["SYNC_WLB", "ASYNC"] {
        let plain = measure(
            numa,
            o,
            &format!("copy = {{ mechanism = \"ce\", mode = \"{mode}\" }}"),
            &w,
        )?;
        tick(&mut done);
        let cached = measure(
            numa,
            o,
            &format!("copy = {{ mechanism = \"ce\", mode = \"{mode}\", dest_to_cache = true }}"),
            &w,
        )?;
        tick(&mut done);
        let mut r = row(
            "fig15",
            "out-of-order",
            1024,
            mode,
            "on-die",
            "dest-to-cache",
            uma_base,
            c_base_for_numa,
            &cached,
            split_copy_time(mode, &cached, &mut cached_wlb_copy),
        );
        // Additional reduction from writing to the cache, in points of the base time.
        r.cache_gain = Some((plain.time - cached.time) / uma_base);
        r.paper_cache_gain = f15
            .get(if mode == "ASYNC" {
                "async_additional"
            } else {
                "sync_additional"
            })
            .copied();
        rows.push(r);
    }
    Ok(rows)
}
