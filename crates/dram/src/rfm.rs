//! Refresh management's scope: which RFM command a controller owes when a bank's rolling
//! accumulated ACT (RAA) count reaches RAAIMT, which banks that command waits for and refreshes,
//! and what it needs issued first.
//!
//! - **All-bank** (`controller.rfm_scope = "all-bank"`, the default): RFM (DDR5 RFMab, HBM3 /
//!   HBM4 / GDDR7 RFMab) refreshes every bank of the rank; the whole rank waits for it (PREA, then
//!   RFM).
//! - **Same-bank** (`"same-bank"`, DDR5 only): RFMsb (JESD79-5 section 4.41: "applied to a single
//!   bank address in all bank groups") refreshes the owing bank's index in every bank group;
//!   only those banks wait (a PRE for each open one, then RFMSB).
//! - **Per-bank** (`"per-bank"`, HBM3 / HBM4): RFMpb (JESD238, JESD270-4, as Ramulator 2.1's
//!   `hbm3.py` / `hbm4.py` list it) refreshes the owing bank alone; only it waits (PRE if open,
//!   then RFMPB).
//!
//! Each RFM command lowers the counts of the banks it refreshes by RAAIMT (JESD79-5 4.41, MR59's
//! default decrement), as a REF, REFSB or REFPB of the same banks does. The controller keeps the
//! counts (`controller.rs`, `manage_refresh`); this module holds what depends on the scope.
use crate::command::CommandKind;
use crate::config::RFM_ALL_BANK;
use crate::device::{BankId, ChannelDevices};

/// The RFM command a controller issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RfmScope {
    /// RFM: every bank of the rank.
    AllBank,
    /// RFMSB: one bank index in every bank group (DDR5).
    SameBank,
    /// RFMPB: one bank (HBM3, HBM4).
    PerBank,
}

impl RfmScope {
    /// The scope `controller.rfm_scope` names (checked by the config loader; anything else is
    /// all-bank).
    pub fn from_config(name: &str) -> RfmScope {
        match name {
            "same-bank" => RfmScope::SameBank,
            "per-bank" => RfmScope::PerBank,
            n => {
                debug_assert_eq!(n, RFM_ALL_BANK);
                RfmScope::AllBank
            }
        }
    }

    /// Whether an RFM owed for bank `target` keeps bank `b` (of the same rank) from taking other
    /// commands.
    #[inline]
    pub fn blocks(self, target: BankId, b: BankId) -> bool {
        match self {
            RfmScope::AllBank => true,
            RfmScope::SameBank => b.bank == target.bank,
            RfmScope::PerBank => b.flat == target.flat,
        }
    }

    /// The next command an RFM owed for bank `target` needs: (kind, bank, row). All-bank: PREA
    /// while any bank of the rank is open, then RFM; same-bank: PRE each open bank of the
    /// target's index, then RFMSB (logged at bank group 0); per-bank: PRE the bank if open, then
    /// RFMPB.
    pub fn next_command(self, dev: &ChannelDevices, target: BankId) -> (CommandKind, BankId, u32) {
        let r = target.rank;
        match self {
            RfmScope::AllBank => {
                let b0 = dev.bank_id(r, 0, 0);
                if dev.any_open(r) {
                    (CommandKind::Prea, b0, 0)
                } else {
                    (CommandKind::Rfm, b0, 0)
                }
            }
            RfmScope::SameBank => {
                for g in 0..dev.bank_groups() {
                    let b = dev.bank_id(r, g, target.bank);
                    if let Some(row) = dev.open_row(b) {
                        return (CommandKind::Pre, b, row);
                    }
                }
                (CommandKind::Rfmsb, dev.bank_id(r, 0, target.bank), 0)
            }
            RfmScope::PerBank => match dev.open_row(target) {
                Some(row) => (CommandKind::Pre, target, row),
                None => (CommandKind::Rfmpb, target, 0),
            },
        }
    }
}

/// The banks (flat indices) whose RAA counts an issued refresh or RFM command `kind` to `b`
/// lowers, besides a REF's or RFM's whole rank (`None`): REFSB and RFMSB bank index `b.bank` of
/// every group, REFPB its bank (and the other of its pair), RFMPB its bank.
pub fn refreshed_banks(dev: &ChannelDevices, kind: CommandKind, b: BankId) -> Option<Vec<u32>> {
    match kind {
        CommandKind::Refsb | CommandKind::Rfmsb => Some(
            (0..dev.bank_groups())
                .map(|g| dev.bank_id(b.rank, g, b.bank).flat)
                .collect(),
        ),
        CommandKind::Refpb => {
            let p = dev.refpb_partner(b);
            Some(if p.flat == b.flat {
                vec![b.flat]
            } else {
                vec![b.flat, p.flat]
            })
        }
        CommandKind::Rfmpb => Some(vec![b.flat]),
        _ => None,
    }
}

/// The first bank of a rank (index within the rank) whose count has reached `imt`: the bank an
/// RFM is owed for.
pub fn owing_bank(counts: &[u32], imt: u32) -> Option<u32> {
    counts.iter().position(|&c| c >= imt).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owing_bank_is_the_first_at_the_threshold() {
        assert_eq!(owing_bank(&[3, 31, 32, 40], 32), Some(2));
        assert_eq!(owing_bank(&[3, 31], 32), None);
        assert_eq!(owing_bank(&[], 32), None);
    }

    #[test]
    fn scopes_block_the_banks_they_refresh() {
        let b = |rank, bank_group, bank, flat| BankId {
            rank,
            bank_group,
            bank,
            flat,
        };
        let target = b(0, 1, 2, 6);
        for (scope, other_group_same_index, same_group_other_index) in [
            (RfmScope::AllBank, true, true),
            (RfmScope::SameBank, true, false),
            (RfmScope::PerBank, false, false),
        ] {
            assert!(scope.blocks(target, target));
            assert_eq!(scope.blocks(target, b(0, 0, 2, 2)), other_group_same_index);
            assert_eq!(scope.blocks(target, b(0, 1, 1, 5)), same_group_other_index);
        }
        assert_eq!(RfmScope::from_config("same-bank"), RfmScope::SameBank);
        assert_eq!(RfmScope::from_config("per-bank"), RfmScope::PerBank);
        assert_eq!(RfmScope::from_config("all-bank"), RfmScope::AllBank);
    }
}
