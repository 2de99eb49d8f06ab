//! DDR5's refresh modes (JESD79-5 "REF mode"): normal refresh (mode 1: an all-bank REF every
//! tREFI = 3.9 us, held for tRFC1) and fine-granularity refresh (FGR, mode 2: an all-bank REF
//! every tREFI2 = tREFI / 2 = 1.95 us, held for the shorter tRFC2), chosen per run with
//! `controller.refresh_mode`.
//!
//! The mode acts when the config is resolved, not in the controller: in FGR mode the resolved
//! timing's `nREFI` is tREFI2, `nRFC` is tRFC2 and an all-bank RFM's `nRFM` is tRFM2 = tRFC2
//! (Ramulator 2.0's DDR5 model: ramulator2 @ 5e58d25, DDR5.cpp), and refresh management's RAAIMT
//! and RAAMMT are halved (JESD79-5C's MR58 as public summaries give it), so the controller's refresh timer
//! and the standard's rule rows need nothing new. The timing also carries the mode's flag
//! ([`REFRESH_FGR_KEY`]) and its inputs `nRFC2` and `nREFI1` (the normal-mode tREFI), from which
//! the checker derives the mode's refresh duration and interval itself ([`checked_timing`]) rather
//! than trusting `nRFC` / `nREFI`. The REF current in FGR mode is IDD5F / IPP5F ([`fgr_currents`]).
//!
//! Refused: FGR on a part without tRFC2 (every standard but DDR5), FGR with any refresh other
//! than all-bank REF (same-bank refresh's interplay with FGR is in no public source in reach), and
//! overriding `nRFC` / `nREFI` / `nRFM` in FGR mode (the mode sets them).
use crate::spec::{Currents, PartRow};
use std::collections::BTreeMap;

pub use crate::spec::REFRESH_FGR_KEY;

/// `controller.refresh_mode`'s default: JESD79-5 normal refresh (REF mode 1).
pub const NORMAL: &str = "normal";
/// `controller.refresh_mode` for JESD79-5 fine-granularity refresh (REF mode 2).
pub const FINE_GRANULARITY: &str = "fine-granularity";
/// Every value `controller.refresh_mode` takes.
pub const MODES: [&str; 2] = [NORMAL, FINE_GRANULARITY];
/// Timing parameters the mode sets: a run in FGR mode may not override them.
pub const SET_BY_MODE: [&str; 6] = ["nRFC", "nREFI", "nRFM", "nRFC2", "nREFI1", REFRESH_FGR_KEY];

/// A refusal: the config key at fault and why.
pub type Refusal = (String, String);

/// Applies `mode` to the resolved `timing` (clocks of `tck_ps`) of `part`, before the user's
/// timing overrides (`overrides`: their names). Normal mode changes nothing.
pub fn apply_timing(
    mode: &str,
    refresh: &str,
    part_name: &str,
    part: &PartRow,
    tck_ps: u64,
    timing: &mut BTreeMap<String, u64>,
    overrides: &[&str],
) -> Result<(), Refusal> {
    if mode != FINE_GRANULARITY {
        return Ok(());
    }
    let key = "controller.refresh_mode".to_string();
    let Some(trfc2_ns) = part.trfc2_ns else {
        return Err((
            key,
            format!(
                "\"{FINE_GRANULARITY}\" refresh needs a part with tRFC2 ({part_name} has none; \
                 DDR5 parts do)"
            ),
        ));
    };
    if refresh != "all-bank" {
        return Err((
            key,
            format!(
                "\"{FINE_GRANULARITY}\" refresh is modelled with all-bank REF only, not with \
                 controller.refresh = \"{refresh}\" (how same-bank refresh combines with \
                 fine-granularity refresh is not modelled)"
            ),
        ));
    }
    if let Some(k) = overrides.iter().find(|k| SET_BY_MODE.contains(k)) {
        return Err((
            format!("dram.timing.{k}"),
            format!(
                "is set by controller.refresh_mode = \"{FINE_GRANULARITY}\" (from the part's tRFC2 \
                 and tREFI / 2); leave it out or use the normal refresh mode"
            ),
        ));
    }
    // The file's ns-to-clock rule: durations ceil(t / tCK), the refresh interval floor.
    let nrfc2 = ((trfc2_ns * 1000.0) / tck_ps as f64).ceil() as u64;
    let nrefi1 = timing.get("nREFI").copied().unwrap_or(0);
    timing.insert("nRFC2".into(), nrfc2);
    timing.insert("nREFI1".into(), nrefi1);
    timing.insert("nRFC".into(), nrfc2);
    // floor(floor(tREFI / tCK) / 2) = floor(tREFI2 / tCK).
    timing.insert("nREFI".into(), nrefi1 / 2);
    if timing.contains_key("nRFM") {
        // tRFM2 = tRFC2 (Ramulator 2.0 DDR5.cpp before 2.1, ramulator2 @ 5e58d25).
        timing.insert("nRFM".into(), nrfc2);
    }
    // Refresh management's thresholds are halved with fine-granularity refresh (JESD79-5C MR58
    // as its public summaries give it; docs/dram.md, "Refresh management"): twice the REFs, each
    // lowering the counts by the halved RAAIMT. A user's override of them still wins.
    for k in ["RAAIMT", "RAAMMT"] {
        if let Some(v) = timing.get_mut(k) {
            *v = (*v / 2).max(1);
        }
    }
    timing.insert(REFRESH_FGR_KEY.into(), 1);
    Ok(())
}

/// The currents of a run in `mode`: in FGR mode the REF current is IDD5F / IPP5F. Refused when
/// energy is modelled and the part has no IDD5F (REF energy would be wrong).
pub fn fgr_currents(
    mode: &str,
    energy_available: bool,
    part_name: &str,
    currents: &mut Currents,
) -> Result<(), Refusal> {
    if mode != FINE_GRANULARITY || !energy_available {
        return Ok(());
    }
    if currents.idd5f <= 0.0 {
        return Err((
            "controller.refresh_mode".into(),
            format!(
                "\"{FINE_GRANULARITY}\" refresh with currents needs the FGR refresh current idd5f \
                 (mA; {part_name} has none), or REF energy would use the normal-mode current"
            ),
        ));
    }
    currents.idd5 = currents.idd5f;
    currents.ipp5 = currents.ipp5f;
    Ok(())
}

/// A log's all-bank refresh timing as the checker derives it, with the names its violations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefreshTiming {
    /// REF -> any command of the rank (clocks).
    pub rfc: u64,
    /// The refresh interval (clocks); 0 when the header gives none.
    pub refi: u64,
    /// "nRFC" (normal) or "nRFC2" (fine-granularity).
    pub rfc_key: &'static str,
    /// "nREFI" (normal) or "nREFI2" (fine-granularity).
    pub refi_key: &'static str,
}

/// The checker's view of a log's refresh timing, derived from the header's `timing` for the mode its flag names. Normal mode: `nRFC` and
/// `nREFI`. FGR mode: tRFC2 (`nRFC2`) and half the normal interval (`nREFI1` / 2), and the
/// header's `nRFC` / `nREFI` must agree with them (else the controller ran other timing than the
/// mode's).
pub fn checked_timing(timing: &BTreeMap<String, u64>) -> Result<RefreshTiming, String> {
    let get = |n: &str| {
        timing
            .get(n)
            .copied()
            .ok_or_else(|| format!("timing parameter {n} is missing"))
    };
    match timing.get(REFRESH_FGR_KEY).copied() {
        None | Some(0) => Ok(RefreshTiming {
            rfc: get("nRFC")?,
            refi: timing.get("nREFI").copied().unwrap_or(0),
            rfc_key: "nRFC",
            refi_key: "nREFI",
        }),
        Some(1) => {
            let rfc = get("nRFC2")?;
            let refi = get("nREFI1")? / 2;
            let (h_rfc, h_refi) = (get("nRFC")?, get("nREFI")?);
            if (h_rfc, h_refi) != (rfc, refi) {
                return Err(format!(
                    "fine-granularity refresh needs nRFC = nRFC2 ({rfc}) and nREFI = nREFI1 / 2 \
                     ({refi}); the header gives nRFC {h_rfc}, nREFI {h_refi}"
                ));
            }
            Ok(RefreshTiming {
                rfc,
                refi,
                rfc_key: "nRFC2",
                refi_key: "nREFI2",
            })
        }
        Some(v) => Err(format!("{REFRESH_FGR_KEY} must be 0 or 1, not {v}")),
    }
}
