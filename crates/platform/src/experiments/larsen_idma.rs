//! Larsen & Lee, "Platform IO DMA Transaction Acceleration" (CACHES 2011): Fig. 8 (the NIC-TX
//! latency stack of a 64 B message under descriptor DMA), Fig. 9 (the iDMA's), Table 1
//! (end-to-end latency between two systems; bandwidth per lane) and Fig. 10 (the share of PCIe
//! bytes spent on descriptors and doorbells in iperf-like streams), plus the sensitivity runs
//! (a Gen3/Haswell platform; DDIO on and off on the receive path; DRAM timing and cache state
//! under both stacks). The paper's values come from `presets/papers/larsen-idma.toml`.
//!
//! Fig. 8 and Fig. 9 run on the one platform: the driver program `nic-tx` on `larsen-io` (the
//! 82598 behind the 5520 IOH) and on `larsen-io-idma` (the iDMA on the die), one core, its caches
//! and the DDR3-1066 DRAM model, so every fetch comes through the memory system and moves with
//! DRAM timing and with whether the line is cached. Table 1, Fig. 10 and the Haswell and DDIO
//! runs come out of the two-host I/O model's simulated transactions (`systems::io_pair`).
//!
//! Method notes:
//! - Fig. 8 is measured on a running system: the driver has just written the descriptor and the
//!   frame, so both are dirty in its cache and the NIC's reads are snooped. Fig. 9 is the
//!   paper's estimate for memory reads ("a memory fetch"): its case has the descriptor and the
//!   frame in DRAM. Each figure's other case is reported beside it, without paper values.
//! - Fig. 8's trace shows one 64 B payload read (781 - 759 = 22 ns = 48 B more than the 16 B
//!   descriptor's completion at Gen1 x8), so the latency runs send a 64 B frame: 54 B of
//!   Ethernet/IPv4/TCP headers (no options) and 10 B of data.
//! - Table 1's iDMA case replaces the transmitting side only (the paper credits only NIC-TX:
//!   8.8 - 1.42 = 7.38 us); "idma-both" also receives through the iDMA (not in the paper).
//! - Fig. 10's share counts descriptor fetches (requests and completions), doorbells,
//!   descriptor write-backs and MSI-X writes, over all TLP bytes of both directions of the
//!   measured host's link; DLLPs are reported apart (the paper's bars split TLP traffic).
//!   The RX bar is measured on the receiving host (its TX of TCP ACKs included), the TX bar on
//!   the sender (its RX of ACKs included).
//! - Bandwidth per lane (Table 1) follows the paper's own arithmetic: the dual-port line rate
//!   over the link's lanes, less the mean of the four Fig. 10 shares.
use crate::config::io::IoConfig;
use crate::config::workload::Workload;
use crate::pcie::bytes::Purpose;
use crate::sim::error::PlatformError;
use crate::systems::io_pair::{stream, stream_between, IoStats, TxStack};
use crate::systems::platform::Platform;
use serde::Serialize;
use std::collections::BTreeMap;

/// The paper's values.
pub const PAPER: &str = include_str!("../../../../presets/papers/larsen-idma.toml");

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// "fig8", "fig9", "table1", "fig10", "sensitivity".
    pub figure: String,
    pub case: String,
    pub metric: String,
    pub value: f64,
    pub paper_value: Option<f64>,
    pub unit: String,
    pub note: String,
}

fn row(
    figure: &str,
    case: &str,
    metric: &str,
    value: f64,
    paper: Option<f64>,
    unit: &str,
    note: &str,
) -> Row {
    Row {
        figure: figure.into(),
        case: case.into(),
        metric: metric.into(),
        value,
        paper_value: paper,
        unit: unit.into(),
        note: note.into(),
    }
}

fn paper(table: &str, key: &str) -> Option<f64> {
    let v: toml::Value = PAPER.parse::<toml::Table>().ok().map(toml::Value::Table)?;
    let x = v.get(table)?.get(key)?;
    x.as_float().or_else(|| x.as_integer().map(|i| i as f64))
}

/// Options of the reproduction.
#[derive(Debug, Clone)]
pub struct Options {
    /// The latency platform (Fig. 8, 9, Table 1) and the bandwidth platform (Fig. 10).
    pub latency: IoConfig,
    pub bandwidth: IoConfig,
    /// The modern platform of the sensitivity runs.
    pub modern: IoConfig,
    /// Messages per small-I/O and large-I/O stream.
    pub small_count: u64,
    pub large_count: u64,
    /// Which parts to run: any of "latency", "fig10", "sensitivity", "pcie-model".
    pub parts: Vec<String>,
    /// Overrides (shaped like a platform config) of the two platforms Fig. 8 and 9 run on.
    pub platform: toml::Value,
}

impl Options {
    pub fn paper() -> Result<Options, PlatformError> {
        Ok(Options {
            latency: IoConfig::preset("larsen-82598-gen1")?,
            bandwidth: IoConfig::preset("larsen-82599-gen2")?,
            modern: IoConfig::preset("haswell-gen3")?,
            small_count: 2000,
            large_count: 64,
            parts: vec![
                "latency".into(),
                "fig10".into(),
                "sensitivity".into(),
                "pcie-model".into(),
            ],
            platform: toml::Value::Table(Default::default()),
        })
    }
}

/// The latency configuration: a 64 B frame (54 B headers + 10 B).
pub const FRAME: u64 = 64;
pub const LATENCY_HEADERS: u32 = 54;

fn latency_cfg(c: &IoConfig) -> IoConfig {
    let mut c = c.clone();
    c.driver.header_bytes = LATENCY_HEADERS;
    c
}

/// One 64 B frame from host 0 to host 1 with the given device kinds.
pub fn latency_run(cfg: &IoConfig, kinds: [&str; 2]) -> Result<IoStats, PlatformError> {
    let c = latency_cfg(cfg);
    stream_between(&c, kinds, 1, FRAME - LATENCY_HEADERS as u64)
}

fn e2e_us(s: &IoStats) -> f64 {
    s.mean_latency_ns / 1000.0
}

fn stack_rows(out: &mut Vec<Row>, fig: &str, case: &str, st: &TxStack, with_paper: bool) {
    let table = if fig == "fig8" { "fig8" } else { "fig9" };
    for (name, v) in &st.parts {
        let p = if with_paper {
            paper(table, &format!("{name}_ns"))
        } else {
            None
        };
        out.push(row(fig, case, &format!("{name}_ns"), *v, p, "ns", ""));
    }
    let p = if with_paper {
        paper(table, "total_ns")
    } else {
        None
    };
    out.push(row(
        fig,
        case,
        "nic_tx_latency_ns",
        st.total,
        p,
        "ns",
        "sum of the stack",
    ));
}

/// The platform of Fig. 8 (the descriptor NIC) and of Fig. 9 (the iDMA).
pub const FIG8_PLATFORM: &str = "larsen-io";
pub const FIG9_PLATFORM: &str = "larsen-io-idma";

/// Messages per platform run (each on an idle device; the stacks are their mean).
pub const PLATFORM_MESSAGES: u64 = 4;

/// Slower DRAM for the sensitivity rows: DDR3-1066 with its row and column delays doubled
/// (8-8-8 becomes 16-16-16 clocks, 15 ns more on each).
pub const SLOW_DRAM: &str =
    "[memory.dram.timing]\nnRCD = 16\nnCL = 16\nnCWL = 12\nnRP = 16\nnRAS = 28\nnRC = 44\n";

/// One transmit stack from the platform: preset `name` with `overrides` (and `extra`) running
/// `nic-tx`, the descriptor and frame written by the driver (`cached`) or only in memory.
pub fn platform_stack(
    name: &str,
    overrides: &toml::Value,
    extra: &str,
    cached: bool,
) -> Result<TxStack, PlatformError> {
    let cfg = super::platform(name, overrides, extra)?;
    let w = u64::from(cached);
    let params: BTreeMap<String, u64> = [
        ("messages", PLATFORM_MESSAGES),
        ("write_desc", w),
        ("write_payload", w),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    let wl = Workload::load("nic-tx", &params)?;
    let mut p = Platform::new(&cfg)?;
    p.sys.track_values();
    let s = p.run(&wl)?;
    let d = s
        .devices
        .into_iter()
        .next()
        .ok_or_else(|| PlatformError::Stalled(format!("{name}: the platform has no device")))?;
    if d.frames != PLATFORM_MESSAGES || d.stale_lines != 0 {
        return Err(PlatformError::Stalled(format!(
            "{name}: {} of {PLATFORM_MESSAGES} frames sent, {} stale payload lines",
            d.frames, d.stale_lines
        )));
    }
    let total = d.tx_stack_mean.iter().map(|(_, v)| v).sum();
    Ok(TxStack {
        parts: d.tx_stack_mean,
        total,
    })
}

/// The share of TLP bytes on host `h`'s link for descriptors, doorbells, write-backs and
/// interrupts, and for fetches and doorbells only.
pub fn shares(s: &IoStats, h: usize) -> (f64, f64, f64) {
    let l = &s.hosts[h].link;
    let mut b = l.down;
    b.merge(&l.up);
    let tlp = (b.total() - b.dllp) as f64;
    let d = b.of(Purpose::Descriptor) as f64;
    let db = b.of(Purpose::Doorbell) as f64;
    let wb = b.of(Purpose::WriteBack) as f64;
    let irq = b.of(Purpose::Interrupt) as f64;
    (
        (d + db + wb + irq) / tlp.max(1.0),
        (d + db) / tlp.max(1.0),
        b.dllp as f64 / b.total().max(1) as f64,
    )
}

/// Runs the reproduction.
pub fn run(o: &Options, progress: &mut dyn FnMut(usize, usize)) -> Result<Vec<Row>, PlatformError> {
    let mut out = Vec::new();
    let want = |p: &str| o.parts.iter().any(|x| x == p);
    let total = want("latency") as usize * 4
        + want("fig10") as usize * 6
        + want("sensitivity") as usize * 6;
    let mut done = 0;
    let mut tick = |progress: &mut dyn FnMut(usize, usize)| {
        done += 1;
        progress(done, total);
    };
    if want("latency") {
        let pl = &o.platform;
        let fig8 = platform_stack(FIG8_PLATFORM, pl, "", true)?;
        let fig8_mem = platform_stack(FIG8_PLATFORM, pl, "", false)?;
        let fig9 = platform_stack(FIG9_PLATFORM, pl, "", false)?;
        let fig9_cached = platform_stack(FIG9_PLATFORM, pl, "", true)?;
        tick(progress);
        stack_rows(&mut out, "fig8", "descriptor-dma", &fig8, true);
        stack_rows(&mut out, "fig8", "descriptor-dma-memory", &fig8_mem, false);
        stack_rows(&mut out, "fig9", "idma", &fig9, true);
        stack_rows(&mut out, "fig9", "idma-cached", &fig9_cached, false);
        for (case, name, cached) in [
            ("descriptor-dma-memory-slow-dram", FIG8_PLATFORM, false),
            ("idma-slow-dram", FIG9_PLATFORM, false),
            ("idma-cached-slow-dram", FIG9_PLATFORM, true),
        ] {
            let s = platform_stack(name, pl, SLOW_DRAM, cached)?;
            stack_rows(&mut out, "sensitivity", case, &s, false);
        }
        let desc = latency_run(&o.latency, ["descriptor", "descriptor"])?;
        tick(progress);
        let idma = latency_run(&o.latency, ["idma", "descriptor"])?;
        tick(progress);
        let both = latency_run(&o.latency, ["idma", "idma"])?;
        out.push(row(
            "table1",
            "descriptor-dma",
            "end_to_end_us",
            e2e_us(&desc),
            paper("table1", "descriptor_dma_end_to_end_us"),
            "us",
            "calibrated: the software terms make this 8.8 us",
        ));
        out.push(row(
            "table1",
            "idma",
            "end_to_end_us",
            e2e_us(&idma),
            paper("table1", "idma_end_to_end_us"),
            "us",
            "predicted: iDMA on the sender",
        ));
        out.push(row(
            "table1",
            "idma-both",
            "end_to_end_us",
            e2e_us(&both),
            None,
            "us",
            "iDMA on both hosts (not in the paper)",
        ));
        out.push(row(
            "table1",
            "descriptor-dma",
            "nic_tx_latency_ns",
            desc.tx_stack.total,
            None,
            "ns",
            "the two-host model's Fig. 8 stack (the paper's is the fig8 row's)",
        ));
        out.push(row(
            "table1",
            "idma",
            "nic_tx_latency_ns",
            idma.tx_stack.total,
            None,
            "ns",
            "the two-host model's iDMA stack: its memory reads are the [idma] parameters",
        ));
    }
    if want("fig10") {
        let b = &o.bandwidth;
        let mut mean = [0.0f64; 2];
        let cases = [
            ("64B", o.small_count, 64u64),
            ("64KB", o.large_count, 65536),
        ];
        for (ki, kind) in ["descriptor", "idma"].iter().enumerate() {
            for (label, count, len) in cases {
                let mut c = b.clone();
                c.nic.kind = kind.to_string();
                let s = stream(&c, count, len)?;
                tick(progress);
                for (dir, h) in [("tx", 0usize), ("rx", 1usize)] {
                    let case = format!("{dir}-{label}");
                    let (share, fetch_db, dllp) = shares(&s, h);
                    mean[ki] += share / 4.0;
                    if ki == 0 {
                        out.push(row(
                            "fig10",
                            &case,
                            "descriptor_doorbell_share",
                            share,
                            paper("fig10", &format!("{dir}_{label}")),
                            "fraction",
                            "descriptor fetch + doorbell + write-back + MSI-X, of TLP bytes",
                        ));
                        out.push(row(
                            "fig10",
                            &case,
                            "fetch_doorbell_share",
                            fetch_db,
                            None,
                            "fraction",
                            "descriptor fetch + doorbell only, of TLP bytes",
                        ));
                        out.push(row(
                            "fig10",
                            &case,
                            "dllp_share",
                            dllp,
                            None,
                            "fraction",
                            "Ack/UpdateFC DLLPs, of all bytes",
                        ));
                        let l = &s.hosts[h].link;
                        for (k, v) in &l.categories {
                            out.push(row(
                                "fig10",
                                &case,
                                &format!("bytes_{k}"),
                                *v as f64,
                                None,
                                "B",
                                "",
                            ));
                        }
                        out.push(row(
                            "fig10",
                            &case,
                            "link_bytes",
                            l.total as f64,
                            None,
                            "B",
                            "",
                        ));
                        out.push(row(
                            "fig10",
                            &case,
                            "bytes_checked",
                            s.bytes_checked as f64,
                            None,
                            "B",
                            "payload bytes checked by the receiver",
                        ));
                    } else {
                        out.push(row(
                            "fig10",
                            &case,
                            "idma_descriptor_doorbell_share",
                            share,
                            None,
                            "fraction",
                            "with the iDMA: only its receive-buffer head writes remain",
                        ));
                    }
                }
            }
        }
        // The same streams without TCP ACKs (and an RX FIFO large enough that nothing drops): the
        // terms the receivers' ACK transmissions add to each bar.
        for (label, count, len) in cases {
            let mut c = b.clone();
            c.driver.ack_every = 0;
            c.nic.rx_fifo_frames = 65536;
            let s = stream(&c, count, len)?;
            tick(progress);
            for (dir, h) in [("tx", 0usize), ("rx", 1usize)] {
                let case = format!("{dir}-{label}");
                let (share, fetch_db, _) = shares(&s, h);
                out.push(row(
                    "fig10",
                    &case,
                    "share_without_acks",
                    share,
                    None,
                    "fraction",
                    "all terms, the stream without TCP ACKs",
                ));
                out.push(row(
                    "fig10",
                    &case,
                    "fetch_doorbell_share_without_acks",
                    fetch_db,
                    None,
                    "fraction",
                    "descriptor fetch + doorbell only, without TCP ACKs",
                ));
            }
        }
        // Table 1's bandwidth per lane: dual-port line rate over the lanes, less the overhead share.
        let per_lane = 2.0 * b.nic.mac_gbps / b.link.lanes as f64;
        out.push(row(
            "table1",
            "descriptor-dma",
            "gbps_per_lane",
            per_lane * (1.0 - mean[0]),
            paper("table1", "descriptor_dma_gbps_per_lane"),
            "Gb/s",
            "2 x 10 Gb/s over 8 lanes, less the mean Fig. 10 share (the paper's arithmetic)",
        ));
        out.push(row(
            "table1",
            "idma",
            "gbps_per_lane",
            per_lane * (1.0 - mean[1]),
            paper("table1", "idma_gbps_per_lane"),
            "Gb/s",
            "the same with the iDMA's shares",
        ));
    }
    if want("sensitivity") {
        let m = &o.modern;
        let desc = latency_run(m, ["descriptor", "descriptor"])?;
        tick(progress);
        let idma = latency_run(m, ["idma", "descriptor"])?;
        tick(progress);
        stack_rows(
            &mut out,
            "sensitivity",
            "haswell-gen3-descriptor-dma",
            &desc.tx_stack,
            false,
        );
        stack_rows(
            &mut out,
            "sensitivity",
            "haswell-gen3-idma",
            &idma.tx_stack,
            false,
        );
        out.push(row(
            "sensitivity",
            "haswell-gen3-descriptor-dma",
            "end_to_end_us",
            e2e_us(&desc),
            None,
            "us",
            "",
        ));
        out.push(row(
            "sensitivity",
            "haswell-gen3-idma",
            "end_to_end_us",
            e2e_us(&idma),
            None,
            "us",
            "",
        ));
        for ddio in [false, true] {
            let mut c = o.latency.clone();
            c.root_complex.ddio = ddio;
            let case = if ddio { "rx-ddio-on" } else { "rx-ddio-off" };
            let lat = latency_run(&c, ["descriptor", "descriptor"])?;
            tick(progress);
            out.push(row(
                "sensitivity",
                case,
                "end_to_end_us",
                e2e_us(&lat),
                None,
                "us",
                "5520 platform, 64 B frame; the receiver's reads hit the LLC with DDIO",
            ));
            let mut c = o.bandwidth.clone();
            c.root_complex.ddio = ddio;
            let s = stream(&c, o.large_count, 65536)?;
            tick(progress);
            let rc = &s.hosts[1].rc;
            let line = 64.0;
            out.push(row(
                "sensitivity",
                case,
                "rx_memory_write_bytes",
                rc.mem_write_lines as f64 * line,
                None,
                "B",
                "device writes that went to DRAM on the receiver",
            ));
            out.push(row(
                "sensitivity",
                case,
                "rx_llc_write_bytes",
                rc.llc_write_lines as f64 * line,
                None,
                "B",
                "device writes allocated in the LLC",
            ));
            out.push(row(
                "sensitivity",
                case,
                "rx_core_llc_hits",
                rc.core_llc_hits as f64,
                None,
                "lines",
                "driver and stack reads of received lines served by the LLC",
            ));
            out.push(row(
                "sensitivity",
                case,
                "rx_core_memory_reads",
                rc.core_mem_reads as f64,
                None,
                "lines",
                "",
            ));
        }
    }
    if want("pcie-model") {
        for r in super::pcie_model_check::run()? {
            let case = format!("{}-gen{}-{}B", r.model, r.gen, r.size);
            let note = "pcie-model restated in our code (see experiments/pcie_model_check.rs)";
            out.push(row(
                "pcie-model",
                &case,
                "movelab_gbps",
                r.movelab_gbps,
                None,
                "Gb/s",
                "",
            ));
            out.push(row(
                "pcie-model",
                &case,
                "pcie_model_gbps",
                r.pcie_model_gbps,
                None,
                "Gb/s",
                note,
            ));
            if r.model.ends_with("-rx") {
                out.push(row(
                    "pcie-model",
                    &case,
                    "pcie_model_fixed_gbps",
                    r.pcie_model_fixed_gbps,
                    None,
                    "Gb/s",
                    "pcie-model with its RX slip mended (descriptor-read requests counted)",
                ));
            }
        }
        tick(progress);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_values_load() {
        assert_eq!(paper("fig8", "total_ns"), Some(1770.0));
        assert_eq!(paper("table1", "idma_end_to_end_us"), Some(7.38));
        assert_eq!(paper("fig10", "tx_64B"), Some(0.43));
    }
}
