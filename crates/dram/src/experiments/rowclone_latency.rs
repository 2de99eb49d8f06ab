//! RowClone (MICRO 2013) section 7.1, Table 3: latency and DRAM-plus-channel energy of one 4 KB
//! copy and one 4 KB zeroing on an idle memory system, for each mechanism.
//!
//! Every figure comes from simulating the command sequence through the controller: the pairs of
//! rows are chosen through the configured address mapper so that the RowClone split picks the
//! mechanism under study. Zeroing by PSM copies from a reserved zero row in another bank
//! (inter-bank) or another subarray of the same bank (intra-bank).
use crate::bulk::split::zero_row;
use crate::config::Config;
use crate::error::Error;
use crate::mapper::{self, Location};
use crate::request::{BulkKind, BulkOp, TraceItem};
use crate::system::{simulate, RunOptions};
use serde::Serialize;

/// One row of the table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencyRow {
    /// "copy" or "zero".
    pub operation: String,
    /// "baseline", "fpm", "psm-inter" or "psm-intra".
    pub mechanism: String,
    pub latency_ns: f64,
    /// Energy of the operation's commands and of its data on the channel, in uJ (background
    /// power over its duration is excluded, as in the paper's Table 3; it is in `background_uj`).
    pub energy_uj: f64,
    pub background_uj: f64,
    pub cycles: u64,
    /// Bytes each mechanism moved (the split really chose the mechanism named).
    pub bytes_baseline: u64,
    pub bytes_fpm: u64,
    pub bytes_psm_inter: u64,
    pub bytes_psm_intra: u64,
}

/// One case: (operation, mechanism, `controller.bulk` it runs under, the operation).
pub type Case = (&'static str, &'static str, &'static str, BulkOp);

/// Runs the eight cases on `config` (the paper's system is the `rowclone-ddr3-1066` preset).
pub fn run(config: &Config, bytes: u64) -> Result<Vec<LatencyRow>, Error> {
    let mut rows = Vec::new();
    for (operation, mechanism, bulk, op) in cases(config, bytes)? {
        let mut c = config.clone();
        c.controller.bulk = bulk.into();
        let s = simulate(
            &c,
            std::iter::once(Ok(TraceItem::Bulk(op))),
            RunOptions::default(),
        )?;
        let e = &s.energy;
        rows.push(LatencyRow {
            operation: operation.into(),
            mechanism: mechanism.into(),
            latency_ns: s.bulk.latency.max_ns,
            energy_uj: (e.total_nj - e.background_nj - e.refresh_nj) / 1000.0,
            background_uj: e.background_nj / 1000.0,
            cycles: s.bulk.latency.max_cycles,
            bytes_baseline: s.bulk.bytes.baseline,
            bytes_fpm: s.bulk.bytes.fpm,
            bytes_psm_inter: s.bulk.bytes.psm_inter,
            bytes_psm_intra: s.bulk.bytes.psm_intra,
        });
    }
    Ok(rows)
}

/// The eight cases on `config` with `bytes` per operation: a copy within a subarray (baseline
/// and FPM), to another bank (PSM) and to another subarray (PSM through the temporary row), and
/// zeroing (baseline, FPM from the subarray's zero row, and PSM from another bank's or
/// subarray's), every copy's source and destination apart.
pub fn cases(config: &Config, bytes: u64) -> Result<Vec<Case>, Error> {
    let spec = config.resolve("config")?;
    let org = &spec.org;
    if bytes == 0 || !bytes.is_multiple_of(org.line_bytes()) {
        return Err(Error::Request(format!(
            "size {bytes} must be a positive multiple of the {}-byte line",
            org.line_bytes()
        )));
    }
    let m = mapper::build(&config.controller.mapper, org, config.controller.bank_xor)
        .ok_or_else(|| Error::Request(format!("unknown mapper '{}'", config.controller.mapper)))?;
    if org.banks_per_rank() < 2 || org.rows < 2 * org.subarray_rows {
        return Err(Error::Request(
            "the experiment needs two banks and two subarrays per bank".into(),
        ));
    }
    let at = |bank: u32, row: u32| {
        let flat = bank;
        m.unmap(&Location {
            channel: 0,
            rank: 0,
            bank_group: flat % org.bank_groups,
            bank: flat / org.bank_groups,
            row,
            column: 0,
        })
    };
    let src_row = 1;
    let src = at(0, src_row);
    // The copy's destination in the source's subarray: the nearest row whose range does not
    // overlap the source's (an operation larger than a row spans several; with 2 KB rows a
    // 4 KB copy to the next row would copy onto itself), short of the subarray's zero row.
    let overlaps = |a: u64, b: u64| a < b.saturating_add(bytes) && b < a.saturating_add(bytes);
    let next = (1..org.subarray_rows.saturating_sub(src_row + 1))
        .find(|&k| !overlaps(src, at(0, src_row + k)))
        .ok_or_else(|| {
            Error::Request(format!(
                "{bytes} bytes span more than half a subarray's {} rows of {} bytes: no copy \
                 within one subarray leaves the source and destination apart",
                org.subarray_rows,
                org.row_bytes()
            ))
        })?;
    let same_subarray = at(0, src_row + next);
    // Another bank: the nearest whose row is outside the source's range (a mapper that
    // interleaves banks below the operation's size spreads the source over several).
    let bank = (1..org.banks_per_rank())
        .find(|&b| !overlaps(src, at(b, src_row)))
        .ok_or_else(|| {
            Error::Request(format!(
                "{bytes} bytes from {src:#x} span every bank's row {src_row}: no copy to \
                 another bank leaves the source and destination apart; give fewer bytes"
            ))
        })?;
    let other_bank = at(bank, src_row);
    let other_subarray = at(0, src_row + org.subarray_rows);
    if overlaps(src, other_subarray) {
        return Err(Error::Request(format!(
            "{bytes} bytes from {src:#x} reach the copy's destination in another subarray \
             ({other_subarray:#x}): give fewer bytes"
        )));
    }
    let zero_other_bank = at(bank, zero_row(org, src_row));
    let zero_other_subarray = at(0, zero_row(org, src_row + org.subarray_rows));

    let copy = |s: u64, d: u64| BulkOp {
        kind: BulkKind::Copy { src: s },
        dst: d,
        bytes,
        arrival: Some(0),
    };
    let zero = BulkOp {
        kind: BulkKind::Init { value: 0 },
        dst: src,
        bytes,
        arrival: Some(0),
    };
    let cases: [Case; 8] = [
        ("copy", "baseline", "baseline", copy(src, same_subarray)),
        ("copy", "fpm", "rowclone", copy(src, same_subarray)),
        ("copy", "psm-inter", "rowclone", copy(src, other_bank)),
        ("copy", "psm-intra", "rowclone", copy(src, other_subarray)),
        ("zero", "baseline", "baseline", zero),
        ("zero", "fpm", "rowclone", zero),
        ("zero", "psm-inter", "rowclone", copy(zero_other_bank, src)),
        (
            "zero",
            "psm-intra",
            "rowclone",
            copy(zero_other_subarray, src),
        ),
    ];
    Ok(cases.to_vec())
}

/// One row of the replication table: one 4 KB page (or `bytes`) copied into `copies` rows of its
/// block by one mechanism.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplicationRow {
    pub copies: u32,
    /// "mrc" (Multi-RowCopy), "fpm" (`copies` RowClone FPM copies) or "baseline" (the channel).
    pub mechanism: String,
    pub latency_ns: f64,
    /// Command and channel energy, uJ; None when the part has no public currents.
    pub energy_uj: Option<f64>,
    pub cycles: u64,
    /// Bytes written by the mechanism named (the split really chose it).
    pub bytes: u64,
}

/// Multi-RowCopy (DSN 2024) beside RowClone FPM and the channel: the time and energy to
/// replicate the page at address 0 (`bytes`, whole rows) into each count of [`COPIES`] rows, with
/// refresh off.
///
/// [`COPIES`]: crate::bulk::multi_row_copy::COPIES
pub fn replication(config: &Config, bytes: u64) -> Result<Vec<ReplicationRow>, Error> {
    let spec = config.resolve("config")?;
    let mut rows = Vec::new();
    for copies in crate::bulk::multi_row_copy::COPIES {
        crate::bulk::multi_row_copy::check_copies(&spec.org, copies).map_err(Error::Request)?;
        for (mechanism, bulk) in [
            ("mrc", "multi-row-copy"),
            ("fpm", "rowclone"),
            ("baseline", "baseline"),
        ] {
            let mut c = config.clone();
            c.controller.bulk = bulk.into();
            // Refresh off: a refresh falling inside the N copies (LPDDR5's and HBM3's per-bank
            // refresh comes every few hundred cycles) would blur the comparison of mechanisms.
            c.controller.refresh = "none".into();
            // Refresh management off too: 31 FPM copies are 62 activations of one bank, past
            // DDR5's and HBM3's RAAIMT, and the RFM they owe would blur it the same way.
            c.controller.rfm = false;
            let op = BulkOp {
                kind: BulkKind::Replicate { copies },
                dst: 0,
                bytes,
                arrival: Some(0),
            };
            let s = simulate(
                &c,
                std::iter::once(Ok(TraceItem::Bulk(op))),
                RunOptions::default(),
            )?;
            let b = &s.bulk.bytes;
            let moved = match mechanism {
                "mrc" => b.mrc,
                "fpm" => b.fpm,
                _ => b.baseline,
            };
            if moved != bytes * u64::from(copies) {
                return Err(Error::Request(format!(
                    "replicating {bytes} bytes into {copies} copies by {mechanism} moved {moved} bytes by it: \
                     the page must be whole rows (a row-interleaving mapper, {}-byte rows)",
                    spec.org.row_bytes()
                )));
            }
            let e = &s.energy;
            rows.push(ReplicationRow {
                copies,
                mechanism: mechanism.into(),
                latency_ns: s.bulk.latency.max_ns,
                energy_uj: spec
                    .energy_available
                    .then(|| (e.total_nj - e.background_nj - e.refresh_nj) / 1000.0),
                cycles: s.bulk.latency.max_cycles,
                bytes: moved,
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_with(over: &str) -> Vec<LatencyRow> {
        let base = Config::preset("rowclone-ddr3-1066").unwrap();
        let c = base
            .with_overrides(over.parse::<toml::Table>().unwrap().into(), "test")
            .unwrap();
        run(&c, 4096).unwrap()
    }

    fn get<'a>(rows: &'a [LatencyRow], op: &str, mech: &str) -> &'a LatencyRow {
        rows.iter()
            .find(|r| r.operation == op && r.mechanism == mech)
            .unwrap()
    }

    #[test]
    fn each_case_uses_the_mechanism_it_names() {
        let rows = rows_with("");
        for r in &rows {
            assert_eq!(moved_by_own_mechanism(r), 4096, "{r:?}");
        }
    }

    /// The bytes a row's case moved by the mechanism the row names.
    fn moved_by_own_mechanism(r: &LatencyRow) -> u64 {
        match r.mechanism.as_str() {
            "baseline" => r.bytes_baseline,
            "fpm" => r.bytes_fpm,
            "psm-inter" => r.bytes_psm_inter,
            _ => r.bytes_psm_intra,
        }
    }

    #[test]
    fn fpm_latency_follows_the_timing_rules() {
        // FPM is ACT, ACTC after nRAS, PRE after nRAS, done nRP later: 2 nRAS + nRP.
        let a = rows_with("");
        let b = rows_with("[dram.timing]\nnRAS = 30");
        let spec = Config::preset("rowclone-ddr3-1066")
            .unwrap()
            .resolve("t")
            .unwrap();
        let (ras, rp) = (spec.t("nRAS"), spec.t("nRP"));
        assert_eq!(get(&a, "copy", "fpm").cycles, 2 * ras + rp);
        assert_eq!(get(&b, "copy", "fpm").cycles, 2 * 30 + rp);
        let tck = spec.t("tCK_ps") as f64 / 1000.0;
        let moved = get(&b, "copy", "fpm").latency_ns - get(&a, "copy", "fpm").latency_ns;
        assert!((moved - 2.0 * (30 - ras) as f64 * tck).abs() < 1e-6);
    }

    #[test]
    fn fpm_on_ddr5_is_two_nras_plus_nrp_of_its_bin() {
        // The same rule on DDR5 (modelled, not measured): every bin, and it moves with nRAS.
        for speed in ["DDR5-3200AN", "DDR5-4800B", "DDR5-5600B", "DDR5-6400AN"] {
            for n_ras in [None, Some(90)] {
                let mut c = Config::preset("rowclone-ddr5-4800b").unwrap();
                c.dram.speed = speed.into();
                if let Some(r) = n_ras {
                    c.dram.timing.insert("nRAS".into(), r);
                    c.dram.timing.insert("nRC".into(), r + 60);
                }
                let spec = c.resolve("t").unwrap();
                let rows = run(&c, 4096).unwrap();
                let (ras, rp) = (spec.t("nRAS"), spec.t("nRP"));
                assert_eq!(ras, n_ras.unwrap_or(ras));
                for op in ["copy", "zero"] {
                    let r = get(&rows, op, "fpm");
                    assert_eq!(r.cycles, 2 * ras + rp, "{speed} {op}");
                    assert_eq!(r.bytes_fpm, 4096, "{speed} {op}");
                }
                for r in &rows {
                    assert_eq!(moved_by_own_mechanism(r), 4096, "{speed} {r:?}");
                }
            }
        }
    }

    #[test]
    fn copies_larger_than_a_row_keep_source_and_destination_apart() {
        // HBM2's 2 KB rows (as mapped by default): a 4 KB copy spans two; its destination in the
        // same subarray used to be the next row, inside the source's own range.
        for (preset, bytes) in [
            ("hbm2-2000", 4096),
            ("rowclone-ddr3-1066", 4096),
            ("hbm2-2000", 2048),
        ] {
            let c = Config::preset(preset).unwrap();
            for (op, mech, _, b) in cases(&c, bytes).unwrap() {
                if let BulkKind::Copy { src } = b.kind {
                    assert!(
                        src + bytes <= b.dst || b.dst + bytes <= src,
                        "{preset} {op} {mech}: {src:#x} -> {:#x}, {bytes} bytes",
                        b.dst
                    );
                }
            }
            let rows = run(&c, bytes).unwrap();
            assert_eq!(
                get(&rows, "copy", "baseline").bytes_baseline,
                bytes,
                "{preset}"
            );
        }
        // More than a subarray can hold apart is refused, naming the sizes.
        let c = Config::preset("hbm2-2000").unwrap();
        let spec = c.resolve("t").unwrap();
        let big = spec.org.row_bytes() * u64::from(spec.org.subarray_rows) * 4;
        let e = cases(&c, big).unwrap_err().to_string();
        assert!(e.contains(&format!("{big} bytes")), "{e}");
    }

    #[test]
    fn fpm_on_hbm2_is_two_nras_plus_nrp() {
        // One 1 KB pseudo-channel row, row-interleaved; modelled (DRAMScope used RowCopy on HBM2
        // only to find subarrays), and it moves with nRAS.
        for n_ras in [28, 40] {
            let mut c = Config::preset("hbm2-2000").unwrap();
            c.controller.mapper = "RoRaBaChCo".into();
            c.dram.timing.insert("nRAS".into(), n_ras);
            c.dram.timing.insert("nRC".into(), n_ras + 14);
            let spec = c.resolve("t").unwrap();
            let rows = run(&c, spec.org.row_bytes()).unwrap();
            let r = get(&rows, "copy", "fpm");
            assert_eq!(r.cycles, 2 * n_ras + spec.t("nRP"));
            assert_eq!(r.bytes_fpm, spec.org.row_bytes());
        }
    }

    #[test]
    fn fpm_on_every_standard_is_two_nras_plus_nrp_of_its_bin() {
        // Every standard's RowClone system (4 KB operations; on LPDDR5 and HBM3 the 4 KB page
        // spans the same row of several channels, copied in parallel): FPM copy and zeroing take
        // 2 nRAS + nRP of the bin, every case runs the mechanism it names, and the FPM latency
        // moves with nRAS.
        for preset in [
            "rowclone-ddr3-1066",
            "rowclone-ddr5-4800b",
            "rowclone-lpddr5-6400",
            "rowclone-lpddr5-6400-bl32",
            "rowclone-lpddr5-6400-8b",
            "rowclone-hbm3-6400",
        ] {
            let base = Config::preset(preset).unwrap().resolve("t").unwrap();
            let ras0 = base.t("nRAS");
            for n_ras in [ras0, ras0 + 11] {
                let mut c = Config::preset(preset).unwrap();
                c.dram.timing.insert("nRAS".into(), n_ras);
                c.dram
                    .timing
                    .insert("nRC".into(), base.t("nRC") + n_ras - ras0);
                let spec = c.resolve("t").unwrap();
                let rows = run(&c, 4096).unwrap();
                let rp = spec.t("nRP");
                for op in ["copy", "zero"] {
                    let r = get(&rows, op, "fpm");
                    assert_eq!(r.cycles, 2 * n_ras + rp, "{preset} {op} nRAS {n_ras}");
                    let tck = spec.t("tCK_ps") as f64 / 1000.0;
                    assert!((r.latency_ns - (2 * n_ras + rp) as f64 * tck).abs() < 1e-6);
                }
                for r in &rows {
                    assert_eq!(moved_by_own_mechanism(r), 4096, "{preset} {r:?}");
                }
            }
        }
    }

    #[test]
    fn multi_row_copy_replicates_in_one_fpm_time() {
        // One MRC takes 2 nRAS + nRP whatever the copies; N FPM copies take N times that; the
        // channel longer still. Every standard's RowClone system; it moves with nRAS.
        for preset in [
            "rowclone-ddr3-1066",
            "rowclone-ddr5-4800b",
            "rowclone-lpddr5-6400",
            "rowclone-lpddr5-6400-bl32",
            "rowclone-lpddr5-6400-8b",
            "rowclone-hbm3-6400",
        ] {
            for extra in [0, 9] {
                let mut c = Config::preset(preset).unwrap();
                let spec = c.resolve("t").unwrap();
                let ras = spec.t("nRAS") + extra;
                c.dram.timing.insert("nRAS".into(), ras);
                c.dram.timing.insert("nRC".into(), spec.t("nRC") + extra);
                let one = 2 * ras + spec.t("nRP");
                let rows = replication(&c, 4096).unwrap();
                let at = |n: u32, m: &str| {
                    rows.iter()
                        .find(|r| r.copies == n && r.mechanism == m)
                        .unwrap()
                };
                for n in crate::bulk::multi_row_copy::COPIES {
                    assert_eq!(at(n, "mrc").cycles, one, "{preset} {n}");
                    assert_eq!(at(n, "fpm").cycles, u64::from(n) * one, "{preset} {n}");
                    assert!(at(n, "baseline").cycles > at(n, "mrc").cycles);
                    assert_eq!(at(n, "mrc").bytes, 4096 * u64::from(n));
                    assert_eq!(at(n, "mrc").energy_uj.is_some(), spec.energy_available);
                }
                if spec.energy_available {
                    // Energy: one activation per copy either way, but MRC saves the source's
                    // re-activation and precharge of every further FPM copy.
                    let e = |n, m| at(n, m).energy_uj.unwrap();
                    assert!(e(31, "mrc") < e(31, "fpm") && e(31, "fpm") < e(31, "baseline"));
                    assert!((e(1, "mrc") - e(1, "fpm")).abs() < 1e-9);
                }
            }
        }
    }

    #[test]
    fn orderings_of_table_3_hold() {
        let r = rows_with("");
        let l = |o, m| get(&r, o, m).latency_ns;
        let e = |o, m| get(&r, o, m).energy_uj;
        assert!(
            l("copy", "fpm") < l("copy", "psm-inter")
                && l("copy", "psm-inter") < l("copy", "baseline")
        );
        assert!(l("copy", "psm-intra") > l("copy", "psm-inter"));
        assert!(
            e("copy", "fpm") < e("copy", "psm-inter")
                && e("copy", "psm-inter") < e("copy", "psm-intra")
        );
        assert!(e("copy", "psm-intra") < e("copy", "baseline"));
        assert!(l("zero", "fpm") < l("zero", "baseline"));
    }

    #[test]
    fn channel_energy_is_what_in_dram_copy_saves() {
        let a = rows_with("");
        let b = rows_with("[energy]\nio_pj_per_bit = 70.0");
        assert!(get(&b, "copy", "baseline").energy_uj > get(&a, "copy", "baseline").energy_uj);
        assert_eq!(
            get(&b, "copy", "fpm").energy_uj,
            get(&a, "copy", "fpm").energy_uj
        );
    }
}
