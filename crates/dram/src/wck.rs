//! LPDDR5's WCK2CK synchronisation in auto sync-off mode, as the controller keeps it.
//!
//! LPDDR5 moves data on its own clock, WCK (four times CK at 6400 Mb/s), which must be
//! synchronised to CK before a read or write moves data. In auto sync-off mode (JESD209-5) the
//! WCK stops after a column command's burst and postamble when no other column command follows
//! in time; the next read or write then needs a CAS command carrying a WCK2CK sync operand
//! (WS_RD before a read, WS_WR before a write) on the clock before it. The CAS starts the WCK
//! preamble: tWCKENL (CK held), tWCKPRE_static (WCK static), tWCKPRE_toggle (WCK toggling)
//! clocks after the CAS, which end with the burst's first data when the column command follows
//! one clock later (RL = tWCKENL_RD - 1 + tWCKPRE_static + tWCKPRE_toggle_RD, WL likewise).
//!
//! The controller's side is one number per rank: the last clock at which a read or write still
//! finds the WCK synchronised (the previous column command's cycle plus RL or WL, plus the burst
//! BL/n_min, plus the postamble RD(tWCKPST / tCK); JESD209-5's WCK2CK sync-off timing). A column
//! command after it is issued as a CAS now and the command on the next clock; a CAS is never
//! issued while the WCK is still synchronised (a second sync is prohibited). The timings come
//! from the speed bin (`presets/dram/lpddr5.toml`); the independent checker derives the same
//! legality in its own code (`checker/wck.rs`).
use crate::command::CommandKind;
use crate::spec::DramSpec;

pub use crate::spec::{WCK_PARAMS, WCK_SYNC_KEY};

/// Per rank, how long the WCK stays synchronised after the last read or write.
#[derive(Debug, Clone)]
pub struct WckSync {
    /// A read at t keeps the WCK synchronised for a column command up to t + this.
    after_read: u64,
    /// A write at t: up to t + this.
    after_write: u64,
    /// Per rank, the last cycle a column command finds the WCK synchronised (`None`: the WCK has
    /// not run since the start).
    synced_until: Vec<Option<u64>>,
}

impl WckSync {
    /// The WCK state of `ranks` ranks, when the spec runs the WCK in auto sync-off mode.
    pub fn from_spec(spec: &DramSpec, ranks: usize) -> Option<WckSync> {
        if spec.param(WCK_SYNC_KEY) != Some(1) {
            return None;
        }
        // The burst counted at BL/n_max where the bin gives it (BG mode), else its burst.
        let tail = spec.param("nBL_max").unwrap_or(spec.t("nBL")) + spec.t("nWCKPST");
        Some(WckSync {
            after_read: spec.t("nCL") + tail,
            after_write: spec.t("nCWL") + tail,
            synced_until: vec![None; ranks],
        })
    }

    /// Whether a read or write to `rank` at cycle `at` needs a CAS (WCK2CK sync) before it.
    #[inline]
    pub fn needs_cas(&self, rank: u32, at: u64) -> bool {
        self.synced_until[rank as usize].is_none_or(|u| at > u)
    }

    /// Notes a command issued to `rank` at `at`: a read or write keeps the WCK running.
    #[inline]
    pub fn issued(&mut self, kind: CommandKind, rank: u32, at: u64) {
        let window = if kind.is_read() {
            self.after_read
        } else if kind.is_write() {
            self.after_write
        } else {
            return;
        };
        self.synced_until[rank as usize] = Some(at + window);
    }
}

/// Whether `kind` moves data on the WCK (a read or write, with or without auto-precharge).
#[inline]
pub fn uses_wck(kind: CommandKind) -> bool {
    kind.is_read() || kind.is_write()
}
