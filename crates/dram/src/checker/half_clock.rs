//! HBM3's and HBM4's row command bus at half-clock resolution, as the checker knows it.
//!
//! JESD238 (HBM3) and JESD270-4 (HBM4) send a row command on a rising edge of CK over half a clock
//! (PRE, PREA, REF, REFPB, RFM, RFMPB) and an ACT over three edges (rising, falling, rising: 1.5
//! clocks). Only a PRE (per-bank precharge) may go on a falling edge, and one that shares a clock
//! with the row command holding that clock's rising edge must pair with it (JESD238 Table 35, as
//! Ramulator 2.1's `hbm34_controller.cpp` codes it and its tests name it): that command names one
//! bank (ACT, PRE, REFPB, RFMPB; RowClone's ACTC and ACTM as an ACT) and the PRE another; an
//! all-bank command (PREA, REF, RFM) pairs with nothing. An ACT holds its own clock whole and the
//! next clock's rising edge; that clock's falling half is free.
//!
//! movelab logs whole clocks: a row command in a clock whose rising edge is held is that clock's
//! falling-edge command. Its own rules are checked at its clock; the rules it starts count from the
//! next clock (its edge rounded up to the next rising edge, where every command that waits on it
//! issues). This is written from the facts above, not from the standard files' rule rows or their
//! `half_clock` declaration.
use crate::command::CommandKind;

/// Where a row command went on the row bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Edge {
    /// The clock's rising edge.
    Rising,
    /// The clock's falling edge: its rules start a clock later.
    Falling,
    /// Not placeable: why.
    Refused(String),
    /// In the clock after an ACT, whose rising edge it holds, and not a PRE that may take the
    /// falling edge: the ACT's hold (checked as a two-clock command) refuses it.
    Held,
}

/// One channel's row bus, as commands arrive.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RowEdges {
    /// The last row command on a rising edge: (its clock, the last clock whose rising edge it
    /// holds, kind, (rank, bank)).
    rising: Option<(u64, u64, CommandKind, (usize, u32))>,
    /// The last clock whose falling half a PRE took.
    falling_at: Option<u64>,
}

fn is_activation(k: CommandKind) -> bool {
    matches!(k, CommandKind::Act | CommandKind::Actc | CommandKind::Actm)
}

/// Row commands that name one bank: a falling-edge PRE may pair with them.
fn names_one_bank(k: CommandKind) -> bool {
    is_activation(k)
        || matches!(
            k,
            CommandKind::Pre | CommandKind::Refpb | CommandKind::Rfmpb
        )
}

impl RowEdges {
    /// Places row command `kind` of bank `bank` ((rank, bank in rank)) logged in clock `t`.
    pub(super) fn place(&mut self, t: u64, kind: CommandKind, bank: (usize, u32)) -> Edge {
        let held = self.rising.filter(|&(_, through, _, _)| through >= t);
        let Some((from, _, by, by_bank)) = held else {
            let through = if is_activation(kind) { t + 1 } else { t };
            self.rising = Some((t, through, kind, bank));
            return Edge::Rising;
        };
        let refuse = |why: String| Edge::Refused(why);
        let after_act = is_activation(by) && from < t;
        if after_act && (kind != CommandKind::Pre || by_bank == bank || self.falling_at == Some(t))
        {
            return Edge::Held;
        }
        if kind != CommandKind::Pre {
            return refuse(format!(
                "{kind} in cycle {t}, whose rising edge {by} (cycle {from}) holds: only a PRE may take a falling edge"
            ));
        }
        if self.falling_at == Some(t) {
            return refuse(format!("a second PRE on the falling edge of cycle {t}"));
        }
        if is_activation(by) && from == t {
            return refuse(format!(
                "PRE in cycle {t} beside {by}: an ACT holds its own clock whole (1.5 clocks)"
            ));
        }
        if !names_one_bank(by) {
            return refuse(format!(
                "PRE on the falling edge of cycle {t} after the all-bank {by}: it pairs only with a command of one bank"
            ));
        }
        if by_bank == bank {
            return refuse(format!(
                "PRE on the falling edge of cycle {t} names the bank of {by}, which it pairs with"
            ));
        }
        self.falling_at = Some(t);
        Edge::Falling
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommandKind::*;

    #[test]
    fn pairs_a_pre_with_one_bank_commands_only() {
        let (a, b) = ((0, 0), (0, 1));
        let mut e = RowEdges::default();
        assert_eq!(e.place(10, Refpb, a), Edge::Rising);
        assert_eq!(e.place(10, Pre, b), Edge::Falling);
        assert!(matches!(e.place(10, Pre, (0, 2)), Edge::Refused(_)));
        assert_eq!(e.place(11, Pre, a), Edge::Rising);
        // The same bank, an all-bank command, a non-PRE on the falling edge.
        let mut e = RowEdges::default();
        e.place(0, Refpb, a);
        assert!(matches!(e.place(0, Pre, a), Edge::Refused(_)));
        for k in [Prea, Ref, Rfm] {
            let mut e = RowEdges::default();
            e.place(0, k, a);
            assert!(matches!(e.place(0, Pre, b), Edge::Refused(_)), "{k}");
        }
        let mut e = RowEdges::default();
        e.place(0, Pre, a);
        assert!(matches!(e.place(0, Prea, b), Edge::Refused(_)));
        assert!(matches!(e.place(0, Refpb, b), Edge::Refused(_)));
    }

    #[test]
    fn an_act_holds_its_clock_and_the_next_rising_edge() {
        let (a, b) = ((0, 0), (1, 3));
        let mut e = RowEdges::default();
        assert_eq!(e.place(5, Act, a), Edge::Rising);
        assert!(matches!(e.place(5, Pre, b), Edge::Refused(_)));
        let mut e = RowEdges::default();
        e.place(5, Act, a);
        assert_eq!(e.place(6, Ref, b), Edge::Held);
        assert_eq!(e.place(6, Pre, a), Edge::Held);
        assert_eq!(e.place(6, Pre, b), Edge::Falling);
        assert_eq!(e.place(6, Pre, (0, 7)), Edge::Held);
        assert_eq!(e.place(7, Act, b), Edge::Rising);
    }
}
