//! The command-level energy model: per-command energies from datasheet IDD currents (the standard
//! IDD-based formulas DRAMPower popularised; see dram-facts.md), background energy from the time
//! each rank spent with a bank open or all banks precharged, and an explicit per-bit energy for
//! data crossing the memory channel (what in-DRAM copy saves).
//!
//! Units: V x mA x ns = pJ. All results in nJ for the whole memory system.
use crate::command::CommandKind;
use crate::controller::ChannelCounters;
use crate::device::RankActivity;
use crate::spec::DramSpec;
use crate::stats::EnergyBreakdown;

/// Per-command energies of one rank (all its chips), in pJ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommandEnergy {
    pub act: f64,
    pub pre: f64,
    pub read: f64,
    pub write: f64,
    pub refresh: f64,
    /// Same-bank refresh (REFSB).
    pub refresh_sb: f64,
    /// Background power with a bank open / all precharged, in pJ per cycle.
    pub active_bg_per_cycle: f64,
    pub precharged_bg_per_cycle: f64,
    /// Channel energy of one burst (one line) crossing the channel.
    pub io_per_burst: f64,
}

impl CommandEnergy {
    pub fn new(spec: &DramSpec, io_pj_per_bit: f64) -> CommandEnergy {
        let c = &spec.currents;
        let tck_ns = spec.t("tCK_ps") as f64 / 1000.0;
        let ns = |name: &str| spec.t(name) as f64 * tck_ns;
        let chips = spec.org.chips_per_rank() as f64;
        let (t_ras, t_rc, t_bl, t_rfc) = (ns("nRAS"), ns("nRC"), ns("nBL"), ns("nRFC"));
        let vpp = |a: f64, b: f64| c.vpp * (a - b).max(0.0);
        CommandEnergy {
            act: chips * (c.vdd * (c.idd0 - c.idd3n) * t_ras + vpp(c.ipp0, c.ipp3n) * t_ras),
            pre: chips
                * (c.vdd * (c.idd0 - c.idd2n) * (t_rc - t_ras)
                    + vpp(c.ipp0, c.ipp2n) * (t_rc - t_ras)),
            read: chips * (c.vdd * (c.idd4r - c.idd3n) * t_bl + vpp(c.ipp4r, c.ipp3n) * t_bl),
            write: chips * (c.vdd * (c.idd4w - c.idd3n) * t_bl + vpp(c.ipp4w, c.ipp3n) * t_bl),
            refresh: chips * (c.vdd * (c.idd5 - c.idd3n) * t_rfc + vpp(c.ipp5, c.ipp3n) * t_rfc),
            refresh_sb: chips
                * (c.vdd * (c.idd5c - c.idd3n).max(0.0) * ns("nRFCsb")
                    + vpp(c.ipp5c, c.ipp3n) * ns("nRFCsb")),
            active_bg_per_cycle: chips * (c.vdd * c.idd3n + c.vpp * c.ipp3n) * tck_ns,
            precharged_bg_per_cycle: chips * (c.vdd * c.idd2n + c.vpp * c.ipp2n) * tck_ns,
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
    // ACTC raises a wordline and restores a full row, like an ACTIVATE.
    let acts = n(CommandKind::Act) + n(CommandKind::Actc);
    // Auto-precharge forms and PREA close banks too.
    let pres = n(CommandKind::Pre)
        + n(CommandKind::Rda)
        + n(CommandKind::Wra)
        + c.banks_closed_by_prea as f64;
    let reads = n(CommandKind::Rd) + n(CommandKind::Rda);
    let writes = n(CommandKind::Wr) + n(CommandKind::Wra);
    let trs = n(CommandKind::Tr);
    let (mut act_cyc, mut pre_cyc) = (0u64, 0u64);
    for a in activity {
        act_cyc += a.active_cycles;
        pre_cyc += a.precharged_cycles;
    }
    let mut b = EnergyBreakdown {
        activate_nj: acts * e.act / 1000.0,
        precharge_nj: pres * e.pre / 1000.0,
        read_nj: reads * e.read / 1000.0,
        write_nj: writes * e.write / 1000.0,
        transfer_nj: trs * (e.read + e.write) / 1000.0,
        refresh_nj: (n(CommandKind::Ref) * e.refresh + n(CommandKind::Refsb) * e.refresh_sb)
            / 1000.0,
        background_nj: (act_cyc as f64 * e.active_bg_per_cycle
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
