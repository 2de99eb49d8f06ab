//! Golden tests: DRAMPower 6's published DDR5 and LPDDR5 core test cases (tukl-msd/DRAMPower @
//! d8b980a, `tests/tests_drampower/core/DDR5/ddr5_test_pattern_{0..6,10}.cpp` and
//! `core/LPDDR5/lpddr5_test_pattern_{0..6}.cpp` with the synthetic memspecs
//! `tests/tests_drampower/resources/ddr5.json` and `lpddr5.json`), their command patterns replayed
//! through movelab's device model and energy formulas, and their expected energies in pJ (rounded,
//! as there).
use super::*;
use crate::config::Config;
use crate::device::ChannelDevices;

/// DRAMPower's test memspec: one x8 device, 16 banks in 2 groups, BL8 at double data rate (4
/// clocks), tCK = 1/1.3 ns, tRAS = tRP = 10, tRFC1 = 25, tRFCsb = 20, tRTP = 5, rho = 0.5,
/// VDD 1.2 V; the VPP currents are all zero.
fn memspec() -> (Vec<Domain>, CoreTiming, Config) {
    let vdd = Domain {
        v: 1.2,
        i0: 56.25,
        i2n: 33.75,
        i3n: 39.5,
        i4r: 157.5,
        i4w: 135.0,
        i5b: 118.0,
        i5c: 110.0,
        i5pb: 0.0,
    };
    let vpp = Domain {
        v: 1.2,
        i0: 0.0,
        i2n: 0.0,
        i3n: 0.0,
        i4r: 0.0,
        i4w: 0.0,
        i5b: 0.0,
        i5c: 0.0,
        i5pb: 0.0,
    };
    let tck = 1.0 / 1.3;
    let t = CoreTiming {
        tck,
        t_ras: 10.0 * tck,
        t_rp: 10.0 * tck,
        t_bl: 4.0 * tck,
        t_rfc: 25.0 * tck,
        t_rfcsb: 20.0 * tck,
        t_rfcpb: 0.0,
        t_rfm: 0.0,
        t_rfmsb: 0.0,
        t_rfmpb: 0.0,
        banks: 16,
        bank_groups: 2,
        rho: 0.5,
        idd: IddConditions::default(),
        refpb_banks: 1,
        t_refipb: 0.0,
    };
    // The device model only counts cycles: a DDR5 spec reshaped to the memspec's banks and times.
    let mut cfg = Config::preset("DDR5-3200AN/DDR5-16Gb-x8").unwrap();
    cfg.controller.refresh = "none".into();
    cfg.dram.org.banks = Some(16);
    cfg.dram.org.bank_groups = Some(2);
    for (k, v) in [
        ("nRAS", 10),
        ("nRP", 10),
        ("nRC", 20),
        ("nBL", 4),
        ("nRFC", 25),
        ("nRFCsb", 20),
        ("nRTP", 5),
        ("nCWL", 5),
        ("nWR", 5),
    ] {
        cfg.dram.timing.insert(k.into(), v);
    }
    (vec![vdd, vpp], t, cfg)
}

/// Replays `(cycle, command, flat bank)` up to `end` on DRAMPower's DDR5 test memspec and returns
/// the energy breakdown in pJ.
fn replay(pattern: &[(u64, CommandKind, u32)], end: u64) -> EnergyBreakdown {
    replay_on(memspec(), pattern, end)
}

/// [`replay`] on a given memspec (supplies, timing, and the config the device model runs).
fn replay_on(
    (domains, t, cfg): (Vec<Domain>, CoreTiming, Config),
    pattern: &[(u64, CommandKind, u32)],
    end: u64,
) -> EnergyBreakdown {
    let spec = cfg.resolve("test").unwrap();
    let mut dev = ChannelDevices::new(&spec);
    let mut counters = ChannelCounters::default();
    let bpg = spec.org.banks_per_group;
    for &(cycle, kind, flat) in pattern {
        let b = dev.bank_id(0, flat / bpg, flat % bpg);
        if kind == CommandKind::Prea {
            counters.banks_closed_by_prea += (0..16)
                .filter(|&f| dev.open_row(dev.bank_from_flat(f)).is_some())
                .count() as u64;
        }
        counters.commands[kind.index()] += 1;
        dev.issue(kind, b, 0, None, cycle);
    }
    dev.settle_activity(end);
    let e = CommandEnergy::device(&domains, &t);
    let mut b = channel_energy(&e, &counters, &dev.activity);
    for x in [
        &mut b.activate_nj,
        &mut b.precharge_nj,
        &mut b.read_nj,
        &mut b.write_nj,
        &mut b.refresh_nj,
        &mut b.background_nj,
        &mut b.total_nj,
    ] {
        *x *= 1000.0; // nJ -> pJ
    }
    b
}

/// Expected (DRAMPower): E_act, E_pre (with the RDA's), E_RD (with RDA's), refresh (REFab + REFsb),
/// background (E_bg_act + E_bg_pre), total.
fn golden(b: &EnergyBreakdown, act: f64, pre: f64, rd: f64, refresh: f64, bg: f64, total: f64) {
    let r = |x: f64| x.round();
    let got = [
        r(b.activate_nj),
        r(b.precharge_nj),
        r(b.read_nj),
        r(b.refresh_nj),
        r(b.background_nj),
        r(b.total_nj),
    ];
    let want = [act, pre, rd, refresh, bg, total];
    for (g, w) in got.iter().zip(want) {
        // DRAMPower rounds each part and the total separately: allow its one-pJ rounding.
        assert!((g - w).abs() <= 1.0, "got {got:?}, DRAMPower {want:?}");
    }
}

use CommandKind::*;

/// DRAMPower's core test patterns, the same for DDR5 and LPDDR5: `(cycle, command, bank)`.
const PATTERN_0: &[(u64, CommandKind, u32)] = &[(0, Act, 0), (15, Pre, 0)];
/// Patterns 1 and 2 (the same commands, ending at 35 and 50).
const PATTERN_1: &[(u64, CommandKind, u32)] = &[(0, Act, 0), (15, Rd, 0), (35, Pre, 0)];
const PATTERN_3: &[(u64, CommandKind, u32)] = &[
    (0, Act, 0),
    (15, Rd, 0),
    (20, Act, 3),
    (35, Pre, 0),
    (45, Pre, 3),
];
const PATTERN_4: &[(u64, CommandKind, u32)] = &[
    (0, Act, 0),
    (15, Rd, 0),
    (20, Act, 3),
    (35, Rd, 3),
    (40, Rd, 0),
    (50, Prea, 0),
];
/// Pattern 4 and an all-bank refresh.
fn pattern_5() -> Vec<(u64, CommandKind, u32)> {
    [PATTERN_4, &[(65, Ref, 0)]].concat()
}
const PATTERN_6: &[(u64, CommandKind, u32)] = &[
    (0, Act, 0),
    (15, Rda, 0),
    (20, Act, 3),
    (35, Rd, 3),
    (50, Prea, 0),
    (65, Ref, 0),
];

#[test]
fn drampower_ddr5_pattern_0_act_pre() {
    let b = replay(PATTERN_0, 15);
    golden(&b, 179.0, 208.0, 0.0, 0.0, 510.0, 897.0);
}

#[test]
fn drampower_ddr5_patterns_1_2_read() {
    let p = PATTERN_1;
    golden(&replay(p, 35), 179.0, 208.0, 436.0, 0.0, 1189.0, 2012.0);
    golden(
        &replay(p, 50),
        179.0,
        208.0,
        436.0,
        0.0,
        1189.0 + 467.0,
        2479.0,
    );
}

#[test]
fn drampower_ddr5_patterns_3_4_two_banks_and_prea() {
    let p = PATTERN_3;
    golden(
        &replay(p, 50),
        359.0,
        415.0,
        436.0,
        0.0,
        1531.0 + 156.0,
        2897.0,
    );
    let p = PATTERN_4;
    golden(
        &replay(p, 70),
        359.0,
        415.0,
        1307.0,
        0.0,
        1704.0 + 623.0,
        4408.0,
    );
}

#[test]
fn drampower_ddr5_patterns_5_6_all_bank_refresh_and_rda() {
    let p = &pattern_5();
    golden(
        &replay(p, 100),
        359.0,
        415.0,
        1307.0,
        1812.0,
        2615.0 + 779.0,
        7287.0,
    );
    let p = PATTERN_6;
    golden(
        &replay(p, 100),
        359.0,
        415.0,
        872.0,
        1812.0,
        2610.0 + 779.0,
        6846.0,
    );
}

#[test]
fn drampower_ddr5_pattern_10_same_bank_refresh() {
    // REFSB to bank 0 refreshes banks 0 and 8; to bank 11 (group 1, bank 3) banks 3 and 11.
    let p = [
        (0, Act, 0),
        (15, Rd, 0),
        (20, Act, 11),
        (55, Prea, 0),
        (70, Refsb, 0),
        (75, Refsb, 11),
    ];
    golden(
        &replay(&p, 100),
        359.0,
        415.0,
        436.0,
        2696.0,
        2733.0 + 623.0,
        7262.0,
    );
}

#[test]
fn rho_one_is_the_classic_idd_model() {
    let (domains, mut t, _) = memspec();
    t.rho = 1.0;
    let e = CommandEnergy::device(&domains, &t);
    let d = &domains[0];
    assert!((e.act - d.v * (d.i0 - d.i3n) * t.t_ras).abs() < 1e-9);
    assert!((e.pre - d.v * (d.i0 - d.i2n) * t.t_rp).abs() < 1e-9);
    assert!(e.bank_bg_per_cycle.abs() < 1e-12);
    assert!((e.active_bg_per_cycle - d.v * d.i3n * t.tck).abs() < 1e-9);
    assert!((e.refresh_sb - d.v * (d.i5c - d.i3n) * t.t_rfcsb).abs() < 1e-9);
}

#[test]
fn ddr5_activate_never_negative() {
    // DDR5's IDD0 (103 mA) is below IDD3N (142 mA, all banks open): the DRAMPower activate term
    // would be negative; it is charged against precharged standby instead, on VDD and VPP alike.
    let spec = Config::preset("DDR5-4800B/DDR5-16Gb-x8")
        .unwrap()
        .resolve("t")
        .unwrap();
    let c = &spec.currents;
    assert!(c.idd0 < c.idd3n);
    let t = CoreTiming::of(&spec, 1.0);
    let e = CommandEnergy::device(&Domain::of(c), &t);
    let want = c.vdd * (c.idd0 - c.idd2n) * t.t_ras + c.vpp * (c.ipp0 - c.ipp3n) * t.t_ras;
    assert!(e.act > 0.0);
    assert!((e.act - want).abs() < 1e-9, "{} vs {want}", e.act);
    // Same for REFsb: IDD5C (135 mA) is below I_BG (= IDD3N with rho = 1).
    assert!(c.idd5c < c.idd3n);
    let want = c.vdd * (c.idd5c - c.idd2n) * t.t_rfcsb;
    assert!((e.refresh_sb - want).abs() < 1e-9 && e.refresh_sb > 0.0);
    // The DDR3 parts keep DRAMPower's (and the classic) term.
    let ddr3 = Config::preset("DDR3-1066G/DDR3-2Gb-x8")
        .unwrap()
        .resolve("t")
        .unwrap();
    let c3 = &ddr3.currents;
    let t3 = CoreTiming::of(&ddr3, 1.0);
    let e3 = CommandEnergy::device(&Domain::of(c3), &t3);
    assert!((e3.act - c3.vdd * (c3.idd0 - c3.idd3n) * t3.t_ras).abs() < 1e-9);
}

/// LPDDR5's IDD test conditions (JESD209-5 as DRAMPower's LPDDR5 model reads them): IDD3N with
/// one bank open, IDD4R / IDD4W with two (bank-group mode), IDD5PB averaged over tREFIpb, a REFPB
/// refreshing a pair. Each energy against its formula written out by hand, on the LPDDR5-6400
/// preset with three made-up supplies (no public LPDDR5 currents exist).
#[test]
fn lpddr5_currents_are_read_under_its_idd_conditions() {
    let mut cfg = Config::preset("lpddr5-6400").unwrap();
    let currents: toml::Value = toml::from_str(include_str!(
        "../../tests/data/lpddr5-hypothetical-currents.toml"
    ))
    .unwrap();
    cfg = cfg.with_overrides(currents, "test").unwrap();
    let spec = cfg.resolve("t").unwrap();
    assert!(spec.energy_available);
    assert_eq!(spec.idd_conditions.idd3n_open_banks, 1);
    assert_eq!(spec.idd_conditions.idd4_open_banks, 2);
    assert!(spec.idd_conditions.idd5pb_averaged);
    let t = CoreTiming::of(&spec, 0.5);
    assert_eq!((t.banks, t.refpb_banks), (16, 2));
    // tREFIpb: the 8 REFPBs that cover 16 banks in pairs share tREFI.
    assert!((t.t_refipb - spec.t("nREFI") as f64 * t.tck / 8.0).abs() < 1e-9);
    let domains = Domain::of(&spec.currents);
    let e = CommandEnergy::device(&domains, &t);
    let (mut act, mut rd, mut wr, mut rf, mut rfpb, mut bank_bg) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for d in &domains {
        // IDD3N has one bank open; rho 0.5 is the shared half of the all-banks-open increment.
        let i_rho = (0.5 * 16.0 * d.i3n + 0.5 * d.i2n) / (0.5 * 16.0 + 0.5);
        let one = d.i3n - i_rho;
        let i5pb = (d.i5pb * t.t_refipb - d.i2n * (t.t_refipb - t.t_rfcpb)) / t.t_rfcpb;
        act += d.v * (d.i0 - d.i3n) * t.t_ras;
        rd += d.v * (d.i4r - (i_rho + 2.0 * one)) * t.t_bl;
        wr += d.v * (d.i4w - (i_rho + 2.0 * one)) * t.t_bl;
        rf += d.v * (d.i5b - (i_rho + 16.0 * one)) * t.t_rfc;
        rfpb += d.v * (i5pb - (i_rho + 2.0 * one)) * t.t_rfcpb;
        bank_bg += d.v * one * t.tck;
    }
    for (got, want, name) in [
        (e.act, act, "activate"),
        (e.read, rd, "read"),
        (e.write, wr, "write"),
        (e.refresh, rf, "refresh"),
        (e.refresh_pb, rfpb, "per-bank refresh"),
        (e.bank_bg_per_cycle, bank_bg, "per-bank background"),
    ] {
        assert!(
            want > 0.0,
            "{name}: the test's currents must keep it positive"
        );
        assert!((got - want).abs() < 1e-9 * want, "{name}: {got} vs {want}");
    }
    // The same currents read under DDR's conditions give other energies: the conditions matter.
    let ddr = CoreTiming {
        idd: IddConditions::default(),
        refpb_banks: 1,
        ..t
    };
    let e_ddr = CommandEnergy::device(&domains, &ddr);
    assert!(e_ddr.act > e.act && e_ddr.refresh > e.refresh && e_ddr.read > e.read);
    // 8-bank mode: IDD4 with one bank open, a REFPB refreshes one bank.
    let mut cfg8 = Config::preset("lpddr5-6400-8b").unwrap();
    let c8: toml::Value = toml::from_str(
        "[dram.currents]\nidd5pb = 40.0\nvdd = 1.05\nidd0 = 60.0\nidd2n = 30.0\nidd3n = 38.0\n\
         idd4r = 180.0\nidd4w = 160.0\nidd5 = 110.0\n",
    )
    .unwrap();
    cfg8 = cfg8.with_overrides(c8, "test").unwrap();
    let s8 = cfg8.resolve("t").unwrap();
    let t8 = CoreTiming::of(&s8, 0.5);
    assert_eq!(
        (t8.banks, t8.refpb_banks, t8.idd.idd4_open_banks),
        (8, 1, 1)
    );
    let d = &Domain::of(&s8.currents)[0];
    let e8 = CommandEnergy::device(&Domain::of(&s8.currents), &t8);
    let want = d.v * (d.i4r - d.i3n) * t8.t_bl;
    assert!(
        (e8.read - want).abs() < 1e-9 * want,
        "{} vs {want}",
        e8.read
    );
}

/// LPDDR5's BL32 in bank-group mode charges a burst for the 4 clocks it carries data
/// (`nBL_data`), not for its 6-clock window with the gap (`nBL`).
#[test]
fn a_burst_is_charged_for_its_data_clocks() {
    let spec = Config::preset("lpddr5-6400-bl32")
        .unwrap()
        .resolve("t")
        .unwrap();
    assert_eq!((spec.t("nBL"), spec.t("nBL_data")), (6, 4));
    let t = CoreTiming::of(&spec, 1.0);
    assert!((t.t_bl - 4.0 * t.tck).abs() < 1e-12);
    let ddr4 = Config::preset("ddr4-2400r").unwrap().resolve("t").unwrap();
    let t4 = CoreTiming::of(&ddr4, 1.0);
    assert!((t4.t_bl - ddr4.t("nBL") as f64 * t4.tck).abs() < 1e-12);
    // A data time outside 1..=nBL is refused, naming the key.
    for bad in [0u64, 7] {
        let mut c = Config::preset("lpddr5-6400-bl32").unwrap();
        c.dram.timing.insert("nBL_data".into(), bad);
        let e = c.resolve("t").unwrap_err().to_string();
        assert!(e.contains("dram.timing.nBL_data"), "{e}");
    }
}

/// DRAMPower 6.2's LPDDR5 test memspec: one x8 device, 16 banks in one group (16-bank mode: IDD4
/// with one bank open), BL8 at double data rate with WCK:CK 2:1 (2 clocks), tCK = 1/1.3 ns, tRAS =
/// tRP = 10, tRFCab = 25, tRFCpb = 20, tREFI = 20 (tREFIpb 2.5), read-to-precharge tBurst + tRBTP =
/// 5, rho = 1/17; every current on VDD1 (1.2 V), VDD2H and VDD2L without.
fn lpddr5_memspec() -> (Vec<Domain>, CoreTiming, Config) {
    let vdd1 = Domain {
        v: 1.2,
        i0: 56.25,
        i2n: 33.75,
        i3n: 35.0,
        i4r: 157.5,
        i4w: 135.0,
        i5b: 118.0,
        i5c: 0.0,
        i5pb: 74.0,
    };
    let tck = 1.0 / 1.3;
    let t = CoreTiming {
        tck,
        t_ras: 10.0 * tck,
        t_rp: 10.0 * tck,
        t_bl: 2.0 * tck,
        t_rfc: 25.0 * tck,
        t_rfcsb: 0.0,
        t_rfcpb: 20.0 * tck,
        t_rfm: 0.0,
        t_rfmsb: 0.0,
        t_rfmpb: 0.0,
        banks: 16,
        bank_groups: 1,
        rho: 0.058823529412,
        idd: IddConditions {
            idd3n_open_banks: 1,
            idd4_open_banks: 1,
            idd5pb_averaged: true,
        },
        refpb_banks: 1,
        t_refipb: 20.0 / 8.0 * tck,
    };
    // The device model only counts cycles: the 8-bank LPDDR5 standard reshaped to the memspec's
    // 16 banks and times.
    let mut cfg = Config::preset("lpddr5-6400-8b").unwrap();
    cfg.controller.refresh = "none".into();
    cfg.dram.org.banks = Some(16);
    for (k, v) in [
        ("nRAS", 10),
        ("nRP", 10),
        ("nRC", 20),
        ("nBL", 2),
        ("nRFC", 25),
        ("nRFCpb", 20),
        ("nRTP", 5),
        ("nCWL", 5),
        ("nWR", 5),
    ] {
        cfg.dram.timing.insert(k.into(), v);
    }
    (vec![vdd1], t, cfg)
}

fn lp5(pattern: &[(u64, CommandKind, u32)], end: u64) -> EnergyBreakdown {
    replay_on(lpddr5_memspec(), pattern, end)
}

#[test]
fn drampower_lpddr5_patterns_0_to_2_act_read_pre() {
    golden(&lp5(PATTERN_0, 15), 196.0, 208.0, 0.0, 0.0, 485.0, 888.0);
    let p = PATTERN_1;
    golden(&lp5(p, 35), 196.0, 208.0, 226.0, 0.0, 1131.0, 1761.0);
    golden(
        &lp5(p, 50),
        196.0,
        208.0,
        226.0,
        0.0,
        1131.0 + 467.0,
        2228.0,
    );
}

#[test]
fn drampower_lpddr5_patterns_3_4_two_banks_and_prea() {
    let p = PATTERN_3;
    golden(
        &lp5(p, 50),
        392.0,
        415.0,
        226.0,
        0.0,
        1462.0 + 156.0,
        2652.0,
    );
    let p = PATTERN_4;
    golden(
        &lp5(p, 70),
        392.0,
        415.0,
        678.0,
        0.0,
        1633.0 + 623.0,
        3742.0,
    );
}

#[test]
fn drampower_lpddr5_patterns_5_6_all_bank_refresh_and_rda() {
    let p = &pattern_5();
    golden(
        &lp5(p, 100),
        392.0,
        415.0,
        678.0,
        1699.0,
        2657.0 + 779.0,
        6621.0,
    );
    let p = PATTERN_6;
    golden(
        &lp5(p, 100),
        392.0,
        415.0,
        226.0 + 226.0,
        1699.0,
        2639.0 + 779.0,
        6377.0,
    );
}

/// Per-bank refresh with currents needs a per-bank refresh current on some supply (LPDDR5's may
/// sit on any of its three), or REFPB energy would silently be zero.
#[test]
fn per_bank_refresh_with_currents_needs_a_per_bank_current() {
    let with = |text: &str| {
        Config::preset("lpddr5-6400")
            .unwrap()
            .with_overrides(toml::from_str(text).unwrap(), "test")
            .and_then(|c| c.resolve("t").map(|_| ()))
    };
    let vdd2l = "[dram.currents]\nvdd2l = 0.9\nidd02l = 10.0\nidd2n2l = 5.0\nidd3n2l = 6.0\nidd4r2l = 25.0\nidd4w2l = 20.0\n";
    let e = with(vdd2l).unwrap_err().to_string();
    assert!(e.contains("dram.currents.idd5pb"), "{e}");
    with(&format!("{vdd2l}idd5pb2l = 6.0\n")).unwrap();
}

/// A current on a supply the standard does not have would be charged all the same: it is refused,
/// naming the key and the standard's supplies (DDR3 has VDD only, DDR4 no VDD2L); on the supplies
/// a standard has, currents are taken.
#[test]
fn currents_are_taken_only_on_the_standards_supplies() {
    let with = |preset: &str, text: &str| {
        Config::preset(preset)
            .unwrap()
            .with_overrides(toml::from_str(text).unwrap(), "test")
            .and_then(|c| c.resolve("t"))
    };
    for (preset, text, key, have) in [
        (
            "ddr3-1600k-bench",
            "[dram.currents]\nipp0 = 3.0\n",
            "dram.currents.ipp0",
            "DDR3 has no such supply: its currents are on VDD (vdd, idd*)",
        ),
        (
            "ddr3-1600k-bench",
            "[dram.currents]\nvpp = 2.5\n",
            "dram.currents.vpp",
            "on VDD (vdd, idd*)",
        ),
        (
            "ddr4-2400r",
            "[dram.currents]\nvdd2l = 1.05\nidd02l = 60.0\n",
            "dram.currents.idd02l",
            "DDR4 has no such supply: its currents are on VDD (vdd, idd*), VPP (vpp, ipp*)",
        ),
    ] {
        let e = with(preset, text).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(have), "{preset}: {e}");
    }
    // The supplies they have: DDR4's VPP, LPDDR5's VDD2L (with a per-bank refresh current, which
    // its per-bank refresh needs).
    let ddr4 = with("ddr4-2400r", "[dram.currents]\nipp0 = 4.0\n").unwrap();
    assert_eq!(ddr4.currents.ipp0, 4.0);
    let lp = with(
        "lpddr5-6400",
        "[dram.currents]\nvdd2l = 0.9\nidd02l = 10.0\nidd2n2l = 5.0\nidd3n2l = 6.0\nidd4r2l = 25.0\nidd4w2l = 20.0\nidd5pb2l = 6.0\n",
    )
    .unwrap();
    assert_eq!((lp.currents.vdd2l, lp.currents.idd02l), (0.9, 10.0));
}

/// A standard's `supplies` names 1 to 3 distinct supplies; absent, its devices have VDD and VPP.
#[test]
fn a_standard_names_one_to_three_distinct_supplies() {
    let header = |supplies: &str| -> crate::spec::StandardHeader {
        toml::from_str(&format!(
            "name = \"X\"\nbank_groups = 1\nbus_width = 64\nburst_length = 8\nsubarray_rows = 512\n{supplies}\nrules = []\nwindows = []\n"
        ))
        .unwrap()
    };
    assert_eq!(header("").supply_names().unwrap(), ["VDD", "VPP"]);
    assert_eq!(
        header("supplies = [\"VDD\"]").supply_names().unwrap(),
        ["VDD"]
    );
    for bad in [
        "supplies = []",
        "supplies = [\"VDD\", \"VDD\"]",
        "supplies = [\" \"]",
        "supplies = [\"A\", \"B\", \"C\", \"D\"]",
    ] {
        let e = header(bad).supply_names().unwrap_err();
        assert!(e.contains("1 to 3 distinct supply names"), "{bad}: {e}");
    }
}
