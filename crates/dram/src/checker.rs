//! The independent timing checker: the DRAM model's oracle.
//!
//! The checker replays an issued-command log (or a stream of [`CommandRecord`]s) and verifies every
//! command against the DRAM standard's command-to-command timing rules (JEDEC JESD79-3 section 13,
//! JESD79-4), RowClone's in-DRAM copy commands (Seshadri et al., MICRO 2013,
//! sections 3.1-3.4), the protocol state of every bank, and the refresh interval.
//!
//! It is deliberately *not* built on the rule table in `presets/dram/*.toml` that the controller
//! schedules by: its rules are written out here in code, from the standards' rules, so that a rule
//! missing from (or wrong in) that table shows up as a violation. Its algorithm differs from the
//! controller's too: instead of keeping "next allowed" times, it keeps a short history of recent
//! commands per rank (and of data bursts per channel) and checks each new command against every
//! earlier command still in the history and its minimum separation. The history is pruned to the
//! longest rule, so memory does not grow with the log.
//!
//! # Rules checked
//!
//! Rule names in a [`Violation`] start with the latency expression (`"nRCD: ACT -> RD same bank"`).
//! RD / WR include RDA / WRA; TR(src) acts as a read of its source bank and TR(dst) as a write of
//! its destination bank in same-bank rules; `_S` / `_L` apply on DDR4 (DDR3 uses the plain name).
//!
//! | scope | rule |
//! | --- | --- |
//! | same bank | ACT -> RD / WR / TR(src) / TR(dst): nRCD; ACT -> PRE: nRAS; ACT -> ACT: nRC; PRE -> ACT: nRP |
//! | same bank | RD / TR(src) -> PRE: nRTP; WR / TR(dst) -> PRE: nCWL + nBL + nWR |
//! | same bank (FPM) | ACT -> ACTC, ACTC -> ACTC, ACTC -> PRE: nRAS (Multi-RowCopy's ACTM as ACTC) |
//! | other bank, same rank | ACT / ACTC -> ACT / ACTC: nRRD (_S other group, _L same group) |
//! | same rank | at most 4 ACT / ACTC in any nFAW window |
//! | same rank | RD -> RD, WR -> WR, TR <-> RD / WR / TR, RD -> TR: nCCD (_S / _L) |
//! | same rank | RD -> WR: nCL + nBL + 2 - nCWL; WR -> RD, WR -> TR: nCWL + nBL + nWTR (_S / _L) |
//! | other rank, same channel | data bursts (RD at [t + nCL, +nBL), WR at [t + nCWL, +nBL)) nRTRS apart |
//! | same rank | data bursts do not overlap (whatever the column rules allow) |
//! | same rank | REF -> any command: nRFC; PRE / PREA / auto-precharge -> REF: nRP; PREA -> ACT: nRP |
//! | same rank, 8-bank DDR2 | PREA -> ACT, PREA -> REF: nRP + 1 (tRPA) |
//! | rank | REF at most 9 x nREFI apart, and never more than 8 REFs owed (when the log refreshed) |
//! | DDR5, fine-granularity refresh (header `FGR = 1`) | REF -> any command nRFC2 instead of nRFC, and the refresh interval is nREFI1 / 2 (tREFI2) instead of nREFI: REF at most 9 x tREFI2 apart, never more than 8 owed (`refresh_mode::checked_timing`) |
//! | DDR5 / LPDDR5 / HBM2 / HBM3 / HBM4 | two-clock commands (DDR5 ACT, RD, WR and their forms; LPDDR5's two-part ACT; HBM2's ACT on its row bus; HBM3's and HBM4's 1.5-clock ACT, rounded to the next rising edge) hold the bus the next clock (HBM: the row bus only) |
//! | DDR5 | nCCD_L_WR, nPPD, REFSB (nRFCsb at its banks, nREFSBRD to any ACT, nRFCsb to REF / PREA) |
//! | LPDDR5 | PREA -> ACT / REF / REFPB: nRPab; REFPB: nRFCpb at its bank (and at bank + 8 with 16 banks: a pair), nPBR2PBR to REFPB, nPBR2ACT to ACT |
//! | LPDDR5, WCK auto sync-off (header `WCK_SYNC = 1`) | CAS (WCK2CK sync) followed on the next clock by a RD / WR of its rank; no CAS while the rank's WCK is synchronised (RD -> CAS nCL + nBL_max + nWCKPST + 1, WR -> CAS nCWL + nBL_max + nWCKPST + 1); a RD / WR after that window, or the first, follows a CAS; the preamble (nWCKENL + nWCKPRE_static + nWCKPRE_toggle) ends by the data start (`checker/wck.rs`) |
//! | LPDDR5 BG mode, BL32 | WR -> RD / TR same bank group: nCWL + nBL_max + nWTR_L (BL/n_max), when the bin gives nBL_max |
//! | LPDDR6 | every command holds the command bus 2 clocks, an ACT (ACT-1 + ACT-2) 4; PREA -> ACT / REF: nRPab; WR -> PRE: nCWL + nBL_max + nWTP; WR -> RD same bank group nCWL + nBL_max + nWTR_L; RD -> WR: nRTW, same bank group nRTW_L |
//! | GDDR6 | the DDR4-like rules above with split nRCDRD / nRCDWR; REFPB: nRFCpb at its bank, nRREFD to REFPB and ACT, ACT -> REFPB of another bank nRRD_L |
//! | GDDR7 | no bank groups (nCCD, nRRD, nWTR on the channel); same bank: column -> column nCCDSB, WR -> RD / TR(src) nCWL + nBL + nWTRSB; RD -> WR nRTW; nPPD; two-clock ACT, RD, WR (as DDR5); all-bank refresh only |
//! | HBM2, HBM3, HBM4 | REFPB: nRFCpb at its bank, nRREFD to REFPB and ACT, ACT -> REFPB of another bank nRRD_S |
//! | HBM4 | ACT -> REFPB and REFPB -> ACT of another bank in the same bank group: nRRD_L |
//! | HBM3, HBM4 | half-clock row commands (`checker/half_clock.rs`): a PRE may take the falling edge of a clock whose rising edge another row command holds (one in the same clock, or an ACT in the clock before); only a PRE, one per clock, never in an ACT's own clock, never after PREA / REF / RFM, never the bank of the command it pairs with; a falling-edge PRE's rules count from the next clock |
//! | every standard | REFPB / REFSB: each bank (index) refreshed on the REF interval rules above |
//! | DDR5, HBM3, HBM4, GDDR7 (RFM required) | RFM (all banks): every bank precharged, PRE / PREA / auto-precharge -> RFM nRP, REF -> RFM nRFC, REFSB -> RFM nRFCsb, REFPB -> RFM nRFCpb, RFM -> any command nRFM |
//! | DDR5 (RFM required, header gives nRFMsb) | RFMSB (same-bank RFM, bank index b of every group, JESD79-5 4.41): those banks precharged; timed as REFSB with nRFMsb: ACT -> RFMSB nRC and PRE / auto-precharge -> RFMSB nRP at its banks, RFMSB -> ACT / REFSB / RFMSB nRFMsb at its banks, REFSB -> RFMSB nRFCsb, RFMSB -> ACT of any bank nREFSBRD, RFMSB -> REF / RFM / PREA nRFMsb, PREA -> RFMSB nRP |
//! | HBM3, HBM4 (RFM required, header gives nRFMpb) | RFMPB (per-bank RFM, JESD238 / JESD270-4): its bank precharged; timed as REFPB with nRFMpb: ACT -> RFMPB nRC and PRE -> RFMPB nRP at its bank, RFMPB -> ACT / REFPB / RFMPB nRFMpb at its bank, REFPB -> RFMPB nRFCpb, REFPB / RFMPB -> REFPB / RFMPB of any bank nRREFD, RFMPB -> ACT of any bank nRREFD, ACT -> RFMPB of another bank nRRD_S (HBM4: nRRD_L both ways in a bank group), RFMPB -> REF / RFM / PREA nRFMpb |
//! | DDR5, HBM3, HBM4, GDDR7 (RFM required) | per bank, a rolling accumulated ACT count (RAA): +1 per ACT / ACTC / ACTM, -RAAIMT per REF (REFSB / REFPB: at the banks they refresh) and per RFM (RFMSB / RFMPB: at the banks they refresh), floored at 0; no activation of a bank whose count has reached RAAMMT |
//!
//! Protocol: ACT only to a precharged bank; RD / WR / RDA / WRA / TR only to an open bank and its
//! open row; ACTM only to an open bank, its row group (open row XOR each subset of the differing
//! address bits: 2 to 32 rows) within the open row's subarray; ACTC only to an open bank whose
//! open row is in the same subarray
//! (`row / org.subarray_rows`); TR between two different banks; REF only with every bank of the
//! rank precharged; at most one command per channel per cycle, except on HBM2 / HBM3 / HBM4, whose
//! separate row and column command buses (JESD235, JESD238, JESD270-4) carry one row command (ACT,
//! PRE, PREA, REF, REFPB, RFM, and RowClone's ACTC / ACTM) and one column command (RD, RDA, WR,
//! WRA, and RowClone's TR) per cycle: two row or two column commands in one cycle are refused
//! there (on HBM3 / HBM4 except a falling-edge PRE, above), a row and a column command allowed;
//! cycles non-decreasing; every index within the
//! organisation.
//!
//! Modelling choices a reader may want to know (see also the crate docs):
//! - A PRE to a bank that is already precharged is a no-op: it neither starts nor needs any timing.
//!   A PREA starts tRP for the whole rank (PREA -> ACT and PREA -> REF need nRP on every bank).
//!   On DDR2 devices with 8 banks a PREA takes tRPA = tRP + 1 clock (JESD79-2, as in Micron's 1Gb
//!   DDR2 datasheet): the checker asks for nRP + 1 after a PREA when the log's standard is DDR2 and
//!   a rank has 8 or more banks.
//! - RDA / WRA imply a PRE at `max(t + nRTP, last activation + nRAS)` (RDA) and
//!   `max(t + nCWL + nBL + nWR, last activation + nRAS)` (WRA); that implied PRE is itself checked
//!   against the bank's earlier commands (e.g. write recovery of an earlier WR) and bounds the next
//!   ACT (nRP) and REF (nRP).
//! - DDR4 `_S` / `_L` variants: `_L` when the two commands share a bank group. A TRANSFER touches
//!   two banks, so for nCCD it shares a group with another command when either of its banks does;
//!   for WR -> TR, nWTR_L applies when the WR's group is the TR's source group (the TR reads there)
//!   and the destination side, a second write, needs only nCCD (_L in the same group).
//! - Refresh: a rank's consecutive REFs (and cycle 0 to its first REF) may be at most
//!   9 x nREFI apart, and at any time at most 8 REFs may be owed (the k-th REF by (k + 8) x nREFI).
use crate::command::{CommandKind, CommandRecord, LogHeader, IDLE_REFRESH};
pub use crate::command_log::parse_spec_line;
use crate::command_log::{LogLine, LogReader};
use crate::error::LogError;
use serde::Serialize;
use std::collections::VecDeque;
use std::io::BufRead;
use std::path::Path;

/// Violations kept in full in a [`CheckReport`]; all of them are counted.
pub const MAX_KEPT_VIOLATIONS: usize = 1000;

/// REFs JEDEC allows to be postponed; the checker allows a gap of `(1 + this) x nREFI`.
pub const REFRESH_POSTPONE_LIMIT: u64 = 8;

/// Largest number of banks (over all channels and ranks) a header may describe.
const MAX_BANKS: u64 = 1 << 20;

/// What kind of rule a violation broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// A minimum separation between two commands.
    Timing,
    /// Bank state, command bus, ordering or index bounds.
    Protocol,
    /// The refresh interval.
    Refresh,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub kind: ViolationKind,
    /// 0-based index of the offending command in the stream (the command count for violations
    /// found at the end of the log).
    pub index: u64,
    /// 1-based line in the log file, when the commands came from a file.
    pub line: Option<usize>,
    /// The offending command's cycle.
    pub cycle: u64,
    /// The offending command as a log line (or "(end of log)").
    pub command: String,
    /// The rule, e.g. `"nRCD: ACT -> RD same bank"`; the part before `:` is the latency
    /// expression (or the protocol rule's short name).
    pub rule: String,
    /// The minimum separation in cycles the rule asks for (0 for protocol rules; the maximum
    /// allowed gap for refresh rules).
    pub required_cycles: u64,
    /// The separation found (negative when the earlier event, e.g. an auto-precharge, lies after
    /// the command).
    pub actual_cycles: i64,
    /// Index of the earlier command the rule pairs this one with, if any.
    pub earlier_index: Option<u64>,
    /// Human-readable explanation.
    pub message: String,
}

impl Violation {
    /// The part of [`Violation::rule`] before the first `:`, e.g. `"nRCD"`.
    pub fn rule_key(&self) -> &str {
        self.rule.split(':').next().unwrap_or("")
    }
}

/// The result of checking a whole log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    pub commands_checked: u64,
    /// The first [`MAX_KEPT_VIOLATIONS`] violations.
    pub violations: Vec<Violation>,
    /// All violations found, including those not kept.
    pub violation_count: u64,
    pub ok: bool,
}

// ------------------------------------------------------------------------------------------------
// Timing parameters

/// The timing parameters the rules use, in clocks, with the names the variants go by.
#[derive(Debug, Clone)]
struct Params {
    bl: u64,
    cl: u64,
    /// ACT -> read / write: nRCD, or HBM's separate nRCDRD / nRCDWR.
    rcd_rd: (&'static str, u64),
    rcd_wr: (&'static str, u64),
    /// HBM: the read-to-write turnaround as one parameter (nRTW) instead of DDR's formula.
    rtw: Option<u64>,
    /// LPDDR6: read to write within one bank group, counting BL/n_max (JESD209-6 Table 389 as
    /// Ramulator 2.1 lists it: tRTW with BL/n_max, against BL/n_min for another group).
    rtw_l: Option<u64>,
    /// WR -> PRE: the burst time write recovery counts and how a violation names the rule:
    /// nBL and "nCWL+nBL+nWR" (DDR, HBM, GDDR, LPDDR5), LPDDR6's BL/n_max with its tWTP
    /// ("nCWL+nBL_max+nWTP", JESD209-6 Tables 383 / 391 as Ramulator 2.1 lists them).
    wr_bl: u64,
    wr_key: &'static str,
    /// LPDDR6: every command holds the command bus two clocks, the activate (ACT-1, ACT-2) four.
    lpddr6_bus: bool,
    /// PREA -> ACT / REF: nRP, or nRP + 1 (tRPA) on 8-bank DDR2, or LPDDR5's tRPab; and how a
    /// violation names it.
    rp: u64,
    rpa: u64,
    rpa_key: &'static str,
    ras: u64,
    rc: u64,
    cwl: u64,
    wr: u64,
    rtp: u64,
    rtrs: u64,
    faw: u64,
    rfc: u64,
    refi: u64,
    /// The names of `rfc` and `refi` in violations: "nRFC" / "nREFI", or "nRFC2" / "nREFI2"
    /// with fine-granularity refresh.
    rfc_key: &'static str,
    refi_key: &'static str,
    ccd_s: (&'static str, u64),
    ccd_l: (&'static str, u64),
    wtr_s: (&'static str, u64),
    wtr_l: (&'static str, u64),
    /// The burst time a write to a read of the same bank group counts: LPDDR5 with BL32 in BG mode
    /// counts BL/n_max (`nBL_max`, JESD209-5 as given by gem5's tBURST_MAX and Ramulator 2.1),
    /// every other device its burst `nBL`.
    bl_l: (&'static str, u64),
    rrd_s: (&'static str, u64),
    rrd_l: (&'static str, u64),
    /// Whether the device has bank groups (then `_S` / `_L` differ).
    grouped: bool,
    /// DDR5: write to write in one bank group (tCCD_L_WR), when the standard has it.
    ccd_l_wr: Option<u64>,
    /// GDDR7: column to column within one bank (tCCDSB) and write to read within one bank
    /// (tWTRSB, counted like nWTR from the end of the write burst), when the standard has them.
    ccd_sb: Option<u64>,
    wtr_sb: Option<u64>,
    /// DDR5: precharge to precharge on a rank (tPPD).
    ppd: Option<u64>,
    /// DDR5: the write preamble added to the read-to-write turnaround (0 before DDR5).
    wpre: u64,
    /// DDR5 same-bank refresh: tRFCsb and tREFSBRD (REFsb to ACT of another bank).
    rfcsb: Option<u64>,
    refsbrd: u64,
    /// Commands that hold the command bus for the next clock too: DDR5's ACT, RD, RDA, WR, WRA
    /// (and RowClone's ACTC, TR); LPDDR5's two-part activate (ACT-1, ACT-2; and ACTC).
    two_clock: &'static [CommandKind],
    /// HBM: separate row and column command buses, one command on each per cycle.
    separate_buses: bool,
    /// HBM3 / HBM4: half-clock row commands; a PRE may take the falling edge of a clock whose
    /// rising edge another row command holds (`checker/half_clock.rs`).
    half_clock: bool,
    /// Per-bank refresh (LPDDR5, HBM3), when the standard has it.
    pb: Option<PerBankRefresh>,
    /// Refresh management (DDR5, HBM3), when the log's device requires it.
    rfm: Option<RefreshManagement>,
}

/// Refresh management as JESD79-5 section 4.41 (DDR5) and JESD238 (HBM3) state it: the device's
/// thresholds (mode-register values: DDR5 MR58) and the all-bank RFM's duration.
#[derive(Debug, Clone, Copy)]
struct RefreshManagement {
    /// The count at which the host owes an RFM, and by which each REF or RFM lowers the count.
    raaimt: u64,
    /// The count at which the bank takes no further activation.
    raammt: u64,
    /// RFM -> any command of the rank (tRFM).
    rfm: u64,
    /// DDR5's same-bank RFM (RFMsb): tRFMsb, when the log's header gives it.
    sb: Option<u64>,
    /// HBM3's and HBM4's per-bank RFM (RFMpb): tRFMpb, when the log's header gives it.
    pb: Option<u64>,
}

/// The per-bank refresh rules of a standard (REFPB), with the names they go by.
#[derive(Debug, Clone, Copy)]
struct PerBankRefresh {
    /// REFPB -> ACT / REFPB of the same bank (tRFCpb); REFPB -> REF / PREA.
    rfcpb: u64,
    /// REFPB -> REFPB of any bank (LPDDR5 tpbR2pbR, HBM3 tRREFD).
    pb2pb: (&'static str, u64),
    /// REFPB -> ACT of any bank (LPDDR5 tpbR2act, HBM3 tRREFD).
    pb2act: (&'static str, u64),
    /// ACT -> REFPB of another bank (HBM3: tRRD_S; LPDDR5 lists none).
    act2pb: Option<(&'static str, u64)>,
    /// HBM4: ACT -> REFPB and REFPB -> ACT of another bank in the same bank group (tRRD_L).
    group_pb: Option<(&'static str, u64)>,
    /// A REFPB refreshes its bank and the one this many banks further on in the rank (LPDDR5
    /// with 16 banks: bank-group and 16-bank mode); 0: its bank alone.
    pair: u32,
}

impl Params {
    fn from_header(h: &LogHeader) -> Result<Params, LogError> {
        let get = |name: &str| -> Result<u64, LogError> {
            h.timing
                .get(name)
                .copied()
                .ok_or_else(|| LogError::Header(format!("timing parameter {name} is missing")))
        };
        let grouped = h.org.bank_groups > 1;
        // DDR4 names with _S / _L; DDR3 has one name. With one bank group every pair of banks
        // shares the group, so the `_L` value applies.
        let pick = |base: &'static str,
                    s: &'static str,
                    l: &'static str|
         -> Result<[(&'static str, u64); 2], LogError> {
            let one = |n: &'static str| h.timing.get(n).map(|v| (n, *v));
            let short = if grouped {
                one(s).or_else(|| one(base))
            } else {
                one(base).or_else(|| one(l))
            };
            let long = if grouped {
                one(l).or_else(|| one(base))
            } else {
                short
            };
            match (short, long) {
                (Some(a), Some(b)) => Ok([a, b]),
                _ => Err(LogError::Header(format!(
                    "timing parameter {base} (or {s} / {l}) is missing"
                ))),
            }
        };
        let [ccd_s, ccd_l] = pick("nCCD", "nCCD_S", "nCCD_L")?;
        let [wtr_s, wtr_l] = pick("nWTR", "nWTR_S", "nWTR_L")?;
        let [rrd_s, rrd_l] = pick("nRRD", "nRRD_S", "nRRD_L")?;
        let rtrs = if h.org.ranks > 1 {
            get("nRTRS")?
        } else {
            h.timing.get("nRTRS").copied().unwrap_or(0)
        };
        // The refresh mode (DDR5 fine-granularity refresh: tRFC2 every tREFI / 2) is derived
        // from its flag and inputs in the header, not read off nRFC / nREFI (`refresh_mode`).
        let rt = crate::refresh_mode::checked_timing(&h.timing).map_err(LogError::Header)?;
        let (rfc, refi) = (rt.rfc, rt.refi);
        if h.refresh {
            get("nREFI")?;
        }
        if h.refresh && refi == 0 {
            return Err(LogError::Header(
                "nREFI must be positive when the log was refreshed".into(),
            ));
        }
        let rp = get("nRP")?;
        // DDR2's tRPA: a PRECHARGE ALL on an 8-bank device needs one clock more than tRP.
        // LPDDR5 (JESD209-5B): PREab needs tRPab, longer than the per-bank tRPpb.
        let (rpa, rpa_key) = if h.standard == "DDR2" && h.org.banks_per_rank() >= 8 {
            (rp + 1, "nRP+1")
        } else if h.standard == "LPDDR5" || h.standard == "LPDDR6" {
            (get("nRPab")?, "nRPab")
        } else {
            (rp, "nRP")
        };
        // Per-bank refresh: LPDDR5 (JESD209-5B: tRFCpb, tpbR2pbR, tpbR2act) and HBM2 / HBM3
        // (JESD235's single-bank refresh, JESD238's REFpb: tRFCpb, tRREFD both ways between
        // REFpb and REFpb / ACT, tRRD_S from an ACT).
        let pb = match h.standard.as_str() {
            // JESD209-5: with 16 banks (BG and 16B mode) REFpb refreshes a bank pair, b and
            // b + 8 (DRAMPower's perTwoBankOffset = 8; Ramulator 2.1's tREFIpb = tREFI / 8 for
            // 16 banks); in 8B mode one bank.
            "LPDDR5" => Some(PerBankRefresh {
                rfcpb: get("nRFCpb")?,
                pb2pb: ("nPBR2PBR", get("nPBR2PBR")?),
                pb2act: ("nPBR2ACT", get("nPBR2ACT")?),
                act2pb: None,
                group_pb: None,
                pair: if h.org.banks_per_rank() == 16 { 8 } else { 0 },
            }),
            // HBM4 (JESD270-4 as tabulated by Ramulator 2.1) adds tRRD_L between an ACT and a
            // REFpb of the same bank group, both ways.
            "HBM2" | "HBM3" | "HBM4" => Some(PerBankRefresh {
                rfcpb: get("nRFCpb")?,
                pb2pb: ("nRREFD", get("nRREFD")?),
                pb2act: ("nRREFD", get("nRREFD")?),
                act2pb: Some(("nRRD_S", get("nRRD_S")?)),
                group_pb: if h.standard == "HBM4" {
                    Some(("nRRD_L", get("nRRD_L")?))
                } else {
                    None
                },
                pair: 0,
            }),
            // GDDR6 (JESD250 as Ramulator 2.1 lists it): tRREFD both ways between REFpb and
            // REFpb / ACT, tRRD_L from an ACT to a REFpb of any other bank.
            "GDDR6" => Some(PerBankRefresh {
                rfcpb: get("nRFCpb")?,
                pb2pb: ("nRREFD", get("nRREFD")?),
                pb2act: ("nRREFD", get("nRREFD")?),
                act2pb: Some(("nRRD_L", get("nRRD_L")?)),
                group_pb: None,
                pair: 0,
            }),
            _ => None,
        };
        // Refresh management: DDR5 (JESD79-5 4.41) and HBM3 (JESD238) define it; a device that
        // requires it says so with its thresholds (the log's RAAIMT / RAAMMT).
        let rfm = match (h.standard.as_str(), h.timing.get("RAAIMT")) {
            // GDDR7 (JESD239) and HBM4 (JESD270-4) define the same all-bank RFM (Ramulator 2.1's
            // gddr7.py / hbm4.py: RFMab timed as an all-bank refresh).
            ("DDR5" | "HBM3" | "HBM4" | "GDDR7", Some(&raaimt)) => {
                let raammt = get("RAAMMT")?;
                if raaimt == 0 || raammt < raaimt {
                    return Err(LogError::Header(format!(
                        "refresh management needs 0 < RAAIMT <= RAAMMT (RAAIMT {raaimt}, RAAMMT {raammt})"
                    )));
                }
                Some(RefreshManagement {
                    raaimt,
                    raammt,
                    rfm: get("nRFM")?,
                    // JESD79-5 4.41: RFMsb, one bank address in every bank group (DDR5 only).
                    // JESD238 / JESD270-4: RFMpb, one bank (HBM3, HBM4).
                    sb: match h.standard.as_str() {
                        "DDR5" => h.timing.get("nRFMsb").copied(),
                        _ => None,
                    },
                    pb: match h.standard.as_str() {
                        "HBM3" | "HBM4" => h.timing.get("nRFMpb").copied(),
                        _ => None,
                    },
                })
            }
            _ => None,
        };
        // HBM splits tRCD by direction (JESD235 / JESD238 as tabulated by DRAMSys, gem5, Ramulator 2).
        let rcd = |split: &'static str| -> Result<(&'static str, u64), LogError> {
            match (h.timing.get(split), h.timing.get("nRCD")) {
                (Some(v), _) => Ok((split, *v)),
                (None, Some(v)) => Ok(("nRCD", *v)),
                (None, None) => Err(LogError::Header(format!(
                    "timing parameter nRCD (or {split}) is missing"
                ))),
            }
        };
        let bl = get("nBL")?;
        // LPDDR6 (JESD209-6 as Ramulator 2.1 tabulates it) differs from LPDDR5 in write recovery
        // (WL + BL/n_max + tWTP), same-group read to write (tRTW with BL/n_max) and its command bus.
        let lpddr6 = h.standard == "LPDDR6";
        let bl_l = match h.timing.get("nBL_max") {
            Some(&v) if (h.standard == "LPDDR5" || h.standard == "LPDDR6") && grouped => {
                ("nBL_max", v)
            }
            _ => ("nBL", bl),
        };
        Ok(Params {
            bl,
            bl_l,
            cl: get("nCL")?,
            rcd_rd: rcd("nRCDRD")?,
            rcd_wr: rcd("nRCDWR")?,
            rtw: h.timing.get("nRTW").copied(),
            rtw_l: if lpddr6 { Some(get("nRTW_L")?) } else { None },
            wr_bl: if lpddr6 { get("nBL_max")? } else { bl },
            wr_key: if lpddr6 {
                "nCWL+nBL_max+nWTP"
            } else {
                "nCWL+nBL+nWR"
            },
            lpddr6_bus: lpddr6,
            rp,
            rpa,
            rpa_key,
            ras: get("nRAS")?,
            rc: get("nRC")?,
            cwl: get("nCWL")?,
            wr: if lpddr6 { get("nWTP")? } else { get("nWR")? },
            rtp: get("nRTP")?,
            rtrs,
            faw: get("nFAW")?,
            rfc,
            refi,
            rfc_key: rt.rfc_key,
            refi_key: rt.refi_key,
            ccd_s,
            ccd_l,
            wtr_s,
            wtr_l,
            rrd_s,
            rrd_l,
            grouped,
            ccd_l_wr: h.timing.get("nCCD_L_WR").copied(),
            ccd_sb: h.timing.get("nCCDSB").copied(),
            wtr_sb: h.timing.get("nWTRSB").copied(),
            ppd: h.timing.get("nPPD").copied(),
            wpre: h.timing.get("nWPRE").copied().unwrap_or(0),
            rfcsb: h.timing.get("nRFCsb").copied(),
            refsbrd: h.timing.get("nREFSBRD").copied().unwrap_or(0),
            two_clock: match h.standard.as_str() {
                // JESD79-5 (Table 30 as cited by Ramulator 2): two-clock ACT, RD, RDA, WR, WRA;
                // GDDR7 likewise (JESD239 as coded by Ramulator 2.1: ACT, RD, WR two clocks).
                "DDR5" | "GDDR7" => &[
                    CommandKind::Act,
                    CommandKind::Actc,
                    CommandKind::Actm,
                    CommandKind::Rd,
                    CommandKind::Rda,
                    CommandKind::Wr,
                    CommandKind::Wra,
                    CommandKind::Tr,
                ],
                // JESD209-5: ACT-1 and ACT-2 on consecutive clocks. JESD235 (HBM2, as Ramulator
                // 2.1's hbm2.py codes it): an ACT takes two clocks of the row command bus.
                // JESD238 / JESD270-4 (HBM3, HBM4, as Ramulator 2.1's hbm3.py / hbm4.py code it):
                // an ACT takes 1.5 clocks of the row bus, so on rising edges the next row command
                // comes 2 clocks after it.
                "LPDDR5" | "HBM2" | "HBM3" | "HBM4" => {
                    &[CommandKind::Act, CommandKind::Actc, CommandKind::Actm]
                }
                _ => &[],
            },
            // JESD235 (HBM2), JESD238 (HBM3), JESD270-4 (HBM4): a row and a column command bus.
            separate_buses: matches!(h.standard.as_str(), "HBM2" | "HBM3" | "HBM4"),
            // JESD238 / JESD270-4 (Table 35 as Ramulator 2.1 codes it): half-clock row commands.
            half_clock: matches!(h.standard.as_str(), "HBM3" | "HBM4"),
            pb,
            rfm,
        })
    }

    /// WR -> PRE: write recovery.
    fn write_to_pre(&self) -> u64 {
        self.cwl + self.wr_bl + self.wr
    }

    /// Clocks a command holds the channel's command bus: 4 for LPDDR6's activate (ACT-1 and
    /// ACT-2, two clocks each), 2 for every other LPDDR6 command (JESD209-6's alternating clock
    /// command inputs; Ramulator 2.1: command_cycles 2 for every command) and for the standard's
    /// two-clock commands, else 1.
    fn bus_hold(&self, kind: CommandKind) -> u64 {
        if self.lpddr6_bus {
            if matches!(
                kind,
                CommandKind::Act | CommandKind::Actc | CommandKind::Actm
            ) {
                4
            } else {
                2
            }
        } else if self.two_clock.contains(&kind) {
            2
        } else {
            1
        }
    }

    /// RD -> WR on one rank (may not go below zero); DDR5 adds its write preamble; HBM gives it
    /// as nRTW.
    fn read_to_write(&self) -> u64 {
        self.rtw
            .unwrap_or((self.cl + self.bl + 2 + self.wpre).saturating_sub(self.cwl))
    }

    /// The longest separation any rule (other than those from REF) asks for: history older than
    /// this can no longer constrain anything.
    fn horizon(&self) -> u64 {
        [
            self.rcd_rd.1,
            self.rcd_wr.1,
            self.rpa,
            self.ras,
            self.rc,
            self.rtp,
            self.write_to_pre(),
            self.read_to_write(),
            self.rtw_l.unwrap_or(0),
            self.cwl + self.bl.max(self.bl_l.1) + self.wtr_l.1.max(self.wtr_s.1),
            self.ccd_l.1.max(self.ccd_s.1),
            self.rrd_l.1.max(self.rrd_s.1),
            self.faw,
            self.ccd_l_wr.unwrap_or(0),
            self.ccd_sb.unwrap_or(0),
            self.cwl + self.bl + self.wtr_sb.unwrap_or(0),
            self.ppd.unwrap_or(0),
            self.rfcsb.unwrap_or(0),
            self.refsbrd,
            self.rfm
                .map_or(0, |m| m.sb.unwrap_or(0).max(m.pb.unwrap_or(0))),
            self.pb.map_or(0, |b| {
                b.rfcpb
                    .max(b.pb2pb.1)
                    .max(b.pb2act.1)
                    .max(b.act2pb.map_or(0, |a| a.1))
                    .max(b.group_pb.map_or(0, |a| a.1))
            }),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
            + 1
    }
}

// ------------------------------------------------------------------------------------------------
// History

/// What a command does to one bank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Opens a row.
    Act,
    /// RowClone FPM: activates a second row of the open subarray.
    Actc,
    /// Reads a column (RD, RDA, the source side of TR).
    Read,
    /// Writes a column (WR, WRA, the destination side of TR).
    Write,
    /// Closes the open row (PRE that closes, auto-precharge).
    Pre,
    /// Refreshes the bank (REFSB).
    Refresh,
    /// Refreshes the one bank (REFPB).
    RefreshPb,
    /// Same-bank refresh management of the bank (RFMSB).
    RfmSb,
    /// Per-bank refresh management of the one bank (RFMPB).
    RfmPb,
}

/// One bank a command acts on.
#[derive(Debug, Clone, Copy)]
struct Side {
    /// Bank index within the rank (bank group major).
    bank: u32,
    group: u32,
    role: Role,
    /// How the command is named in a rule, e.g. "TR(dst)".
    label: &'static str,
    /// Stands for bank index `bank % banks_per_group` in every bank group (REFSB, RFMSB).
    all_groups: bool,
}

impl Side {
    /// Whether two sides act on a common bank.
    fn meets(&self, o: &Side, bpg: u32) -> bool {
        if self.all_groups || o.all_groups {
            self.bank % bpg == o.bank % bpg
        } else {
            self.bank == o.bank
        }
    }
}

/// The column-command class of a command, for rank-level rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Read,
    Write,
    Transfer,
}

/// A past command (or an implied auto-precharge) still able to constrain new commands.
#[derive(Debug, Clone, Copy)]
struct Entry {
    cycle: u64,
    index: u64,
    kind: CommandKind,
    /// This is the auto-precharge implied by an RDA / WRA, not the command itself.
    implied: bool,
    sides: [Option<Side>; 2],
}

impl Entry {
    fn col(&self) -> Option<Col> {
        if self.implied {
            return None;
        }
        match self.kind {
            CommandKind::Rd | CommandKind::Rda => Some(Col::Read),
            CommandKind::Wr | CommandKind::Wra => Some(Col::Write),
            CommandKind::Tr => Some(Col::Transfer),
            _ => None,
        }
    }
    fn sides(&self) -> impl Iterator<Item = &Side> {
        self.sides.iter().flatten()
    }
    fn is_activation(&self) -> bool {
        !self.implied
            && matches!(
                self.kind,
                CommandKind::Act | CommandKind::Actc | CommandKind::Actm
            )
    }
    /// Closes a row (or, for PREA, precharges the rank).
    fn is_precharge(&self) -> bool {
        self.implied
            || self.kind == CommandKind::Prea
            || (self.kind == CommandKind::Pre && self.sides[0].is_some())
    }
    fn label(&self) -> &'static str {
        match (self.implied, self.kind) {
            (true, CommandKind::Rda) => "PRE(auto, RDA)",
            (true, _) => "PRE(auto, WRA)",
            (false, k) => k.mnemonic(),
        }
    }
}

/// A data burst on a channel's data bus.
#[derive(Debug, Clone, Copy)]
struct Burst {
    start: u64,
    end: u64,
    /// The issuing command's cycle and offset to its burst.
    cmd_cycle: u64,
    offset: u64,
    rank: u32,
    index: u64,
    kind: CommandKind,
}

#[derive(Debug, Clone, Default)]
struct BankState {
    open: Option<u32>,
    /// Cycle of the latest ACT / ACTC of the open row.
    activated_at: u64,
}

#[derive(Debug, Clone, Default)]
struct RankState {
    banks: Vec<BankState>,
    history: VecDeque<Entry>,
    /// REFs within nRFC of now.
    refs: VecDeque<(u64, u64)>,
    /// The last RFM (cycle, command index): RFMs of a rank are at least tRFM apart, so only the
    /// last can still hold the rank.
    last_rfm: Option<(u64, u64)>,
    /// Per bank of the rank: the rolling accumulated ACT count (refresh management).
    raa: Vec<u64>,
    /// Per bank index (within a group; per bank of the rank when the standard has per-bank
    /// refresh): the last refresh (REF, or REFSB of that index, or REFPB of that bank) and the
    /// refreshes done. A REF counts for every index.
    last_ref: Vec<u64>,
    refs_done: Vec<u64>,
    gap_reported: bool,
    rate_reported: bool,
}

impl RankState {
    fn stalest_ref(&self) -> (usize, u64) {
        self.last_ref
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, c)| c)
            .unwrap_or((0, 0))
    }
    fn fewest_refs(&self) -> (usize, u64) {
        self.refs_done
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, c)| c)
            .unwrap_or((0, 0))
    }
}

#[derive(Debug, Clone, Default)]
struct ChannelState {
    /// The cycle and kind of the last command (with separate buses: the last row command).
    last_cycle: Option<(u64, CommandKind)>,
    /// With separate buses: the cycle of the last column command.
    last_column: Option<u64>,
    /// The last command that holds the bus more than its own clock (DDR5's two-clock commands,
    /// LPDDR6's every command): cycle, index, kind, clocks held.
    two_clock: Option<(u64, u64, CommandKind, u64)>,
    /// HBM3 / HBM4: the row bus's edges.
    row_edges: half_clock::RowEdges,
    bursts: VecDeque<Burst>,
}

/// Whether HBM's column command bus carries `kind` (RD, RDA, WR, WRA; RowClone's TR, a column
/// transfer); every other command goes on the row bus. Only consulted for HBM.
fn bus_is_column(kind: CommandKind) -> bool {
    matches!(
        kind,
        CommandKind::Rd | CommandKind::Rda | CommandKind::Wr | CommandKind::Wra | CommandKind::Tr
    )
}

/// Separation `t - p` in cycles, saturated into `i64`.
fn sep(t: u64, p: u64) -> i64 {
    let d = t as i128 - p as i128;
    d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Whether separation `actual` falls short of `required`.
fn short(actual: i64, required: u64) -> bool {
    (actual as i128) < required as i128
}

/// The streaming checker. Feed it commands in issue order with [`Checker::check`], then call
/// [`Checker::finish`].
#[derive(Debug, Clone)]
pub struct Checker {
    header: LogHeader,
    p: Params,
    horizon: u64,
    channels: Vec<ChannelState>,
    /// Ranks, channel major.
    ranks: Vec<RankState>,
    count: u64,
    last_cycle: Option<u64>,
    max_cycle: u64,
    violations: Vec<Violation>,
    violation_count: u64,
    /// Scratch list of the sides of the command being checked (PREA may touch every bank).
    scratch: Vec<Side>,
    /// The log used same-bank refresh (violations then name the bank index).
    saw_refsb: bool,
    /// The log used per-bank refresh (violations then name the bank).
    saw_refpb: bool,
    /// LPDDR5's WCK2CK synchronisation, when the log ran the WCK in auto sync-off mode.
    wck: wck::WckState,
}

/// Where a command is, after its indices passed the bounds check.
#[derive(Debug, Clone, Copy)]
struct Loc {
    ch: usize,
    rank: usize,
    bank: u32,
    group: u32,
    dst_bank: u32,
    dst_group: u32,
}

impl Checker {
    /// A checker for logs described by `header`. Fails when a timing parameter a rule needs is
    /// missing or the organisation is degenerate.
    pub fn new(header: &LogHeader) -> Result<Checker, LogError> {
        let o = &header.org;
        for (name, v) in [
            ("channels", o.channels),
            ("ranks", o.ranks),
            ("bank_groups", o.bank_groups),
            ("banks_per_group", o.banks_per_group),
            ("rows", o.rows),
            ("subarray_rows", o.subarray_rows),
            ("burst_length", o.burst_length),
        ] {
            if v == 0 {
                return Err(LogError::Header(format!("org.{name} must be positive")));
            }
        }
        if o.lines_per_row() == 0 {
            return Err(LogError::Header(
                "org.columns is smaller than one burst".into(),
            ));
        }
        let banks = o.channels as u128
            * o.ranks as u128
            * o.bank_groups as u128
            * o.banks_per_group as u128;
        if banks > MAX_BANKS as u128 {
            return Err(LogError::Header(format!(
                "{banks} banks in all is more than the checker supports ({MAX_BANKS})"
            )));
        }
        // The log's timings are the rules the check holds commands to: ones no simulated device
        // may have (a zero row-active time, a zero clock) would let any schedule pass.
        for key in crate::config::POSITIVE_TIMINGS {
            if header.timing.get(*key) == Some(&0) {
                return Err(LogError::Header(format!(
                    "timing {key} is 0: no DRAM device has it at zero, so the log's rules cannot \
                     be checked (was the header edited?)"
                )));
            }
        }
        let p = Params::from_header(header)?;
        // Refresh is tracked per bank index (REFSB) or, with per-bank refresh, per bank.
        let ref_slots = if p.pb.is_some() {
            o.banks_per_rank()
        } else {
            o.banks_per_group
        } as usize;
        let rank = RankState {
            banks: vec![BankState::default(); o.banks_per_rank() as usize],
            last_ref: vec![0; ref_slots],
            refs_done: vec![0; ref_slots],
            raa: vec![0; o.banks_per_rank() as usize],
            ..RankState::default()
        };
        let wck = wck::WckState::new(
            wck::WckRules::from_header(header)?,
            (o.channels * o.ranks) as usize,
            o.channels as usize,
        );
        Ok(Checker {
            wck,
            horizon: p.horizon(),
            p,
            channels: vec![ChannelState::default(); o.channels as usize],
            ranks: vec![rank; (o.channels * o.ranks) as usize],
            header: header.clone(),
            count: 0,
            last_cycle: None,
            max_cycle: 0,
            violations: Vec::new(),
            violation_count: 0,
            scratch: Vec::new(),
            saw_refsb: false,
            saw_refpb: false,
        })
    }

    /// The header this checker checks against.
    pub fn header(&self) -> &LogHeader {
        &self.header
    }

    /// Commands checked so far.
    pub fn commands_checked(&self) -> u64 {
        self.count
    }

    /// Violations found so far (all of them, including those not kept).
    pub fn violation_count(&self) -> u64 {
        self.violation_count
    }

    /// Entries held in all histories: bounded by the rules' horizon, not by the log's length.
    pub fn history_len(&self) -> usize {
        self.ranks
            .iter()
            .map(|r| r.history.len() + r.refs.len())
            .sum::<usize>()
            + self.channels.iter().map(|c| c.bursts.len()).sum::<usize>()
    }

    /// Checks the next command. Returns the first violation this command caused (all are recorded
    /// for [`Checker::finish`]).
    pub fn check(&mut self, rec: &CommandRecord) -> Result<(), Box<Violation>> {
        self.check_at(rec, None)
    }

    /// Like [`Checker::check`], naming the command's 1-based line in the log in violations.
    pub fn check_at(
        &mut self,
        rec: &CommandRecord,
        line: Option<usize>,
    ) -> Result<(), Box<Violation>> {
        let mut ctx = Ctx {
            index: self.count,
            line,
            rec,
            text: None,
            found: Vec::new(),
        };
        self.count += 1;
        self.check_inner(&mut ctx);
        let found = std::mem::take(&mut ctx.found);
        let first = found.first().cloned();
        for v in found {
            self.record(v);
        }
        match first {
            Some(v) => Err(Box::new(v)),
            None => Ok(()),
        }
    }

    /// Checks an `IDLE-REF` line: `count` REFs of one rank, the first at `first` and then every
    /// `period` cycles, that the controller accounted for while idle instead of issuing one by
    /// one. They are legal when the rank is precharged, the first comes at least nRFC after the
    /// rank's last REF and within the refresh interval's slack, and the period lies between nRFC
    /// and nREFI. They then count as REFs for the refresh interval and rate.
    pub fn idle_refreshes(
        &mut self,
        channel: u32,
        rank: u32,
        first: u64,
        count: u64,
        period: u64,
        line: Option<usize>,
    ) -> Result<(), Box<Violation>> {
        let rec = CommandRecord::refresh(first, channel, rank);
        let mut ctx = Ctx {
            index: self.count,
            line,
            rec: &rec,
            text: Some(format!(
                "{IDLE_REFRESH} {channel} {rank} {first} {count} {period}"
            )),
            found: Vec::new(),
        };
        self.count += 1;
        self.wck.unanswered(&mut ctx, Some(channel as usize));
        let org = &self.header.org;
        let (rfc, refi) = (self.p.rfc, self.p.refi);
        if channel >= org.channels || rank >= org.ranks {
            ctx.protocol(
                "bounds",
                format!("channel {channel} rank {rank} is outside the organisation"),
            );
        } else if !self.header.refresh {
            ctx.protocol(
                "idle refresh",
                "the log's header says the controller did not refresh".into(),
            );
        } else if count == 0 || period < rfc || period > refi {
            ctx.protocol(
                "idle refresh",
                format!(
                    "{count} REFs every {period} cycles: needs at least one, every nRFC ({rfc}) to nREFI ({refi}) cycles"
                ),
            );
        } else {
            let ri = channel as usize * org.ranks as usize + rank as usize;
            let max_gap = refi.saturating_mul(REFRESH_POSTPONE_LIMIT + 1);
            let r = &mut self.ranks[ri];
            if let Some(b) = r.banks.iter().position(|b| b.open.is_some()) {
                ctx.protocol(
                    "idle refresh",
                    format!("bank {b} of channel {channel} rank {rank} is open: an idle rank refreshes precharged"),
                );
            } else if let Some(prev) = r
                .last_ref
                .iter()
                .copied()
                .max()
                .filter(|_| r.refs_done.iter().any(|&n| n > 0))
                .filter(|&p| short(sep(first, p), rfc))
            {
                ctx.protocol(
                    "idle refresh",
                    format!("the first REF at cycle {first} is within nRFC ({rfc}) of the REF at cycle {prev}"),
                );
            } else if first.saturating_sub(r.stalest_ref().1) > max_gap {
                ctx.protocol(
                    "idle refresh",
                    format!(
                        "the first REF at cycle {first} comes more than {max_gap} cycles after the REF at cycle {}",
                        r.stalest_ref().1
                    ),
                );
            } else {
                let last = first.saturating_add((count - 1).saturating_mul(period));
                r.last_ref.iter_mut().for_each(|c| *c = last);
                r.refs_done
                    .iter_mut()
                    .for_each(|n| *n = n.saturating_add(count));
                r.refs.clear();
                r.refs.push_back((last, ctx.index));
                if let Some(m) = self.p.rfm {
                    let down = m.raaimt.saturating_mul(count);
                    r.raa.iter_mut().for_each(|c| *c = c.saturating_sub(down));
                }
                self.max_cycle = self.max_cycle.max(last);
            }
        }
        let found = std::mem::take(&mut ctx.found);
        let first_v = found.first().cloned();
        for v in found {
            self.record(v);
        }
        match first_v {
            Some(v) => Err(Box::new(v)),
            None => Ok(()),
        }
    }

    /// Ends the log: checks that refresh was not overdue at the last cycle, and reports.
    pub fn finish(mut self) -> CheckReport {
        let end = CommandRecord::refresh(self.max_cycle, 0, 0);
        let mut ctx = Ctx {
            index: self.count,
            line: None,
            rec: &end,
            text: Some("(end of log)".into()),
            found: Vec::new(),
        };
        // A CAS whose column command never came.
        self.wck.unanswered(&mut ctx, None);
        if self.header.refresh && self.count > 0 {
            self.refresh_deadlines(&mut ctx, self.max_cycle);
        }
        for v in std::mem::take(&mut ctx.found) {
            self.record(v);
        }
        CheckReport {
            commands_checked: self.count,
            ok: self.violation_count == 0,
            violations: self.violations,
            violation_count: self.violation_count,
        }
    }

    fn record(&mut self, v: Violation) {
        self.violation_count += 1;
        if self.violations.len() < MAX_KEPT_VIOLATIONS {
            self.violations.push(v);
        }
    }

    fn check_inner(&mut self, ctx: &mut Ctx<'_>) {
        let rec = ctx.rec;
        let t = rec.cycle;
        // Issue order.
        if let Some(last) = self.last_cycle {
            if t < last {
                ctx.protocol(
                    "order",
                    format!("cycle {t} is before the previous command's cycle {last}"),
                );
            }
        }
        self.last_cycle = Some(self.last_cycle.map_or(t, |l| l.max(t)));
        self.max_cycle = self.max_cycle.max(t);

        let Some(loc) = self.bounds(ctx) else { return };

        // One command per channel per cycle; with separate row and column buses, one on each.
        let ch = &mut self.channels[loc.ch];
        let column = bus_is_column(rec.kind);
        // HBM3 / HBM4: which edge of its clock a row command takes.
        let mut falling = false;
        if self.p.half_clock && !column {
            match ch.row_edges.place(t, rec.kind, (loc.rank, loc.bank)) {
                half_clock::Edge::Rising | half_clock::Edge::Held => {}
                half_clock::Edge::Falling => falling = true,
                half_clock::Edge::Refused(why) => ctx.protocol(
                    "command bus",
                    format!(
                        "channel {}: {why} (one row command per half clock)",
                        rec.channel
                    ),
                ),
            }
            ch.last_cycle = Some((t, rec.kind));
        } else if self.p.separate_buses && column {
            if ch.last_column == Some(t) {
                ctx.protocol(
                    "command bus",
                    format!(
                        "a second column command on channel {} in cycle {t} (one per bus per cycle)",
                        rec.channel
                    ),
                );
            }
            ch.last_column = Some(t);
        } else {
            if let Some((c, prev)) = ch.last_cycle.filter(|&(c, _)| c == t) {
                let what = if self.p.separate_buses {
                    " (one row command per cycle)".to_string()
                } else if bus_is_column(prev) != column {
                    format!(
                        " ({} and {} share a cycle only on HBM's separate row and column command buses; {} has one command bus)",
                        prev, rec.kind, self.header.standard
                    )
                } else {
                    String::new()
                };
                ctx.protocol(
                    "command bus",
                    format!(
                        "a second command on channel {} in cycle {c}{what}",
                        rec.channel
                    ),
                );
            }
            ch.last_cycle = Some((t, rec.kind));
        }
        // DDR5: a two-clock command holds the bus for the next clock too. With separate row and
        // column buses (HBM2's two-clock ACT) it holds its own (row) bus only.
        if let Some((c, index, kind, hold)) = ch
            .two_clock
            .filter(|_| !(falling || self.p.separate_buses && column))
        {
            if short(sep(t, c), hold) && t != c {
                let prev = Entry {
                    cycle: c,
                    index,
                    kind,
                    implied: false,
                    sides: [None, None],
                };
                let what = match hold {
                    2 => "two-clock",
                    4 => "four-clock",
                    _ => "multi-clock",
                };
                ctx.timing(
                    format!(
                        "{hold}: {kind} -> {} same channel ({what} command on the command bus)",
                        rec.kind
                    ),
                    hold,
                    sep(t, c),
                    &prev,
                );
            }
        }
        let hold = self.p.bus_hold(rec.kind);
        if hold > 1 {
            ch.two_clock = Some((t, ctx.index, rec.kind, hold));
        }

        // LPDDR5 WCK2CK synchronisation; a CAS touches no bank and takes part in no other rule.
        let ri = loc.ch * self.header.org.ranks as usize + loc.rank;
        if self.wck.check(ctx, loc.ch, ri) {
            return;
        }

        if self.header.refresh {
            self.refresh_deadlines(ctx, t);
        }

        let mut sides = std::mem::take(&mut self.scratch);
        sides.clear();
        let implied = self.protocol(ctx, ri, loc, &mut sides);

        let new = Entry {
            cycle: t,
            index: ctx.index,
            kind: rec.kind,
            implied: false,
            // PREA is kept as a rank-wide entry (PREA -> ACT / REF); its per-bank sides only
            // matter for its own check.
            sides: match rec.kind {
                CommandKind::Prea => [None, None],
                CommandKind::Tr | CommandKind::Refpb => {
                    [sides.first().copied(), sides.get(1).copied()]
                }
                _ => [sides.first().copied(), None],
            },
        };
        self.rank_rules(ctx, ri, &new, &sides);
        if let Some(imp) = implied {
            // The auto-precharge is checked as a PRE against the bank's earlier commands.
            self.rank_rules(ctx, ri, &imp, &[]);
        }
        self.refresh_rules(ctx, ri);
        self.data_bus(ctx, loc);

        // Record. A falling-edge PRE (HBM3 / HBM4) starts its rules at the next clock.
        let new = if falling {
            Entry {
                cycle: t + 1,
                ..new
            }
        } else {
            new
        };
        self.refresh_management(ctx, ri, loc);
        let rank = &mut self.ranks[ri];
        if rec.kind == CommandKind::Rfm {
            rank.last_rfm = Some((t, ctx.index));
        }
        if rec.kind.is_refresh() {
            let (before_last, before_done) = (rank.stalest_ref().1, rank.fewest_refs().1);
            if rec.kind == CommandKind::Ref {
                rank.refs.push_back((t, ctx.index));
                rank.last_ref.iter_mut().for_each(|c| *c = t);
                rank.refs_done.iter_mut().for_each(|n| *n += 1);
            } else {
                let banks = if rec.kind == CommandKind::Refpb {
                    refpb_banks(&self.p, loc.bank, self.header.org.banks_per_rank())
                } else {
                    vec![rec.bank]
                };
                for i in banks {
                    let i = i as usize;
                    if let (Some(c), Some(n)) =
                        (rank.last_ref.get_mut(i), rank.refs_done.get_mut(i))
                    {
                        *c = t;
                        *n += 1;
                    }
                }
                rank.history.push_back(new);
            }
            if rank.stalest_ref().1 != before_last {
                rank.gap_reported = false;
            }
            if rank.fewest_refs().1 != before_done {
                rank.rate_reported = false;
            }
        } else if rec.kind != CommandKind::Pre || new.sides[0].is_some() {
            rank.history.push_back(new);
        }
        if let Some(imp) = implied {
            rank.history.push_back(imp);
        }
        // Prune what no rule can reach any more.
        let horizon = self.horizon;
        while rank
            .history
            .front()
            .is_some_and(|e| e.cycle.saturating_add(horizon) < t)
        {
            rank.history.pop_front();
        }
        let rfc = self.p.rfc;
        while rank
            .refs
            .front()
            .is_some_and(|(c, _)| c.saturating_add(rfc) < t)
        {
            rank.refs.pop_front();
        }
        let reach = t + self.p.cl.min(self.p.cwl);
        let rtrs = self.p.rtrs;
        let ch = &mut self.channels[loc.ch];
        while ch
            .bursts
            .front()
            .is_some_and(|b| b.end.saturating_add(rtrs) <= reach)
        {
            ch.bursts.pop_front();
        }
        self.scratch = sides;
    }

    /// Checks the indices against the organisation.
    fn bounds(&self, ctx: &mut Ctx<'_>) -> Option<Loc> {
        let rec = ctx.rec;
        let o = &self.header.org;
        let mut bad = Vec::new();
        let mut chk = |name: &str, v: u32, limit: u32| {
            if v >= limit {
                bad.push(format!("{name} {v} is out of range (0..{limit})"));
            }
        };
        chk("channel", rec.channel, o.channels);
        chk("rank", rec.rank, o.ranks);
        chk("bank group", rec.bank_group, o.bank_groups);
        chk("bank", rec.bank, o.banks_per_group);
        chk("row", rec.row, o.rows);
        chk("column", rec.column, o.lines_per_row());
        let mut dst = (0, 0);
        match (rec.kind, rec.dst) {
            (CommandKind::Tr, Some(d)) => {
                chk("dst bank group", d.bank_group, o.bank_groups);
                chk("dst bank", d.bank, o.banks_per_group);
                chk("dst row", d.row, o.rows);
                chk("dst column", d.column, o.lines_per_row());
                dst = (d.bank_group, d.bank);
            }
            (CommandKind::Tr, None) => bad.push("TR without a destination".into()),
            (_, Some(_)) => bad.push(format!("{} with a TR destination", rec.kind)),
            (_, None) => {}
        }
        if !bad.is_empty() {
            ctx.protocol("bounds", bad.join("; "));
            return None;
        }
        Some(Loc {
            ch: rec.channel as usize,
            rank: rec.rank as usize,
            bank: rec.bank_group * o.banks_per_group + rec.bank,
            group: rec.bank_group,
            dst_bank: dst.0 * o.banks_per_group + dst.1,
            dst_group: dst.0,
        })
    }

    /// Checks and updates the bank states; fills `sides` with what the command does to each bank
    /// and returns the implied auto-precharge of an RDA / WRA.
    fn protocol(
        &mut self,
        ctx: &mut Ctx<'_>,
        ri: usize,
        loc: Loc,
        sides: &mut Vec<Side>,
    ) -> Option<Entry> {
        let rec = ctx.rec;
        let t = rec.cycle;
        let o = &self.header.org;
        let subarray_rows = o.subarray_rows;
        let bpg = o.banks_per_group;
        let bpr = o.banks_per_rank();
        let p = &self.p;
        let rank = &mut self.ranks[ri];
        let side = |bank: u32, group: u32, role: Role, label: &'static str| Side {
            bank,
            group,
            role,
            label,
            all_groups: false,
        };
        let mut implied = None;
        match rec.kind {
            CommandKind::Act => {
                let b = &mut rank.banks[loc.bank as usize];
                if let Some(open) = b.open {
                    ctx.protocol(
                        "ACT to an open bank",
                        format!("bank {} has row {open} open", bank_name(loc.bank, bpg)),
                    );
                }
                b.open = Some(rec.row);
                b.activated_at = t;
                sides.push(side(loc.bank, loc.group, Role::Act, "ACT"));
            }
            CommandKind::Actc => {
                let b = &mut rank.banks[loc.bank as usize];
                match b.open {
                    None => ctx.protocol(
                        "ACTC to a closed bank",
                        format!(
                            "bank {} has no open row to copy from",
                            bank_name(loc.bank, bpg)
                        ),
                    ),
                    Some(open) if open / subarray_rows != rec.row / subarray_rows => ctx.protocol(
                        "ACTC to another subarray",
                        format!(
                            "row {} is in subarray {}, the open row {open} in subarray {}",
                            rec.row,
                            rec.row / subarray_rows,
                            open / subarray_rows
                        ),
                    ),
                    Some(_) => {}
                }
                b.open = Some(rec.row);
                b.activated_at = t;
                sides.push(side(loc.bank, loc.group, Role::Actc, "ACTC"));
            }
            CommandKind::Actm => {
                let b = &mut rank.banks[loc.bank as usize];
                match b.open {
                    None => ctx.protocol(
                        "ACTM to a closed bank",
                        format!(
                            "bank {} has no open row to copy from",
                            bank_name(loc.bank, bpg)
                        ),
                    ),
                    Some(open) => {
                        // SiMRA (DSN 2024): the rows raised are the open row XOR every subset of
                        // the address bits where the two rows differ; at most 32 rows at once,
                        // all in the open row's subarray.
                        let mask = open ^ rec.row;
                        let (lo, hi) = (open & !mask, open | mask);
                        if mask == 0 || mask.count_ones() > 5 {
                            ctx.protocol(
                                "ACTM row group",
                                format!(
                                    "rows {open} and {} select {} rows; a multi-row activation raises 2 to 32",
                                    rec.row,
                                    1u64 << mask.count_ones()
                                ),
                            );
                        } else if lo / subarray_rows != hi / subarray_rows {
                            ctx.protocol(
                                "ACTM row group",
                                format!(
                                    "rows {open} and {} select rows {lo} to {hi}, across subarrays of {subarray_rows} rows",
                                    rec.row
                                ),
                            );
                        }
                    }
                }
                b.open = Some(rec.row);
                b.activated_at = t;
                sides.push(side(loc.bank, loc.group, Role::Actc, "ACTM"));
            }
            CommandKind::Pre => {
                let b = &mut rank.banks[loc.bank as usize];
                if b.open.take().is_some() {
                    sides.push(side(loc.bank, loc.group, Role::Pre, "PRE"));
                }
            }
            CommandKind::Prea => {
                for (i, b) in rank.banks.iter_mut().enumerate() {
                    if b.open.take().is_some() {
                        let i = i as u32;
                        sides.push(side(i, i / bpg, Role::Pre, "PREA"));
                    }
                }
            }
            CommandKind::Rd | CommandKind::Wr | CommandKind::Rda | CommandKind::Wra => {
                let read = rec.kind.is_read();
                let b = &mut rank.banks[loc.bank as usize];
                open_row_check(ctx, b.open, rec.row, loc.bank, bpg, rec.kind.mnemonic());
                let role = if read { Role::Read } else { Role::Write };
                sides.push(side(loc.bank, loc.group, role, rec.kind.mnemonic()));
                if matches!(rec.kind, CommandKind::Rda | CommandKind::Wra) {
                    let after = if read {
                        t.saturating_add(p.rtp)
                    } else {
                        t.saturating_add(p.write_to_pre())
                    };
                    let at = after.max(b.activated_at.saturating_add(p.ras));
                    b.open = None;
                    implied = Some(Entry {
                        cycle: at,
                        index: ctx.index,
                        kind: rec.kind,
                        implied: true,
                        sides: [Some(side(loc.bank, loc.group, Role::Pre, "")), None],
                    });
                }
            }
            CommandKind::Tr => {
                let (src_row, dst_row) = (rec.row, rec.dst.map_or(0, |d| d.row));
                if loc.bank == loc.dst_bank {
                    ctx.protocol(
                        "TR within one bank",
                        "a TRANSFER needs two different banks".into(),
                    );
                }
                open_row_check(
                    ctx,
                    rank.banks[loc.bank as usize].open,
                    src_row,
                    loc.bank,
                    bpg,
                    "TR(src)",
                );
                open_row_check(
                    ctx,
                    rank.banks[loc.dst_bank as usize].open,
                    dst_row,
                    loc.dst_bank,
                    bpg,
                    "TR(dst)",
                );
                sides.push(side(loc.bank, loc.group, Role::Read, "TR(src)"));
                sides.push(side(loc.dst_bank, loc.dst_group, Role::Write, "TR(dst)"));
            }
            CommandKind::Refsb => {
                self.saw_refsb = true;
                if p.rfcsb.is_none() {
                    ctx.protocol(
                        "REFSB without same-bank refresh",
                        format!(
                            "{} has no tRFCsb (no same-bank refresh)",
                            self.header.standard
                        ),
                    );
                }
                // Bank `rec.bank` of every bank group must be precharged.
                let open = still_open(
                    &rank.banks,
                    (0..o.bank_groups).map(|g| g * bpg + rec.bank),
                    bpg,
                );
                if !open.is_empty() {
                    ctx.protocol(
                        "REFSB with open banks",
                        format!("banks it refreshes still open: {}", open.join(", ")),
                    );
                }
                sides.push(Side {
                    all_groups: true,
                    ..side(loc.bank, loc.group, Role::Refresh, "REFSB")
                });
            }
            CommandKind::Refpb => {
                self.saw_refpb = true;
                if p.pb.is_none() {
                    ctx.protocol(
                        "REFPB without per-bank refresh",
                        format!(
                            "{} has no per-bank refresh (LPDDR5, HBM2, HBM3, HBM4 and GDDR6 do)",
                            self.header.standard
                        ),
                    );
                }
                for b in refpb_banks(p, loc.bank, bpr) {
                    if let Some(r) = rank.banks[b as usize].open {
                        ctx.protocol(
                            "REFPB to an open bank",
                            format!("bank {} has row {r} open", bank_name(b, bpg)),
                        );
                    }
                    sides.push(side(b, b / bpg, Role::RefreshPb, "REFPB"));
                }
            }
            CommandKind::Rfmsb | CommandKind::Rfmpb => {
                let same_bank = rec.kind == CommandKind::Rfmsb;
                let has = p
                    .rfm
                    .is_some_and(|m| if same_bank { m.sb } else { m.pb }.is_some());
                if !has {
                    ctx.protocol(
                        if same_bank {
                            "RFMSB without same-bank refresh management"
                        } else {
                            "RFMPB without per-bank refresh management"
                        },
                        format!(
                            "the log's {} device has no {} (no {} in its header; {} defines it, on a device that requires refresh management)",
                            self.header.standard,
                            if same_bank { "same-bank RFM" } else { "per-bank RFM" },
                            if same_bank { "nRFMsb" } else { "nRFMpb" },
                            if same_bank { "DDR5" } else { "HBM3 and HBM4" },
                        ),
                    );
                }
                // Bank `rec.bank` of every bank group (RFMSB) or the one bank (RFMPB) must be
                // precharged.
                let banks: Vec<u32> = if same_bank {
                    (0..o.bank_groups).map(|g| g * bpg + rec.bank).collect()
                } else {
                    vec![loc.bank]
                };
                let open = still_open(&rank.banks, banks, bpg);
                if !open.is_empty() {
                    ctx.protocol(
                        if same_bank {
                            "RFMSB with open banks"
                        } else {
                            "RFMPB to an open bank"
                        },
                        format!("banks it refreshes still open: {}", open.join(", ")),
                    );
                }
                sides.push(if same_bank {
                    Side {
                        all_groups: true,
                        ..side(loc.bank, loc.group, Role::RfmSb, "RFMSB")
                    }
                } else {
                    side(loc.bank, loc.group, Role::RfmPb, "RFMPB")
                });
            }
            // Checked by `wck` before any bank is looked at.
            CommandKind::Cas => {}
            CommandKind::Ref | CommandKind::Rfm => {
                if rec.kind == CommandKind::Rfm && p.rfm.is_none() {
                    ctx.protocol(
                        "RFM without refresh management",
                        format!(
                            "the log's {} device does not require refresh management (no RAAIMT in its header; DDR5, HBM3, HBM4 and GDDR7 define RFM)",
                            self.header.standard
                        ),
                    );
                }
                let open: Vec<String> = rank
                    .banks
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| {
                        b.open
                            .map(|r| format!("{} (row {r})", bank_name(i as u32, bpg)))
                    })
                    .collect();
                if !open.is_empty() {
                    ctx.protocol(
                        if rec.kind == CommandKind::Ref {
                            "REF with open banks"
                        } else {
                            "RFM with open banks"
                        },
                        format!("banks still open: {}", open.join(", ")),
                    );
                }
            }
        }
        implied
    }

    /// Checks `new` against every entry in the rank's history (bank and rank rules).
    fn rank_rules(&self, ctx: &mut Ctx<'_>, ri: usize, new: &Entry, all_sides: &[Side]) {
        let p = &self.p;
        let bpg = self.header.org.banks_per_group;
        let rank = &self.ranks[ri];
        // Sides of the new command: PREA may touch many banks, so they come from `all_sides`
        // unless this is the implied auto-precharge.
        let new_sides: &[Side] = if new.implied { &[] } else { all_sides };
        let implied_side = if new.implied { new.sides[0] } else { None };
        let new_label = |s: &Side| if new.implied { new.label() } else { s.label };
        let new_col = new.col();
        let new_act = new.is_activation();
        let mut acts_seen = 0u32;
        for prev in rank.history.iter().rev() {
            let actual = sep(new.cycle, prev.cycle);
            // Same bank.
            for ps in prev.sides() {
                for ns in new_sides.iter().chain(implied_side.iter()) {
                    if !ps.meets(ns, bpg) {
                        continue;
                    }
                    if let Some((key, req)) = bank_rule(p, ps.role, ns.role) {
                        if short(actual, req) {
                            let pl = if prev.implied { prev.label() } else { ps.label };
                            ctx.timing(
                                format!("{key}: {pl} -> {} same bank", new_label(ns)),
                                req,
                                actual,
                                prev,
                            );
                        }
                    }
                }
            }
            if new.implied {
                continue;
            }
            // Activations on other banks, and the nFAW window.
            if new_act && prev.is_activation() {
                let (ps, ns) = (prev.sides[0], new.sides[0]);
                if let (Some(ps), Some(ns)) = (ps, ns) {
                    if ps.bank != ns.bank {
                        let same = ps.group == ns.group;
                        let (key, req) = if same { p.rrd_l } else { p.rrd_s };
                        if short(actual, req) {
                            ctx.timing(
                                format!(
                                    "{key}: {} -> {} {}",
                                    prev.label(),
                                    new.label(),
                                    group_scope(p, same, true)
                                ),
                                req,
                                actual,
                                prev,
                            );
                        }
                    }
                }
                acts_seen += 1;
                if acts_seen == 4 && short(actual, p.faw) {
                    ctx.timing(
                        format!(
                            "nFAW: 5 activations (ACT/ACTC) in {} cycles, {} is the 5th same rank",
                            p.faw,
                            new.label()
                        ),
                        p.faw,
                        actual,
                        prev,
                    );
                }
            }
            // Column commands on the rank's internal bus.
            if let (Some(pc), Some(nc)) = (prev.col(), new_col) {
                let shares =
                    |a: &Entry, b: &Entry| a.sides().any(|x| b.sides().any(|y| x.group == y.group));
                let same = shares(prev, new);
                let ccd = if same { p.ccd_l } else { p.ccd_s };
                let (key, req, same): (String, u64, bool) = match (pc, nc) {
                    (Col::Read, Col::Write) => match p.rtw_l {
                        Some(v) if same => ("nRTW_L".into(), v, same),
                        _ => {
                            let key = if p.rtw.is_some() {
                                "nRTW"
                            } else {
                                "nCL+nBL+2-nCWL"
                            };
                            (key.into(), p.read_to_write(), same)
                        }
                    },
                    (Col::Write, Col::Read) => {
                        let (wtr, bl) = if same {
                            (p.wtr_l, p.bl_l)
                        } else {
                            (p.wtr_s, ("nBL", p.bl))
                        };
                        (
                            format!("nCWL+{}+{}", bl.0, wtr.0),
                            p.cwl + bl.1 + wtr.1,
                            same,
                        )
                    }
                    (Col::Write, Col::Transfer) => {
                        // The TR reads its source bank after the write: nWTR, _L when the
                        // write's group is the source's. Its destination side is a second write:
                        // nCCD, _L when the write's group is the destination's.
                        let wg = prev.sides[0].map(|s| s.group);
                        let src_same = new.sides[0].map(|s| s.group) == wg;
                        let dst_same = new.sides[1].map(|s| s.group) == wg;
                        let (wtr, bl) = if src_same {
                            (p.wtr_l, p.bl_l)
                        } else {
                            (p.wtr_s, ("nBL", p.bl))
                        };
                        let ccd = if dst_same { p.ccd_l } else { p.ccd_s };
                        if p.cwl + bl.1 + wtr.1 >= ccd.1 {
                            (
                                format!("nCWL+{}+{}", bl.0, wtr.0),
                                p.cwl + bl.1 + wtr.1,
                                src_same,
                            )
                        } else {
                            (ccd.0.into(), ccd.1, dst_same)
                        }
                    }
                    // DDR5: write to write within a bank group waits tCCD_L_WR.
                    (Col::Write, Col::Write) if same && p.grouped && p.ccd_l_wr.is_some() => {
                        let wr = p.ccd_l_wr.unwrap_or(0);
                        if wr >= ccd.1 {
                            ("nCCD_L_WR".into(), wr, same)
                        } else {
                            (ccd.0.into(), ccd.1, same)
                        }
                    }
                    _ => (ccd.0.into(), ccd.1, same),
                };
                // GDDR7: within one bank, column commands tCCDSB apart and a read tWTRSB after a
                // write (the TR's source side reads, its destination side writes).
                let same_bank = match same_bank_column(p, pc, nc, prev, new) {
                    Some((k, r)) if r > req => Some((k, r)),
                    _ => None,
                };
                let (key, req) = match same_bank {
                    Some((k, r)) => (k.to_string(), r),
                    None => (key, req),
                };
                if short(actual, req) {
                    let scope = match (pc, nc) {
                        _ if same_bank.is_some() => "same bank",
                        (Col::Read, Col::Write) => "same rank",
                        _ => group_scope(p, same, false),
                    };
                    ctx.timing(
                        format!("{key}: {} -> {} {scope}", prev.label(), new.label()),
                        req,
                        actual,
                        prev,
                    );
                }
            }
            // DDR5: precharge commands on one rank at least tPPD apart.
            let pre_cmd = |k: CommandKind| matches!(k, CommandKind::Pre | CommandKind::Prea);
            if let Some(ppd) = p.ppd {
                if pre_cmd(prev.kind) && pre_cmd(new.kind) && short(actual, ppd) {
                    ctx.timing(
                        format!("nPPD: {} -> {} same rank", prev.label(), new.label()),
                        ppd,
                        actual,
                        prev,
                    );
                }
            }
            // DDR5 same-bank refresh (REFSB) and same-bank refresh management (RFMSB, timed as a
            // REFSB of tRFMsb), rank-wide: -> ACT of any bank tREFSBRD; -> REF / RFM / PREA
            // tRFCsb (tRFMsb); PREA -> either tRP.
            let same_bank_hold = match prev.kind {
                CommandKind::Refsb => Some(("nRFCsb", p.rfcsb.unwrap_or(0))),
                CommandKind::Rfmsb => Some(("nRFMsb", p.rfm.and_then(|m| m.sb).unwrap_or(0))),
                _ => None,
            };
            if let Some((hold_key, hold)) = same_bank_hold {
                let (key, req) = match new.kind {
                    CommandKind::Act => ("nREFSBRD", p.refsbrd),
                    CommandKind::Ref | CommandKind::Prea | CommandKind::Rfm => (hold_key, hold),
                    _ => ("", 0),
                };
                if short(actual, req) {
                    ctx.timing(
                        format!("{key}: {} -> {} same rank", prev.label(), new.label()),
                        req,
                        actual,
                        prev,
                    );
                }
            }
            if prev.kind == CommandKind::Prea
                && matches!(new.kind, CommandKind::Refsb | CommandKind::Rfmsb)
                && short(actual, p.rp)
            {
                ctx.timing(
                    format!("nRP: PREA -> {} same rank", new.label()),
                    p.rp,
                    actual,
                    prev,
                );
            }
            // Per-bank refresh, rank-wide.
            if let Some(pb) = p.pb {
                let other_bank = || match (prev.sides[0], new.sides[0]) {
                    (Some(a), Some(b)) => a.bank != b.bank,
                    _ => true,
                };
                let same_group = || match (prev.sides[0], new.sides[0]) {
                    (Some(a), Some(b)) => a.group == b.group,
                    _ => false,
                };
                // HBM3 / HBM4's per-bank RFM (RFMPB) keeps a REFPB's rank-wide rules, with tRFMpb
                // where the REFPB holds the rank off for tRFCpb.
                let per_bank =
                    |k: CommandKind| matches!(k, CommandKind::Refpb | CommandKind::Rfmpb);
                let rule = match (prev.kind, new.kind) {
                    (a, b) if per_bank(a) && per_bank(b) => Some(pb.pb2pb),
                    (a, CommandKind::Act) if per_bank(a) => Some(pb.pb2act),
                    (
                        CommandKind::Refpb,
                        CommandKind::Ref | CommandKind::Prea | CommandKind::Rfm,
                    ) => Some(("nRFCpb", pb.rfcpb)),
                    (
                        CommandKind::Rfmpb,
                        CommandKind::Ref | CommandKind::Prea | CommandKind::Rfm,
                    ) => Some(("nRFMpb", p.rfm.and_then(|m| m.pb).unwrap_or(0))),
                    (CommandKind::Prea, b) if per_bank(b) => Some((p.rpa_key, p.rpa)),
                    (CommandKind::Act | CommandKind::Actc | CommandKind::Actm, b)
                        if per_bank(b) && !prev.implied && other_bank() =>
                    {
                        // HBM4: tRRD_L when the two banks share a bank group.
                        match (pb.group_pb, pb.act2pb) {
                            (Some(l), Some(s)) if same_group() && l.1 > s.1 => Some(l),
                            (_, s) => s,
                        }
                    }
                    _ => None,
                };
                // HBM4: REFPB -> ACT of another bank of its bank group, tRRD_L (beside tRRD_S's
                // rank-wide nRREFD above).
                let rule2 = match (prev.kind, new.kind, pb.group_pb) {
                    (a, CommandKind::Act, Some(l))
                        if per_bank(a) && same_group() && other_bank() =>
                    {
                        Some(l)
                    }
                    _ => None,
                };
                if let Some((key, req)) = rule2 {
                    if short(actual, req) {
                        ctx.timing(
                            format!("{key}: {} -> {} same bank group", prev.label(), new.label()),
                            req,
                            actual,
                            prev,
                        );
                    }
                }
                if let Some((key, req)) = rule {
                    if !prev.implied && short(actual, req) {
                        ctx.timing(
                            format!("{key}: {} -> {} same rank", prev.label(), new.label()),
                            req,
                            actual,
                            prev,
                        );
                    }
                }
            }
            // PREA precharges the rank: nRP (tRPA on 8-bank DDR2, tRPab on LPDDR5) before any ACT.
            let rpa_key = p.rpa_key;
            if prev.kind == CommandKind::Prea
                && new.kind == CommandKind::Act
                && short(actual, p.rpa)
            {
                ctx.timing(
                    format!("{rpa_key}: PREA -> ACT same rank"),
                    p.rpa,
                    actual,
                    prev,
                );
            }
            // Every precharge completes (nRP; tRPA for a PREA) before a REF.
            let (key, rp) = if prev.kind == CommandKind::Prea {
                (rpa_key, p.rpa)
            } else {
                ("nRP", p.rp)
            };
            let refreshes_all = matches!(new.kind, CommandKind::Ref | CommandKind::Rfm);
            if refreshes_all && prev.is_precharge() && short(actual, rp) {
                ctx.timing(
                    format!("{key}: {} -> {} same rank", prev.label(), new.label()),
                    rp,
                    actual,
                    prev,
                );
            }
        }
    }

    /// Refresh management: the rolling accumulated ACT count of each bank (JESD79-5 4.41, as a
    /// controller is advised to keep it): an activation of a bank whose count reached RAAMMT is
    /// a violation; REF and RFM lower the counts of the banks they refresh by RAAIMT.
    fn refresh_management(&mut self, ctx: &mut Ctx<'_>, ri: usize, loc: Loc) {
        let Some(m) = self.p.rfm else { return };
        let bpg = self.header.org.banks_per_group;
        let bpr = self.header.org.banks_per_rank();
        let rank = &mut self.ranks[ri];
        let down = |c: &mut u64| *c = c.saturating_sub(m.raaimt);
        match ctx.rec.kind {
            CommandKind::Act | CommandKind::Actc | CommandKind::Actm => {
                let c = &mut rank.raa[loc.bank as usize];
                if *c >= m.raammt {
                    ctx.protocol(
                        "RAAMMT",
                        format!(
                            "{} activates {} whose rolling accumulated ACT count is {} (RAAMMT {}): an RFM or REF was owed",
                            ctx.rec.kind,
                            bank_name(loc.bank, bpg),
                            *c,
                            m.raammt
                        ),
                    );
                }
                *c += 1;
            }
            CommandKind::Ref | CommandKind::Rfm => rank.raa.iter_mut().for_each(down),
            CommandKind::Refsb => {
                for g in 0..self.header.org.bank_groups {
                    if let Some(c) = rank.raa.get_mut((g * bpg + loc.bank % bpg) as usize) {
                        down(c);
                    }
                }
            }
            CommandKind::Refpb => {
                for b in refpb_banks(&self.p, loc.bank, bpr) {
                    if let Some(c) = rank.raa.get_mut(b as usize) {
                        down(c);
                    }
                }
            }
            // RFMSB: bank index b of every group; RFMPB: its bank.
            CommandKind::Rfmsb => {
                for g in 0..self.header.org.bank_groups {
                    if let Some(c) = rank.raa.get_mut((g * bpg + loc.bank % bpg) as usize) {
                        down(c);
                    }
                }
            }
            CommandKind::Rfmpb => {
                if let Some(c) = rank.raa.get_mut(loc.bank as usize) {
                    down(c);
                }
            }
            _ => {}
        }
    }

    /// REF -> any command to the rank: nRFC; RFM -> any command to the rank: nRFM.
    fn refresh_rules(&self, ctx: &mut Ctx<'_>, ri: usize) {
        let rank = &self.ranks[ri];
        let t = ctx.rec.cycle;
        if let (Some((c, index)), Some(m)) = (rank.last_rfm, self.p.rfm) {
            let actual = sep(t, c);
            if short(actual, m.rfm) {
                let prev = Entry {
                    cycle: c,
                    index,
                    kind: CommandKind::Rfm,
                    implied: false,
                    sides: [None, None],
                };
                ctx.timing(
                    format!("nRFM: RFM -> {} same rank", ctx.rec.kind),
                    m.rfm,
                    actual,
                    &prev,
                );
            }
        }
        for &(c, index) in &rank.refs {
            let actual = sep(t, c);
            if short(actual, self.p.rfc) {
                let prev = Entry {
                    cycle: c,
                    index,
                    kind: CommandKind::Ref,
                    implied: false,
                    sides: [None, None],
                };
                ctx.timing(
                    format!("{}: REF -> {} same rank", self.p.rfc_key, ctx.rec.kind),
                    self.p.rfc,
                    actual,
                    &prev,
                );
            }
        }
    }

    /// Bursts on one channel's data bus: nRTRS between those of different ranks, no overlap
    /// between those of one rank.
    fn data_bus(&mut self, ctx: &mut Ctx<'_>, loc: Loc) {
        let rec = ctx.rec;
        let p = &self.p;
        let offset = match rec.kind {
            k if k.is_read() => p.cl,
            k if k.is_write() => p.cwl,
            _ => return,
        };
        let start = rec.cycle.saturating_add(offset);
        let end = start.saturating_add(p.bl);
        let ch = &mut self.channels[loc.ch];
        for b in ch.bursts.iter() {
            // Another rank's burst needs nRTRS of idle bus between. One rank's bursts may not
            // overlap either: the column rules keep them apart, and this checks the bursts
            // themselves, so that a bin whose column spacing is shorter than its burst (e.g.
            // BL32's 6-clock window) shows; reported only when no column rule named the pair.
            let same = b.rank == rec.rank;
            let gap = if same { 0 } else { p.rtrs };
            let after = start >= b.end.saturating_add(gap);
            let before = b.start >= end.saturating_add(gap);
            let named = same && ctx.found.iter().any(|v| v.earlier_index == Some(b.index));
            if after || before || named {
                continue;
            }
            let rule = if same {
                format!(
                    "nBL: {} -> {} same rank (data bus busy for the burst)",
                    b.kind, rec.kind
                )
            } else {
                format!(
                    "nBL+nRTRS: {} -> {} different ranks (data bus)",
                    b.kind, rec.kind
                )
            };
            let prev = Entry {
                cycle: b.cmd_cycle,
                index: b.index,
                kind: b.kind,
                implied: false,
                sides: [None, None],
            };
            ctx.timing(
                rule,
                (b.offset + p.bl + gap).saturating_sub(offset),
                sep(rec.cycle, b.cmd_cycle),
                &prev,
            );
        }
        ch.bursts.push_back(Burst {
            start,
            end,
            cmd_cycle: rec.cycle,
            offset,
            rank: rec.rank,
            index: ctx.index,
            kind: rec.kind,
        });
    }

    /// Reports ranks whose next REF is overdue at cycle `now` (once per missed REF).
    fn refresh_deadlines(&mut self, ctx: &mut Ctx<'_>, now: u64) {
        let (refi, refi_key) = (self.p.refi, self.p.refi_key);
        let max_gap = refi.saturating_mul(REFRESH_POSTPONE_LIMIT + 1);
        let ranks_per_ch = self.header.org.ranks as usize;
        let (sb, pb) = (self.saw_refsb, self.saw_refpb);
        let bpg = self.header.org.banks_per_group;
        // With same-bank (per-bank) refresh each bank index (bank) keeps its own interval (a REF
        // counts for all).
        let which = |i: usize| {
            if pb {
                format!(" bank {}", bank_name(i as u32, bpg))
            } else if sb {
                format!(" bank index {i}")
            } else {
                String::new()
            }
        };
        for (i, r) in self.ranks.iter_mut().enumerate() {
            let (ch, rank) = (i / ranks_per_ch, i % ranks_per_ch);
            let (bi, last_ref) = r.stalest_ref();
            let gap = now.saturating_sub(last_ref);
            if !r.gap_reported && gap > max_gap {
                r.gap_reported = true;
                let w = which(bi);
                ctx.push(
                    ViolationKind::Refresh,
                    format!("9x{refi_key}: REF interval (at most {REFRESH_POSTPONE_LIMIT} postponed) channel {ch} rank {rank}{w}"),
                    max_gap,
                    sep(now, last_ref),
                    None,
                    format!("channel {ch} rank {rank}{w}: no REF since cycle {last_ref} ({gap} cycles, at most {max_gap} allowed)"),
                );
            }
            let (bi, refs_done) = r.fewest_refs();
            let due = refs_done
                .saturating_add(REFRESH_POSTPONE_LIMIT + 1)
                .saturating_mul(refi);
            if !r.rate_reported && now > due {
                r.rate_reported = true;
                let w = which(bi);
                ctx.push(
                    ViolationKind::Refresh,
                    format!("{refi_key}: average refresh rate (at most {REFRESH_POSTPONE_LIMIT} owed) channel {ch} rank {rank}{w}"),
                    due,
                    now.min(i64::MAX as u64) as i64,
                    None,
                    format!(
                        "channel {ch} rank {rank}{w}: REF number {} was due by cycle {due} ({} x {refi_key}), none by cycle {now}",
                        refs_done + 1,
                        refs_done + REFRESH_POSTPONE_LIMIT + 1
                    ),
                );
            }
        }
    }
}

/// The same-bank rules: minimum separation from a command doing `prev` to one doing `new` on the
/// same bank.
fn bank_rule(p: &Params, prev: Role, new: Role) -> Option<(&'static str, u64)> {
    use Role::*;
    Some(match (prev, new) {
        (Act, Read) => p.rcd_rd,
        (Act, Write) => p.rcd_wr,
        (Act, Pre) => ("nRAS", p.ras),
        (Act, Act) => ("nRC", p.rc),
        (Pre, Act) => ("nRP", p.rp),
        (Read, Pre) => ("nRTP", p.rtp),
        (Write, Pre) => (p.wr_key, p.write_to_pre()),
        // RowClone FPM: the source row is restored before the destination wordline rises, and
        // the destination row is fully written before it is precharged (or overwritten again).
        (Act, Actc) | (Actc, Actc) | (Actc, Pre) => ("nRAS", p.ras),
        // DDR5 same-bank refresh: the bank is closed a row cycle after its ACT and a precharge
        // after its PRE; it takes no ACT (nor another REFSB) until tRFCsb has passed.
        (Act, Refresh) => ("nRC", p.rc),
        (Pre, Refresh) => ("nRP", p.rp),
        (Refresh, Act) | (Refresh, Refresh) => ("nRFCsb", p.rfcsb.unwrap_or(0)),
        // Per-bank refresh, the same at one bank with tRFCpb.
        (Act, RefreshPb) => ("nRC", p.rc),
        (Pre, RefreshPb) => ("nRP", p.rp),
        (RefreshPb, Act) | (RefreshPb, RefreshPb) => ("nRFCpb", p.pb.map_or(0, |b| b.rfcpb)),
        // Refresh management of one bank index (RFMSB) or one bank (RFMPB): timed at the bank
        // as the refresh of the same banks, with tRFMsb / tRFMpb.
        (Act, RfmSb) | (Act, RfmPb) => ("nRC", p.rc),
        (Pre, RfmSb) | (Pre, RfmPb) => ("nRP", p.rp),
        (Refresh, RfmSb) => ("nRFCsb", p.rfcsb.unwrap_or(0)),
        (RefreshPb, RfmPb) => ("nRFCpb", p.pb.map_or(0, |b| b.rfcpb)),
        (RfmSb, Act) | (RfmSb, Refresh) | (RfmSb, RfmSb) => {
            ("nRFMsb", p.rfm.and_then(|m| m.sb).unwrap_or(0))
        }
        (RfmPb, Act) | (RfmPb, RefreshPb) | (RfmPb, RfmPb) => {
            ("nRFMpb", p.rfm.and_then(|m| m.pb).unwrap_or(0))
        }
        _ => return None,
    })
}

/// GDDR7's same-bank column rules between two column commands of one rank, when the standard has
/// them: the rule's name and separation, or None when the commands share no bank.
fn same_bank_column(
    p: &Params,
    pc: Col,
    nc: Col,
    prev: &Entry,
    new: &Entry,
) -> Option<(&'static str, u64)> {
    if p.ccd_sb.is_none() && p.wtr_sb.is_none() {
        return None;
    }
    let bank = |s: Option<Side>| s.map(|s| s.bank);
    let meet = prev.sides().any(|x| new.sides().any(|y| x.bank == y.bank));
    let wtr = p.wtr_sb.map(|w| ("nCWL+nBL+nWTRSB", p.cwl + p.bl + w));
    let ccd = p.ccd_sb.map(|c| ("nCCDSB", c));
    match (pc, nc) {
        (Col::Write, Col::Read) if meet => wtr,
        (Col::Write, Col::Transfer) if bank(new.sides[0]) == bank(prev.sides[0]) => wtr,
        _ if meet => ccd,
        _ => None,
    }
}

/// How a rule with `_S` / `_L` variants names its scope.
fn group_scope(p: &Params, same: bool, bank_level: bool) -> &'static str {
    match (p.grouped, same, bank_level) {
        (false, _, true) => "other bank same rank",
        (false, _, false) => "same rank",
        (true, true, _) => "same bank group",
        (true, false, _) => "other bank group",
    }
}

/// The banks (rank-relative) a REFPB to `bank` refreshes.
fn refpb_banks(p: &Params, bank: u32, bpr: u32) -> Vec<u32> {
    match p.pb {
        Some(pb) if pb.pair > 0 => vec![bank, (bank + pb.pair) % bpr],
        _ => vec![bank],
    }
}

fn bank_name(bank: u32, bpg: u32) -> String {
    format!("{}.{}", bank / bpg, bank % bpg)
}

/// The banks among `ids` that still hold an open row, named with their row (for a refresh's
/// "must be precharged" check).
fn still_open(banks: &[BankState], ids: impl IntoIterator<Item = u32>, bpg: u32) -> Vec<String> {
    ids.into_iter()
        .filter_map(|i| {
            banks[i as usize]
                .open
                .map(|r| format!("{} (row {r})", bank_name(i, bpg)))
        })
        .collect()
}

fn open_row_check(ctx: &mut Ctx<'_>, open: Option<u32>, row: u32, bank: u32, bpg: u32, what: &str) {
    match open {
        None => ctx.protocol(
            &format!("{what} to a closed bank"),
            format!("bank {} has no open row", bank_name(bank, bpg)),
        ),
        Some(r) if r != row => ctx.protocol(
            &format!("{what} to a row that is not open"),
            format!(
                "bank {} has row {r} open, the command names row {row}",
                bank_name(bank, bpg)
            ),
        ),
        Some(_) => {}
    }
}

/// The command being checked and the violations it caused.
struct Ctx<'a> {
    index: u64,
    line: Option<usize>,
    rec: &'a CommandRecord,
    /// Overrides the command text (for end-of-log checks).
    text: Option<String>,
    found: Vec<Violation>,
}

impl Ctx<'_> {
    fn push(
        &mut self,
        kind: ViolationKind,
        rule: String,
        required: u64,
        actual: i64,
        earlier: Option<&Entry>,
        message: String,
    ) {
        let command = self.text.clone().unwrap_or_else(|| self.rec.to_line());
        self.found.push(Violation {
            kind,
            index: self.index,
            line: self.line,
            cycle: self.rec.cycle,
            command,
            rule,
            required_cycles: required,
            actual_cycles: actual,
            earlier_index: earlier.map(|e| e.index),
            message,
        });
    }

    fn protocol(&mut self, rule: &str, message: String) {
        self.push(
            ViolationKind::Protocol,
            rule.to_string(),
            0,
            0,
            None,
            message,
        );
    }

    fn timing(&mut self, rule: String, required: u64, actual: i64, earlier: &Entry) {
        let at = if earlier.implied {
            "takes effect"
        } else {
            "issued"
        };
        let message = format!(
            "{rule}: needs {required} cycles after command #{} ({at} at cycle {}), got {actual}",
            earlier.index, earlier.cycle
        );
        self.push(
            ViolationKind::Timing,
            rule,
            required,
            actual,
            Some(earlier),
            message,
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Logs

pub use crate::command::header_from_spec;

/// Checks a command log from a reader (`source` names it in I/O errors): the magic line, the
/// `# spec` line, then one command per line. Blank lines and further `#` comment lines are
/// skipped. Memory does not depend on the log's length.
pub fn check_log<R: BufRead>(reader: R, source: &str) -> Result<CheckReport, LogError> {
    let log = LogReader::new(reader, source)?;
    let mut checker = Checker::new(log.header())?;
    for item in log {
        match item? {
            (
                LogLine::IdleRefresh {
                    channel,
                    rank,
                    first,
                    count,
                    period,
                },
                lineno,
            ) => {
                let _ = checker.idle_refreshes(channel, rank, first, count, period, Some(lineno));
            }
            (LogLine::Command(rec), lineno) => {
                let _ = checker.check_at(&rec, Some(lineno));
            }
        }
    }
    Ok(checker.finish())
}

/// Checks the command log at `path` (see [`check_log`]).
pub fn check_log_file(path: &Path) -> Result<CheckReport, LogError> {
    let f = std::fs::File::open(path).map_err(|e| LogError::Io {
        path: path.display().to_string(),
        what: e.to_string(),
    })?;
    check_log(std::io::BufReader::new(f), &path.display().to_string())
}

mod half_clock;
#[cfg(test)]
mod tests;
mod wck;
