//! The command-level energy model, in DRAMPower's structure (Jung et al.; DRAMPower 5/6's DDR4/DDR5
//! core model, formulas written here from the published equations): per-command energies from
//! datasheet currents, a bank-wise background model, each supply domain (VDD, and VPP where the
//! part has one) evaluated with the same formulas and its own currents, plus an explicit per-bit
//! energy for data crossing the memory channel (what in-DRAM copy saves).
//!
//! Per device and supply V, with B banks, BG bank groups, bank-wise factor rho (1 by default:
//! then every formula is the classic IDD one):
//!
//! - I_n = I_rho + n (I_1 - I_rho) with n banks open, rho the shared part of the all-banks-open
//!   increment over I2N. On DDR IDD3N has all banks open: I_rho = rho (I3N - I2N) + I2N, I_1 =
//!   (I3N + (B - 1) I_rho) / B. On LPDDR it has one ([`IddConditions`], JESD209's test
//!   conditions): I_1 = I3N, I_rho = (rho B I3N + (1 - rho) I2N) / (rho B + 1 - rho) (DRAMPower
//!   6.2's LPDDR5 form);
//!   I_theta = (I0 (tRP + tRAS) - Ibeta tRP) / tRAS with Ibeta = I0; I_BG = I_rho + (I_1 - I_rho) BG
//! - ACT (and RowClone's ACTC): V (I_theta - I_1) tRAS; PRE per closed bank (PRE, PREA, RDA, WRA):
//!   V (Ibeta - I2N) tRP; RD / WR burst: V (I4R / I4W - I_k) nBL tCK with the k banks IDD4R's test
//!   opens (all on DDR, two in LPDDR5's bank-group mode, one in its 8-bank mode); a TR: one of each
//! - REF: V (I5B - I_B) tRFC; REFSB: V (I5C - I_BG) tRFCsb; REFPB: V (I5PB - I_p) tRFCpb with the p
//!   banks it refreshes (one, or LPDDR5's pair) counted as active in the background, as REFSB's
//!   banks are; where IDD5PB is averaged over tREFIpb (LPDDR), the current during the refresh is
//!   (IDD5PB tREFIpb - I2N (tREFIpb - tRFCpb)) / tRFCpb; RFM
//!   (all banks): V (I5B - I_B) tRFM, an all-bank refresh of tRFM; RFMSB and RFMPB as REFSB and
//!   REFPB with tRFMsb and tRFMpb
//! - background: V (I_rho x cycles any bank is active + (I_1 - I_rho) x the banks' active cycles
//!   + I2N x cycles all are precharged) tCK, a bank being active while open or refreshing.
//!
//! The activate term goes negative when I_1 exceeds IDD0, as with the DDR5 current sets we have
//! (IDD3N has every bank open), and so does REFsb's when IDD5C is below I_BG: any such term is
//! charged against precharged standby instead, V (I - I2N) t, and never below zero (docs/dram.md,
//! "DDR5 energy"). A part without public currents has no energy at all (every figure zero, the
//! stats say it is not available), the channel's per-bit energy included.
//!
//! Units: V x mA x ns = pJ. All results in nJ for the whole memory system.
use crate::command::CommandKind;
use crate::controller::ChannelCounters;
use crate::device::RankActivity;
use crate::spec::{Currents, DramSpec, IddConditions};
use crate::stats::EnergyBreakdown;

/// The currents of one supply domain, mA, and its voltage, V.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Domain {
    pub v: f64,
    pub i0: f64,
    pub i2n: f64,
    pub i3n: f64,
    pub i4r: f64,
    pub i4w: f64,
    pub i5b: f64,
    pub i5c: f64,
    /// Per-bank refresh current (LPDDR5 / HBM3 IDD5PB), for REFPB.
    pub i5pb: f64,
}

impl Domain {
    /// VDD, VPP and LPDDR5's VDD2L of a part (a domain the part lacks has zero currents and
    /// voltage, and adds nothing). On LPDDR5 VDD is VDD2H and VPP is VDD1.
    pub fn of(c: &Currents) -> [Domain; 3] {
        [
            Domain {
                v: c.vdd,
                i0: c.idd0,
                i2n: c.idd2n,
                i3n: c.idd3n,
                i4r: c.idd4r,
                i4w: c.idd4w,
                i5b: c.idd5,
                i5c: c.idd5c,
                i5pb: c.idd5pb,
            },
            Domain {
                v: c.vpp,
                i0: c.ipp0,
                i2n: c.ipp2n,
                i3n: c.ipp3n,
                i4r: c.ipp4r,
                i4w: c.ipp4w,
                i5b: c.ipp5,
                i5c: c.ipp5c,
                i5pb: c.ipp5pb,
            },
            Domain {
                v: c.vdd2l,
                i0: c.idd02l,
                i2n: c.idd2n2l,
                i3n: c.idd3n2l,
                i4r: c.idd4r2l,
                i4w: c.idd4w2l,
                i5b: c.idd52l,
                i5c: 0.0,
                i5pb: c.idd5pb2l,
            },
        ]
    }
}

/// What the per-device model needs of the timing and organisation (times in ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreTiming {
    pub tck: f64,
    pub t_ras: f64,
    pub t_rp: f64,
    pub t_bl: f64,
    pub t_rfc: f64,
    pub t_rfcsb: f64,
    pub t_rfcpb: f64,
    /// Refresh management (RFM, all banks): tRFM.
    pub t_rfm: f64,
    /// Same-bank and per-bank refresh management (RFMSB, RFMPB): tRFMsb, tRFMpb.
    pub t_rfmsb: f64,
    pub t_rfmpb: f64,
    pub banks: u32,
    pub bank_groups: u32,
    pub rho: f64,
    /// The datasheets' IDD test conditions (DDR's by default).
    pub idd: IddConditions,
    /// Banks one REFPB refreshes (2 where they pair) and the per-bank refresh interval tREFIpb
    /// (tREFI over the REFPBs that cover a rank), in ns: for an IDD5PB averaged over it.
    pub refpb_banks: u32,
    pub t_refipb: f64,
}

impl CoreTiming {
    pub fn of(spec: &DramSpec, rho: f64) -> CoreTiming {
        let tck = spec.t("tCK_ps") as f64 / 1000.0;
        let ns = |name: &str| spec.t(name) as f64 * tck;
        CoreTiming {
            tck,
            t_ras: ns("nRAS"),
            t_rp: ns("nRP"),
            // The clocks a burst carries data (`nBL_data` where the burst's window has a gap in
            // it, as LPDDR5's BL32 in bank-group mode), what IDD4R / IDD4W are drawn for.
            t_bl: spec
                .param("nBL_data")
                .map_or_else(|| ns("nBL"), |n| n as f64 * tck),
            t_rfc: ns("nRFC"),
            t_rfcsb: ns("nRFCsb"),
            t_rfcpb: ns("nRFCpb"),
            t_rfm: ns("nRFM"),
            t_rfmsb: spec.param("nRFMsb").unwrap_or(0) as f64 * tck,
            t_rfmpb: spec.param("nRFMpb").unwrap_or(0) as f64 * tck,
            banks: spec.org.banks_per_rank(),
            bank_groups: spec.org.bank_groups,
            rho,
            idd: spec.idd_conditions,
            refpb_banks: if spec.refpb_pair_offset > 0 { 2 } else { 1 },
            t_refipb: {
                let per_interval =
                    spec.org.banks_per_rank() / if spec.refpb_pair_offset > 0 { 2 } else { 1 };
                ns("nREFI") / f64::from(per_interval.max(1))
            },
        }
    }
}

/// Per-command energies and background powers of one device (or, scaled, one rank), in pJ.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CommandEnergy {
    pub act: f64,
    pub pre: f64,
    pub read: f64,
    pub write: f64,
    pub refresh: f64,
    /// Same-bank refresh (REFSB).
    pub refresh_sb: f64,
    /// Per-bank refresh (REFPB).
    pub refresh_pb: f64,
    /// Refresh management (RFM, all banks): an all-bank refresh of tRFM.
    pub refresh_mgmt: f64,
    /// Same-bank refresh management (RFMSB): a same-bank refresh of tRFMsb.
    pub refresh_mgmt_sb: f64,
    /// Per-bank refresh management (RFMPB): a per-bank refresh of tRFMpb.
    pub refresh_mgmt_pb: f64,
    /// Background per cycle: while any bank is active (shared), per active bank on top of that,
    /// and while all banks are precharged.
    pub active_bg_per_cycle: f64,
    pub bank_bg_per_cycle: f64,
    pub precharged_bg_per_cycle: f64,
    /// Channel energy of one burst (one line) crossing the channel.
    pub io_per_burst: f64,
}

impl CommandEnergy {
    /// One device's energies from its supply domains (DRAMPower's per-domain formulas, summed).
    pub fn device(domains: &[Domain], t: &CoreTiming) -> CommandEnergy {
        let mut e = CommandEnergy::default();
        let b = f64::from(t.banks.max(1));
        let bg = f64::from(t.bank_groups.max(1));
        // The background of n open banks: I_rho plus n times one bank's share, which IDD3N gives
        // with `idd3n_open_banks` banks open (all of them on DDR).
        let open_banks = |n: u32| if n == 0 { b } else { f64::from(n) };
        let k3 = open_banks(t.idd.idd3n_open_banks);
        let k4 = open_banks(t.idd.idd4_open_banks);
        let kpb = f64::from(t.refpb_banks.max(1));
        for d in domains {
            let v = d.v;
            // DDR (IDD3N with every bank open) in the classic expressions, so that its figures
            // stay bit for bit what they were.
            let (i_rho, i_1, i_all) = if k3 == b {
                let i_rho = t.rho * (d.i3n - d.i2n) + d.i2n;
                (i_rho, (d.i3n + (b - 1.0) * i_rho) / b, d.i3n)
            } else {
                // rho keeps its meaning, the shared part of the all-banks-open increment X over
                // IDD2N: IDD3N - IDD2N = rho X + k3 (1 - rho) X / B with k3 banks open.
                let x = b * (d.i3n - d.i2n) / (t.rho * b + k3 * (1.0 - t.rho));
                let i_rho = d.i2n + t.rho * x;
                let one = if k3 == 1.0 {
                    d.i3n
                } else {
                    i_rho + (1.0 - t.rho) * x / b
                };
                (i_rho, one, i_rho + b * (one - i_rho))
            };
            let i_open = |n: f64| {
                if n == b {
                    i_all
                } else if n == 1.0 {
                    i_1
                } else {
                    i_rho + n * (i_1 - i_rho)
                }
            };
            let i_beta = d.i0;
            let i_theta = if t.t_ras > 0.0 {
                (d.i0 * (t.t_rp + t.t_ras) - i_beta * t.t_rp) / t.t_ras
            } else {
                d.i0
            };
            let i_bg = i_rho + (i_1 - i_rho) * bg;
            // A command's current above the background DRAMPower subtracts; when a current set
            // puts the command below that background (DDR5: IDD0 and IDD5C below IDD3N), above
            // precharged standby instead, and never below zero (module docs).
            let above = |i: f64, background: f64| {
                if i >= background {
                    i - background
                } else {
                    (i - d.i2n).max(0.0)
                }
            };
            // A per-bank refresh's current during tRFCpb: IDD5PB itself, or, where IDD5PB is the
            // average over tREFIpb, what leaves IDD2N for the rest of that interval.
            let i5pb = if t.idd.idd5pb_averaged && t.t_rfcpb > 0.0 {
                (d.i5pb * t.t_refipb - d.i2n * (t.t_refipb - t.t_rfcpb)) / t.t_rfcpb
            } else {
                d.i5pb
            };
            e.act += v * above(i_theta, i_1) * t.t_ras;
            e.pre += v * (i_beta - d.i2n).max(0.0) * t.t_rp;
            e.read += v * above(d.i4r, i_open(k4)) * t.t_bl;
            e.write += v * above(d.i4w, i_open(k4)) * t.t_bl;
            e.refresh += v * above(d.i5b, i_all) * t.t_rfc;
            // RFMab refreshes every bank like REFab, for tRFM (JESD79-5 gives no separate current).
            e.refresh_mgmt += v * above(d.i5b, i_all) * t.t_rfm;
            e.refresh_sb += v * above(d.i5c, i_bg) * t.t_rfcsb;
            // RFMsb / RFMpb refresh the banks a REFsb / REFpb does, for tRFMsb / tRFMpb (no
            // separate current is defined).
            e.refresh_mgmt_sb += v * above(d.i5c, i_bg) * t.t_rfmsb;
            // One bank (or a pair) refreshes while the others keep their state: above that many
            // banks active.
            e.refresh_pb += v * above(i5pb, i_open(kpb)) * t.t_rfcpb;
            e.refresh_mgmt_pb += v * above(i5pb, i_open(kpb)) * t.t_rfmpb;
            e.active_bg_per_cycle += v * i_rho * t.tck;
            e.bank_bg_per_cycle += v * (i_1 - i_rho) * t.tck;
            e.precharged_bg_per_cycle += v * d.i2n * t.tck;
        }
        e
    }

    /// A rank's energies (all its chips) for `spec`, with bank-wise factor `rho`.
    pub fn new(spec: &DramSpec, io_pj_per_bit: f64, rho: f64) -> CommandEnergy {
        if !spec.energy_available {
            return CommandEnergy::default();
        }
        let d = CommandEnergy::device(&Domain::of(&spec.currents), &CoreTiming::of(spec, rho));
        let chips = spec.org.chips_per_rank() as f64;
        CommandEnergy {
            act: chips * d.act,
            pre: chips * d.pre,
            read: chips * d.read,
            write: chips * d.write,
            refresh: chips * d.refresh,
            refresh_sb: chips * d.refresh_sb,
            refresh_pb: chips * d.refresh_pb,
            refresh_mgmt: chips * d.refresh_mgmt,
            refresh_mgmt_sb: chips * d.refresh_mgmt_sb,
            refresh_mgmt_pb: chips * d.refresh_mgmt_pb,
            active_bg_per_cycle: chips * d.active_bg_per_cycle,
            bank_bg_per_cycle: chips * d.bank_bg_per_cycle,
            precharged_bg_per_cycle: chips * d.precharged_bg_per_cycle,
            io_per_burst: io_pj_per_bit * spec.org.line_bytes() as f64 * 8.0,
        }
    }
}

/// The energy breakdown of a channel's run.
pub fn channel_energy(
    e: &CommandEnergy,
    c: &ChannelCounters,
    activity: &[RankActivity],
) -> EnergyBreakdown {
    let n = |k: CommandKind| c.commands[k.index()] as f64;
    // ACTC raises a wordline and restores a full row, like an ACTIVATE; an ACTM (Multi-RowCopy)
    // costs one activation per row it raises besides the open one (modelled).
    let acts = n(CommandKind::Act) + n(CommandKind::Actc) + c.mrc_rows as f64;
    // Auto-precharge forms and PREA close banks too.
    let pres = n(CommandKind::Pre)
        + n(CommandKind::Rda)
        + n(CommandKind::Wra)
        + c.banks_closed_by_prea as f64;
    let reads = n(CommandKind::Rd) + n(CommandKind::Rda);
    let writes = n(CommandKind::Wr) + n(CommandKind::Wra);
    let trs = n(CommandKind::Tr);
    let (mut act_cyc, mut pre_cyc, mut bank_cyc) = (0u64, 0u64, 0u64);
    for a in activity {
        act_cyc += a.active_cycles;
        pre_cyc += a.precharged_cycles;
        bank_cyc += a.bank_active_cycles;
    }
    let mut b = EnergyBreakdown {
        activate_nj: acts * e.act / 1000.0,
        precharge_nj: pres * e.pre / 1000.0,
        read_nj: reads * e.read / 1000.0,
        write_nj: writes * e.write / 1000.0,
        transfer_nj: trs * (e.read + e.write) / 1000.0,
        refresh_nj: (n(CommandKind::Ref) * e.refresh
            + n(CommandKind::Refsb) * e.refresh_sb
            + n(CommandKind::Refpb) * e.refresh_pb
            + n(CommandKind::Rfm) * e.refresh_mgmt
            + n(CommandKind::Rfmsb) * e.refresh_mgmt_sb
            + n(CommandKind::Rfmpb) * e.refresh_mgmt_pb)
            / 1000.0,
        background_nj: (act_cyc as f64 * e.active_bg_per_cycle
            + bank_cyc as f64 * e.bank_bg_per_cycle
            + pre_cyc as f64 * e.precharged_bg_per_cycle)
            / 1000.0,
        io_nj: (reads + writes) * e.io_per_burst / 1000.0,
        total_nj: 0.0,
    };
    b.total_nj = b.activate_nj
        + b.precharge_nj
        + b.read_nj
        + b.write_nj
        + b.transfer_nj
        + b.refresh_nj
        + b.background_nj
        + b.io_nj;
    b
}

/// Adds `o` into `a`.
pub fn add_energy(a: &mut EnergyBreakdown, o: &EnergyBreakdown) {
    a.activate_nj += o.activate_nj;
    a.precharge_nj += o.precharge_nj;
    a.read_nj += o.read_nj;
    a.write_nj += o.write_nj;
    a.transfer_nj += o.transfer_nj;
    a.refresh_nj += o.refresh_nj;
    a.background_nj += o.background_nj;
    a.io_nj += o.io_nj;
    a.total_nj += o.total_nj;
}

#[cfg(test)]
mod tests;
