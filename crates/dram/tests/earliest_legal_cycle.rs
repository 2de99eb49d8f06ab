//! Exact earliest-legal-cycle tests, one per timing rule row of the newer standards (after
//! Ramulator 2.1's device-timing suite): after a short legal prefix, the controller's device model
//! must report the probe command legal exactly at the cycle the standard gives (computed here from
//! the bin's parameters by the rule's formula), and the independent checker must accept the probe
//! at that cycle and reject it one cycle earlier, naming the rule.
use movelab_dram::checker::{CheckReport, Checker};
use movelab_dram::command::{CommandKind, CommandKind::*, CommandRecord, TransferDst};
use movelab_dram::config::Config;
use movelab_dram::device::ChannelDevices;
use movelab_dram::spec::DramSpec;
use movelab_dram::system::log_header;

/// One command of a case: cycle, kind, rank, (bank group, bank), row, TR destination.
#[derive(Clone, Copy)]
struct Cmd {
    cycle: u64,
    kind: CommandKind,
    rank: u32,
    bank: (u32, u32),
    row: u32,
    dst: Option<(u32, u32, u32)>,
}

fn cmd(cycle: u64, kind: CommandKind, bank: (u32, u32)) -> Cmd {
    Cmd {
        cycle,
        kind,
        rank: 0,
        bank,
        row: 5,
        dst: None,
    }
}

fn on_rank(mut c: Cmd, rank: u32) -> Cmd {
    c.rank = rank;
    c
}

fn row(mut c: Cmd, row: u32) -> Cmd {
    c.row = row;
    c
}

fn record(c: &Cmd, cycle: u64) -> CommandRecord {
    CommandRecord {
        cycle,
        kind: c.kind,
        channel: 0,
        rank: c.rank,
        bank_group: c.bank.0,
        bank: c.bank.1,
        row: if matches!(c.kind, Prea | Ref | Refsb | Refpb | Rfm | Rfmsb | Rfmpb) {
            0
        } else {
            c.row
        },
        column: 0,
        dst: c.dst.map(|(g, b, r)| TransferDst {
            bank_group: g,
            bank: b,
            row: r,
            column: 0,
        }),
    }
}

struct Setup {
    cfg: Config,
    spec: DramSpec,
}

fn setup(name: &str, ranks: u32, timing: &[(&str, u64)]) -> Setup {
    let mut cfg = Config::preset(name).unwrap();
    cfg.dram.ranks = ranks;
    cfg.controller.refresh = "none".into();
    for (k, v) in timing {
        cfg.dram.timing.insert((*k).into(), *v);
    }
    let spec = cfg.resolve("test").unwrap();
    Setup { cfg, spec }
}

impl Setup {
    fn t(&self, name: &str) -> u64 {
        self.spec
            .param(name)
            .unwrap_or_else(|| panic!("no parameter {name}"))
    }

    fn check(&self, cmds: &[CommandRecord]) -> CheckReport {
        let mut ck = Checker::new(&log_header(&self.cfg, &self.spec)).unwrap();
        for r in cmds {
            let _ = ck.check(r);
        }
        ck.finish()
    }

    /// The device model's earliest cycle for `probe` after `prefix`.
    fn earliest(&self, prefix: &[Cmd], probe: &Cmd) -> u64 {
        let mut dev = ChannelDevices::new(&self.spec);
        for c in prefix {
            let b = dev_bank(&dev, c);
            let dst = c.dst.map(|(g, bk, r)| (dev.bank_id(c.rank, g, bk), r));
            dev.issue(c.kind, b, c.row, dst, c.cycle);
        }
        let dst = probe.dst.map(|(g, bk, _)| dev.bank_id(probe.rank, g, bk));
        dev.earliest(probe.kind, dev_bank(&dev, probe), dst)
    }

    /// The case: the device says `expected`, the checker accepts the probe there and rejects it
    /// one cycle earlier with a timing violation whose key is `key`.
    fn case(&self, what: &str, key: &str, prefix: &[Cmd], probe: Cmd, expected: u64) {
        let got = self.earliest(prefix, &probe);
        assert_eq!(got, expected, "{what}: device model's earliest cycle");
        let mut log: Vec<CommandRecord> = prefix.iter().map(|c| record(c, c.cycle)).collect();
        log.push(record(&probe, expected));
        let ok = self.check(&log);
        assert!(
            ok.ok,
            "{what}: checker rejects the probe at {expected}: {:?}",
            ok.violations.first().map(|v| &v.message)
        );
        log.last_mut().unwrap().cycle = expected - 1;
        let early = self.check(&log);
        assert!(
            early
                .violations
                .iter()
                .any(|v| v.index == prefix.len() as u64 && v.rule_key() == key),
            "{what}: checker does not report {key} one cycle early: {:?}",
            early
                .violations
                .iter()
                .map(|v| v.rule.clone())
                .collect::<Vec<_>>()
        );
    }
}

fn dev_bank(dev: &ChannelDevices, c: &Cmd) -> movelab_dram::device::BankId {
    dev.bank_id(c.rank, c.bank.0, c.bank.1)
}

#[test]
fn ddr5_every_rule_row_at_its_earliest_cycle() {
    // DDR5-4800B: nCCD_L, nRRD_L, nWTR_L differ from their _S forms (at 3200 they coincide).
    let s = setup("DDR5-4800B/DDR5-16Gb-x8", 1, &[]);
    let t = |n: &str| s.t(n);
    let (rcd, rp, ras, rc) = (t("nRCD"), t("nRP"), t("nRAS"), t("nRC"));
    let (cl, cwl, bl, wr, rtp) = (t("nCL"), t("nCWL"), t("nBL"), t("nWR"), t("nRTP"));
    let a = (0, 0); // bank group 0, bank 0
    let same_group = (0, 1);
    let other_group = (1, 0);

    // Two-clock commands hold the command bus for the next clock.
    for k in [Rd, Wr, Rda, Wra] {
        let p = [cmd(0, Act, a), cmd(rcd, k, a)];
        s.case(
            &format!("{k} two clocks"),
            "2",
            &p,
            cmd(0, Act, other_group),
            rcd + 2,
        );
    }
    s.case(
        "ACT two clocks",
        "2",
        &[cmd(0, Act, a)],
        cmd(0, Pre, other_group),
        2,
    );
    // Same bank.
    for k in [Rd, Wr, Rda, Wra] {
        s.case(
            &format!("nRCD ACT -> {k}"),
            "nRCD",
            &[cmd(0, Act, a)],
            cmd(0, k, a),
            rcd,
        );
    }
    s.case("nRAS", "nRAS", &[cmd(0, Act, a)], cmd(0, Pre, a), ras);
    let p = [cmd(0, Act, a), cmd(ras, Pre, a)];
    s.case("nRC", "nRC", &p, row(cmd(0, Act, a), 9), rc.max(ras + rp));
    let p = [cmd(0, Act, a), cmd(rc, Pre, a)];
    s.case("nRP", "nRP", &p, row(cmd(0, Act, a), 9), rc + rp);
    let p = [cmd(0, Act, a), cmd(ras, Rd, a)];
    s.case("nRTP", "nRTP", &p, cmd(0, Pre, a), ras + rtp);
    let p = [cmd(0, Act, a), cmd(rcd, Wr, a)];
    s.case(
        "write recovery",
        "nCWL+nBL+nWR",
        &p,
        cmd(0, Pre, a),
        rcd + cwl + bl + wr,
    );
    let p = [cmd(0, Act, a), cmd(ras + 3, Rda, a)];
    s.case(
        "RDA -> ACT",
        "nRP",
        &p,
        row(cmd(0, Act, a), 9),
        ras + 3 + rtp + rp,
    );
    let p = [cmd(0, Act, a), cmd(rcd, Wra, a)];
    s.case(
        "WRA -> ACT",
        "nRP",
        &p,
        row(cmd(0, Act, a), 9),
        rcd + cwl + bl + wr + rp,
    );
    let p = [cmd(0, Act, a), cmd(rcd, Wr, a)];
    s.case(
        "WR -> RDA",
        "nCWL+nBL+nWR",
        &p,
        cmd(0, Rda, a),
        rcd + cwl + bl + wr - rtp,
    );
    // Activations.
    s.case(
        "nRRD_S",
        "nRRD_S",
        &[cmd(0, Act, a)],
        cmd(0, Act, other_group),
        t("nRRD_S"),
    );
    s.case(
        "nRRD_L",
        "nRRD_L",
        &[cmd(0, Act, a)],
        cmd(0, Act, same_group),
        t("nRRD_L"),
    );
    // Column commands.
    let (s_l, s_s) = (t("nRRD_L"), t("nRRD_S"));
    let pl = [
        cmd(0, Act, a),
        cmd(s_l, Act, same_group),
        cmd(s_l + rcd, Rd, a),
    ];
    s.case(
        "nCCD_L",
        "nCCD_L",
        &pl,
        cmd(0, Rd, same_group),
        s_l + rcd + t("nCCD_L"),
    );
    let pl = [
        cmd(0, Act, a),
        cmd(s_l, Act, same_group),
        cmd(s_l + rcd, Wr, a),
    ];
    let e = s_l + rcd + t("nCCD_L_WR");
    s.case("nCCD_L_WR", "nCCD_L_WR", &pl, cmd(0, Wr, same_group), e);
    let ps = [
        cmd(0, Act, a),
        cmd(s_s, Act, other_group),
        cmd(s_s + rcd, Rd, a),
    ];
    s.case(
        "nCCD_S read",
        "nCCD_S",
        &ps,
        cmd(0, Rd, other_group),
        s_s + rcd + t("nCCD_S"),
    );
    let ps = [
        cmd(0, Act, a),
        cmd(s_s, Act, other_group),
        cmd(s_s + rcd, Wr, a),
    ];
    s.case(
        "nCCD_S write",
        "nCCD_S",
        &ps,
        cmd(0, Wr, other_group),
        s_s + rcd + t("nCCD_S"),
    );
    let e = s_s + rcd + cwl + bl + t("nWTR_S");
    s.case(
        "WR -> RD other group",
        "nCWL+nBL+nWTR_S",
        &ps,
        cmd(0, Rd, other_group),
        e,
    );
    let p = [cmd(0, Act, a), cmd(rcd, Wr, a)];
    let e = rcd + cwl + bl + t("nWTR_L");
    s.case(
        "WR -> RD same group",
        "nCWL+nBL+nWTR_L",
        &p,
        cmd(0, Rd, a),
        e,
    );
    let p = [cmd(0, Act, a), cmd(rcd, Rd, a)];
    let e = rcd + cl + bl + 2 + t("nWPRE") - cwl;
    s.case("RD -> WR", "nCL+nBL+2-nCWL", &p, cmd(0, Wr, a), e);
    // Precharges.
    let p = [
        cmd(0, Act, a),
        cmd(s_s, Act, other_group),
        cmd(ras + 20, Pre, a),
    ];
    s.case(
        "nPPD",
        "nPPD",
        &p,
        cmd(0, Pre, other_group),
        ras + 20 + t("nPPD"),
    );
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case("PREA -> ACT", "nRP", &p, cmd(0, Act, other_group), ras + rp);
    // All-bank refresh.
    s.case("nRFC", "nRFC", &[cmd(0, Ref, a)], cmd(0, Act, a), t("nRFC"));
    let p = [cmd(0, Act, a), cmd(ras + 10, Pre, a)];
    s.case("PRE -> REF", "nRP", &p, cmd(0, Ref, a), ras + 10 + rp);
    // Same-bank refresh (bank index 1 of every group).
    let sb = (0, 1);
    let (rfcsb, refsbrd) = (t("nRFCsb"), t("nREFSBRD"));
    s.case(
        "nRFCsb REFSB -> ACT",
        "nRFCsb",
        &[cmd(0, Refsb, sb)],
        cmd(0, Act, (2, 1)),
        rfcsb,
    );
    s.case(
        "nRFCsb REFSB -> REFSB",
        "nRFCsb",
        &[cmd(0, Refsb, sb)],
        cmd(0, Refsb, sb),
        rfcsb,
    );
    let other = cmd(0, Act, (2, 0));
    s.case("nREFSBRD", "nREFSBRD", &[cmd(0, Refsb, sb)], other, refsbrd);
    s.case(
        "REFSB -> REF",
        "nRFCsb",
        &[cmd(0, Refsb, sb)],
        cmd(0, Ref, a),
        rfcsb,
    );
    s.case(
        "REF -> REFSB",
        "nRFC",
        &[cmd(0, Ref, a)],
        cmd(0, Refsb, sb),
        t("nRFC"),
    );
    let p = [cmd(0, Act, (3, 1)), cmd(ras, Pre, (3, 1))];
    s.case(
        "ACT -> REFSB",
        "nRC",
        &p,
        cmd(0, Refsb, sb),
        rc.max(ras + rp),
    );
    let p = [cmd(0, Act, (3, 1)), cmd(rc, Pre, (3, 1))];
    s.case("PRE -> REFSB", "nRP", &p, cmd(0, Refsb, sb), rc + rp);
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case("PREA -> REFSB", "nRP", &p, cmd(0, Refsb, (0, 2)), ras + rp);
    // RowClone FPM and PSM.
    s.case(
        "ACT -> ACTC",
        "nRAS",
        &[cmd(0, Act, a)],
        row(cmd(0, Actc, a), 6),
        ras,
    );
    let p = [cmd(0, Act, a), row(cmd(ras, Actc, a), 6)];
    s.case("ACTC -> PRE", "nRAS", &p, cmd(0, Pre, a), 2 * ras);
    let p = [cmd(0, Act, a), cmd(s_s, Act, other_group)];
    let mut tr = cmd(0, Tr, a);
    tr.dst = Some((1, 0, 5));
    s.case("TR nRCD (destination)", "nRCD", &p, tr, s_s + rcd);
}

#[test]
fn ddr5_fifth_activation_waits_for_nfaw() {
    // nFAW binds only when it exceeds 4 x nRRD_S: the 2 KB-page value (x16 parts, 40 clocks).
    let s = setup("DDR5-4800B/DDR5-16Gb-x8", 1, &[("nFAW", 40)]);
    let rrd = s.t("nRRD_S");
    let p: Vec<Cmd> = (0..4).map(|g| cmd(g as u64 * rrd, Act, (g, 0))).collect();
    s.case("nFAW", "nFAW", &p, cmd(0, Act, (4, 0)), 40);
}

#[test]
fn ddr5_rank_to_rank_turnarounds() {
    let s = setup("DDR5-4800B/DDR5-16Gb-x8", 2, &[]);
    let t = |n: &str| s.t(n);
    let (rcd, bl, rtrs, cl, cwl) = (t("nRCD"), t("nBL"), t("nRTRS"), t("nCL"), t("nCWL"));
    let p = [
        cmd(0, Act, (0, 0)),
        on_rank(cmd(2, Act, (0, 0)), 1),
        cmd(rcd + 2, Rd, (0, 0)),
    ];
    let probe = on_rank(cmd(0, Rd, (0, 0)), 1);
    s.case(
        "RD -> RD other rank",
        "nBL+nRTRS",
        &p,
        probe,
        rcd + 2 + bl + rtrs,
    );
    let probe = on_rank(cmd(0, Wr, (0, 0)), 1);
    let e = rcd + 2 + cl + bl + rtrs - cwl;
    s.case("RD -> WR other rank", "nBL+nRTRS", &p, probe, e);
}

#[test]
fn hbm2_every_rule_row_at_its_earliest_cycle() {
    // HBM2's own rows: split nRCDRD / nRCDWR, nRTW, and the DDR4-like group rules at its values.
    let s = setup("HBM2-2000/HBM2-8Gb-PC", 1, &[]);
    // Per-bank refresh (JESD235's single-bank refresh), at DRAMSys's HBM2 values.
    assert_eq!([s.t("nRFCpb"), s.t("nRREFD")], [96, 8]);
    per_bank_rows(&s);
    per_bank_rank_rows(&s, "nRRD_S");
    let t = |n: &str| s.t(n);
    let (a, same_group, other_group) = ((0, 0), (0, 1), (1, 0));
    let (rcdrd, rcdwr) = (t("nRCDRD"), t("nRCDWR"));
    for k in [Rd, Rda] {
        s.case(
            &format!("nRCDRD -> {k}"),
            "nRCDRD",
            &[cmd(0, Act, a)],
            cmd(0, k, a),
            rcdrd,
        );
    }
    for k in [Wr, Wra] {
        s.case(
            &format!("nRCDWR -> {k}"),
            "nRCDWR",
            &[cmd(0, Act, a)],
            cmd(0, k, a),
            rcdwr,
        );
    }
    let p = [cmd(0, Act, a), cmd(rcdrd, Rd, a)];
    s.case("nRTW", "nRTW", &p, cmd(0, Wr, a), rcdrd + t("nRTW"));
    let p = [cmd(0, Act, a), cmd(rcdwr, Wr, a)];
    let e = rcdwr + t("nCWL") + t("nBL") + t("nWTR_L");
    s.case(
        "WR -> RD same group",
        "nCWL+nBL+nWTR_L",
        &p,
        cmd(0, Rd, a),
        e,
    );
    s.case(
        "nRRD_S",
        "nRRD_S",
        &[cmd(0, Act, a)],
        cmd(0, Act, other_group),
        t("nRRD_S"),
    );
    s.case(
        "nRRD_L",
        "nRRD_L",
        &[cmd(0, Act, a)],
        cmd(0, Act, same_group),
        t("nRRD_L"),
    );
    let l = t("nRRD_L");
    let p = [
        cmd(0, Act, a),
        cmd(l, Act, same_group),
        cmd(l + rcdrd, Rd, a),
    ];
    s.case(
        "nCCD_L",
        "nCCD_L",
        &p,
        cmd(0, Rd, same_group),
        l + rcdrd + t("nCCD_L"),
    );
    let sh = t("nRRD_S");
    let p = [
        cmd(0, Act, a),
        cmd(sh, Act, other_group),
        cmd(sh + rcdrd, Rd, a),
    ];
    s.case(
        "nCCD_S",
        "nCCD_S",
        &p,
        cmd(0, Rd, other_group),
        sh + rcdrd + t("nCCD_S"),
    );
    s.case("nRAS", "nRAS", &[cmd(0, Act, a)], cmd(0, Pre, a), t("nRAS"));
    let p = [cmd(0, Act, a), cmd(t("nRC"), Pre, a)];
    s.case(
        "nRP",
        "nRP",
        &p,
        row(cmd(0, Act, a), 9),
        t("nRC") + t("nRP"),
    );
    s.case("nRFC", "nRFC", &[cmd(0, Ref, a)], cmd(0, Act, a), t("nRFC"));
}

/// The same-bank rows every standard here has, at the bin's values: row cycle, auto-precharge,
/// write recovery and RowClone's FPM rows (`rcd_keys`: nRCD, or HBM3's split nRCDRD / nRCDWR).
fn same_bank_rows(s: &Setup, rcd_keys: (&str, &str)) {
    let t = |n: &str| s.t(n);
    let (rp, ras, rc) = (t("nRP"), t("nRAS"), t("nRC"));
    let (cwl, bl, wr, rtp) = (t("nCWL"), t("nBL"), t("nWR"), t("nRTP"));
    let (rcd_rd, rcd_wr) = (t(rcd_keys.0), t(rcd_keys.1));
    let a = (0, 0);
    for k in [Rd, Rda] {
        let name = format!("{} ACT -> {k}", rcd_keys.0);
        s.case(&name, rcd_keys.0, &[cmd(0, Act, a)], cmd(0, k, a), rcd_rd);
    }
    for k in [Wr, Wra] {
        let name = format!("{} ACT -> {k}", rcd_keys.1);
        s.case(&name, rcd_keys.1, &[cmd(0, Act, a)], cmd(0, k, a), rcd_wr);
    }
    s.case("nRAS", "nRAS", &[cmd(0, Act, a)], cmd(0, Pre, a), ras);
    let p = [cmd(0, Act, a), cmd(ras, Pre, a)];
    s.case("nRC", "nRC", &p, row(cmd(0, Act, a), 9), rc.max(ras + rp));
    let p = [cmd(0, Act, a), cmd(rc, Pre, a)];
    s.case("nRP", "nRP", &p, row(cmd(0, Act, a), 9), rc + rp);
    let p = [cmd(0, Act, a), cmd(ras, Rd, a)];
    s.case("nRTP", "nRTP", &p, cmd(0, Pre, a), ras + rtp);
    let p = [cmd(0, Act, a), cmd(rcd_wr, Wr, a)];
    // LPDDR6 names its write recovery WL + BL/n_max + tWTP (its nWR is derived to equal it).
    let wr_key = if s.spec.param("nWTP").is_some() {
        "nCWL+nBL_max+nWTP"
    } else {
        "nCWL+nBL+nWR"
    };
    let e = rcd_wr + cwl + bl + wr;
    s.case("write recovery", wr_key, &p, cmd(0, Pre, a), e);
    s.case("WR -> RDA", wr_key, &p, cmd(0, Rda, a), e - rtp);
    let p = [cmd(0, Act, a), cmd(ras + 3, Rda, a)];
    let e = ras + 3 + rtp + rp;
    s.case("RDA -> ACT", "nRP", &p, row(cmd(0, Act, a), 9), e);
    let p = [cmd(0, Act, a), cmd(rcd_wr, Wra, a)];
    let e = rcd_wr + cwl + bl + wr + rp;
    s.case("WRA -> ACT", "nRP", &p, row(cmd(0, Act, a), 9), e);
    // RowClone FPM.
    s.case(
        "ACT -> ACTC",
        "nRAS",
        &[cmd(0, Act, a)],
        row(cmd(0, Actc, a), 6),
        ras,
    );
    let p = [cmd(0, Act, a), row(cmd(ras, Actc, a), 6)];
    s.case("ACTC -> PRE", "nRAS", &p, cmd(0, Pre, a), 2 * ras);
    let p = [
        cmd(0, Act, a),
        row(cmd(ras, Actc, a), 6),
        cmd(2 * ras, Pre, a),
    ];
    s.case(
        "ACTC -> ACT",
        "nRP",
        &p,
        row(cmd(0, Act, a), 9),
        2 * ras + rp,
    );
}

/// All-bank refresh and, at the refreshed bank, per-bank refresh (LPDDR5, HBM3).
fn refresh_rows(s: &Setup) {
    let t = |n: &str| s.t(n);
    let (rp, ras) = (t("nRP"), t("nRAS"));
    let a = (0, 0);
    // All-bank refresh.
    s.case("nRFC", "nRFC", &[cmd(0, Ref, a)], cmd(0, Act, a), t("nRFC"));
    let p = [cmd(0, Act, a), cmd(ras + 10, Pre, a)];
    s.case("PRE -> REF", "nRP", &p, cmd(0, Ref, a), ras + 10 + rp);
    per_bank_rows(s);
}

/// Per-bank refresh (REFPB) at the refreshed bank, and against all-bank refresh: the rows LPDDR5,
/// HBM2 and HBM3 share.
fn per_bank_rows(s: &Setup) {
    let t = |n: &str| s.t(n);
    let a = (0, 0);
    let (rp, ras, rc, rtp) = (t("nRP"), t("nRAS"), t("nRC"), t("nRTP"));
    s.case(
        "REF -> REFPB",
        "nRFC",
        &[cmd(0, Ref, a)],
        cmd(0, Refpb, a),
        t("nRFC"),
    );
    let rfcpb = t("nRFCpb");
    s.case(
        "REFPB -> ACT same bank",
        "nRFCpb",
        &[cmd(0, Refpb, a)],
        cmd(0, Act, a),
        rfcpb,
    );
    let p = [cmd(0, Refpb, a)];
    s.case(
        "REFPB -> REFPB same bank",
        "nRFCpb",
        &p,
        cmd(0, Refpb, a),
        rfcpb,
    );
    let p = [cmd(0, Act, a), cmd(ras, Pre, a)];
    s.case(
        "ACT -> REFPB same bank",
        "nRC",
        &p,
        cmd(0, Refpb, a),
        rc.max(ras + rp),
    );
    let p = [cmd(0, Act, a), cmd(rc, Pre, a)];
    s.case("PRE -> REFPB", "nRP", &p, cmd(0, Refpb, a), rc + rp);
    let p = [cmd(0, Act, a), cmd(ras + 3, Rda, a)];
    s.case(
        "RDA -> REFPB",
        "nRP",
        &p,
        cmd(0, Refpb, a),
        ras + 3 + rtp + rp,
    );
    s.case(
        "REFPB -> REF",
        "nRFCpb",
        &[cmd(0, Refpb, a)],
        cmd(0, Ref, a),
        rfcpb,
    );
    s.case(
        "REFPB -> PREA",
        "nRFCpb",
        &[cmd(0, Refpb, a)],
        cmd(0, Prea, a),
        rfcpb,
    );
}

/// The rule rows LPDDR5 and HBM3 share with the other standards, at their own values: the
/// same-bank rows, the bank-group and rank column rules (`rcd_rd` / `rcd_wr`: nRCD, or HBM3's
/// split nRCDRD / nRCDWR; `rrd_s`: the ACT spacing of two banks in different groups) and refresh.
fn shared_rows(s: &Setup, rcd_keys: (&str, &str), rrd_s: (&str, u64)) {
    same_bank_rows(s, rcd_keys);
    let t = |n: &str| s.t(n);
    let (ras, cwl, bl) = (t("nRAS"), t("nCWL"), t("nBL"));
    let (rcd_rd, rcd_wr) = (t(rcd_keys.0), t(rcd_keys.1));
    let (a, same_group, other_group) = ((0, 0), (0, 1), (1, 0));
    // Activations.
    s.case(
        rrd_s.0,
        rrd_s.0,
        &[cmd(0, Act, a)],
        cmd(0, Act, other_group),
        rrd_s.1,
    );
    let rrd_l = if rrd_s.0 == "nRRD" { "nRRD" } else { "nRRD_L" };
    let l = t(rrd_l);
    s.case(rrd_l, rrd_l, &[cmd(0, Act, a)], cmd(0, Act, same_group), l);
    // Column commands: reads in one group and in two; writes; turnarounds.
    let pl = [
        cmd(0, Act, a),
        cmd(l, Act, same_group),
        cmd(l + rcd_rd, Rd, a),
    ];
    let e = l + rcd_rd + t("nCCD_L");
    s.case("nCCD_L read", "nCCD_L", &pl, cmd(0, Rd, same_group), e);
    let pw = [
        cmd(0, Act, a),
        cmd(l, Act, same_group),
        cmd(l + rcd_wr, Wr, a),
    ];
    let e = l + rcd_wr + t("nCCD_L");
    s.case("nCCD_L write", "nCCD_L", &pw, cmd(0, Wr, same_group), e);
    // LPDDR5 with BL32 in BG mode counts BL/n_max within a group.
    let (bl_l, bl_l_key) = match s.spec.param("nBL_max") {
        Some(v) => (v, "nCWL+nBL_max+nWTR_L"),
        None => (bl, "nCWL+nBL+nWTR_L"),
    };
    let e = l + rcd_wr + cwl + bl_l + t("nWTR_L");
    s.case(
        "WR -> RD same group",
        bl_l_key,
        &pw,
        cmd(0, Rd, same_group),
        e,
    );
    let sh = rrd_s.1;
    let ps = [
        cmd(0, Act, a),
        cmd(sh, Act, other_group),
        cmd(sh + rcd_rd, Rd, a),
    ];
    let e = sh + rcd_rd + t("nCCD_S");
    s.case("nCCD_S read", "nCCD_S", &ps, cmd(0, Rd, other_group), e);
    let pw = [
        cmd(0, Act, a),
        cmd(sh, Act, other_group),
        cmd(sh + rcd_wr, Wr, a),
    ];
    let e = sh + rcd_wr + t("nCCD_S");
    s.case("nCCD_S write", "nCCD_S", &pw, cmd(0, Wr, other_group), e);
    let e = sh + rcd_wr + cwl + bl + t("nWTR_S");
    s.case(
        "WR -> RD other group",
        "nCWL+nBL+nWTR_S",
        &pw,
        cmd(0, Rd, other_group),
        e,
    );
    // Precharge to precharge.
    let p = [
        cmd(0, Act, a),
        cmd(sh, Act, other_group),
        cmd(ras + 20, Pre, a),
    ];
    let e = ras + 20 + t("nPPD");
    s.case("nPPD", "nPPD", &p, cmd(0, Pre, other_group), e);
    refresh_rows(s);
}

#[test]
fn lpddr5_every_rule_row_at_its_earliest_cycle() {
    lpddr5_bg_rows("LPDDR5-6400/LPDDR5-8Gb-x16");
    lpddr5_refpb_pair_rows(&setup("LPDDR5-6400/LPDDR5-8Gb-x16", 1, &[]));
    lpddr5_refpb_pair_rows(&setup("LPDDR5-6400-BL32/LPDDR5-8Gb-x16", 1, &[]));
}

#[test]
fn lpddr5_bl32_every_rule_row_at_its_earliest_cycle() {
    // BG mode with BL32: the same rows at the BL32 values (6-clock burst window, nCCD_S 6,
    // nCCD_L 8, BL/n_max 8 for same-group write to read), and the rank-to-rank rows.
    let s = setup("LPDDR5-6400-BL32/LPDDR5-8Gb-x16", 1, &[]);
    assert_eq!(
        ["nBL", "nBL_max", "nCCD_S", "nCCD_L"].map(|n| s.t(n)),
        [6, 8, 6, 8]
    );
    assert_eq!(s.spec.org.line_bytes(), 64);
    lpddr5_bg_rows("LPDDR5-6400-BL32/LPDDR5-8Gb-x16");
    lpddr5_rank_to_rank("LPDDR5-6400-BL32/LPDDR5-8Gb-x16", (1, 0));
}

/// Data-bus turnarounds between two ranks of one channel (the burst length enters as nBL; WR ->
/// RD, nCWL + nBL + nRTRS - nCL, comes out at zero or below on LPDDR5-6400 and binds nothing).
fn lpddr5_rank_to_rank(name: &str, bank: (u32, u32)) {
    let s = setup(name, 2, &[]);
    let t = |n: &str| s.t(n);
    let (rcd, bl, rtrs, cl, cwl) = (t("nRCD"), t("nBL"), t("nRTRS"), t("nCL"), t("nCWL"));
    let gap = t("nRRD");
    let p = [
        cmd(0, Act, bank),
        on_rank(cmd(gap, Act, bank), 1),
        cmd(rcd + gap, Rd, bank),
    ];
    let e = rcd + gap + bl + rtrs;
    let probe = on_rank(cmd(0, Rd, bank), 1);
    s.case("RD -> RD other rank", "nBL+nRTRS", &p, probe, e);
    let e = rcd + gap + cl + bl + rtrs - cwl;
    let probe = on_rank(cmd(0, Wr, bank), 1);
    s.case("RD -> WR other rank", "nBL+nRTRS", &p, probe, e);
    let p = [
        cmd(0, Act, bank),
        on_rank(cmd(gap, Act, bank), 1),
        cmd(rcd + gap, Wr, bank),
    ];
    let e = rcd + gap + bl + rtrs;
    let probe = on_rank(cmd(0, Wr, bank), 1);
    s.case("WR -> WR other rank", "nBL+nRTRS", &p, probe, e);
}

/// Every LPDDR5 rule row in BG mode (BL16 or BL32, by the speed entry).
/// LPDDR5 with 16 banks refreshes bank pairs: a REFPB to bank 0.0 also refreshes bank 2.0 (eight
/// banks on), so that bank's row cycle must be over before it, and it takes no ACT for tRFCpb.
fn lpddr5_refpb_pair_rows(s: &Setup) {
    let t = |n: &str| s.t(n);
    let (a, partner) = ((0, 0), (2, 0));
    let (rp, ras, rc, rfcpb) = (t("nRP"), t("nRAS"), t("nRC"), t("nRFCpb"));
    let pb = [cmd(0, Refpb, a)];
    s.case(
        "REFPB -> ACT pair bank",
        "nRFCpb",
        &pb,
        cmd(0, Act, partner),
        rfcpb,
    );
    let p = [cmd(0, Act, partner), cmd(ras + 5, Pre, partner)];
    let e = ras + 5 + rp;
    s.case("PRE pair bank -> REFPB", "nRP", &p, cmd(0, Refpb, a), e);
    let p = [cmd(0, Act, partner), cmd(ras, Pre, partner)];
    let e = rc.max(ras + rp);
    s.case("ACT pair bank -> REFPB", "nRC", &p, cmd(0, Refpb, a), e);
    // A bank outside the pair is not held by tRFCpb, only by the rank's tpbR2act.
    let other = (1, 0);
    let e = t("nPBR2ACT");
    s.case(
        "REFPB -> ACT other bank",
        "nPBR2ACT",
        &pb,
        cmd(0, Act, other),
        e,
    );
}

fn lpddr5_bg_rows(name: &str) {
    let s = setup(name, 1, &[]);
    let t = |n: &str| s.t(n);
    // JESD209-5B's 8 Gb refresh clocks at 6400 (Ramulator 2.1's test asserts the same numbers).
    assert_eq!(
        [t("nRFC"), t("nRFCpb"), t("nPBR2PBR"), t("nPBR2ACT")],
        [168, 96, 72, 6]
    );
    shared_rows(&s, ("nRCD", "nRCD"), ("nRRD", t("nRRD")));
    let (a, other_group) = ((0, 0), (1, 0));
    let (rcd, ras, cl, cwl, bl) = (t("nRCD"), t("nRAS"), t("nCL"), t("nCWL"), t("nBL"));
    // The two-part activate: ACT-2 holds the command bus the clock after ACT-1.
    for k in [Act, Actc] {
        let p: Vec<Cmd> = if k == Act {
            vec![]
        } else {
            vec![cmd(0, Act, a)]
        };
        let at = if k == Act { 0 } else { ras };
        let mut p = p;
        p.push(row(cmd(at, k, a), 6));
        s.case(
            &format!("{k} two-part"),
            "2",
            &p,
            cmd(0, Pre, (2, 0)),
            at + 2,
        );
    }
    // RD -> WR: RL + BL/n + 2 - WL.
    let p = [cmd(0, Act, a), cmd(rcd, Rd, a)];
    let e = rcd + cl + bl + 2 - cwl;
    s.case("RD -> WR", "nCL+nBL+2-nCWL", &p, cmd(0, Wr, a), e);
    // PREab takes tRPab.
    let rpab = t("nRPab");
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case(
        "PREA -> ACT",
        "nRPab",
        &p,
        cmd(0, Act, other_group),
        ras + rpab,
    );
    s.case("PREA -> REF", "nRPab", &p, cmd(0, Ref, a), ras + rpab);
    s.case(
        "PREA -> REFPB",
        "nRPab",
        &p,
        cmd(0, Refpb, other_group),
        ras + rpab,
    );
    // Per-bank refresh, rank-wide.
    let pb = [cmd(0, Refpb, a)];
    let e = t("nPBR2PBR");
    s.case("tpbR2pbR", "nPBR2PBR", &pb, cmd(0, Refpb, other_group), e);
    s.case(
        "tpbR2act",
        "nPBR2ACT",
        &pb,
        cmd(0, Act, other_group),
        t("nPBR2ACT"),
    );
    // nFAW: four activations a tRRD apart; the window binds only beyond 4 x tRRD (the bin has
    // exactly that), so the test widens it.
    let rrd = t("nRRD");
    let w = setup(name, 1, &[("nFAW", 4 * rrd + 3)]);
    let p: Vec<Cmd> = (0..4).map(|g| cmd(g as u64 * rrd, Act, (g, 0))).collect();
    w.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 1)), 4 * rrd + 3);
}

#[test]
fn lpddr5_8b_every_rule_row_at_its_earliest_cycle() {
    // 8-bank mode: no bank groups, so one nCCD, nWTR and nRRD for any two banks; BL32 in 4
    // clocks; tRRD 10 ns and tFAW 40 ns. Banks 0 to 7 of the one group.
    let s = setup("LPDDR5-6400-8B/LPDDR5-8Gb-x16-8B", 1, &[]);
    let t = |n: &str| s.t(n);
    assert_eq!(
        ["nBL", "nCCD", "nRRD", "nFAW", "nWTR"].map(|n| s.t(n)),
        [4, 4, 8, 32, 10]
    );
    assert_eq!(
        [t("nRFC"), t("nRFCpb"), t("nPBR2PBR"), t("nPBR2ACT")],
        [168, 96, 72, 6]
    );
    let o = &s.spec.org;
    assert_eq!(
        (
            o.bank_groups,
            o.banks_per_rank(),
            o.row_bytes(),
            o.line_bytes()
        ),
        (1, 8, 4096, 64)
    );
    same_bank_rows(&s, ("nRCD", "nRCD"));
    refresh_rows(&s);
    let (ras, rcd) = (t("nRAS"), t("nRCD"));
    let (cl, cwl, bl) = (t("nCL"), t("nCWL"), t("nBL"));
    let (a, b2) = ((0, 0), (0, 5));
    // The two-part activate.
    let p = [cmd(0, Act, a)];
    s.case("ACT two-part", "2", &p, cmd(0, Pre, (0, 3)), 2);
    // Any two banks: tRRD 10 ns, nCCD, write to read, read to write.
    let rrd = t("nRRD");
    s.case("nRRD", "nRRD", &[cmd(0, Act, a)], cmd(0, Act, b2), rrd);
    let p = [cmd(0, Act, a), cmd(rrd, Act, b2), cmd(rrd + rcd, Rd, a)];
    let e = rrd + rcd + t("nCCD");
    s.case("nCCD read", "nCCD", &p, cmd(0, Rd, b2), e);
    let e = rrd + rcd + cl + bl + 2 - cwl;
    s.case("RD -> WR", "nCL+nBL+2-nCWL", &p, cmd(0, Wr, b2), e);
    let p = [cmd(0, Act, a), cmd(rrd, Act, b2), cmd(rrd + rcd, Wr, a)];
    let e = rrd + rcd + t("nCCD");
    s.case("nCCD write", "nCCD", &p, cmd(0, Wr, b2), e);
    let e = rrd + rcd + cwl + bl + t("nWTR");
    s.case("WR -> RD", "nCWL+nBL+nWTR", &p, cmd(0, Rd, b2), e);
    // Precharges.
    let p = [cmd(0, Act, a), cmd(rrd, Act, b2), cmd(ras + 20, Pre, a)];
    s.case("nPPD", "nPPD", &p, cmd(0, Pre, b2), ras + 20 + t("nPPD"));
    let rpab = t("nRPab");
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case("PREA -> ACT", "nRPab", &p, cmd(0, Act, b2), ras + rpab);
    s.case("PREA -> REF", "nRPab", &p, cmd(0, Ref, a), ras + rpab);
    s.case("PREA -> REFPB", "nRPab", &p, cmd(0, Refpb, b2), ras + rpab);
    // Per-bank refresh, rank-wide.
    let pb = [cmd(0, Refpb, a)];
    let e = t("nPBR2PBR");
    s.case("tpbR2pbR", "nPBR2PBR", &pb, cmd(0, Refpb, b2), e);
    let e = t("nPBR2ACT");
    s.case("tpbR2act", "nPBR2ACT", &pb, cmd(0, Act, b2), e);
    // nFAW 40 ns: exactly 4 x tRRD, so the fifth activation waits tFAW after the first; the test
    // widens it by 3 clocks to tell the two rules apart.
    let w = setup(
        "LPDDR5-6400-8B/LPDDR5-8Gb-x16-8B",
        1,
        &[("nFAW", 4 * rrd + 3)],
    );
    let p: Vec<Cmd> = (0..4).map(|k| cmd(k as u64 * rrd, Act, (0, k))).collect();
    w.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 4)), 4 * rrd + 3);
    lpddr5_rank_to_rank("LPDDR5-6400-8B/LPDDR5-8Gb-x16-8B", (0, 0));
}

#[test]
fn hbm3_every_rule_row_at_its_earliest_cycle() {
    let s = setup("HBM3-6400/HBM3-8Gb-PC", 1, &[]);
    let t = |n: &str| s.t(n);
    hbm_rows(&s);
    // nFAW binds beyond 4 x nRRD_S.
    let rrd = t("nRRD_S");
    let p: Vec<Cmd> = (0..4).map(|g| cmd(g as u64 * rrd, Act, (g, 0))).collect();
    s.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 1)), t("nFAW"));
    hbm_other_sid("HBM3-6400/HBM3-8Gb-PC", 3);
}

/// The rows HBM3 and HBM4 share: the other standards' rows at their values (split nRCDRD /
/// nRCDWR), the read-to-write turnaround nRTW, precharge all, and per-bank refresh rank-wide.
fn hbm_rows(s: &Setup) {
    let t = |n: &str| s.t(n);
    shared_rows(s, ("nRCDRD", "nRCDWR"), ("nRRD_S", t("nRRD_S")));
    let (a, other_group) = ((0, 0), (1, 0));
    let (rcdrd, ras, rp) = (t("nRCDRD"), t("nRAS"), t("nRP"));
    let p = [cmd(0, Act, a), cmd(rcdrd, Rd, a)];
    s.case("nRTW", "nRTW", &p, cmd(0, Wr, a), rcdrd + t("nRTW"));
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case("PREA -> ACT", "nRP", &p, cmd(0, Act, other_group), ras + rp);
    s.case(
        "PREA -> REFPB",
        "nRP",
        &p,
        cmd(0, Refpb, other_group),
        ras + rp,
    );
    per_bank_rank_rows(s, "nRRD_S");
}

/// HBM's per-bank refresh, rank-wide (JESD235 / JESD238 as DRAMSys and Ramulator 2 list them):
/// tRREFD both ways between REFPB and REFPB / ACT, tRRD_S from an ACT to a REFPB of another bank
/// (`act2pb`: GDDR6 asks tRRD_L there).
fn per_bank_rank_rows(s: &Setup, act2pb: &str) {
    let t = |n: &str| s.t(n);
    let (a, other_group) = ((0, 0), (1, 0));
    let pb = [cmd(0, Refpb, a)];
    let rrefd = t("nRREFD");
    s.case(
        "REFPB -> REFPB",
        "nRREFD",
        &pb,
        cmd(0, Refpb, other_group),
        rrefd,
    );
    s.case(
        "REFPB -> ACT",
        "nRREFD",
        &pb,
        cmd(0, Act, other_group),
        rrefd,
    );
    let e = t(act2pb);
    s.case(
        "ACT -> REFPB",
        act2pb,
        &[cmd(0, Act, a)],
        cmd(0, Refpb, other_group),
        e,
    );
}

/// HBM's other SID (a movelab rank): RD -> RD nCCD_R = nBL + nRTRS (`ccd_r` in the bin).
fn hbm_other_sid(preset: &str, ccd_r: u64) {
    let s2 = setup(preset, 2, &[]);
    let a = (0, 0);
    let rcdrd = s2.t("nRCDRD");
    // The other SID's ACT waits out the first ACT's hold on the row bus (2 clocks).
    let p = [
        cmd(0, Act, a),
        on_rank(cmd(2, Act, a), 1),
        cmd(rcdrd + 1, Rd, a),
    ];
    let e = rcdrd + 1 + s2.t("nBL") + s2.t("nRTRS");
    assert_eq!(s2.t("nBL") + s2.t("nRTRS"), ccd_r, "nCCD_R");
    s2.case(
        "RD -> RD other SID",
        "nBL+nRTRS",
        &p,
        on_rank(cmd(0, Rd, a), 1),
        e,
    );
}

#[test]
fn multi_row_copy_rows_on_every_standard() {
    // Multi-RowCopy's ACTM is timed as RowClone's ACTC on every standard: nRAS after the source
    // ACT, nRAS before its PRE, an activation for nRRD and nFAW; ACT -> PRE -> ACT after it.
    for (preset, rrd) in [
        ("DDR3-1600K/DDR3-4Gb-x8", "nRRD"),
        ("DDR4-2400R/DDR4-8Gb-x8", "nRRD_S"),
        ("DDR5-4800B/DDR5-16Gb-x8", "nRRD_S"),
        ("HBM2-2000/HBM2-8Gb-PC", "nRRD_S"),
        ("LPDDR5-6400/LPDDR5-8Gb-x16", "nRRD"),
        ("HBM3-6400/HBM3-8Gb-PC", "nRRD_S"),
        ("GDDR6-14000/GDDR6-8Gb-x16-CH", "nRRD_S"),
        ("GDDR7-28000/GDDR7-16Gb-x8-CH", "nRRD"),
        ("HBM4-8000/HBM4-32Gb-8Hi-PC", "nRRD_S"),
    ] {
        let s = setup(preset, 1, &[]);
        let (ras, rp) = (s.t("nRAS"), s.t("nRP"));
        // Another bank (in another group where there are groups).
        let other_group = if s.spec.org.bank_groups > 1 {
            (1, 0)
        } else {
            (0, 1)
        };
        let a = (0, 0);
        // Rows 4..8 (open row 4, second address 7).
        let actm = row(cmd(0, Actm, a), 7);
        let src = row(cmd(0, Act, a), 4);
        s.case(&format!("{preset} ACT -> ACTM"), "nRAS", &[src], actm, ras);
        let p = [src, row(cmd(ras, Actm, a), 7)];
        s.case(
            &format!("{preset} ACTM -> PRE"),
            "nRAS",
            &p,
            cmd(0, Pre, a),
            2 * ras,
        );
        let p = [src, row(cmd(ras, Actm, a), 7), cmd(2 * ras, Pre, a)];
        let e = 2 * ras + rp;
        s.case(
            &format!("{preset} ACTM -> ACT"),
            "nRP",
            &p,
            row(cmd(0, Act, a), 9),
            e,
        );
        let p = [src, row(cmd(ras, Actm, a), 7)];
        let e = ras + s.t(rrd);
        s.case(
            &format!("{preset} ACTM -> ACT"),
            rrd,
            &p,
            cmd(0, Act, other_group),
            e,
        );
    }
}

#[test]
fn an_actm_group_must_fit_a_subarray_and_32_rows() {
    let s = setup("DDR4-2400R/DDR4-8Gb-x8", 1, &[]);
    let ras = s.t("nRAS");
    for (second, what) in [
        (4 ^ 63, "64 rows"),
        (4 ^ 512, "across subarrays"),
        (4, "1 rows"),
    ] {
        let log = [
            record(&row(cmd(0, Act, (0, 0)), 4), 0),
            record(&row(cmd(0, Actm, (0, 0)), second), ras),
        ];
        let r = s.check(&log);
        assert!(
            r.violations
                .iter()
                .any(|v| v.rule == "ACTM row group" && v.message.contains(what)),
            "{what}: {:?}",
            r.violations
        );
    }
}

/// Refresh management's rows (DDR5 JESD79-5 4.41, HBM3 JESD238): an all-bank RFM after the last
/// precharge (nRP, PREA too), after a REF (nRFC) and after the standard's partial refresh
/// (REFSB: nRFCsb; REFPB: nRFCpb); nothing on the rank for nRFM after it.
fn rfm_rows(s: &Setup, partial: Option<(CommandKind, &str)>) {
    let t = |n: &str| s.t(n);
    let (rp, ras, rfm) = (t("nRP"), t("nRAS"), t("nRFM"));
    let a = (0, 0);
    let other_group = if s.spec.org.bank_groups > 1 {
        (1, 1)
    } else {
        (0, 1)
    };
    s.case(
        "RFM -> ACT",
        "nRFM",
        &[cmd(0, Rfm, a)],
        cmd(0, Act, other_group),
        rfm,
    );
    s.case("RFM -> RFM", "nRFM", &[cmd(0, Rfm, a)], cmd(0, Rfm, a), rfm);
    s.case("RFM -> REF", "nRFM", &[cmd(0, Rfm, a)], cmd(0, Ref, a), rfm);
    s.case(
        "REF -> RFM",
        "nRFC",
        &[cmd(0, Ref, a)],
        cmd(0, Rfm, a),
        t("nRFC"),
    );
    let p = [cmd(0, Act, a), cmd(ras + 10, Pre, a)];
    s.case("PRE -> RFM", "nRP", &p, cmd(0, Rfm, a), ras + 10 + rp);
    let p = [cmd(0, Act, a), cmd(ras + 10, Prea, a)];
    s.case("PREA -> RFM", "nRP", &p, cmd(0, Rfm, a), ras + 10 + rp);
    let Some((partial, partial_key)) = partial else {
        return;
    };
    s.case(
        "RFM -> partial refresh",
        "nRFM",
        &[cmd(0, Rfm, a)],
        cmd(0, partial, a),
        rfm,
    );
    let key_t = if partial == Refsb { "nRFCsb" } else { "nRFCpb" };
    s.case(
        "partial refresh -> RFM",
        partial_key,
        &[cmd(0, partial, a)],
        cmd(0, Rfm, a),
        t(key_t),
    );
}

#[test]
fn ddr5_and_hbm3_rfm_rows_at_their_earliest_cycle() {
    let s = setup("DDR5-3200AN/DDR5-16Gb-x8", 1, &[]);
    assert_eq!(s.t("nRFM"), s.t("nRFC"), "DDR5 RFMab takes tRFC1");
    rfm_rows(&s, Some((Refsb, "nRFCsb")));
    let s = setup("HBM3-6400/HBM3-8Gb-PC", 1, &[]);
    rfm_rows(&s, Some((Refpb, "nRFCpb")));
}

/// GDDR7 (JESD239) and HBM4 (JESD270-4) RFMab, timed as an all-bank refresh (Ramulator 2.1's
/// gddr7.py / hbm4.py: nRFMab = nRFCab); GDDR7 has no per-bank refresh here, HBM4 its REFPB.
#[test]
fn gddr7_and_hbm4_rfm_rows_at_their_earliest_cycle() {
    let s = setup("GDDR7-28000/GDDR7-16Gb-x8-CH", 1, &[]);
    assert_eq!(s.t("nRFM"), s.t("nRFC"), "GDDR7 RFMab takes tRFCab");
    rfm_rows(&s, None);
    let s = setup("HBM4-8000/HBM4-32Gb-8Hi-PC", 1, &[]);
    assert_eq!(s.t("nRFM"), s.t("nRFC"), "HBM4 RFMab takes tRFCab");
    rfm_rows(&s, Some((Refpb, "nRFCpb")));
}

/// The checker counts each bank's activations itself: RAAMMT activations of one bank pass, the
/// next is refused unless a REF or an RFM came between (each lowers the count by RAAIMT).
#[test]
fn the_checker_keeps_its_own_activation_counts() {
    for preset in [
        "DDR5-3200AN/DDR5-16Gb-x8",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
        "GDDR7-28000/GDDR7-16Gb-x8-CH",
    ] {
        let s = setup(preset, 1, &[]);
        let t = |n: &str| s.t(n);
        let (rc, ras, rp, mmt, imt) = (t("nRC"), t("nRAS"), t("nRP"), t("RAAMMT"), t("RAAIMT"));
        let a = (0, 0);
        let step = rc.max(ras + rp) + 4;
        let mut log = Vec::new();
        let mut at = 0;
        let hammer = |log: &mut Vec<CommandRecord>, n: u64, at: &mut u64| {
            for _ in 0..n {
                log.push(record(&cmd(*at, Act, a), *at));
                log.push(record(&cmd(*at + ras, Pre, a), *at + ras));
                *at += step;
            }
        };
        hammer(&mut log, mmt, &mut at);
        assert!(s.check(&log).ok, "{preset}: {mmt} activations are legal");
        let mut over = log.clone();
        hammer(&mut over, 1, &mut at.clone());
        let r = s.check(&over);
        assert!(
            r.violations.iter().any(|v| v.rule_key() == "RAAMMT"),
            "{preset}: activation {} not refused: {:?}",
            mmt + 1,
            r.violations.first()
        );
        for relief in [Rfm, Ref] {
            let mut ok = log.clone();
            let mut at2 = at;
            ok.push(record(&cmd(at2, relief, a), at2));
            at2 += t("nRFM").max(t("nRFC"));
            // One RFM / REF lowers the count by RAAIMT: that many more activations pass.
            hammer(&mut ok, imt, &mut at2);
            assert!(
                s.check(&ok).ok,
                "{preset}: after {relief}: {:?}",
                s.check(&ok).violations.first()
            );
            hammer(&mut ok, 1, &mut at2);
            assert!(
                !s.check(&ok).ok,
                "{preset}: after {relief}, one more is too many"
            );
        }
        // With refresh management off the log's device does not require it: no count is kept,
        // and an RFM is refused.
        let off = {
            let mut cfg = Config::preset(preset).unwrap();
            cfg.controller.refresh = "none".into();
            cfg.controller.rfm = false;
            let spec = cfg.resolve("t").unwrap();
            Setup { cfg, spec }
        };
        assert!(off.check(&over).ok, "{preset}: counts kept without RFM");
        let r = off.check(&[record(&cmd(0, Rfm, a), 0)]);
        assert!(
            r.violations
                .iter()
                .any(|v| v.rule == "RFM without refresh management"),
            "{:?}",
            r.violations.first()
        );
    }
}

/// A setup whose controller issues the scoped RFM (`controller.rfm_scope`).
fn setup_scoped(name: &str, scope: &str, timing: &[(&str, u64)]) -> Setup {
    let mut s = setup(name, 1, timing);
    s.cfg.controller.rfm_scope = scope.into();
    s.spec = s.cfg.resolve("test").unwrap();
    s
}

/// DDR5's same-bank RFM (RFMsb, JESD79-5 4.41: one bank address in every bank group), timed as a
/// REFsb of tRFMsb: every row that leads to or from it at its earliest cycle, the checker
/// rejecting each one clock earlier with the rule named.
#[test]
fn ddr5_rfmsb_rows_at_their_earliest_cycle() {
    let s = setup_scoped("DDR5-3200AN/DDR5-16Gb-x8", "same-bank", &[]);
    let t = |n: &str| s.t(n);
    // Intel's MRC DDR5 header: tRFMsb = tRFCsb (130 ns at 16 Gb).
    assert_eq!(t("nRFMsb"), t("nRFCsb"));
    let (rp, ras, rc, sb) = (t("nRP"), t("nRAS"), t("nRC"), t("nRFMsb"));
    let (b, other_group, other_index) = ((0, 1), (5, 1), (2, 0));
    let r = [cmd(0, Rfmsb, b)];
    s.case("RFMSB -> ACT same bank", "nRFMsb", &r, cmd(0, Act, b), sb);
    s.case(
        "RFMSB -> ACT, its index in another group",
        "nRFMsb",
        &r,
        cmd(0, Act, other_group),
        sb,
    );
    s.case(
        "RFMSB -> ACT, another index",
        "nREFSBRD",
        &r,
        cmd(0, Act, other_index),
        t("nREFSBRD"),
    );
    s.case("RFMSB -> RFMSB", "nRFMsb", &r, cmd(0, Rfmsb, b), sb);
    s.case("RFMSB -> REFSB", "nRFMsb", &r, cmd(0, Refsb, b), sb);
    s.case(
        "REFSB -> RFMSB",
        "nRFCsb",
        &[cmd(0, Refsb, b)],
        cmd(0, Rfmsb, other_group),
        t("nRFCsb"),
    );
    for probe in [Ref, Rfm, Prea] {
        s.case(
            &format!("RFMSB -> {probe}"),
            "nRFMsb",
            &r,
            cmd(0, probe, (0, 0)),
            sb,
        );
    }
    s.case(
        "REF -> RFMSB",
        "nRFC",
        &[cmd(0, Ref, b)],
        cmd(0, Rfmsb, b),
        t("nRFC"),
    );
    s.case(
        "RFM -> RFMSB",
        "nRFM",
        &[cmd(0, Rfm, b)],
        cmd(0, Rfmsb, b),
        t("nRFM"),
    );
    // The row cycle, or the precharge after nRAS where nRAS + nRP is longer (DDR5-3200AN).
    s.case(
        "ACT -> RFMSB, its index in another group",
        if rc >= ras + rp { "nRC" } else { "nRP" },
        &[cmd(0, Act, other_group), cmd(ras, Pre, other_group)],
        cmd(0, Rfmsb, b),
        rc.max(ras + rp),
    );
    let p = [cmd(0, Act, other_group), cmd(ras + 10, Pre, other_group)];
    s.case("PRE -> RFMSB", "nRP", &p, cmd(0, Rfmsb, b), ras + 10 + rp);
    let p = [cmd(0, Act, other_index), cmd(ras + 10, Prea, other_index)];
    s.case("PREA -> RFMSB", "nRP", &p, cmd(0, Rfmsb, b), ras + 10 + rp);
    // A bank of another index keeps working: no rule leads from an RFMSB to a column command, so
    // a RD to its open row is ready at nRCD whatever the RFMSB, and the checker takes it the clock
    // after the RFMSB.
    let p = [cmd(0, Act, other_index), cmd(t("nRCD") + 10, Rfmsb, b)];
    assert_eq!(s.earliest(&p, &cmd(0, Rd, other_index)), t("nRCD"));
    let mut log: Vec<CommandRecord> = p.iter().map(|c| record(c, c.cycle)).collect();
    log.push(record(&cmd(0, Rd, other_index), t("nRCD") + 11));
    let r = s.check(&log);
    assert!(r.ok, "{:?}", r.violations.first().map(|v| &v.message));
}

/// HBM3's and HBM4's per-bank RFM (RFMpb; JESD238 / JESD270-4 as Ramulator 2.1 lists it), timed
/// as a REFpb of tRFMpb.
#[test]
fn hbm3_and_hbm4_rfmpb_rows_at_their_earliest_cycle() {
    for name in ["HBM3-6400/HBM3-8Gb-PC", "HBM4-8000/HBM4-32Gb-8Hi-PC"] {
        let s = setup_scoped(name, "per-bank", &[]);
        let t = |n: &str| s.t(n);
        // Ramulator 2.1: nRFMpb = nRFCpb.
        assert_eq!(t("nRFMpb"), t("nRFCpb"), "{name}");
        let (rp, ras, rc, pb, rrefd) = (t("nRP"), t("nRAS"), t("nRC"), t("nRFMpb"), t("nRREFD"));
        let (b, other) = ((0, 1), (1, 2));
        let r = [cmd(0, Rfmpb, b)];
        s.case("RFMPB -> ACT same bank", "nRFMpb", &r, cmd(0, Act, b), pb);
        s.case(
            "RFMPB -> ACT another bank",
            "nRREFD",
            &r,
            cmd(0, Act, other),
            rrefd,
        );
        s.case(
            "RFMPB -> RFMPB same bank",
            "nRFMpb",
            &r,
            cmd(0, Rfmpb, b),
            pb,
        );
        s.case(
            "RFMPB -> REFPB same bank",
            "nRFMpb",
            &r,
            cmd(0, Refpb, b),
            pb,
        );
        s.case(
            "RFMPB -> RFMPB another bank",
            "nRREFD",
            &r,
            cmd(0, Rfmpb, other),
            rrefd,
        );
        s.case(
            "RFMPB -> REFPB another bank",
            "nRREFD",
            &r,
            cmd(0, Refpb, other),
            rrefd,
        );
        s.case(
            "REFPB -> RFMPB another bank",
            "nRREFD",
            &[cmd(0, Refpb, other)],
            cmd(0, Rfmpb, b),
            rrefd,
        );
        s.case(
            "REFPB -> RFMPB same bank",
            "nRFCpb",
            &[cmd(0, Refpb, b)],
            cmd(0, Rfmpb, b),
            t("nRFCpb"),
        );
        for probe in [Ref, Rfm, Prea] {
            s.case(
                &format!("RFMPB -> {probe}"),
                "nRFMpb",
                &r,
                cmd(0, probe, (0, 0)),
                pb,
            );
        }
        s.case(
            "REF -> RFMPB",
            "nRFC",
            &[cmd(0, Ref, b)],
            cmd(0, Rfmpb, b),
            t("nRFC"),
        );
        s.case(
            "RFM -> RFMPB",
            "nRFM",
            &[cmd(0, Rfm, b)],
            cmd(0, Rfmpb, b),
            t("nRFM"),
        );
        s.case(
            "ACT -> RFMPB same bank",
            if rc >= ras + rp { "nRC" } else { "nRP" },
            &[cmd(0, Act, b), cmd(ras, Pre, b)],
            cmd(0, Rfmpb, b),
            rc.max(ras + rp),
        );
        s.case(
            "ACT -> RFMPB another bank group",
            "nRRD_S",
            &[cmd(0, Act, other)],
            cmd(0, Rfmpb, b),
            t("nRRD_S"),
        );
        let p = [cmd(0, Act, b), cmd(ras + 10, Pre, b)];
        s.case("PRE -> RFMPB", "nRP", &p, cmd(0, Rfmpb, b), ras + 10 + rp);
        let p = [cmd(0, Act, other), cmd(ras + 10, Prea, other)];
        s.case("PREA -> RFMPB", "nRP", &p, cmd(0, Rfmpb, b), ras + 10 + rp);
    }
    // HBM4: an ACT and an RFMpb of another bank in one bank group are tRRD_L apart both ways
    // (Ramulator 2.1 hbm4.py); nRREFD lowered to show the RFMPB -> ACT row on its own.
    let s = setup_scoped("HBM4-8000/HBM4-32Gb-8Hi-PC", "per-bank", &[("nRREFD", 2)]);
    let (b, same_group) = ((0, 1), (0, 3));
    let l = s.t("nRRD_L");
    s.case(
        "ACT -> RFMPB same bank group",
        "nRRD_L",
        &[cmd(0, Act, same_group)],
        cmd(0, Rfmpb, b),
        l,
    );
    s.case(
        "RFMPB -> ACT same bank group",
        "nRRD_L",
        &[cmd(0, Rfmpb, b)],
        cmd(0, Act, same_group),
        l,
    );
}

/// The checker's own counts and rules for the scoped RFMs: an RFMSB lowers the counts of its
/// bank index in every group (an RFMPB of its bank) by RAAIMT; an RFMSB / RFMPB to an open bank,
/// or on a standard (or log) without it, is refused.
#[test]
fn the_checker_counts_and_refuses_scoped_rfms() {
    for (name, scope, kind, hammered, relieved_elsewhere) in [
        (
            "DDR5-3200AN/DDR5-16Gb-x8",
            "same-bank",
            Rfmsb,
            (3, 1),
            (0, 1),
        ),
        ("HBM3-6400/HBM3-8Gb-PC", "per-bank", Rfmpb, (1, 1), (1, 1)),
        (
            "HBM4-8000/HBM4-32Gb-8Hi-PC",
            "per-bank",
            Rfmpb,
            (1, 1),
            (1, 1),
        ),
    ] {
        let s = setup_scoped(name, scope, &[]);
        let t = |n: &str| s.t(n);
        let (rc, ras, rp, mmt, imt) = (t("nRC"), t("nRAS"), t("nRP"), t("RAAMMT"), t("RAAIMT"));
        let step = rc.max(ras + rp) + 4;
        let hammer = |log: &mut Vec<CommandRecord>, n: u64, at: &mut u64| {
            for _ in 0..n {
                log.push(record(&cmd(*at, Act, hammered), *at));
                log.push(record(&cmd(*at + ras, Pre, hammered), *at + ras));
                *at += step;
            }
        };
        let mut log = Vec::new();
        let mut at = 0;
        hammer(&mut log, mmt, &mut at);
        let refresh = t(if kind == Rfmsb { "nRFMsb" } else { "nRFMpb" });
        // The scoped RFM (to bank group 0 for RFMSB: it names the index) relieves the bank.
        let mut ok = log.clone();
        ok.push(record(&cmd(at, kind, relieved_elsewhere), at));
        at += refresh;
        hammer(&mut ok, imt, &mut at);
        let r = s.check(&ok);
        assert!(r.ok, "{name}: after {kind}: {:?}", r.violations.first());
        hammer(&mut ok, 1, &mut at);
        assert!(
            s.check(&ok)
                .violations
                .iter()
                .any(|v| v.rule_key() == "RAAMMT"),
            "{name}: after {kind}, one more is too many"
        );
        // Another bank's RFM does not relieve it.
        let mut other = log.clone();
        let mut at = mmt * step;
        other.push(record(&cmd(at, kind, (0, 0)), at));
        at += refresh;
        hammer(&mut other, 1, &mut at);
        assert!(
            s.check(&other)
                .violations
                .iter()
                .any(|v| v.rule_key() == "RAAMMT"),
            "{name}: an RFM of another bank relieved it"
        );
        // To an open bank.
        let r = s.check(&[
            record(&cmd(0, Act, hammered), 0),
            record(&cmd(rc, kind, relieved_elsewhere), rc),
        ]);
        let open = if kind == Rfmsb {
            "RFMSB with open banks"
        } else {
            "RFMPB to an open bank"
        };
        assert!(
            r.violations.iter().any(|v| v.rule == open),
            "{name}: {:?}",
            r.violations.first()
        );
    }
    // The other standard's scoped RFM, and either on a device without refresh management.
    for (name, kind, rule) in [
        (
            "HBM3-6400/HBM3-8Gb-PC",
            Rfmsb,
            "RFMSB without same-bank refresh management",
        ),
        (
            "DDR5-3200AN/DDR5-16Gb-x8",
            Rfmpb,
            "RFMPB without per-bank refresh management",
        ),
        (
            "GDDR7-28000/GDDR7-16Gb-x8-CH",
            Rfmpb,
            "RFMPB without per-bank refresh management",
        ),
    ] {
        let s = setup(name, 1, &[]);
        let r = s.check(&[record(&cmd(0, kind, (0, 0)), 0)]);
        assert!(
            r.violations.iter().any(|v| v.rule == rule),
            "{name} {kind}: {:?}",
            r.violations.first()
        );
    }
    let mut off = setup("DDR5-3200AN/DDR5-16Gb-x8", 1, &[]);
    off.cfg.controller.rfm = false;
    off.spec = off.cfg.resolve("t").unwrap();
    let r = off.check(&[record(&cmd(0, Rfmsb, (0, 0)), 0)]);
    assert!(
        r.violations
            .iter()
            .any(|v| v.rule == "RFMSB without same-bank refresh management"),
        "{:?}",
        r.violations.first()
    );
}

#[test]
fn gddr6_every_rule_row_at_its_earliest_cycle() {
    // GDDR6's rows: split nRCDRD / nRCDWR, the DDR4-like bank-group rules, the derived RD -> WR
    // turnaround, all-bank refresh, nFAW and rank-to-rank (clamshell) data-bus rows.
    // The same-bank rows with nRAS 40 and nRC 66 (= nRAS + nRP), so write recovery (nRCDWR + nCWL + nBL + nWR = 50) binds
    // beyond nRAS (53 in the bin), RDA -> ACT beyond nRC, and the helper's probes test them.
    same_bank_rows(
        &setup(
            "GDDR6-14000/GDDR6-8Gb-x16-CH",
            1,
            &[("nRAS", 40), ("nRC", 66)],
        ),
        ("nRCDRD", "nRCDWR"),
    );
    let s = setup("GDDR6-14000/GDDR6-8Gb-x16-CH", 1, &[]);
    let t = |n: &str| s.t(n);
    let (a, same_group, other_group) = ((0, 0), (0, 1), (1, 0));
    let (rcdrd, rcdwr, cl, cwl, bl) = (t("nRCDRD"), t("nRCDWR"), t("nCL"), t("nCWL"), t("nBL"));
    let (rrd_s, rrd_l, ras, rp) = (t("nRRD_S"), t("nRRD_L"), t("nRAS"), t("nRP"));
    s.case(
        "nRRD_S",
        "nRRD_S",
        &[cmd(0, Act, a)],
        cmd(0, Act, other_group),
        rrd_s,
    );
    s.case(
        "nRRD_L",
        "nRRD_L",
        &[cmd(0, Act, a)],
        cmd(0, Act, same_group),
        rrd_l,
    );
    let pl = [
        cmd(0, Act, a),
        cmd(rrd_l, Act, same_group),
        cmd(rrd_l + rcdrd, Rd, a),
    ];
    let e = rrd_l + rcdrd + t("nCCD_L");
    s.case("nCCD_L read", "nCCD_L", &pl, cmd(0, Rd, same_group), e);
    let pw = [
        cmd(0, Act, a),
        cmd(rrd_l, Act, same_group),
        cmd(rrd_l + rcdwr, Wr, a),
    ];
    let e = rrd_l + rcdwr + t("nCCD_L");
    s.case("nCCD_L write", "nCCD_L", &pw, cmd(0, Wr, same_group), e);
    let e = rrd_l + rcdwr + cwl + bl + t("nWTR_L");
    s.case(
        "WR -> RD same group",
        "nCWL+nBL+nWTR_L",
        &pw,
        cmd(0, Rd, same_group),
        e,
    );
    let ps = [
        cmd(0, Act, a),
        cmd(rrd_s, Act, other_group),
        cmd(rrd_s + rcdrd, Rd, a),
    ];
    let e = rrd_s + rcdrd + t("nCCD_S");
    s.case("nCCD_S read", "nCCD_S", &ps, cmd(0, Rd, other_group), e);
    let pw = [
        cmd(0, Act, a),
        cmd(rrd_s, Act, other_group),
        cmd(rrd_s + rcdwr, Wr, a),
    ];
    let e = rrd_s + rcdwr + t("nCCD_S");
    s.case("nCCD_S write", "nCCD_S", &pw, cmd(0, Wr, other_group), e);
    let e = rrd_s + rcdwr + cwl + bl + t("nWTR_S");
    s.case(
        "WR -> RD other group",
        "nCWL+nBL+nWTR_S",
        &pw,
        cmd(0, Rd, other_group),
        e,
    );
    let p = [cmd(0, Act, a), cmd(rcdrd, Rd, a)];
    let e = rcdrd + cl + bl + 2 - cwl;
    s.case("RD -> WR", "nCL+nBL+2-nCWL", &p, cmd(0, Wr, a), e);
    // Precharge all and all-bank refresh.
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case("PREA -> ACT", "nRP", &p, cmd(0, Act, other_group), ras + rp);
    s.case("nRFC", "nRFC", &[cmd(0, Ref, a)], cmd(0, Act, a), t("nRFC"));
    let p = [cmd(0, Act, a), cmd(ras + 10, Pre, a)];
    s.case("PRE -> REF", "nRP", &p, cmd(0, Ref, a), ras + 10 + rp);
    // nFAW binds beyond 4 x nRRD_S (28 > 4 x 5 at 14 Gb/s).
    assert!(t("nFAW") > 4 * rrd_s);
    let p: Vec<Cmd> = (0..4).map(|g| cmd(g as u64 * rrd_s, Act, (g, 0))).collect();
    s.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 1)), t("nFAW"));
    // Two ranks (clamshell) share the channel's data bus.
    let r = setup("GDDR6-14000/GDDR6-8Gb-x16-CH", 2, &[]);
    let rtrs = r.t("nRTRS");
    let p = [
        cmd(0, Act, a),
        on_rank(cmd(2, Act, a), 1),
        cmd(rcdrd + 2, Rd, a),
    ];
    let probe = on_rank(cmd(0, Rd, a), 1);
    r.case(
        "RD -> RD other rank",
        "nBL+nRTRS",
        &p,
        probe,
        rcdrd + 2 + bl + rtrs,
    );
}

#[test]
fn gddr6_per_bank_refresh_rows_at_their_earliest_cycle() {
    // GDDR6's REFpb (Ramulator 2.1's gddr6.py list): at its bank the all-bank refresh rows with
    // nRFCpb; on the channel nRREFD both ways between REFPB and REFPB / ACT of another bank, and
    // nRRD_L from an ACT to a REFPB of another bank (in any bank group).
    let s = setup("GDDR6-14000/GDDR6-8Gb-x16-CH", 1, &[]);
    per_bank_rows(&s);
    let t = |n: &str| s.t(n);
    per_bank_rank_rows(&s, "nRRD_L");
    let (a, same_group, other_group) = ((0, 0), (0, 1), (1, 0));
    let rrd_l = t("nRRD_L");
    assert!(rrd_l > t("nRRD_S"));
    // In the same bank group too (another group: per_bank_rank_rows).
    let p = [cmd(0, Act, a)];
    s.case(
        "ACT -> REFPB",
        "nRRD_L",
        &p,
        cmd(0, Refpb, same_group),
        rrd_l,
    );
    let (ras, rp) = (t("nRAS"), t("nRP"));
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case(
        "PREA -> REFPB",
        "nRP",
        &p,
        cmd(0, Refpb, other_group),
        ras + rp,
    );
}

#[test]
fn gddr7_every_rule_row_at_its_earliest_cycle() {
    // GDDR7's rows: 16 banks without bank groups, channel-wide nCCD / nRRD / nWTR, the same-bank
    // column rows (nCCDSB, nWTRSB), nRTW, nPPD, two-clock ACT / RD / WR, all-bank refresh.
    // The same-bank rows with nRAS 40 and nRC 70 (= nRAS + nRP), so that write recovery
    // (nRCDWR + nCWL + nBL + nWR = 57) binds beyond nRAS (60 in the bin).
    same_bank_rows(
        &setup(
            "GDDR7-28000/GDDR7-16Gb-x8-CH",
            1,
            &[("nRAS", 40), ("nRC", 70)],
        ),
        ("nRCDRD", "nRCDWR"),
    );
    let s = setup("GDDR7-28000/GDDR7-16Gb-x8-CH", 1, &[]);
    let t = |n: &str| s.t(n);
    let (a, b) = ((0, 0), (0, 1));
    let (rcdrd, rcdwr, cwl, bl) = (t("nRCDRD"), t("nRCDWR"), t("nCWL"), t("nBL"));
    let (rrd, ras, rp) = (t("nRRD"), t("nRAS"), t("nRP"));
    // Two-clock commands hold the command bus for the next clock.
    for k in [Rd, Wr, Rda, Wra] {
        let p = [cmd(0, Act, a), cmd(rcdrd, k, a)];
        let name = format!("{k} two clocks");
        s.case(&name, "2", &p, cmd(0, Pre, b), rcdrd + 2);
    }
    s.case("ACT two clocks", "2", &[cmd(0, Act, a)], cmd(0, Pre, b), 2);
    // Activations of two banks.
    s.case("nRRD", "nRRD", &[cmd(0, Act, a)], cmd(0, Act, b), rrd);
    // Column commands to two banks: nCCD (= nBL).
    let pr = [cmd(0, Act, a), cmd(rrd, Act, b), cmd(rrd + rcdrd, Rd, a)];
    let e = rrd + rcdrd + t("nCCD");
    s.case("nCCD read", "nCCD", &pr, cmd(0, Rd, b), e);
    let pw = [cmd(0, Act, a), cmd(rrd, Act, b), cmd(rrd + rcdwr, Wr, a)];
    let e = rrd + rcdwr + t("nCCD");
    s.case("nCCD write", "nCCD", &pw, cmd(0, Wr, b), e);
    let e = rrd + rcdrd.max(rcdwr + cwl + bl + t("nWTR"));
    s.case(
        "WR -> RD other bank",
        "nCWL+nBL+nWTR",
        &pw,
        cmd(0, Rd, b),
        e,
    );
    assert!(rcdwr + cwl + bl + t("nWTR") > rcdrd, "nWTR binds");
    // Column commands to one bank: nCCDSB, and a read after a write nWTRSB.
    let p = [cmd(0, Act, a), cmd(rcdrd, Rd, a)];
    let e = rcdrd + t("nCCDSB");
    s.case("nCCDSB read", "nCCDSB", &p, cmd(0, Rd, a), e);
    let p = [cmd(0, Act, a), cmd(rcdwr, Wr, a)];
    s.case(
        "nCCDSB write",
        "nCCDSB",
        &p,
        cmd(0, Wr, a),
        rcdwr + t("nCCDSB"),
    );
    let e = rcdwr + cwl + bl + t("nWTRSB");
    assert!(e > rcdrd, "nWTRSB binds beyond nRCDRD");
    s.case(
        "WR -> RD same bank",
        "nCWL+nBL+nWTRSB",
        &p,
        cmd(0, Rd, a),
        e,
    );
    // Read to write.
    let p = [cmd(0, Act, a), cmd(rcdrd, Rd, a)];
    s.case("nRTW", "nRTW", &p, cmd(0, Wr, a), rcdrd + t("nRTW"));
    // Precharge to precharge, precharge all, all-bank refresh.
    let p = [cmd(0, Act, a), cmd(rrd, Act, b), cmd(ras + 20, Pre, a)];
    s.case("nPPD", "nPPD", &p, cmd(0, Pre, b), ras + 20 + t("nPPD"));
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case("PREA -> ACT", "nRP", &p, cmd(0, Act, b), ras + rp);
    s.case("nRFC", "nRFC", &[cmd(0, Ref, a)], cmd(0, Act, a), t("nRFC"));
    let p = [cmd(0, Act, a), cmd(ras + 10, Pre, a)];
    s.case("PRE -> REF", "nRP", &p, cmd(0, Ref, a), ras + 10 + rp);
    // The four-activate window (no tFAW in the sources: 4 x nRRD, coinciding with nRRD).
    assert_eq!(t("nFAW"), 4 * rrd);
    let p: Vec<Cmd> = (0..4).map(|k| cmd(k as u64 * rrd, Act, (0, k))).collect();
    s.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 4)), t("nFAW"));
    // Two ranks (clamshell) share the channel's data bus.
    let r = setup("GDDR7-28000/GDDR7-16Gb-x8-CH", 2, &[]);
    let p = [
        cmd(0, Act, a),
        on_rank(cmd(2, Act, a), 1),
        cmd(rcdrd + 2, Rd, a),
    ];
    let e = rcdrd + 2 + bl + r.t("nRTRS");
    r.case(
        "RD -> RD other rank",
        "nBL+nRTRS",
        &p,
        on_rank(cmd(0, Rd, a), 1),
        e,
    );
}

#[test]
fn gddr7_has_no_per_bank_refresh_here() {
    let s = setup("GDDR7-28000/GDDR7-16Gb-x8-CH", 1, &[]);
    let report = s.check(&[record(&cmd(0, Refpb, (0, 0)), 0)]);
    assert!(!report.ok);
}

#[test]
fn hbm4_every_rule_row_at_its_earliest_cycle() {
    let s = setup("HBM4-8000/HBM4-32Gb-8Hi-PC", 1, &[]);
    let t = |n: &str| s.t(n);
    hbm_rows(&s);
    let (a, same_group, other_group) = ((0, 0), (0, 1), (1, 0));
    // HBM4: an ACT and a REFPB of one bank group are nRRD_L apart, both ways.
    let rrd_l = t("nRRD_L");
    assert!(rrd_l > t("nRRD_S"));
    let p = [cmd(0, Act, a)];
    s.case(
        "ACT -> REFPB same group",
        "nRRD_L",
        &p,
        cmd(0, Refpb, same_group),
        rrd_l,
    );
    // REFPB -> ACT of the group: nRREFD (16) hides nRRD_L (7) in the bin; with nRREFD 3 it binds.
    let q = setup("HBM4-8000/HBM4-32Gb-8Hi-PC", 1, &[("nRREFD", 3)]);
    let p = [cmd(0, Refpb, a)];
    q.case(
        "REFPB -> ACT same group",
        "nRRD_L",
        &p,
        cmd(0, Act, same_group),
        rrd_l,
    );
    q.case(
        "REFPB -> ACT other group",
        "nRREFD",
        &p,
        cmd(0, Act, other_group),
        3,
    );
    // nFAW binds beyond 4 x nRRD_L (two bank groups).
    let p: Vec<Cmd> = (0..4u32)
        .map(|k| cmd(k as u64 * rrd_l, Act, (k % 2, k / 2)))
        .collect();
    assert!(t("nFAW") > 4 * rrd_l);
    s.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 2)), t("nFAW"));
    // Another SID (a movelab rank): RD -> RD nCCD_R = nBL + nRTRS = nBL.
    hbm_other_sid("HBM4-8000/HBM4-32Gb-8Hi-PC", 2);
}

/// HBM's separate row and column command buses (JESD235, JESD238, JESD270-4): after a RD at `r`,
/// an ACT of another bank is legal in that same clock (the row bus is free), a second column
/// command only when its timing rule allows it (nCCD_S after the RD: exactly then, not a cycle
/// earlier, and never in the RD's own clock); on DDR4 the ACT must wait for the next clock.
#[test]
fn hbm_row_and_column_commands_share_a_clock_at_their_earliest_cycle() {
    for preset in [
        "HBM2-2000/HBM2-8Gb-PC",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
    ] {
        let s = setup(preset, 1, &[]);
        let t = |n: &str| s.t(n);
        let (a, b) = ((0, 0), (1, 0));
        let r = t("nRCDRD");
        let prefix = [cmd(0, Act, a), cmd(r, Rd, a)];
        // The ACT of another bank: the device model (which knows no command bus) allows it by
        // the RD's clock, and the checker accepts it in that clock.
        let probe = row(cmd(0, Act, b), 9);
        assert!(s.earliest(&prefix, &probe) <= r, "{preset}");
        let mut log: Vec<CommandRecord> = prefix.iter().map(|c| record(c, c.cycle)).collect();
        log.push(record(&probe, r));
        let ok = s.check(&log);
        assert!(
            ok.ok,
            "{preset}: {:?}",
            ok.violations.first().map(|v| &v.message)
        );
        // A second column command (another bank, opened well before): nCCD_S after the RD.
        let open_b = row(cmd(t("nFAW") + 4, Act, b), 9);
        let rd_at = t("nFAW") + 4 + r + 20;
        let prefix = [cmd(0, Act, a), open_b, cmd(rd_at, Rd, a)];
        s.case(
            "RD -> RD other bank group",
            "nCCD_S",
            &prefix,
            row(cmd(0, Rd, b), 9),
            rd_at + t("nCCD_S"),
        );
        // In the RD's own clock: refused as the column bus's second command.
        let mut log: Vec<CommandRecord> = prefix.iter().map(|c| record(c, c.cycle)).collect();
        log.push(record(&row(cmd(0, Rd, b), 9), rd_at));
        let same = s.check(&log);
        assert!(
            same.violations
                .iter()
                .any(|v| v.index == 3 && v.rule_key() == "command bus"),
            "{preset}"
        );
    }
    // DDR4: one command bus; the ACT beside the RD is refused, one clock later accepted.
    let s = setup("DDR4-2400R/DDR4-8Gb-x8", 1, &[]);
    let r = s.t("nRCD");
    let prefix = [cmd(0, Act, (0, 0)), cmd(r, Rd, (0, 0))];
    let probe = row(cmd(0, Act, (1, 0)), 9);
    let mut log: Vec<CommandRecord> = prefix.iter().map(|c| record(c, c.cycle)).collect();
    log.push(record(&probe, r));
    let same = s.check(&log);
    assert!(
        same.violations
            .iter()
            .any(|v| v.index == 2 && v.rule_key() == "command bus"),
        "DDR4 row + column in one clock: {:?}",
        same.violations.iter().map(|v| &v.rule).collect::<Vec<_>>()
    );
    log.last_mut().unwrap().cycle = r + 1;
    assert!(s.check(&log).ok, "DDR4: the ACT a clock later");
}

/// HBM's ACT holds the row command bus past its own clock: HBM2's two clocks (JESD235 as
/// Ramulator 2.1's hbm2.py codes it: command_cycles ACT 2), HBM3's and HBM4's 1.5 clocks
/// (JESD238 / JESD270-4 as hbm3.py / hbm4.py code it: ACT 1.5), which on rising edges puts the
/// next row command 2 clocks after the ACT. The column bus is not held.
#[test]
fn hbm_act_holds_the_row_bus_past_its_clock() {
    for preset in [
        "HBM2-2000/HBM2-8Gb-PC",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
    ] {
        let s = setup(preset, 2, &[]);
        let t = |n: &str| s.t(n);
        let (a, b) = ((0, 0), (1, 0));
        let p = [cmd(0, Act, a)];
        s.case(
            &format!("{preset}: ACT -> ACT other rank"),
            "2",
            &p,
            on_rank(cmd(0, Act, a), 1),
            2,
        );
        // A PRE of another bank, whose nRAS ends the clock after the ACT: on HBM2 two clocks
        // after the ACT; on HBM3 / HBM4 on the falling edge of the clock after it (the row bus's
        // half-clock commands), refused in the ACT's own clock.
        let ras = t("nRAS");
        let p = [cmd(0, Act, b), cmd(ras - 1, Act, a)];
        let (key, at) = if preset.starts_with("HBM2") {
            ("2", ras + 1)
        } else {
            ("command bus", ras)
        };
        s.case(
            &format!("{preset}: ACT -> PRE other bank"),
            key,
            &p,
            cmd(0, Pre, b),
            at,
        );
        s.case(
            &format!("{preset}: ACTC -> ACT other rank"),
            "2",
            &[cmd(0, Act, a), cmd(ras, Actc, a)],
            on_rank(cmd(0, Act, b), 1),
            ras + 2,
        );
        // The column bus is free the clock after an ACT: a RD of an open bank issues there.
        let rcd = t("nRCDRD");
        let p = [cmd(0, Act, b), cmd(rcd - 1, Act, a)];
        assert_eq!(s.earliest(&p, &cmd(0, Rd, b)), rcd, "{preset}");
        let mut log: Vec<CommandRecord> = p.iter().map(|c| record(c, c.cycle)).collect();
        log.push(record(&cmd(0, Rd, b), rcd));
        let r = s.check(&log);
        assert!(
            r.ok,
            "{preset}: {:?}",
            r.violations.first().map(|v| &v.message)
        );
    }
    // HBM3 / HBM4: a REF, REFPB or RFM (half-clock row commands) waits the same 2 clocks.
    for preset in ["HBM3-6400/HBM3-8Gb-PC", "HBM4-8000/HBM4-32Gb-8Hi-PC"] {
        let s = setup(preset, 2, &[]);
        let p = [cmd(0, Act, (0, 0))];
        s.case(
            &format!("{preset}: ACT -> REF other rank"),
            "2",
            &p,
            on_rank(cmd(0, Ref, (0, 0)), 1),
            2,
        );
    }
}

/// HBM3 / HBM4's half-clock row commands (JESD238 / JESD270-4; Table 35 as Ramulator 2.1 codes
/// it): a PRE of another bank goes on the falling edge of the clock after an ACT, or beside a
/// REFPB / RFMPB in its clock; the rules it starts count from the next clock; an all-bank command
/// pairs with nothing, and only a PRE takes a falling edge.
#[test]
fn hbm3_and_hbm4_half_clock_pre_at_its_earliest_cycle() {
    for preset in ["HBM3-6400/HBM3-8Gb-PC", "HBM4-8000/HBM4-32Gb-8Hi-PC"] {
        let s = setup(preset, 2, &[]);
        let t = |n: &str| s.t(n);
        let (rp, ppd, ras) = (t("nRP"), t("nPPD"), t("nRAS"));
        let (a, b, c) = ((0, 0), (1, 0), (1, 1));
        // ACT b, then ACT a at `x` and a falling-edge PRE of b at x + 1.
        let x = ras - 1;
        let p = [cmd(0, Act, b), cmd(x, Act, a), cmd(x + 1, Pre, b)];
        // The row bus's next rising edge is free: another SID's ACT 2 clocks after the ACT, as
        // without the PRE (the ACT's hold, "2").
        s.case(
            &format!("{preset}: ACT, falling PRE -> ACT other rank"),
            "2",
            &p,
            on_rank(cmd(0, Act, c), 1),
            x + 2,
        );
        // The PRE's rules count from the clock after its own: PRE -> ACT of its bank nRP + 1.
        s.case(
            &format!("{preset}: falling PRE -> ACT same bank"),
            "nRP",
            &p,
            row(cmd(0, Act, b), 9),
            x + 2 + rp,
        );
        // PRE -> PRE nPPD from the next clock.
        s.case(
            &format!("{preset}: falling PRE -> PRE"),
            "nPPD",
            &[
                cmd(0, Act, b),
                cmd(8, Act, c),
                cmd(ras + 8, Act, a),
                cmd(ras + 9, Pre, b),
            ],
            cmd(0, Pre, c),
            ras + 10 + ppd,
        );
        // Beside a REFPB in its clock (both banks precharged before; the PRE's bank open).
        let r = 200;
        let p = [cmd(0, Act, b), cmd(r, Refpb, a)];
        assert_eq!(s.earliest(&p, &cmd(0, Pre, b)), ras.max(1), "{preset}");
        let mut log: Vec<CommandRecord> = p.iter().map(|c| record(c, c.cycle)).collect();
        log.push(record(&cmd(0, Pre, b), r));
        let ok = s.check(&log);
        assert!(ok.ok, "{preset}: REFPB + PRE: {:?}", ok.violations.first());
        // ... and its rules from the next clock: ACT of the PRE's bank at r + 1 + nRP.
        let mut dev_prefix = p.to_vec();
        dev_prefix.push(cmd(r, Pre, b));
        assert_eq!(
            s.earliest(&dev_prefix, &row(cmd(0, Act, b), 9)),
            r + 1 + rp,
            "{preset}"
        );
        log.push(record(&row(cmd(0, Act, b), 9), r + rp));
        let early = s.check(&log);
        assert!(
            early
                .violations
                .iter()
                .any(|v| v.index == 3 && v.rule_key() == "nRP"),
            "{preset}: {:?}",
            early.violations
        );
        // What does not pair: a PRE of the REFPB's own bank, a PREA, a second PRE, a PRE after
        // an all-bank command, a REFPB on the falling edge.
        let refused = |log: &[CommandRecord], what: &str| {
            let r = s.check(log);
            assert!(
                r.violations
                    .iter()
                    .any(|v| v.index == log.len() as u64 - 1 && v.rule == "command bus"),
                "{preset}: {what}: {:?}",
                r.violations
            );
        };
        let base = vec![record(&cmd(0, Act, b), 0)];
        let with = |extra: &[(Cmd, u64)]| {
            let mut l = base.clone();
            l.extend(extra.iter().map(|(c, at)| record(c, *at)));
            l
        };
        refused(
            &with(&[(cmd(0, Refpb, b), r), (cmd(0, Pre, b), r)]),
            "PRE of the REFPB's bank",
        );
        refused(
            &with(&[(cmd(0, Refpb, a), r), (cmd(0, Prea, b), r)]),
            "PREA on a falling edge",
        );
        refused(
            &with(&[(cmd(0, Refpb, a), r), (cmd(0, Refpb, c), r)]),
            "REFPB on a falling edge",
        );
        refused(
            &[record(&cmd(0, Prea, a), r), record(&cmd(0, Pre, b), r)],
            "PRE after a PREA",
        );
        refused(
            &[record(&cmd(0, Ref, a), r), record(&cmd(0, Pre, b), r)],
            "PRE after a REF",
        );
    }
}

/// LPDDR6 (JESD209-6 as Ramulator 2.1 tabulates it): every rule row of `lpddr6.toml` at its
/// earliest cycle, with BL24 accesses, and of `lpddr6-bl48.toml` with BL48 accesses; the checker
/// knows the rules from its own table.
#[test]
fn lpddr6_every_rule_row_at_its_earliest_cycle() {
    lpddr6_rows("LPDDR6-10667/LPDDR6-16Gb-SC");
    let name = "LPDDR6-10667-BL48/LPDDR6-16Gb-SC";
    let s = setup(name, 1, &[]);
    // BL48's values (Ramulator 2.1's BL48 quantities): a 64-byte access, BL/n_min 18 (two BL24
    // segments and the segment gap), BL/n_max 24, nRTP(BL48) 26, nCCDL_L 22, the read-to-write
    // turnarounds with BL48's BL/n; other bank groups a whole burst window apart (no interleave).
    assert_eq!(s.spec.org.line_bytes(), 64);
    let v = |n: &str| s.t(n);
    assert_eq!(
        [v("nBL"), v("nBL_max"), v("nRTP"), v("nCCD_L"), v("nCCD_S")],
        [18, 24, 26, 22, 18]
    );
    assert_eq!([v("nRTW"), v("nRTW_L")], [56 + 18 - 21, 56 + 24 - 21]);
    lpddr6_rows(name);
}

fn lpddr6_rows(name: &str) {
    let s = setup(name, 1, &[]);
    let t = |n: &str| s.t(n);
    // The bin's derived values: RAS cycle, write recovery, refresh.
    assert_eq!(t("nRC"), t("nRAS") + t("nRPab"));
    assert_eq!(
        t("nCWL") + t("nBL") + t("nWR"),
        t("nCWL") + t("nBL_max") + t("nWTP"),
        "nWR is derived so the generic write recovery equals WL + BL/n_max + tWTP"
    );
    assert_eq!([t("nRFC"), t("nREFI")], [1014, 10416]);
    let (a, same_group, other_group) = ((0, 0), (0, 1), (1, 0));
    let (rcdrd, rcdwr, ras, rp) = (t("nRCDRD"), t("nRCDWR"), t("nRAS"), t("nRP"));
    let (cwl, bl, bl_max) = (t("nCWL"), t("nBL"), t("nBL_max"));
    // Command bus: an ACT (ACT-1 + ACT-2) holds it 4 clocks, every other command 2.
    s.case(
        "ACT four clocks",
        "4",
        &[cmd(0, Act, a)],
        cmd(0, Pre, other_group),
        4,
    );
    let p = [cmd(0, Act, a), cmd(rcdrd, Rd, a)];
    s.case(
        "RD two clocks",
        "2",
        &p,
        cmd(0, Pre, other_group),
        rcdrd + 2,
    );
    let p = [cmd(0, Act, a), cmd(ras, Pre, a)];
    s.case("PRE two clocks", "2", &p, cmd(0, Act, other_group), ras + 2);
    // Same bank (with nWTR_L and nWTR_S lowered: in the bins the write-to-read rows hide
    // WR -> RDA's write-recovery row).
    same_bank_rows(
        &setup(name, 1, &[("nWTR_L", 4), ("nWTR_S", 4)]),
        ("nRCDRD", "nRCDWR"),
    );
    // Activations: one tRRD for any two banks; four per tFAW (which binds beyond 4 x nRRD).
    let rrd = t("nRRD");
    s.case(
        "nRRD same group",
        "nRRD",
        &[cmd(0, Act, a)],
        cmd(0, Act, same_group),
        rrd,
    );
    s.case(
        "nRRD other group",
        "nRRD",
        &[cmd(0, Act, a)],
        cmd(0, Act, other_group),
        rrd,
    );
    assert_eq!(t("nFAW"), 4 * rrd);
    let w = setup(name, 1, &[("nFAW", 4 * rrd + 3)]);
    let p: Vec<Cmd> = (0..4).map(|g| cmd(g as u64 * rrd, Act, (g, 0))).collect();
    w.case("nFAW", "nFAW", &p, cmd(0, Act, (0, 1)), 4 * rrd + 3);
    // Column commands in one group and in two, and the turnarounds.
    for (other, ccd, wtr_key, wtr_bl, wtr, rtw_key) in [
        (
            same_group,
            "nCCD_L",
            "nCWL+nBL_max+nWTR_L",
            bl_max,
            t("nWTR_L"),
            "nRTW_L",
        ),
        (
            other_group,
            "nCCD_S",
            "nCWL+nBL+nWTR_S",
            bl,
            t("nWTR_S"),
            "nRTW",
        ),
    ] {
        let pr = [
            cmd(0, Act, a),
            cmd(rrd, Act, other),
            cmd(rrd + rcdrd, Rd, a),
        ];
        let e = rrd + rcdrd + t(ccd);
        s.case(&format!("{ccd} read"), ccd, &pr, cmd(0, Rd, other), e);
        let e = rrd + rcdrd + t(rtw_key);
        s.case(rtw_key, rtw_key, &pr, cmd(0, Wr, other), e);
        let pw = [
            cmd(0, Act, a),
            cmd(rrd, Act, other),
            cmd(rrd + rcdwr, Wr, a),
        ];
        let e = rrd + rcdwr + t(ccd);
        s.case(&format!("{ccd} write"), ccd, &pw, cmd(0, Wr, other), e);
        let e = (rrd + rcdwr + cwl + wtr_bl + wtr).max(rrd + rcdrd);
        assert!(e > rrd + rcdrd, "{wtr_key} binds");
        s.case(wtr_key, wtr_key, &pw, cmd(0, Rd, other), e);
    }
    // Precharges, PREA (tRPab), all-bank refresh.
    let p = [
        cmd(0, Act, a),
        cmd(rrd, Act, other_group),
        cmd(ras + 20, Pre, a),
    ];
    s.case(
        "nPPD",
        "nPPD",
        &p,
        cmd(0, Pre, other_group),
        ras + 20 + t("nPPD"),
    );
    let rpab = t("nRPab");
    let p = [cmd(0, Act, a), cmd(ras, Prea, a)];
    s.case(
        "PREA -> ACT",
        "nRPab",
        &p,
        cmd(0, Act, other_group),
        ras + rpab,
    );
    s.case("PREA -> REF", "nRPab", &p, cmd(0, Ref, a), ras + rpab);
    s.case("nRFC", "nRFC", &[cmd(0, Ref, a)], cmd(0, Act, a), t("nRFC"));
    let p = [cmd(0, Act, a), cmd(ras + 10, Pre, a)];
    s.case("PRE -> REF", "nRP", &p, cmd(0, Ref, a), ras + 10 + rp);
    // RowClone FPM rows.
    s.case(
        "ACT -> ACTC",
        "nRAS",
        &[cmd(0, Act, a)],
        row(cmd(0, Actc, a), 6),
        ras,
    );
    let p = [cmd(0, Act, a), row(cmd(ras, Actc, a), 6)];
    s.case("ACTC -> PRE", "nRAS", &p, cmd(0, Pre, a), 2 * ras);
    // Two ranks share the data bus: another rank's read nBL + nRTRS after a read.
    let r = setup(name, 2, &[]);
    let p = [
        cmd(0, Act, a),
        on_rank(cmd(4, Act, a), 1),
        cmd(rcdrd + 4, Rd, a),
    ];
    let e = rcdrd + 4 + bl + r.t("nRTRS");
    r.case(
        "RD -> RD other rank",
        "nBL+nRTRS",
        &p,
        on_rank(cmd(0, Rd, a), 1),
        e,
    );
    // No per-bank refresh modelled on LPDDR6: a REFPB is refused.
    assert!(!s.check(&[record(&cmd(0, Refpb, a), 0)]).ok);
}

/// A DDR5 setup refreshing all-bank in `mode` ("normal" or "fine-granularity").
fn setup_refresh_mode(name: &str, mode: &str) -> Setup {
    let mut cfg = Config::preset(name).unwrap();
    cfg.controller.refresh = "all-bank".into();
    cfg.controller.refresh_mode = mode.into();
    let spec = cfg.resolve("test").unwrap();
    Setup { cfg, spec }
}

#[test]
fn ddr5_fine_granularity_refresh_rows_at_their_earliest_cycle() {
    // JESD79-5 REF mode 2: REF holds the rank for tRFC2 (16 Gb: 160 ns), RFMab for tRFM2 = tRFC2;
    // at DDR5-4800B (tCK 416 ps) ceil(160 / 0.416) = 385 clocks, tREFI2 = floor(1950 / 0.416).
    let s = setup_refresh_mode("DDR5-4800B/DDR5-16Gb-x8", "fine-granularity");
    let t = |n: &str| s.t(n);
    assert_eq!(t("nRFC2"), (160_000f64 / t("tCK_ps") as f64).ceil() as u64);
    assert_eq!([t("nRFC"), t("nRFM")], [t("nRFC2"), t("nRFC2")]);
    assert_eq!(t("nREFI"), 1_950_000 / t("tCK_ps"));
    assert_eq!(t("nREFI1"), 3_900_000 / t("tCK_ps"));
    let rfc2 = t("nRFC2");
    let (a, other_group) = ((0, 0), (1, 1));
    s.case(
        "REF -> ACT",
        "nRFC2",
        &[cmd(0, Ref, a)],
        cmd(0, Act, other_group),
        rfc2,
    );
    s.case(
        "REF -> REF",
        "nRFC2",
        &[cmd(0, Ref, a)],
        cmd(0, Ref, a),
        rfc2,
    );
    s.case(
        "REF -> PREA",
        "nRFC2",
        &[cmd(0, Ref, a)],
        cmd(0, Prea, a),
        rfc2,
    );
    s.case(
        "REF -> RFM",
        "nRFC2",
        &[cmd(0, Ref, a)],
        cmd(0, Rfm, a),
        rfc2,
    );
    s.case(
        "RFM -> ACT",
        "nRFM",
        &[cmd(0, Rfm, a)],
        cmd(0, Act, a),
        rfc2,
    );
    let normal = setup_refresh_mode("DDR5-4800B/DDR5-16Gb-x8", "normal");
    assert!(normal.t("nRFC") > rfc2);
    assert!(normal.spec.param("nRFC2").is_none() && normal.spec.param("FGR").is_none());
}

#[test]
fn the_checker_holds_each_refresh_mode_to_its_own_timing() {
    let fgr = setup_refresh_mode("DDR5-3200AN/DDR5-16Gb-x8", "fine-granularity");
    let normal = setup_refresh_mode("DDR5-3200AN/DDR5-16Gb-x8", "normal");
    let rfc2 = fgr.t("nRFC2");
    let a = (0, 0);
    // A REF followed by an ACT tRFC2 later: legal in FGR mode, too early (tRFC1) in normal mode.
    let log = [record(&cmd(0, Ref, a), 0), record(&cmd(0, Act, a), rfc2)];
    assert!(fgr.check(&log).ok, "{:?}", fgr.check(&log).violations);
    let r = normal.check(&log);
    assert!(
        r.violations.iter().any(|v| v.rule_key() == "nRFC"),
        "{:?}",
        r.violations
    );
    // REFs every 2 x tREFI2 (= tREFI, normal mode's pace): clean in normal mode, a missing
    // refresh in FGR mode once more than 8 are owed.
    let refi2 = fgr.t("nREFI");
    assert_eq!(normal.t("nREFI"), 2 * refi2);
    let log: Vec<CommandRecord> = (0..40)
        .map(|i| record(&cmd(0, Ref, a), 10 + i * 2 * refi2))
        .collect();
    let r = normal.check(&log);
    assert!(r.ok, "{:?}", r.violations);
    let r = fgr.check(&log);
    assert!(
        r.violations.iter().any(|v| v.rule_key() == "nREFI2"),
        "{:?}",
        r.violations
    );
    // A header whose nRFC disagrees with the FGR inputs is refused, naming them.
    let mut h = log_header(&fgr.cfg, &fgr.spec);
    h.timing.insert("nRFC".into(), normal.t("nRFC"));
    let Err(e) = Checker::new(&h) else {
        panic!("inconsistent FGR header accepted")
    };
    assert!(e.to_string().contains("nRFC2"), "{e}");
}
