//! The checker's own account of LPDDR5's WCK2CK synchronisation (auto sync-off mode).
//!
//! Written from JESD209-5's description (as summarised in docs/dram.md, "LPDDR5 WCK2CK
//! synchronisation"), not from the controller's `wck` module: a log whose header carries
//! `WCK_SYNC = 1` ran the WCK in auto sync-off mode, and then
//! - a CAS (WS_RD / WS_WR) is a pair with the read or write it synchronises: that command comes
//!   on the very next clock of the channel, to the CAS's rank;
//! - the CAS's preamble, tWCKENL + tWCKPRE_static + tWCKPRE_toggle clocks from the CAS, must
//!   end no later than the burst's data starts (RL / WL after the column command): checked once,
//!   on the header's parameters, for the one-clock pair;
//! - after a read at t the WCK stays synchronised through t + RL + BL/n_max + RD(tWCKPST / tCK),
//!   after a write through t + WL + BL/n_max + RD(tWCKPST / tCK) (JESD209-5's sync-off timing,
//!   counted from the rank's latest read or write); a read or write after that needs a CAS, and a
//!   CAS before then is prohibited (WS while the WCK is synchronised);
//! - a CAS on a log whose WCK was always on, or on any other standard, is a violation.
use super::{Ctx, Entry, ViolationKind};
use crate::command::{CommandKind, CommandRecord, LogHeader};
use crate::error::LogError;

/// The header's WCK parameters, in clocks of CK.
#[derive(Debug, Clone, Copy)]
pub(super) struct WckRules {
    /// Last clock after a read / write (relative to it) at which the WCK is still synchronised.
    read_hold: u64,
    write_hold: u64,
}

impl WckRules {
    /// The rules of a log whose header says the WCK ran in auto sync-off mode; `None` otherwise.
    pub(super) fn from_header(h: &LogHeader) -> Result<Option<WckRules>, LogError> {
        if h.timing.get("WCK_SYNC").copied().unwrap_or(0) == 0 {
            return Ok(None);
        }
        if h.standard != "LPDDR5" {
            return Err(LogError::Header(format!(
                "WCK_SYNC is set, but WCK2CK synchronisation is LPDDR5's; the log's device is {}",
                h.standard
            )));
        }
        let get = |name: &str| -> Result<u64, LogError> {
            h.timing.get(name).copied().ok_or_else(|| {
                LogError::Header(format!(
                    "timing parameter {name} is missing (WCK_SYNC needs it)"
                ))
            })
        };
        let (rl, wl, pst) = (get("nCL")?, get("nCWL")?, get("nWCKPST")?);
        // BL/n_max: BG mode's longer burst time where the header gives it.
        let burst = match h.timing.get("nBL_max") {
            Some(&b) => b,
            None => get("nBL")?,
        };
        let stat = get("nWCKPRE_static")?;
        // The CAS at c, its column command at c + 1: the preamble ends at c + tWCKENL +
        // tWCKPRE_static + tWCKPRE_toggle, the data starts at c + 1 + RL (WL).
        for (what, enl, toggle, lat, lat_name) in [
            ("read", "nWCKENL_RD", "nWCKPRE_toggle_RD", rl, "nCL"),
            ("write", "nWCKENL_WR", "nWCKPRE_toggle_WR", wl, "nCWL"),
        ] {
            let pre = get(enl)? + stat + get(toggle)?;
            if pre > lat + 1 {
                return Err(LogError::Header(format!(
                    "the WCK preamble of a {what} ({enl} + nWCKPRE_static + {toggle} = {pre} clocks after its CAS) ends after the burst's data starts ({lat_name} + 1 = {} clocks after the CAS)",
                    lat + 1
                )));
            }
        }
        Ok(Some(WckRules {
            read_hold: rl + burst + pst,
            write_hold: wl + burst + pst,
        }))
    }
}

/// The WCK state of every rank and the CAS each channel still owes its column command.
#[derive(Debug, Clone)]
pub(super) struct WckState {
    rules: Option<WckRules>,
    /// Per rank (channel major): the latest read or write (cycle, index, kind).
    last_column: Vec<Option<(u64, u64, CommandKind)>>,
    /// Per channel: a CAS whose column command has not come yet (cycle, index, rank).
    pending: Vec<Option<(u64, u64, usize)>>,
}

fn is_column(kind: CommandKind) -> bool {
    kind.is_read() || kind.is_write()
}

impl WckState {
    pub(super) fn new(rules: Option<WckRules>, ranks: usize, channels: usize) -> WckState {
        WckState {
            rules,
            last_column: vec![None; ranks],
            pending: vec![None; channels],
        }
    }

    /// The last cycle a column command to rank `ri` finds the WCK synchronised, if it ran.
    fn synced_until(&self, ri: usize) -> Option<(u64, u64, CommandKind, u64)> {
        let rules = self.rules?;
        let (c, index, kind) = self.last_column.get(ri).copied().flatten()?;
        let hold = if kind.is_read() {
            rules.read_hold
        } else {
            rules.write_hold
        };
        Some((c, index, kind, c.saturating_add(hold)))
    }

    /// Checks `ctx.rec` (on channel `ch`, rank `ri`) against the WCK rules and records it.
    /// Returns true when the command was a CAS (which touches no bank).
    pub(super) fn check(&mut self, ctx: &mut Ctx<'_>, ch: usize, ri: usize) -> bool {
        let rec: &CommandRecord = ctx.rec;
        let t = rec.cycle;
        // A CAS owed its column command on this clock.
        let mut paired = false;
        if let Some((c, index, rank)) = self.pending.get_mut(ch).and_then(Option::take) {
            if t == c + 1 && rank == ri && is_column(rec.kind) {
                paired = true;
            } else {
                ctx.push(
                    ViolationKind::Protocol,
                    "CAS pair".into(),
                    0,
                    0,
                    None,
                    format!(
                        "the CAS of command #{index} (cycle {c}) must be followed on cycle {} by the read or write it synchronises, to its rank; found {} at cycle {t}",
                        c + 1,
                        rec.kind
                    ),
                );
            }
        }
        if self.rules.is_none() {
            if rec.kind == CommandKind::Cas {
                ctx.protocol(
                    "CAS without WCK2CK sync",
                    "the log's header does not run the WCK in auto sync-off mode (no WCK_SYNC; LPDDR5 only): its WCK is always on and takes no CAS".into(),
                );
                return true;
            }
            return false;
        }
        let synced = self.synced_until(ri);
        match rec.kind {
            CommandKind::Cas => {
                if let Some((c, index, kind, until)) = synced.filter(|s| t <= s.3) {
                    let prev = Entry {
                        cycle: c,
                        index,
                        kind,
                        implied: false,
                        sides: [None, None],
                    };
                    let lat = if kind.is_read() { "nCL" } else { "nCWL" };
                    let hold = until - c;
                    ctx.timing(
                        format!(
                            "{lat} + nBL_max + nWCKPST + 1: {} -> CAS same rank (no WCK2CK sync while the WCK is synchronised)",
                            kind
                        ),
                        hold + 1,
                        super::sep(t, c),
                        &prev,
                    );
                }
                if let Some(p) = self.pending.get_mut(ch) {
                    *p = Some((t, ctx.index, ri));
                }
                return true;
            }
            k if is_column(k) => {
                if !paired {
                    match synced {
                        None => ctx.protocol(
                            "WCK2CK sync off",
                            format!(
                                "{k} with the rank's WCK stopped (no read or write since the start): it needs a CAS on cycle {}",
                                t.saturating_sub(1)
                            ),
                        ),
                        Some((c, index, kind, until)) if t > until => ctx.protocol(
                            "WCK2CK sync off",
                            format!(
                                "{k} at cycle {t} with the rank's WCK stopped after cycle {until} (the {kind} of command #{index} at cycle {c} holds it that long): it needs a CAS on the clock before"
                            ),
                        ),
                        _ => {}
                    }
                }
                if let Some(l) = self.last_column.get_mut(ri) {
                    *l = Some((t, ctx.index, k));
                }
            }
            _ => {}
        }
        false
    }

    /// At an IDLE-REF line or the end of the log: a CAS still owed its column command on `ch`
    /// (every channel when `None`) is a violation.
    pub(super) fn unanswered(&mut self, ctx: &mut Ctx<'_>, ch: Option<usize>) {
        for (i, p) in self.pending.iter_mut().enumerate() {
            if ch.is_some_and(|c| c != i) {
                continue;
            }
            if let Some((c, index, _)) = p.take() {
                ctx.protocol(
                    "CAS pair",
                    format!(
                        "the CAS of command #{index} (cycle {c}) is not followed on cycle {} by the read or write it synchronises",
                        c + 1
                    ),
                );
            }
        }
    }
}
