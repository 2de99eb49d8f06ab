//! Tests of the timing checker. Every rule gets a hand-built legal sequence that passes and the
//! same sequence with one command a cycle earlier that fails naming the rule; a greedy generator
//! (its own model of the rules: last-event times per bank and rank, not a history scan) builds
//! random legal sequences for the property tests.
use super::*;
use crate::command::{CommandKind::*, TransferDst, LOG_MAGIC};
use crate::config::Config;
use proptest::prelude::*;
use std::collections::BTreeSet;

// ------------------------------------------------------------------------------------------------
// Helpers

fn header(preset: &str) -> LogHeader {
    let spec = Config::preset(preset)
        .expect("preset")
        .resolve("test")
        .expect("resolve");
    header_from_spec(&spec, false)
}

fn ddr3() -> LogHeader {
    header("DDR3-1600K/DDR3-4Gb-x8")
}

fn ddr4() -> LogHeader {
    header("DDR4-2400R/DDR4-8Gb-x8")
}

/// `h` with some timing parameters replaced.
fn with(mut h: LogHeader, kv: &[(&str, u64)]) -> LogHeader {
    for (k, v) in kv {
        assert!(h.timing.contains_key(*k), "no parameter {k}");
        h.timing.insert((*k).to_string(), *v);
    }
    h
}

fn ranks(mut h: LogHeader, n: u32) -> LogHeader {
    h.org.ranks = n;
    h
}

fn t(h: &LogHeader, name: &str) -> u64 {
    h.timing[name]
}

/// A command to `(bank group, bank)` of `rank` on channel 0, column 0.
fn c(cycle: u64, kind: CommandKind, rank: u32, bank: (u32, u32), row: u32) -> CommandRecord {
    CommandRecord {
        cycle,
        kind,
        channel: 0,
        rank,
        bank_group: bank.0,
        bank: bank.1,
        row,
        column: 0,
        dst: None,
    }
}

/// A command to bank `b` (no bank groups) of rank 0, row `row`.
fn b(cycle: u64, kind: CommandKind, bank: u32, row: u32) -> CommandRecord {
    c(cycle, kind, 0, (0, bank), row)
}

fn tr(cycle: u64, src: (u32, u32), src_row: u32, dst: (u32, u32), dst_row: u32) -> CommandRecord {
    CommandRecord {
        cycle,
        kind: Tr,
        channel: 0,
        rank: 0,
        bank_group: src.0,
        bank: src.1,
        row: src_row,
        column: 1,
        dst: Some(TransferDst {
            bank_group: dst.0,
            bank: dst.1,
            row: dst_row,
            column: 2,
        }),
    }
}

fn run(h: &LogHeader, cmds: &[CommandRecord]) -> CheckReport {
    let mut ck = Checker::new(h).expect("checker");
    for r in cmds {
        let _ = ck.check(r);
    }
    ck.finish()
}

fn show(r: &CheckReport) -> String {
    r.violations
        .iter()
        .map(|v| format!("  #{} {} ({})\n", v.index, v.rule, v.message))
        .collect()
}

fn assert_ok(h: &LogHeader, cmds: &[CommandRecord]) {
    let r = run(h, cmds);
    assert!(r.ok, "legal sequence rejected:\n{}", show(&r));
    assert_eq!(r.commands_checked, cmds.len() as u64);
}

/// The sequence passes; with command `k` one cycle earlier it fails at `k` on a rule whose key is
/// `key` and whose text contains `text`, and only with timing violations.
fn edge(h: &LogHeader, cmds: &[CommandRecord], k: usize, key: &str, text: &str) -> CheckReport {
    assert_ok(h, cmds);
    let mut early = cmds.to_vec();
    early[k].cycle -= 1;
    let r = run(h, &early);
    assert!(
        r.violations
            .iter()
            .any(|v| v.index == k as u64 && v.rule_key() == key && v.rule.contains(text)),
        "expected {key} ('{text}') at #{k}, got:\n{}",
        show(&r)
    );
    assert!(
        r.violations.iter().all(|v| v.kind == ViolationKind::Timing),
        "non-timing violation:\n{}",
        show(&r)
    );
    let v = r
        .violations
        .iter()
        .find(|v| v.rule_key() == key)
        .expect("found above");
    assert_eq!(
        v.actual_cycles + 1,
        v.required_cycles as i64,
        "{}",
        v.message
    );
    r
}

fn protocol_rules(r: &CheckReport) -> Vec<String> {
    r.violations
        .iter()
        .filter(|v| v.kind == ViolationKind::Protocol)
        .map(|v| v.rule.clone())
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Same-bank rules (DDR3-1600K: nRCD 11, nRP 11, nRAS 28, nRC 39, nCL 11, nCWL 8, nWR 12, nRTP 6)

#[test]
fn nrcd_act_to_column_commands() {
    let h = ddr3();
    let rcd = t(&h, "nRCD");
    for k in [Rd, Wr, Rda, Wra] {
        edge(
            &h,
            &[b(0, Act, 0, 7), b(rcd, k, 0, 7)],
            1,
            "nRCD",
            &format!("ACT -> {k} same bank"),
        );
    }
}

#[test]
fn nras_act_to_pre() {
    let h = ddr3();
    edge(
        &h,
        &[b(0, Act, 0, 7), b(t(&h, "nRAS"), Pre, 0, 0)],
        1,
        "nRAS",
        "ACT -> PRE same bank",
    );
}

#[test]
fn nrc_act_to_act_same_bank() {
    let h = ddr3();
    let h = with(h.clone(), &[("nRC", t(&h, "nRAS") + t(&h, "nRP") + 5)]);
    let (ras, rc) = (t(&h, "nRAS"), t(&h, "nRC"));
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Pre, 0, 0), b(rc, Act, 0, 8)],
        2,
        "nRC",
        "ACT -> ACT same bank",
    );
}

#[test]
fn nrp_pre_to_act() {
    let h = with(ddr3(), &[("nRC", 1)]);
    let (ras, rp) = (t(&h, "nRAS"), t(&h, "nRP"));
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Pre, 0, 0), b(ras + rp, Act, 0, 8)],
        2,
        "nRP",
        "PRE -> ACT same bank",
    );
}

#[test]
fn nrtp_rd_to_pre() {
    let h = with(ddr3(), &[("nRAS", 10)]);
    let (rcd, rtp) = (t(&h, "nRCD"), t(&h, "nRTP"));
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Rd, 0, 7), b(rcd + rtp, Pre, 0, 0)],
        2,
        "nRTP",
        "RD -> PRE same bank",
    );
}

#[test]
fn nwr_wr_to_pre() {
    let h = ddr3();
    let rcd = t(&h, "nRCD");
    let wtp = t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWR");
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Wr, 0, 7), b(rcd + wtp, Pre, 0, 0)],
        2,
        "nCWL+nBL+nWR",
        "WR -> PRE",
    );
}

#[test]
fn pre_to_closed_bank_is_a_no_op() {
    let h = ddr3();
    assert_ok(
        &h,
        &[
            b(0, Pre, 0, 0),
            b(1, Act, 0, 3),
            b(2, Pre, 1, 0),
            b(3, Pre, 1, 0),
        ],
    );
}

// ------------------------------------------------------------------------------------------------
// Auto-precharge

#[test]
fn rda_implied_precharge_waits_for_nras() {
    let h = with(ddr3(), &[("nRC", 1)]);
    let (rcd, ras, rp) = (t(&h, "nRCD"), t(&h, "nRAS"), t(&h, "nRP"));
    assert!(rcd + t(&h, "nRTP") < ras);
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Rda, 0, 7), b(ras + rp, Act, 0, 8)],
        2,
        "nRP",
        "PRE(auto, RDA) -> ACT",
    );
}

#[test]
fn rda_implied_precharge_after_nrtp() {
    let h = with(ddr3(), &[("nRC", 1), ("nRAS", 10)]);
    let (rcd, rtp, rp) = (t(&h, "nRCD"), t(&h, "nRTP"), t(&h, "nRP"));
    edge(
        &h,
        &[
            b(0, Act, 0, 7),
            b(rcd, Rda, 0, 7),
            b(rcd + rtp + rp, Act, 0, 8),
        ],
        2,
        "nRP",
        "PRE(auto, RDA) -> ACT",
    );
}

#[test]
fn wra_implied_precharge_after_write_recovery() {
    let h = with(ddr3(), &[("nRC", 1)]);
    let (rcd, rp) = (t(&h, "nRCD"), t(&h, "nRP"));
    let wtp = t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWR");
    edge(
        &h,
        &[
            b(0, Act, 0, 7),
            b(rcd, Wra, 0, 7),
            b(rcd + wtp + rp, Act, 0, 8),
        ],
        2,
        "nRP",
        "PRE(auto, WRA) -> ACT",
    );
}

#[test]
fn rda_implied_precharge_respects_earlier_write_recovery() {
    // With a long nWR the auto-precharge of an RDA must wait for an earlier WR's recovery.
    let h = with(ddr3(), &[("nWR", 20)]);
    let (rcd, rtp) = (t(&h, "nRCD"), t(&h, "nRTP"));
    let wtp = t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWR");
    let rda = rcd + wtp - rtp;
    assert!(rda - rcd > t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWTR"));
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Wr, 0, 7), b(rda, Rda, 0, 7)],
        2,
        "nCWL+nBL+nWR",
        "WR -> PRE(auto, RDA)",
    );
}

#[test]
fn column_command_after_auto_precharge_is_a_protocol_error() {
    let h = ddr3();
    let r = run(&h, &[b(0, Act, 0, 7), b(11, Rda, 0, 7), b(15, Rd, 0, 7)]);
    assert_eq!(protocol_rules(&r), vec!["RD to a closed bank"]);
}

// ------------------------------------------------------------------------------------------------
// Rank rules

#[test]
fn nrrd_act_to_act_other_bank() {
    let h = ddr3();
    edge(
        &h,
        &[b(0, Act, 0, 7), b(t(&h, "nRRD"), Act, 1, 7)],
        1,
        "nRRD",
        "ACT -> ACT other bank same rank",
    );
}

#[test]
fn nfaw_fifth_activation() {
    let h = ddr3();
    let (rrd, faw) = (t(&h, "nRRD"), t(&h, "nFAW"));
    assert!(4 * rrd < faw);
    let mut s: Vec<_> = (0..4).map(|i| b(i as u64 * rrd, Act, i, 7)).collect();
    s.push(b(faw, Act, 4, 7));
    edge(&h, &s, 4, "nFAW", "same rank");
}

#[test]
fn nccd_read_read_and_write_write() {
    let h = ddr3();
    let (rcd, ccd, rrd) = (t(&h, "nRCD"), t(&h, "nCCD"), t(&h, "nRRD"));
    for k in [Rd, Wr] {
        edge(
            &h,
            &[b(0, Act, 0, 7), b(rcd, k, 0, 7), b(rcd + ccd, k, 0, 7)],
            2,
            "nCCD",
            &format!("{k} -> {k}"),
        );
        let s = [
            b(0, Act, 0, 7),
            b(rrd, Act, 1, 9),
            b(rrd + rcd, k, 0, 7),
            b(rrd + rcd + ccd, k, 1, 9),
        ];
        edge(&h, &s, 3, "nCCD", "same rank");
    }
}

#[test]
fn read_to_write_turnaround() {
    let h = ddr3();
    let rcd = t(&h, "nRCD");
    let rtw = t(&h, "nCL") + t(&h, "nBL") + 2 - t(&h, "nCWL");
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Rd, 0, 7), b(rcd + rtw, Wr, 0, 7)],
        2,
        "nCL+nBL+2-nCWL",
        "RD -> WR same rank",
    );
}

#[test]
fn write_to_read_turnaround() {
    let h = ddr3();
    let rcd = t(&h, "nRCD");
    let wtr = t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWTR");
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Wr, 0, 7), b(rcd + wtr, Rd, 0, 7)],
        2,
        "nCWL+nBL+nWTR",
        "WR -> RD",
    );
}

#[test]
fn rank_to_rank_data_bus_turnaround() {
    let h = ranks(ddr3(), 2);
    let (rcd, cl, cwl, bl, rtrs) = (
        t(&h, "nRCD"),
        t(&h, "nCL"),
        t(&h, "nCWL"),
        t(&h, "nBL"),
        t(&h, "nRTRS"),
    );
    let off = |k: CommandKind| if k.is_read() { cl } else { cwl };
    for (k1, k2) in [(Rd, Rd), (Wr, Wr), (Rd, Wr), (Wr, Rd), (Rda, Wra)] {
        let gap = off(k1) + bl + rtrs - off(k2);
        let s = [
            c(0, Act, 0, (0, 0), 7),
            c(1, Act, 1, (0, 0), 7),
            c(rcd + 1, k1, 0, (0, 0), 7),
            c(rcd + 1 + gap, k2, 1, (0, 0), 7),
        ];
        edge(&h, &s, 3, "nBL+nRTRS", "different ranks (data bus)");
    }
    // Activations and column commands of different ranks do not meet nRRD / nCCD.
    assert_ok(
        &h,
        &[
            c(0, Act, 0, (0, 0), 7),
            c(1, Act, 1, (0, 0), 7),
            c(rcd + 1, Rd, 0, (0, 0), 7),
        ],
    );
}

#[test]
fn refresh_rules() {
    let h = ddr3();
    let (rfc, rp, ras) = (t(&h, "nRFC"), t(&h, "nRP"), t(&h, "nRAS"));
    edge(
        &h,
        &[b(0, Ref, 0, 0), b(rfc, Act, 0, 7)],
        1,
        "nRFC",
        "REF -> ACT same rank",
    );
    edge(
        &h,
        &[b(0, Ref, 0, 0), b(rfc, Ref, 0, 0)],
        1,
        "nRFC",
        "REF -> REF",
    );
    edge(
        &h,
        &[b(0, Ref, 0, 0), b(rfc, Pre, 3, 0)],
        1,
        "nRFC",
        "REF -> PRE",
    );
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Pre, 0, 0), b(ras + rp, Ref, 0, 0)],
        2,
        "nRP",
        "PRE -> REF same rank",
    );
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Prea, 0, 0), b(ras + rp, Ref, 0, 0)],
        2,
        "nRP",
        "PREA -> REF same rank",
    );
    let rcd = t(&h, "nRCD");
    edge(
        &h,
        &[b(0, Act, 0, 7), b(rcd, Rda, 0, 7), b(ras + rp, Ref, 0, 0)],
        2,
        "nRP",
        "PRE(auto, RDA) -> REF",
    );
    // PREA precharges the whole rank: nRP before an ACT to any bank.
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Prea, 0, 0), b(ras + rp, Act, 5, 7)],
        2,
        "nRP",
        "PREA -> ACT same rank",
    );
    edge(
        &h,
        &[b(0, Prea, 0, 0), b(rp, Act, 5, 7)],
        1,
        "nRP",
        "PREA -> ACT",
    );
    // PREA closing an open bank early is caught per bank.
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Prea, 0, 0)],
        1,
        "nRAS",
        "ACT -> PREA same bank",
    );
}

#[test]
fn ddr2_precharge_all_takes_trpa() {
    // JESD79-2 (Micron 1Gb DDR2): on 8-bank devices a PREA needs tRPA = tRP + 1 clock before an
    // ACT or REF; a single-bank PRE still needs tRP.
    let h = header("DDR2-400B/DDR2-1Gb-x8");
    let (rp, ras) = (t(&h, "nRP"), t(&h, "nRAS"));
    edge(
        &h,
        &[
            b(0, Act, 0, 7),
            b(ras, Prea, 0, 0),
            b(ras + rp + 1, Act, 5, 7),
        ],
        2,
        "nRP+1",
        "PREA -> ACT same rank",
    );
    edge(
        &h,
        &[b(0, Prea, 0, 0), b(rp + 1, Ref, 0, 0)],
        1,
        "nRP+1",
        "PREA -> REF same rank",
    );
    edge(
        &h,
        &[b(0, Act, 0, 7), b(ras, Pre, 0, 0), b(ras + rp, Ref, 0, 0)],
        2,
        "nRP",
        "PRE -> REF same rank",
    );
    // A 4-bank DDR2 device has tRPA = tRP.
    let mut four = h.clone();
    four.org.banks_per_group = 4;
    edge(
        &four,
        &[b(0, Prea, 0, 0), b(rp, Act, 3, 7)],
        1,
        "nRP",
        "PREA -> ACT",
    );
}

// ------------------------------------------------------------------------------------------------
// RowClone

#[test]
fn fpm_actc_rules() {
    let h = ddr3();
    let (ras, rrd, faw) = (t(&h, "nRAS"), t(&h, "nRRD"), t(&h, "nFAW"));
    edge(
        &h,
        &[b(0, Act, 0, 0), b(ras, Actc, 0, 1)],
        1,
        "nRAS",
        "ACT -> ACTC same bank",
    );
    edge(
        &h,
        &[b(0, Act, 0, 0), b(ras, Actc, 0, 1), b(2 * ras, Pre, 0, 0)],
        2,
        "nRAS",
        "ACTC -> PRE same bank",
    );
    edge(
        &h,
        &[b(0, Act, 0, 0), b(ras, Actc, 0, 1), b(2 * ras, Actc, 0, 2)],
        2,
        "nRAS",
        "ACTC -> ACTC same bank",
    );
    // ACTC is an activation for nRRD and nFAW.
    edge(
        &h,
        &[b(0, Act, 0, 0), b(ras, Actc, 0, 1), b(ras + rrd, Act, 1, 0)],
        2,
        "nRRD",
        "ACTC -> ACT",
    );
    edge(
        &h,
        &[
            b(0, Act, 1, 0),
            b(ras, Act, 0, 0),
            b(2 * ras, Actc, 0, 1),
            b(2 * ras + rrd, Act, 2, 0),
        ],
        3,
        "nRRD",
        "ACTC -> ACT",
    );
    let a0 = ras;
    let s = [
        b(0, Act, 0, 0),
        b(a0, Actc, 0, 1),
        b(a0 + rrd, Act, 1, 0),
        b(a0 + 2 * rrd, Act, 2, 0),
        b(a0 + 3 * rrd, Act, 3, 0),
        b(a0 + faw.max(4 * rrd), Act, 4, 0),
    ];
    edge(&h, &s, 5, "nFAW", "same rank");
    // FPM with the precharge: the full copy sequence of the paper.
    assert_ok(
        &h,
        &[
            b(0, Act, 0, 0),
            b(ras, Actc, 0, 511),
            b(2 * ras, Pre, 0, 0),
            b(2 * ras + t(&h, "nRP"), Act, 0, 3),
        ],
    );
}

#[test]
fn psm_transfer_rules() {
    let h = with(ddr3(), &[("nRAS", 10)]);
    let (rcd, rrd, rtp, ccd) = (t(&h, "nRCD"), t(&h, "nRRD"), t(&h, "nRTP"), t(&h, "nCCD"));
    let wtp = t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWR");
    let wtr = t(&h, "nCWL") + t(&h, "nBL") + t(&h, "nWTR");
    let (s0, s1) = ((0, 0), (0, 1));
    // ACT -> TR: nRCD on both sides.
    edge(
        &h,
        &[
            b(0, Act, 0, 7),
            b(rrd, Act, 1, 9),
            tr(rrd + rcd, s0, 7, s1, 9),
        ],
        2,
        "nRCD",
        "ACT -> TR(dst) same bank",
    );
    edge(
        &h,
        &[
            b(0, Act, 1, 9),
            b(rrd, Act, 0, 7),
            tr(rrd + rcd, s0, 7, s1, 9),
        ],
        2,
        "nRCD",
        "ACT -> TR(src) same bank",
    );
    let open = [b(0, Act, 0, 7), b(rrd, Act, 1, 9)];
    let t0 = rrd + rcd;
    let seq = |rest: &[CommandRecord]| open.iter().chain(rest).copied().collect::<Vec<_>>();
    // TR -> PRE on each side.
    edge(
        &h,
        &seq(&[tr(t0, s0, 7, s1, 9), b(t0 + rtp, Pre, 0, 0)]),
        3,
        "nRTP",
        "TR(src) -> PRE same bank",
    );
    edge(
        &h,
        &seq(&[tr(t0, s0, 7, s1, 9), b(t0 + wtp, Pre, 1, 0)]),
        3,
        "nCWL+nBL+nWR",
        "TR(dst) -> PRE same bank",
    );
    // TR on the rank's internal bus.
    edge(
        &h,
        &seq(&[tr(t0, s0, 7, s1, 9), tr(t0 + ccd, s0, 7, s1, 9)]),
        3,
        "nCCD",
        "TR -> TR",
    );
    edge(
        &h,
        &seq(&[b(t0, Rd, 0, 7), tr(t0 + ccd, s0, 7, s1, 9)]),
        3,
        "nCCD",
        "RD -> TR",
    );
    edge(
        &h,
        &seq(&[tr(t0, s0, 7, s1, 9), b(t0 + ccd, Rd, 0, 7)]),
        3,
        "nCCD",
        "TR -> RD",
    );
    edge(
        &h,
        &seq(&[tr(t0, s0, 7, s1, 9), b(t0 + ccd, Wr, 1, 9)]),
        3,
        "nCCD",
        "TR -> WR",
    );
    edge(
        &h,
        &seq(&[b(t0, Wr, 0, 7), tr(t0 + wtr, s0, 7, s1, 9)]),
        3,
        "nCWL+nBL+nWTR",
        "WR -> TR",
    );
    // TR moves no data over the channel: a RD of another rank right after it is fine.
    let h2 = ranks(h.clone(), 2);
    assert_ok(
        &h2,
        &seq(&[
            c(rrd + 1, Act, 1, (0, 0), 3),
            tr(t0 + 1, s0, 7, s1, 9),
            c(t0 + 2, Rd, 1, (0, 0), 3),
        ]),
    );
}

#[test]
fn rowclone_protocol() {
    let h = ddr3();
    let sa = h.org.subarray_rows;
    let ras = t(&h, "nRAS");
    let r = run(&h, &[b(0, Actc, 0, 3)]);
    assert_eq!(protocol_rules(&r), vec!["ACTC to a closed bank"]);
    let r = run(&h, &[b(0, Act, 0, 3), b(ras, Actc, 0, sa + 3)]);
    assert_eq!(protocol_rules(&r), vec!["ACTC to another subarray"]);
    assert_ok(&h, &[b(0, Act, 0, sa), b(ras, Actc, 0, 2 * sa - 1)]);
    let r = run(
        &h,
        &[
            b(0, Act, 0, 3),
            b(5, Act, 1, 4),
            tr(30, (0, 0), 3, (0, 0), 3),
        ],
    );
    assert_eq!(protocol_rules(&r), vec!["TR within one bank"]);
    let r = run(&h, &[b(0, Act, 0, 3), tr(30, (0, 0), 3, (0, 1), 3)]);
    assert_eq!(protocol_rules(&r), vec!["TR(dst) to a closed bank"]);
    let r = run(
        &h,
        &[
            b(0, Act, 0, 3),
            b(5, Act, 1, 4),
            tr(30, (0, 0), 4, (0, 1), 4),
        ],
    );
    assert_eq!(
        protocol_rules(&r),
        vec!["TR(src) to a row that is not open"]
    );
}

// ------------------------------------------------------------------------------------------------
// Protocol

#[test]
fn bank_state_protocol() {
    let h = ddr3();
    let r = run(&h, &[b(0, Act, 0, 3), b(100, Act, 0, 4)]);
    assert_eq!(protocol_rules(&r), vec!["ACT to an open bank"]);
    let r = run(&h, &[b(0, Rd, 0, 3)]);
    assert_eq!(protocol_rules(&r), vec!["RD to a closed bank"]);
    let r = run(&h, &[b(0, Act, 0, 3), b(50, Wra, 0, 4)]);
    assert_eq!(protocol_rules(&r), vec!["WRA to a row that is not open"]);
    let r = run(&h, &[b(0, Act, 0, 3), b(500, Ref, 0, 0)]);
    assert_eq!(protocol_rules(&r), vec!["REF with open banks"]);
    // State follows the commands: after the PRE the REF is fine.
    assert_ok(&h, &[b(0, Act, 0, 3), b(50, Pre, 0, 0), b(100, Ref, 0, 0)]);
}

#[test]
fn command_bus_and_order() {
    let mut h = ddr3();
    h.org.channels = 2;
    let r = run(&h, &[b(0, Act, 0, 3), b(0, Act, 1, 3)]);
    assert!(
        protocol_rules(&r).contains(&"command bus".to_string()),
        "{}",
        show(&r)
    );
    let mut other = b(0, Act, 0, 3);
    other.channel = 1;
    assert_ok(&h, &[b(0, Act, 0, 3), other]);
    other.cycle = 5;
    let r = run(&h, &[b(10, Act, 0, 3), other]);
    assert_eq!(protocol_rules(&r), vec!["order"]);
}

/// HBM's separate row and column command buses: a row and a column command may share a cycle
/// (different banks), two row or two column commands may not; on DDR4 a row and a column command
/// in one cycle are refused, as any two commands are.
#[test]
fn separate_row_and_column_command_buses() {
    for preset in [
        "HBM2-2000/HBM2-8Gb-PC",
        "HBM3-6400/HBM3-8Gb-PC",
        "HBM4-8000/HBM4-32Gb-8Hi-PC",
    ] {
        let h = header(preset);
        let rcd = t(&h, "nRCDRD").max(t(&h, "nRCDWR"));
        let (a, o) = ((0, 0), (1, 0));
        let opened = [c(0, Act, 0, a, 3)];
        // ACT to another bank in the cycle of a RD (either order on the log).
        let mut log = opened.to_vec();
        log.extend([c(rcd, Rd, 0, a, 3), c(rcd, Act, 0, o, 4)]);
        assert_ok(&h, &log);
        let mut log = opened.to_vec();
        log.extend([c(rcd, Act, 0, o, 4), c(rcd, Wr, 0, a, 3)]);
        assert_ok(&h, &log);
        // A PRE of another bank beside a WRA.
        let mut log = vec![
            c(0, Act, 0, a, 3),
            c(t(&h, "nRRD_L") + 20, Act, 0, (0, 1), 4),
        ];
        let at = t(&h, "nRRD_L") + 20 + t(&h, "nRAS");
        log.extend([c(at, Wra, 0, a, 3), c(at, Pre, 0, (0, 1), 0)]);
        assert_ok(&h, &log);
        // Two column commands in one cycle (two banks open): refused, as the column bus's.
        let mut log = vec![c(0, Act, 0, a, 3), c(t(&h, "nFAW") + 4, Act, 0, o, 4)];
        let at = t(&h, "nFAW") + 4 + rcd + 40;
        log.extend([c(at, Rd, 0, a, 3), c(at, Rd, 0, o, 4)]);
        let r = run(&h, &log);
        assert!(
            r.violations.iter().any(|v| v.rule == "command bus"
                && v.index == 3
                && v.message.contains("second column command")),
            "{preset}: {}",
            show(&r)
        );
        // Two row commands in one cycle: refused.
        let r = run(&h, &[c(0, Act, 0, a, 3), c(0, Act, 0, o, 3)]);
        assert!(
            r.violations
                .iter()
                .any(|v| v.rule == "command bus" && v.message.contains("one row command")),
            "{preset}: {}",
            show(&r)
        );
        // A third command beside a row and a column command: refused.
        let mut log = opened.to_vec();
        log.extend([
            c(rcd, Rd, 0, a, 3),
            c(rcd, Act, 0, o, 4),
            c(rcd, Pre, 0, (0, 2), 0),
        ]);
        assert_eq!(
            protocol_rules(&run(&h, &log)),
            vec!["command bus"],
            "{preset}"
        );
        // The timing rules still hold between the two: RD beside its own bank's ACT is early.
        let r = run(&h, &[c(0, Act, 0, a, 3), c(0, Rd, 0, a, 3)]);
        assert!(
            !r.ok && protocol_rules(&r).is_empty(),
            "{preset}: {}",
            show(&r)
        );
    }
    // DDR4: one command bus. A row and a column command in one cycle are refused, and the
    // message says why.
    let h = ddr4();
    let rcd = t(&h, "nRCD");
    let r = run(
        &h,
        &[
            c(0, Act, 0, (0, 0), 3),
            c(rcd, Rd, 0, (0, 0), 3),
            c(rcd, Act, 0, (1, 0), 4),
        ],
    );
    assert_eq!(protocol_rules(&r), vec!["command bus"], "{}", show(&r));
    assert!(
        r.violations[0].message.contains("only on HBM"),
        "{}",
        show(&r)
    );
}

#[test]
fn index_bounds() {
    let h = ddr3();
    let o = h.org.clone();
    let mut bad = vec![
        b(0, Act, o.banks_per_group, 0),
        b(1, Act, 0, o.rows),
        b(2, Act, 0, 0),
    ];
    bad.push(CommandRecord {
        column: o.lines_per_row(),
        ..b(30, Rd, 0, 0)
    });
    bad.push(CommandRecord {
        channel: 1,
        ..b(40, Pre, 0, 0)
    });
    bad.push(CommandRecord {
        rank: 1,
        ..b(41, Pre, 0, 0)
    });
    bad.push(CommandRecord {
        bank_group: 1,
        ..b(42, Pre, 0, 0)
    });
    bad.push(tr(43, (0, 0), 0, (0, o.banks_per_group), 0));
    bad.push(CommandRecord {
        dst: None,
        ..tr(44, (0, 0), 0, (0, 1), 0)
    });
    bad.push(CommandRecord {
        dst: Some(TransferDst {
            bank_group: 0,
            bank: 1,
            row: 0,
            column: 0,
        }),
        ..b(45, Rd, 0, 0)
    });
    let r = run(&h, &bad);
    let idx: Vec<u64> = r.violations.iter().map(|v| v.index).collect();
    assert_eq!(idx, vec![0, 1, 3, 4, 5, 6, 7, 8, 9], "{}", show(&r));
    assert!(r.violations.iter().all(|v| v.rule == "bounds"));
}

#[test]
fn refresh_interval() {
    let h = LogHeader {
        refresh: true,
        ..with(ddr3(), &[("nREFI", 100), ("nRFC", 10)])
    };
    // Every nREFI: fine, with traffic in between.
    let mut s = Vec::new();
    for i in 1..=30u64 {
        s.push(b(i * 100, Ref, 0, 0));
        s.push(b(i * 100 + 20, Pre, 0, 0));
    }
    assert_ok(&h, &s);
    // The longest legal gap, then one cycle more.
    assert_ok(&h, &[b(100, Ref, 0, 0), b(1000, Ref, 0, 0)]);
    let r = run(&h, &[b(100, Ref, 0, 0), b(1001, Ref, 0, 0)]);
    let keys: BTreeSet<&str> = r.violations.iter().map(|v| v.rule_key()).collect();
    assert_eq!(
        keys,
        ["9xnREFI", "nREFI"].into_iter().collect(),
        "{}",
        show(&r)
    );
    assert!(r
        .violations
        .iter()
        .all(|v| v.kind == ViolationKind::Refresh));
    // Gaps within 9 x nREFI but more than 8 REFs owed on average.
    // REF number 2 was due by 10 x nREFI; after it, REF number 3 (due by 11 x nREFI) is still owed
    // at the end of the log.
    let r = run(&h, &[b(899, Ref, 0, 0), b(1798, Ref, 0, 0)]);
    let found: Vec<_> = r
        .violations
        .iter()
        .map(|v| (v.index, v.rule_key(), v.required_cycles))
        .collect();
    assert_eq!(
        found,
        vec![(1, "nREFI", 1000), (2, "nREFI", 1100)],
        "{}",
        show(&r)
    );
    // Never refreshed: caught by the first command past the deadline, once.
    let r = run(&h, &[b(0, Act, 0, 0), b(950, Pre, 0, 0)]);
    assert_eq!(r.violation_count, 2, "{}", show(&r));
    assert_eq!(r.violations[0].index, 1);
    let mut ck = Checker::new(&h).expect("checker");
    ck.check(&b(0, Act, 0, 0)).expect("legal");
    ck.check(&b(900, Pre, 0, 0)).expect("legal");
    let _ = ck.check(&b(901, Pre, 0, 0));
    let r = ck.finish();
    assert_eq!(r.violations[0].rule_key(), "9xnREFI");
    // Without refresh in the header nothing is asked.
    let h = LogHeader {
        refresh: false,
        ..h
    };
    assert_ok(&h, &[b(0, Act, 0, 0), b(5000, Pre, 0, 0)]);
}

// ------------------------------------------------------------------------------------------------
// DDR4 bank groups (DDR4-2400R: nCCD_S 4 / _L 6, nWTR_S 3 / _L 9, nRRD_S 4 / _L 6)

#[test]
fn ddr4_short_and_long_variants() {
    let h = ddr4();
    assert!(h.org.bank_groups > 1);
    let (rcd, cwl, bl) = (t(&h, "nRCD"), t(&h, "nCWL"), t(&h, "nBL"));
    for (other, sfx) in [((1, 0), "_S"), ((0, 1), "_L")] {
        let rrd = t(&h, &format!("nRRD{sfx}"));
        let ccd = t(&h, &format!("nCCD{sfx}"));
        let wtr = t(&h, &format!("nWTR{sfx}"));
        let scope = if sfx == "_S" {
            "other bank group"
        } else {
            "same bank group"
        };
        let open = [c(0, Act, 0, (0, 0), 7), c(rrd, Act, 0, other, 7)];
        edge(&h, &open, 1, &format!("nRRD{sfx}"), scope);
        let t0 = rrd + rcd;
        let seq = |rest: &[CommandRecord]| open.iter().chain(rest).copied().collect::<Vec<_>>();
        for k in [Rd, Wr] {
            let s = seq(&[c(t0, k, 0, (0, 0), 7), c(t0 + ccd, k, 0, other, 7)]);
            edge(&h, &s, 3, &format!("nCCD{sfx}"), scope);
        }
        let s = seq(&[
            c(t0, Wr, 0, (0, 0), 7),
            c(t0 + cwl + bl + wtr, Rd, 0, other, 7),
        ]);
        edge(&h, &s, 3, &format!("nCWL+nBL+nWTR{sfx}"), scope);
    }
    // Same bank: the _L variants.
    let ccd_l = t(&h, "nCCD_L");
    edge(
        &h,
        &[
            c(0, Act, 0, (2, 3), 7),
            c(rcd, Rd, 0, (2, 3), 7),
            c(rcd + ccd_l, Rd, 0, (2, 3), 7),
        ],
        2,
        "nCCD_L",
        "same bank group",
    );
}

#[test]
fn ddr4_transfer_bank_groups() {
    // A TR shares a bank group with a command when either of its banks does.
    let h = ddr4();
    let (rcd, rrd_s, rrd_l, ccd_l, ccd_s) = (
        t(&h, "nRCD"),
        t(&h, "nRRD_S"),
        t(&h, "nRRD_L"),
        t(&h, "nCCD_L"),
        t(&h, "nCCD_S"),
    );
    let a2 = (rrd_s + rrd_s).max(rrd_l);
    let open = [
        c(0, Act, 0, (1, 1), 7),
        c(rrd_s, Act, 0, (0, 0), 7),
        c(a2, Act, 0, (1, 0), 7),
    ];
    let t0 = a2 + rcd;
    let seq = |rest: &[CommandRecord]| open.iter().chain(rest).copied().collect::<Vec<_>>();
    edge(
        &h,
        &seq(&[
            tr(t0, (0, 0), 7, (1, 0), 7),
            c(t0 + ccd_l, Rd, 0, (1, 1), 7),
        ]),
        4,
        "nCCD_L",
        "TR -> RD same bank group",
    );
    // A TR between groups 0 and 1 and a RD in group 2 use _S.
    let open = [
        c(0, Act, 0, (2, 1), 7),
        c(rrd_s, Act, 0, (0, 0), 7),
        c(2 * rrd_s, Act, 0, (1, 0), 7),
    ];
    let t0 = 2 * rrd_s + rcd;
    let s: Vec<_> = open
        .iter()
        .copied()
        .chain([
            tr(t0, (0, 0), 7, (1, 0), 7),
            c(t0 + ccd_s, Rd, 0, (2, 1), 7),
        ])
        .collect();
    edge(&h, &s, 4, "nCCD_S", "TR -> RD other bank group");
    // WR -> TR: nWTR_L only when the WR shares the TR's source group (the TR reads there).
    let (cwl, bl, wtr_s, wtr_l) = (
        t(&h, "nCWL"),
        t(&h, "nBL"),
        t(&h, "nWTR_S"),
        t(&h, "nWTR_L"),
    );
    for (wr_bank, wtr, key, scope) in [
        ((0, 0), wtr_l, "nCWL+nBL+nWTR_L", "same bank group"),
        ((1, 0), wtr_s, "nCWL+nBL+nWTR_S", "other bank group"),
        ((2, 1), wtr_s, "nCWL+nBL+nWTR_S", "other bank group"),
    ] {
        let s: Vec<_> = open
            .iter()
            .copied()
            .chain([
                c(t0, Wr, 0, wr_bank, 7),
                tr(t0 + cwl + bl + wtr, (0, 0), 7, (1, 0), 7),
            ])
            .collect();
        edge(&h, &s, 4, key, &format!("WR -> TR {scope}"));
    }
}

// ------------------------------------------------------------------------------------------------
// Reports, headers and log files

#[test]
fn report_keeps_the_first_violations_and_counts_all() {
    let h = ddr3();
    let s: Vec<_> = (0..1500u64).map(|i| b(10 * i, Rd, 0, 0)).collect();
    let r = run(&h, &s);
    assert_eq!(r.violation_count, 1500);
    assert_eq!(r.violations.len(), MAX_KEPT_VIOLATIONS);
    assert!(!r.ok);
    assert_eq!(r.violations[0].index, 0);
    let json = serde_json::to_string(&r).expect("serialise");
    assert!(json.contains("\"violation_count\":1500"));
}

#[test]
fn check_returns_the_first_new_violation() {
    let h = ddr3();
    let mut ck = Checker::new(&h).expect("checker");
    assert!(ck.check(&b(0, Act, 0, 3)).is_ok());
    let v = ck.check(&b(3, Rd, 0, 3)).expect_err("too early");
    assert_eq!(v.rule, "nRCD: ACT -> RD same bank");
    assert_eq!(
        (v.required_cycles, v.actual_cycles, v.earlier_index),
        (t(&h, "nRCD"), 3, Some(0))
    );
    assert_eq!(v.command, "3 RD 0 0 0 0 3 0");
}

#[test]
fn headers_that_cannot_be_checked() {
    let mut h = ddr3();
    h.timing.remove("nRCD");
    assert!(matches!(Checker::new(&h), Err(LogError::Header(m)) if m.contains("nRCD")));
    let mut h = ddr4();
    h.timing.remove("nCCD_L");
    assert!(matches!(Checker::new(&h), Err(LogError::Header(m)) if m.contains("nCCD")));
    let mut h = ddr3();
    h.org.subarray_rows = 0;
    assert!(Checker::new(&h).is_err());
    let mut h = ddr3();
    h.org.channels = u32::MAX;
    h.org.ranks = u32::MAX;
    assert!(Checker::new(&h).is_err());
    let h = LogHeader {
        refresh: true,
        ..with(ddr3(), &[("nREFI", 0)])
    };
    assert!(Checker::new(&h).is_err());
}

#[test]
fn every_preset_gives_a_checker() {
    for name in crate::config::builtin_config_names() {
        let spec = Config::preset(name)
            .expect("preset")
            .resolve(name)
            .expect("resolve");
        Checker::new(&header_from_spec(&spec, true)).expect(name);
    }
    for p in [
        "DDR3-1066G/DDR3-2Gb-x8",
        "DDR3-1333H/DDR3-1Gb-x8",
        "DDR4-3200AA/DDR4-16Gb-x8",
    ] {
        Checker::new(&header(p)).expect(p);
    }
}

fn log_text(h: &LogHeader, cmds: &[CommandRecord]) -> String {
    let mut s = format!(
        "{LOG_MAGIC}\n# spec {}\n",
        serde_json::to_string(h).expect("json")
    );
    for r in cmds {
        s.push_str(&r.to_line());
        s.push('\n');
    }
    s.push_str(&format!("# end {}\n", cmds.len()));
    s
}

#[test]
fn log_files() {
    let h = ddr3();
    let rcd = t(&h, "nRCD");
    let dir = std::env::temp_dir().join(format!("movelab-checker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let path = dir.join("ok.log");
    std::fs::write(&path, log_text(&h, &[b(0, Act, 0, 3), b(rcd, Rd, 0, 3)])).expect("write");
    let r = check_log_file(&path).expect("check");
    assert!(r.ok && r.commands_checked == 2);
    // A violation names the log line.
    let text = log_text(&h, &[b(0, Act, 0, 3), b(rcd - 1, Rd, 0, 3)]);
    let r = check_log(text.as_bytes(), "mem").expect("check");
    assert_eq!(r.violations[0].line, Some(4));
    // Comments and blank lines are skipped; line numbers still count them.
    let text = text.replace(
        &format!("\n{} RD", rcd - 1),
        &format!("\n\n# note\n{} RD", rcd - 1),
    );
    assert_eq!(
        check_log(text.as_bytes(), "mem").expect("check").violations[0].line,
        Some(6)
    );
    // Malformed input: errors name the line.
    let bad = log_text(&h, &[b(0, Pre, 0, 0), b(0, Pre, 0, 0)])
        .replace("0 PRE 0 0 0 0 0 0\n# end", "0 ACT 0 0 0 x 3 0\n# end");
    assert!(matches!(
        check_log(bad.as_bytes(), "mem"),
        Err(LogError::Line { line: 4, .. })
    ));
    let bad = log_text(&h, &[]).replace("# end", "0 FOO 0 0 0 0 3 0\n# end");
    assert!(matches!(
        check_log(bad.as_bytes(), "mem"),
        Err(LogError::Line { line: 3, .. })
    ));
    let mut bytes = format!(
        "{LOG_MAGIC}\n# spec {}\n",
        serde_json::to_string(&h).expect("json")
    )
    .into_bytes();
    bytes.extend_from_slice(b"0 ACT \xff\n# end 1\n");
    assert!(matches!(
        check_log(&bytes[..], "mem"),
        Err(LogError::Line { line: 3, .. })
    ));
    assert!(matches!(
        check_log("nothing\n".as_bytes(), "mem"),
        Err(LogError::Header(_))
    ));
    assert!(matches!(
        check_log("".as_bytes(), "mem"),
        Err(LogError::Header(_))
    ));
    assert!(matches!(
        check_log(format!("{LOG_MAGIC}\n").as_bytes(), "mem"),
        Err(LogError::Header(_))
    ));
    let bad = format!("{LOG_MAGIC}\n# spec {{\"standard\": 1}}\n");
    assert!(matches!(
        check_log(bad.as_bytes(), "mem"),
        Err(LogError::Header(_))
    ));
    assert!(matches!(
        check_log_file(&dir.join("missing.log")),
        Err(LogError::Io { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------------------------------
// A greedy generator: random legal sequences, each command at the earliest cycle the rules allow.
// Its model is its own: the last event of each kind per bank and rank, not a history scan. It
// knows every standard the presets have (DDR2 to DDR5, LPDDR5, HBM2, HBM3) and their refresh
// modes (all-bank REF, DDR5's same-bank REFSB, LPDDR5 / HBM3's per-bank REFPB), written from the
// standards' rule lists (JEDEC JESD79-3 / JESD79-4; JESD79-5, JESD209-5B, JESD235 and JESD238 as
// Ramulator 2 (CMU-SAFARI/ramulator2), DRAMSys and gem5 list them), not from the checker's code.

#[derive(Debug, Clone, Default)]
struct GBank {
    open: Option<u32>,
    last_act: Option<u64>,
    last_activation: Option<u64>,
    last_pre: Option<u64>,
    last_read: Option<u64>,
    last_write: Option<u64>,
    /// The last REFSB of this bank's index, or REFPB of this bank.
    last_bank_ref: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum GCol {
    Read,
    Write,
    Transfer,
}

/// How the generator refreshes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(clippy::enum_variant_names)]
enum RefMode {
    /// REF per rank every nREFI.
    AllBank,
    /// DDR5 REFSB: one bank index per nREFI / banks per group, every fourth an all-bank REF.
    SameBank,
    /// LPDDR5 / HBM3 REFPB: one bank per nREFI / banks, every fourth an all-bank REF.
    PerBank,
}

#[derive(Debug, Clone, Default)]
struct GRank {
    /// (cycle, bank, group) of recent ACT / ACTC.
    acts: Vec<(u64, u32, u32)>,
    /// (cycle, class, groups) of recent column commands.
    cols: Vec<(u64, GCol, Vec<u32>)>,
    last_prea: Option<u64>,
    last_ref: Option<u64>,
    /// The last PRE that closed a bank, or PREA (tPPD).
    last_pre_cmd: Option<u64>,
    last_refsb: Option<u64>,
    last_refpb: Option<u64>,
    next_ref: u64,
    /// Bank index (same-bank) or bank (per-bank) refreshed next, and refreshes so far.
    ref_next: u32,
    ref_count: u64,
}

/// A header and the refresh mode the generator uses for it.
#[derive(Debug, Clone)]
struct Case {
    h: LogHeader,
    mode: RefMode,
}

struct Gen {
    h: LogHeader,
    mode: RefMode,
    rng: u64,
    banks: Vec<GBank>,
    ranks: Vec<GRank>,
    /// (command cycle, offset to the burst, rank).
    bursts: Vec<(u64, u64, u32)>,
    last: Option<u64>,
    /// The last command that holds the command bus more than one clock (DDR5 ACT / column
    /// commands, LPDDR5's two-part ACT, HBM2's ACT: 2; LPDDR6: every command 2, an ACT 4):
    /// (cycle, clocks).
    last_two_clock: Option<(u64, u64)>,
    out: Vec<CommandRecord>,
    /// The rule keys that set each command's cycle (empty: only the command bus did).
    binding: Vec<BTreeSet<String>>,
}

impl Gen {
    fn new(case: &Case, seed: u64) -> Gen {
        let h = &case.h;
        let nb = (h.org.ranks * h.org.banks_per_rank()) as usize;
        let mut g = Gen {
            h: h.clone(),
            mode: case.mode,
            rng: seed | 1,
            banks: vec![GBank::default(); nb],
            ranks: vec![GRank::default(); h.org.ranks as usize],
            bursts: Vec::new(),
            last: None,
            last_two_clock: None,
            out: Vec::new(),
            binding: Vec::new(),
        };
        let step = g.refresh_step();
        for r in &mut g.ranks {
            r.next_ref = step;
        }
        g
    }
    fn rand(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }
    fn p(&self, n: &str) -> u64 {
        self.h.timing[n]
    }
    fn has(&self, n: &str) -> bool {
        self.h.timing.contains_key(n)
    }
    fn std(&self) -> &str {
        &self.h.standard
    }
    fn grouped(&self) -> bool {
        self.h.org.bank_groups > 1
    }
    /// A rule with `_S` / `_L` variants on grouped devices (LPDDR5's one tRRD has none).
    fn var(&self, base: &str, same: bool) -> (String, u64) {
        let n = if !self.grouped() || !self.has(&format!("{base}_S")) {
            base.to_string()
        } else if same {
            format!("{base}_L")
        } else {
            format!("{base}_S")
        };
        let v = self.p(&n);
        (n, v)
    }
    /// The burst a write to a read counts: BL/n_max (nBL_max) within a bank group on LPDDR5 in BG
    /// mode with BL32 (JESD209-5 per gem5's tBURST_MAX and Ramulator 2.1), else the burst nBL.
    fn wtr_bl(&self, same: bool) -> (String, u64) {
        if same && self.grouped() && self.std().starts_with("LPDDR") && self.has("nBL_max") {
            ("nBL_max".into(), self.p("nBL_max"))
        } else {
            ("nBL".into(), self.p("nBL"))
        }
    }
    /// ACT -> RD / WR: nRCD, or HBM's nRCDRD / nRCDWR.
    fn rcd(&self, read: bool) -> (String, u64) {
        let split = if read { "nRCDRD" } else { "nRCDWR" };
        let n = if self.has(split) { split } else { "nRCD" };
        (n.to_string(), self.p(n))
    }
    /// PREA -> ACT / REF / REFPB: tRPA = nRP + 1 on 8-bank DDR2, LPDDR5's tRPab, else nRP.
    fn rpa(&self) -> (String, u64) {
        if self.std() == "DDR2" && self.h.org.banks_per_rank() >= 8 {
            ("nRP+1".into(), self.p("nRP") + 1)
        } else if self.std() == "LPDDR5" || self.std() == "LPDDR6" {
            ("nRPab".into(), self.p("nRPab"))
        } else {
            ("nRP".into(), self.p("nRP"))
        }
    }
    /// Per-bank refresh: (REFpb -> REFpb, REFpb -> ACT, ACT -> REFpb of another bank).
    fn pb_rules(&self) -> [Option<(String, u64)>; 3] {
        let one = |n: &str| Some((n.to_string(), self.p(n)));
        match self.std() {
            "LPDDR5" => [one("nPBR2PBR"), one("nPBR2ACT"), None],
            "HBM2" | "HBM3" => [one("nRREFD"), one("nRREFD"), one("nRRD_S")],
            _ => [None, None, None],
        }
    }
    /// Clocks `k` holds the command bus: LPDDR6 (JESD209-6's alternating clock command inputs)
    /// 2 for every command and 4 for its two-part activate; 2 for the two-clock commands.
    fn bus_hold(&self, k: CommandKind) -> u64 {
        if self.std() == "LPDDR6" {
            if matches!(k, Act | Actc | Actm) {
                4
            } else {
                2
            }
        } else if self.two_clock(k) {
            2
        } else {
            1
        }
    }
    /// How a write-recovery violation is named: LPDDR6 counts WL + BL/n_max + tWTP.
    fn wr_key(&self) -> String {
        if self.std() == "LPDDR6" {
            "nCWL+nBL_max+nWTP".into()
        } else {
            "nCWL+nBL+nWR".into()
        }
    }
    fn two_clock(&self, k: CommandKind) -> bool {
        match self.std() {
            "DDR5" => matches!(k, Act | Actc | Actm | Rd | Rda | Wr | Wra | Tr),
            "LPDDR5" | "HBM2" | "HBM3" | "HBM4" => matches!(k, Act | Actc | Actm),
            _ => false,
        }
    }
    fn refresh_step(&self) -> u64 {
        let refi = self.h.timing.get("nREFI").copied().unwrap_or(0);
        match self.mode {
            RefMode::AllBank => refi,
            RefMode::SameBank => refi / u64::from(self.h.org.banks_per_group),
            RefMode::PerBank => {
                refi / u64::from(
                    self.h.org.banks_per_rank() / if self.pb_pair() > 0 { 2 } else { 1 },
                )
            }
        }
    }
    fn wtp(&self) -> u64 {
        self.p("nCWL") + self.p("nBL") + self.p("nWR")
    }
    fn bi(&self, rank: u32, bank: u32) -> usize {
        (rank * self.h.org.banks_per_rank() + bank) as usize
    }

    /// Places `rec` at the earliest cycle that meets `cons` (cycle, rule key) and the bus.
    fn emit(&mut self, mut rec: CommandRecord, mut cons: Vec<(u64, String)>) -> u64 {
        // HBM's two-clock ACT holds its row bus only: a column command is not held.
        let column = matches!(rec.kind, Rd | Rda | Wr | Wra | Tr);
        let hbm = matches!(self.std(), "HBM2" | "HBM3" | "HBM4");
        // HBM3 / HBM4: a PRE may take the falling edge of the clock after an ACT (half-clock row
        // commands), where it starts its rules a clock later: the sequence keeps it on the next
        // rising edge, and one clock earlier it breaks no rule of the ACT's hold.
        let falls = rec.kind == Pre && matches!(self.std(), "HBM3" | "HBM4");
        if let Some((c, hold)) = self.last_two_clock.filter(|_| !(hbm && column)) {
            let key = if falls {
                FALLING.to_string()
            } else {
                hold.to_string()
            };
            cons.push((c + hold, key));
        }
        let bus = self.last.map_or(0, |l| l + 1);
        let t = cons.iter().map(|c| c.0).max().unwrap_or(0).max(bus);
        let binding = cons
            .into_iter()
            .filter(|c| c.0 == t && c.1 != FALLING)
            .map(|c| c.1)
            .collect();
        rec.cycle = t;
        self.last = Some(t);
        let hold = self.bus_hold(rec.kind);
        if hold > 1 {
            self.last_two_clock = Some((t, hold));
        }
        self.out.push(rec);
        self.binding.push(binding);
        t
    }

    /// Rank-wide rules every command meets: nRFC after a REF.
    fn rfc(&self, rank: u32, cons: &mut Vec<(u64, String)>) {
        if let Some(r) = self.ranks[rank as usize].last_ref {
            cons.push((r + self.p("nRFC"), "nRFC".into()));
        }
    }

    /// PRE / PREA: tPPD after the last precharge command of the rank (where the standard has it).
    fn ppd(&self, rank: u32, cons: &mut Vec<(u64, String)>) {
        if let (Some(p), true) = (self.ranks[rank as usize].last_pre_cmd, self.has("nPPD")) {
            cons.push((p + self.p("nPPD"), "nPPD".into()));
        }
    }

    /// REF / PREA after a same-bank or per-bank refresh of the rank.
    fn after_partial_refresh(&self, rank: u32, cons: &mut Vec<(u64, String)>) {
        let r = &self.ranks[rank as usize];
        if let Some(c) = r.last_refsb {
            cons.push((c + self.p("nRFCsb"), "nRFCsb".into()));
        }
        if let Some(c) = r.last_refpb {
            cons.push((c + self.p("nRFCpb"), "nRFCpb".into()));
        }
    }

    fn act_like(&self, rank: u32, bank: u32, group: u32, cons: &mut Vec<(u64, String)>) {
        let acts = &self.ranks[rank as usize].acts;
        for &(c, b, g) in acts {
            if b != bank {
                let (k, v) = self.var("nRRD", g == group);
                cons.push((c + v, k));
            }
        }
        if acts.len() >= 4 {
            cons.push((acts[acts.len() - 4].0 + self.p("nFAW"), "nFAW".into()));
        }
    }

    fn col(&self, rank: u32, class: GCol, groups: &[u32], cons: &mut Vec<(u64, String)>) {
        for (c, pc, pg) in &self.ranks[rank as usize].cols {
            let same = pg.iter().any(|g| groups.contains(g));
            let (k, v) = match (pc, class) {
                // LPDDR6: within a bank group read to write counts BL/n_max (tRTW_L).
                (GCol::Read, GCol::Write) if same && self.has("nRTW_L") => {
                    ("nRTW_L".into(), self.p("nRTW_L"))
                }
                (GCol::Read, GCol::Write) if self.has("nRTW") => ("nRTW".into(), self.p("nRTW")),
                (GCol::Read, GCol::Write) => {
                    let wpre = self.h.timing.get("nWPRE").copied().unwrap_or(0);
                    (
                        "nCL+nBL+2-nCWL".to_string(),
                        self.p("nCL") + self.p("nBL") + 2 + wpre - self.p("nCWL"),
                    )
                }
                (GCol::Write, GCol::Read) => {
                    let (k, v) = self.var("nWTR", same);
                    let (bk, bv) = self.wtr_bl(same);
                    (format!("nCWL+{bk}+{k}"), self.p("nCWL") + bv + v)
                }
                (GCol::Write, GCol::Transfer) => {
                    // nWTR towards the source side, nCCD towards the destination side.
                    let (k, v) = self.var("nCCD", pg.contains(&groups[1]));
                    cons.push((c + v, k));
                    let (k, v) = self.var("nWTR", pg.contains(&groups[0]));
                    let (bk, bv) = self.wtr_bl(pg.contains(&groups[0]));
                    (format!("nCWL+{bk}+{k}"), self.p("nCWL") + bv + v)
                }
                // DDR5: writes in one bank group tCCD_L_WR apart.
                (GCol::Write, GCol::Write)
                    if same
                        && self.grouped()
                        && self.has("nCCD_L_WR")
                        && self.p("nCCD_L_WR") >= self.p("nCCD_L") =>
                {
                    ("nCCD_L_WR".into(), self.p("nCCD_L_WR"))
                }
                _ => self.var("nCCD", same),
            };
            cons.push((c + v, k));
        }
    }

    fn bus(&self, rank: u32, offset: u64, cons: &mut Vec<(u64, String)>) {
        for &(c, off, r) in &self.bursts {
            if r != rank {
                let end = c + off + self.p("nBL") + self.p("nRTRS");
                if end > offset {
                    cons.push((end - offset, "nBL+nRTRS".into()));
                }
            }
        }
    }

    fn pre_cons(&self, bi: usize, cons: &mut Vec<(u64, String)>) {
        let bk = &self.banks[bi];
        if let Some(a) = bk.last_activation {
            cons.push((a + self.p("nRAS"), "nRAS".into()));
        }
        if let Some(r) = bk.last_read {
            cons.push((r + self.p("nRTP"), "nRTP".into()));
        }
        if let Some(w) = bk.last_write {
            cons.push((w + self.wtp(), self.wr_key()));
        }
    }

    fn rec(&self, kind: CommandKind, rank: u32, bank: u32, row: u32, column: u32) -> CommandRecord {
        let bpg = self.h.org.banks_per_group;
        CommandRecord {
            cycle: 0,
            kind,
            channel: 0,
            rank,
            bank_group: bank / bpg,
            bank: bank % bpg,
            row,
            column,
            dst: None,
        }
    }

    fn push_act(&mut self, rank: u32, bank: u32, t: u64) {
        let g = bank / self.h.org.banks_per_group;
        let acts = &mut self.ranks[rank as usize].acts;
        acts.push((t, bank, g));
        if acts.len() > 8 {
            acts.remove(0);
        }
    }

    fn push_col(&mut self, rank: u32, class: GCol, groups: Vec<u32>, t: u64) {
        let cols = &mut self.ranks[rank as usize].cols;
        cols.push((t, class, groups));
        if cols.len() > 32 {
            cols.remove(0);
        }
    }

    /// PRE of one open bank (for a refresh).
    fn close(&mut self, rank: u32, bank: u32) {
        let bi = self.bi(rank, bank);
        if self.banks[bi].open.is_none() {
            return;
        }
        let mut cons = Vec::new();
        self.pre_cons(bi, &mut cons);
        self.ppd(rank, &mut cons);
        self.rfc(rank, &mut cons);
        let t = self.emit(self.rec(Pre, rank, bank, 0, 0), cons);
        let bk = &mut self.banks[bi];
        bk.open = None;
        bk.last_pre = Some(t);
        self.ranks[rank as usize].last_pre_cmd = Some(t);
    }

    /// The refresh due on `rank`: REF (after a PREA), or REFSB / REFPB in their modes, with an
    /// all-bank REF in place of every fourth.
    fn refresh(&mut self, rank: u32) {
        let r = &mut self.ranks[rank as usize];
        r.ref_count += 1;
        let all = self.mode == RefMode::AllBank || r.ref_count.is_multiple_of(4);
        let step = self.refresh_step();
        self.ranks[rank as usize].next_ref += step;
        if all {
            self.refresh_all(rank);
        } else if self.mode == RefMode::SameBank {
            self.refresh_same_bank(rank);
        } else {
            self.refresh_per_bank(rank);
        }
    }

    fn refresh_all(&mut self, rank: u32) {
        let nbr = self.h.org.banks_per_rank();
        let open: Vec<u32> = (0..nbr)
            .filter(|&b| self.banks[self.bi(rank, b)].open.is_some())
            .collect();
        if !open.is_empty() {
            let mut cons = Vec::new();
            for &b in &open {
                self.pre_cons(self.bi(rank, b), &mut cons);
            }
            self.rfc(rank, &mut cons);
            self.ppd(rank, &mut cons);
            self.after_partial_refresh(rank, &mut cons);
            let t = self.emit(self.rec(Prea, rank, 0, 0, 0), cons);
            for &b in &open {
                let bi = self.bi(rank, b);
                self.banks[bi].open = None;
            }
            let r = &mut self.ranks[rank as usize];
            r.last_prea = Some(t);
            r.last_pre_cmd = Some(t);
        }
        let mut cons = Vec::new();
        for b in 0..nbr {
            if let Some(p) = self.banks[self.bi(rank, b)].last_pre {
                cons.push((p + self.p("nRP"), "nRP".into()));
            }
        }
        if let Some(p) = self.ranks[rank as usize].last_prea {
            let (k, v) = self.rpa();
            cons.push((p + v, k));
        }
        self.rfc(rank, &mut cons);
        self.after_partial_refresh(rank, &mut cons);
        let t = self.emit(self.rec(Ref, rank, 0, 0, 0), cons);
        self.ranks[rank as usize].last_ref = Some(t);
    }

    /// The constraints of a refresh at bank `bi` from its own history (`key`: its tRFC name).
    fn bank_refresh_cons(&self, bi: usize, key: &str, cons: &mut Vec<(u64, String)>) {
        let bk = &self.banks[bi];
        if let Some(p) = bk.last_pre {
            cons.push((p + self.p("nRP"), "nRP".into()));
        }
        if let Some(a) = bk.last_act {
            cons.push((a + self.p("nRC"), "nRC".into()));
        }
        if let Some(c) = bk.last_bank_ref {
            cons.push((c + self.p(key), key.into()));
        }
    }

    fn refresh_same_bank(&mut self, rank: u32) {
        let o = self.h.org.clone();
        let i = self.ranks[rank as usize].ref_next;
        self.ranks[rank as usize].ref_next = (i + 1) % o.banks_per_group;
        let banks: Vec<u32> = (0..o.bank_groups)
            .map(|g| g * o.banks_per_group + i)
            .collect();
        for &b in &banks {
            self.close(rank, b);
        }
        let mut cons = Vec::new();
        self.rfc(rank, &mut cons);
        for &b in &banks {
            self.bank_refresh_cons(self.bi(rank, b), "nRFCsb", &mut cons);
        }
        if let Some(p) = self.ranks[rank as usize].last_prea {
            cons.push((p + self.p("nRP"), "nRP".into()));
        }
        let t = self.emit(self.rec(Refsb, rank, i, 0, 0), cons);
        for &b in &banks {
            let bi = self.bi(rank, b);
            self.banks[bi].last_bank_ref = Some(t);
        }
        self.ranks[rank as usize].last_refsb = Some(t);
    }

    /// LPDDR5 with 16 banks (bank-group and 16-bank mode) refreshes bank pairs, b and b + 8
    /// (JESD209-5 as DRAMPower and Ramulator 2.1 model it): the offset, or 0.
    fn pb_pair(&self) -> u32 {
        if self.std() == "LPDDR5" && self.h.org.banks_per_rank() == 16 {
            8
        } else {
            0
        }
    }

    fn refresh_per_bank(&mut self, rank: u32) {
        let nbr = self.h.org.banks_per_rank();
        let pair = self.pb_pair();
        let steps = if pair > 0 { nbr / 2 } else { nbr };
        let b = self.ranks[rank as usize].ref_next;
        self.ranks[rank as usize].ref_next = (b + 1) % steps;
        let refreshed: Vec<u32> = if pair > 0 { vec![b, b + pair] } else { vec![b] };
        for &x in &refreshed {
            self.close(rank, x);
        }
        let mut cons = Vec::new();
        self.rfc(rank, &mut cons);
        for &x in &refreshed {
            let xi = self.bi(rank, x);
            self.bank_refresh_cons(xi, "nRFCpb", &mut cons);
        }
        let [pb2pb, _, act2pb] = self.pb_rules();
        let r = &self.ranks[rank as usize];
        if let (Some(c), Some((k, v))) = (r.last_refpb, pb2pb) {
            cons.push((c + v, k));
        }
        if let Some(p) = r.last_prea {
            let (k, v) = self.rpa();
            cons.push((p + v, k));
        }
        if let Some((k, v)) = act2pb {
            for &(c, ab, _) in &r.acts {
                if !refreshed.contains(&ab) {
                    cons.push((c + v, k.clone()));
                }
            }
        }
        let t = self.emit(self.rec(Refpb, rank, b, 0, 0), cons);
        for &x in &refreshed {
            let xi = self.bi(rank, x);
            self.banks[xi].last_bank_ref = Some(t);
        }
        self.ranks[rank as usize].last_refpb = Some(t);
    }

    /// Issues one random legal command (or a refresh when one is due).
    fn step(&mut self) {
        let o = self.h.org.clone();
        if self.h.refresh {
            let now = self.last.unwrap_or(0);
            if let Some(r) = (0..o.ranks).find(|&r| now >= self.ranks[r as usize].next_ref) {
                self.refresh(r);
                return;
            }
        }
        let rank = self.rand(o.ranks as u64) as u32;
        let bank = self.rand(o.banks_per_rank() as u64) as u32;
        let group = bank / o.banks_per_group;
        let bi = self.bi(rank, bank);
        let sa = o.subarray_rows;
        let rows = o.rows.min(2 * sa) as u64;
        let column = self.rand(o.lines_per_row() as u64) as u32;
        let mut cons = Vec::new();
        self.rfc(rank, &mut cons);
        let Some(row) = self.banks[bi].open else {
            if self.rand(10) == 0 {
                // A PRE to a closed bank: a no-op, but still a precharge command (tPPD).
                self.ppd(rank, &mut cons);
                self.emit(self.rec(Pre, rank, bank, 0, 0), cons);
                return;
            }
            let row = self.rand(rows) as u32;
            let bk = &self.banks[bi];
            if let Some(p) = bk.last_pre {
                cons.push((p + self.p("nRP"), "nRP".into()));
            }
            if let Some(a) = bk.last_act {
                cons.push((a + self.p("nRC"), "nRC".into()));
            }
            if let Some(c) = bk.last_bank_ref {
                let key = if self.mode == RefMode::SameBank {
                    "nRFCsb"
                } else {
                    "nRFCpb"
                };
                cons.push((c + self.p(key), key.into()));
            }
            let r = &self.ranks[rank as usize];
            if let Some(p) = r.last_prea {
                let (k, v) = self.rpa();
                cons.push((p + v, k));
            }
            if let Some(c) = r.last_refsb {
                cons.push((c + self.p("nREFSBRD"), "nREFSBRD".into()));
            }
            if let (Some(c), [_, Some((k, v)), _]) = (r.last_refpb, self.pb_rules()) {
                cons.push((c + v, k));
            }
            self.act_like(rank, bank, group, &mut cons);
            let t = self.emit(self.rec(Act, rank, bank, row, 0), cons);
            let bk = &mut self.banks[bi];
            bk.open = Some(row);
            bk.last_act = Some(t);
            bk.last_activation = Some(t);
            self.push_act(rank, bank, t);
            return;
        };
        let choice = self.rand(40);
        match choice {
            0..=21 => {
                let kind = [Rd, Rd, Rd, Wr, Wr, Rda, Wra][choice as usize % 7];
                let read = kind.is_read();
                if let Some(a) = self.banks[bi].last_act {
                    let (k, v) = self.rcd(read);
                    cons.push((a + v, k));
                }
                let class = if read { GCol::Read } else { GCol::Write };
                self.col(rank, class, &[group], &mut cons);
                let off = if read { self.p("nCL") } else { self.p("nCWL") };
                self.bus(rank, off, &mut cons);
                let bk = self.banks[bi].clone();
                let ras_at = bk.last_activation.unwrap_or(0) + self.p("nRAS");
                if kind == Rda {
                    if let Some(w) = bk.last_write {
                        if ras_at < w + self.wtp() {
                            cons.push((w + self.wtp() - self.p("nRTP"), self.wr_key()));
                        }
                    }
                }
                let t = self.emit(self.rec(kind, rank, bank, row, column), cons);
                self.push_col(rank, class, vec![group], t);
                self.bursts.push((t, off, rank));
                if self.bursts.len() > 32 {
                    self.bursts.remove(0);
                }
                let after = if read {
                    t + self.p("nRTP")
                } else {
                    t + self.wtp()
                };
                let bk = &mut self.banks[bi];
                if read {
                    bk.last_read = Some(t);
                } else {
                    bk.last_write = Some(t);
                }
                if matches!(kind, Rda | Wra) {
                    bk.open = None;
                    bk.last_pre = Some(after.max(ras_at));
                }
            }
            22..=26 => {
                self.pre_cons(bi, &mut cons);
                self.ppd(rank, &mut cons);
                let t = self.emit(self.rec(Pre, rank, bank, 0, 0), cons);
                let bk = &mut self.banks[bi];
                bk.open = None;
                bk.last_pre = Some(t);
                self.ranks[rank as usize].last_pre_cmd = Some(t);
            }
            27..=30 => {
                // FPM: a row of the same subarray; or Multi-RowCopy's ACTM raising the aligned
                // block of 2 to 32 rows around the open row (timed as ACTC).
                let (kind, dst) = if choice >= 29 && sa >= 2 {
                    let k = 1 + self.rand(u64::from(sa.ilog2().min(5))) as u32;
                    (Actm, row ^ ((1 << k) - 1))
                } else {
                    (Actc, row / sa * sa + self.rand(sa as u64) as u32)
                };
                if let Some(a) = self.banks[bi].last_activation {
                    cons.push((a + self.p("nRAS"), "nRAS".into()));
                }
                self.act_like(rank, bank, group, &mut cons);
                let t = self.emit(self.rec(kind, rank, bank, dst, 0), cons);
                let bk = &mut self.banks[bi];
                bk.open = Some(dst);
                bk.last_activation = Some(t);
                self.push_act(rank, bank, t);
            }
            31..=37 => {
                // PSM: to another open bank of the rank.
                let others: Vec<u32> = (0..o.banks_per_rank())
                    .filter(|&d| d != bank && self.banks[self.bi(rank, d)].open.is_some())
                    .collect();
                if others.is_empty() {
                    return;
                }
                let dbank = others[self.rand(others.len() as u64) as usize];
                let di = self.bi(rank, dbank);
                let dgroup = dbank / o.banks_per_group;
                // The source side reads (nRCD / nRCDRD), the destination side writes.
                for (i, read) in [(bi, true), (di, false)] {
                    if let Some(a) = self.banks[i].last_act {
                        let (k, v) = self.rcd(read);
                        cons.push((a + v, k));
                    }
                }
                self.col(rank, GCol::Transfer, &[group, dgroup], &mut cons);
                let drow = self.banks[di].open.unwrap_or(0);
                let dcol = self.rand(o.lines_per_row() as u64) as u32;
                let mut rec = self.rec(Tr, rank, bank, row, column);
                rec.dst = Some(TransferDst {
                    bank_group: dgroup,
                    bank: dbank % o.banks_per_group,
                    row: drow,
                    column: dcol,
                });
                let t = self.emit(rec, cons);
                self.push_col(rank, GCol::Transfer, vec![group, dgroup], t);
                self.banks[bi].last_read = Some(t);
                self.banks[di].last_write = Some(t);
            }
            _ => {
                let nbr = o.banks_per_rank();
                let open: Vec<usize> = (0..nbr)
                    .map(|b| self.bi(rank, b))
                    .filter(|&i| self.banks[i].open.is_some())
                    .collect();
                for &i in &open {
                    self.pre_cons(i, &mut cons);
                }
                self.ppd(rank, &mut cons);
                self.after_partial_refresh(rank, &mut cons);
                let t = self.emit(self.rec(Prea, rank, 0, 0, 0), cons);
                for i in open {
                    self.banks[i].open = None;
                }
                let r = &mut self.ranks[rank as usize];
                r.last_prea = Some(t);
                r.last_pre_cmd = Some(t);
            }
        }
    }
}

fn generate(case: &Case, seed: u64, n: usize) -> Gen {
    let mut g = Gen::new(case, seed);
    while g.out.len() < n {
        g.step();
    }
    g
}

/// Cases for the property tests: a speed bin of every standard the presets have (DDR5 with
/// all-bank and with same-bank refresh, LPDDR5, HBM2 and HBM3 with all-bank and per-bank refresh), two
/// ranks, and a short refresh interval so that refreshes and their rules come up in short
/// sequences (long enough for one per-bank refresh of every bank between a rank's REFs).
fn prop_cases() -> Vec<Case> {
    use RefMode::*;
    [
        ("DDR2-800D/DDR2-1Gb-x8", AllBank),
        ("DDR3-1066G/DDR3-2Gb-x8", AllBank),
        ("DDR3-1600K/DDR3-4Gb-x8", AllBank),
        ("DDR4-2400R/DDR4-8Gb-x8", AllBank),
        ("DDR4-3200AA/DDR4-16Gb-x8", AllBank),
        ("DDR5-4800B/DDR5-16Gb-x8", AllBank),
        ("DDR5-3200AN/DDR5-8Gb-x16", SameBank),
        ("DDR5-6400B/DDR5-16Gb-x8", SameBank),
        ("HBM2-2000/HBM2-8Gb-PC", AllBank),
        ("HBM2-2000/HBM2-8Gb-PC", PerBank),
        ("LPDDR5-6400/LPDDR5-8Gb-x16", AllBank),
        ("LPDDR5-6400/LPDDR5-16Gb-x16", PerBank),
        ("LPDDR5-6400-BL32/LPDDR5-8Gb-x16", PerBank),
        ("LPDDR5-6400-BL32/LPDDR5-16Gb-x16", AllBank),
        ("LPDDR5-6400-8B/LPDDR5-8Gb-x16-8B", PerBank),
        ("LPDDR5-6400-8B/LPDDR5-16Gb-x16-8B", AllBank),
        ("HBM3-6400/HBM3-8Gb-PC", AllBank),
        ("HBM3-6400/HBM3-8Gb-PC", PerBank),
        ("LPDDR6-10667/LPDDR6-16Gb-SC", AllBank),
    ]
    .iter()
    .map(|&(p, mode)| {
        let h = ranks(header(p), 2);
        let mut kv = vec![("nREFI", 600), ("nRFC", 70)];
        // Same-bank / per-bank refreshes come nREFI / banks apart: the interval grows so that
        // they fit, and their cycle times shrink so that traffic runs between them.
        match mode {
            AllBank => {}
            SameBank => kv.extend([("nREFI", 1600), ("nRFCsb", 60), ("nREFSBRD", 30)]),
            PerBank => {
                kv.extend([("nREFI", 2400), ("nRFCpb", 50)]);
                if h.timing.contains_key("nPBR2PBR") {
                    kv.push(("nPBR2PBR", 40));
                }
            }
        }
        Case {
            h: LogHeader {
                refresh: true,
                ..with(h, &kv)
            },
            mode,
        }
    })
    .collect()
}

#[test]
fn generated_sequences_cover_every_command() {
    for case in prop_cases() {
        let g = generate(&case, 7, 4000);
        let kinds: BTreeSet<_> = g.out.iter().map(|r| r.kind).collect();
        let expected: BTreeSet<_> = CommandKind::ALL
            .into_iter()
            .filter(|k| match k {
                Refsb => case.mode == RefMode::SameBank,
                Refpb => case.mode == RefMode::PerBank,
                // Refresh management has its own checker tests (tests/earliest_legal_cycle.rs,
                // tests/checker_replays_controller.rs); this generator does not issue RFM.
                Rfm | Rfmsb | Rfmpb => false,
                // LPDDR5's WCK2CK sync likewise (checker::wck's own tests and the WCK replays).
                Cas => false,
                _ => true,
            })
            .collect();
        assert_eq!(kinds, expected, "{} {:?}", case.h.speed, case.mode);
        let keys: BTreeSet<_> = g
            .binding
            .iter()
            .flatten()
            .map(|k| k.split('_').next().unwrap_or("").to_string())
            .collect();
        let h = &case.h.timing;
        let mut want = vec![
            if h.contains_key("nRCDRD") {
                "nRCDRD"
            } else {
                "nRCD"
            },
            "nRAS",
            "nRP",
            "nRTP",
            // LPDDR6's write recovery is nCWL+nBL_max+nWTP (split at '_': "nCWL+nBL").
            if case.h.standard == "LPDDR6" {
                "nCWL+nBL"
            } else {
                "nCWL+nBL+nWR"
            },
            "nCCD",
            "nRRD",
            "nFAW",
            "nRFC",
            "nBL+nRTRS",
            if h.contains_key("nRTW") {
                "nRTW"
            } else {
                "nCL+nBL+2-nCWL"
            },
            "nCWL+nBL+nWTR",
        ];
        match case.h.standard.as_str() {
            "DDR5" => want.extend(["2", "nPPD"]),
            "LPDDR5" => want.extend(["2", "nPPD", "nRPab"]),
            "LPDDR6" => want.extend(["2", "4", "nPPD", "nRPab"]),
            "HBM3" => want.push("nPPD"),
            _ => {}
        }
        match case.mode {
            RefMode::SameBank => want.extend(["nRFCsb", "nREFSBRD"]),
            RefMode::PerBank => want.push("nRFCpb"),
            RefMode::AllBank => {}
        }
        for k in want {
            assert!(
                keys.contains(k),
                "{} {:?}: no command bound by {k}: {keys:?}",
                case.h.speed,
                case.mode
            );
        }
    }
}

#[test]
fn memory_stays_bounded() {
    let case = prop_cases().remove(2);
    let g = generate(&case, 11, 60_000);
    let mut ck = Checker::new(&case.h).expect("checker");
    let mut most = 0;
    for r in &g.out {
        ck.check(r).expect("legal");
        most = most.max(ck.history_len());
    }
    assert!(most < 200, "history grew to {most}");
    assert!(ck.finish().ok);
}

/// The generator's key for the ACT's hold of the row bus where a PRE may take the falling edge
/// (HBM3 / HBM4): it places the PRE but is no rule the checker names.
const FALLING: &str = "falling edge";

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random legal sequences pass; one command one cycle earlier breaks exactly the rules that
    /// set its cycle, and the checker names them. Every standard and refresh mode.
    #[test]
    fn greedy_sequences_pass_and_shifts_are_caught(which in 0usize..19, seed in any::<u64>(), n in 50usize..400, pick in any::<u64>()) {
        let case = prop_cases().swap_remove(which);
        let h = &case.h;
        let g = generate(&case, seed, n);
        let r = run(h, &g.out);
        prop_assert!(r.ok, "legal sequence rejected:\n{}", show(&r));

        let k = 1 + (pick % (g.out.len() as u64 - 1)) as usize;
        let mut early = g.out.clone();
        early[k].cycle -= 1;
        let r = run(h, &early);
        let at_k: BTreeSet<String> = r.violations.iter()
            .filter(|v| v.index == k as u64 && v.kind == ViolationKind::Timing)
            .map(|v| v.rule_key().to_string()).collect();
        prop_assert_eq!(&at_k, &g.binding[k], "{} command #{} {}:\n{}", h.speed, k, g.out[k].to_line(), show(&r));
        // Into the previous command's cycle: a second command on the command bus, except on
        // HBM's separate buses when one is a row and the other a column command.
        let column = |kind: CommandKind| matches!(kind, Rd | Rda | Wr | Wra | Tr);
        let hbm = matches!(h.standard.as_str(), "HBM2" | "HBM3" | "HBM4");
        // HBM3 / HBM4: a PRE moved beside a PRE, REFPB or RFMPB of another bank takes the
        // clock's falling edge (half-clock row commands).
        let (a, b) = (&g.out[k], &g.out[k - 1]);
        let pairs = matches!(h.standard.as_str(), "HBM3" | "HBM4")
            && a.kind == Pre
            && matches!(b.kind, Pre | Refpb | Rfmpb)
            && (a.rank, a.bank_group, a.bank) != (b.rank, b.bank_group, b.bank);
        let bus = g.out[k].cycle - 1 == g.out[k - 1].cycle
            && (!hbm || column(g.out[k].kind) == column(g.out[k - 1].kind))
            && !pairs;
        let protocol: Vec<String> = protocol_rules(&r);
        prop_assert_eq!(protocol.clone(), if bus { vec!["command bus".to_string()] } else { vec![] });
        // A command moved a cycle earlier that binds no rule and meets no other on the bus breaks
        // nothing at its own index; an auto-precharge timed from it (an ACT's tRAS) may still
        // move and break a rule later on (the loop below), as an RDA's implied PRE after a TR.
        if g.binding[k].is_empty() && !bus {
            prop_assert!(r.violations.iter().all(|v| v.index != k as u64 && v.rule.contains("PRE(auto")),
                         "{} command #{} {} moved a cycle earlier binds no rule, yet:\n{}", h.speed, k,
                         g.out[k].to_line(), show(&r));
        }
        // Elsewhere only an auto-precharge that moved with an earlier ACT may break a rule.
        for v in r.violations.iter().filter(|v| v.index != k as u64) {
            prop_assert!(v.rule.contains("PRE(auto"), "unexpected: {} {}", v.index, v.rule);
        }
    }
}

#[test]
fn every_case_passes_long_generated_sequences() {
    // Long sequences (many refresh intervals) of every case: checker-clean, refresh included.
    for case in prop_cases() {
        for seed in [3, 5] {
            let g = generate(&case, seed, 6000);
            let r = run(&case.h, &g.out);
            assert!(r.ok, "{} {:?}:\n{}", case.h.speed, case.mode, show(&r));
        }
    }
}

/// A log whose header gives a timing no device has at zero (an edited spec line: nRAS 0, a 0 ps
/// clock) is refused: with it any schedule would pass the check ("OK: no violations").
#[test]
fn a_header_with_a_zero_timing_is_refused() {
    for key in ["nRAS", "tCK_ps", "nRP"] {
        let h = with(ddr3(), &[(key, 0)]);
        match Checker::new(&h) {
            Err(LogError::Header(m)) => assert!(m.contains(key) && m.contains("is 0"), "{m}"),
            Err(e) => panic!("{key}: {e}"),
            Ok(_) => panic!("{key} = 0 accepted"),
        }
    }
    assert!(Checker::new(&ddr3()).is_ok());
}
