//! HBM's separate row and column command buses, as the standard's data declares them.
//!
//! HBM2 (JESD235), HBM3 (JESD238) and HBM4 (JESD270-4) give each channel two command buses: a
//! row bus for ACT, PRE, PREA, REF, REFPB and RFM, and a column bus for RD, RDA, WR and WRA,
//! each carrying one command per clock, so that a row command and a column command may issue in
//! the same clock (to different banks: the timing rules keep a bank's own commands apart).
//! Ramulator 2.1 classifies the same commands the same way (`row_commands` / `column_commands`
//! of its `hbm2.py`, `hbm3.py`, `hbm4.py`).
//!
//! A standard file declares the split as `command_buses = { row = [...], column = [...] }` in its
//! `[standard]` table; a standard without it has one command bus (one command per clock, as every
//! DDR, LPDDR and GDDR standard). After a command issues, the controller may issue one more in the
//! same clock, on the other bus (`Controller::issue_on_other_bus`). The independent
//! checker learns the rule from the standard's name, in its own code (`checker.rs`).
use serde::{Deserialize, Serialize};

/// The standard file's declaration: the commands on each bus, by mnemonic.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandBusesRow {
    pub row: Vec<String>,
    pub column: Vec<String>,
}

/// One of a channel's two command buses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Bus {
    Row,
    Column,
}

/// Which bus carries each command, for a standard with separate row and column command buses.
/// Commands are named by their index in the command list the caller gives (`CommandKind`'s
/// order: `CommandKind::index`), so that this module depends on no other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandBuses {
    /// By command index: whether the command goes on the column bus.
    #[serde(skip)]
    column: Vec<bool>,
    /// The column bus's commands, for reports.
    pub column_commands: Vec<String>,
}

/// The one command that has no place on either bus: LPDDR5's WCK2CK sync.
const NO_BUS: &str = "CAS";

impl CommandBuses {
    /// The split a standard file declares, over `commands` (every command's mnemonic, by
    /// index). Every command except LPDDR5's CAS must be on exactly one bus; an unknown mnemonic,
    /// a command on both or on neither is an error naming it.
    pub fn from_row(row: &CommandBusesRow, commands: &[&str]) -> Result<CommandBuses, String> {
        let parse = |names: &[String], bus: &str| -> Result<Vec<usize>, String> {
            names
                .iter()
                .map(|n| {
                    if n == NO_BUS {
                        return Err(format!(
                            "{n} (LPDDR5's WCK2CK sync) has no place on a row or column bus"
                        ));
                    }
                    commands
                        .iter()
                        .position(|c| c == n)
                        .ok_or_else(|| format!("unknown command {n:?} on the {bus} bus"))
                })
                .collect()
        };
        let rows = parse(&row.row, "row")?;
        let cols = parse(&row.column, "column")?;
        let mut column = vec![false; commands.len()];
        for &k in &cols {
            if rows.contains(&k) {
                return Err(format!(
                    "{} is on both the row and the column bus",
                    commands[k]
                ));
            }
            column[k] = true;
        }
        let missing: Vec<&str> = (0..commands.len())
            .filter(|k| commands[*k] != NO_BUS && !rows.contains(k) && !cols.contains(k))
            .map(|k| commands[k])
            .collect();
        if !missing.is_empty() {
            return Err(format!("on neither bus: {}", missing.join(", ")));
        }
        let column_commands = (0..commands.len())
            .filter(|&k| column[k])
            .map(|k| commands[k].to_string())
            .collect();
        Ok(CommandBuses {
            column,
            column_commands,
        })
    }

    /// The bus that carries the command of index `kind` (`CommandKind::index`).
    #[inline]
    pub fn bus(&self, kind: usize) -> Bus {
        if self.column.get(kind).copied().unwrap_or(false) {
            Bus::Column
        } else {
            Bus::Row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands in `CommandKind`'s order.
    const COMMANDS: [&str; 17] = [
        "ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF", "ACTC", "TR", "REFSB", "REFPB",
        "ACTM", "RFM", "CAS", "RFMSB", "RFMPB",
    ];
    const ROW: [&str; 11] = [
        "ACT", "PRE", "PREA", "REF", "REFPB", "REFSB", "RFM", "ACTC", "ACTM", "RFMSB", "RFMPB",
    ];
    const COL: [&str; 5] = ["RD", "RDA", "WR", "WRA", "TR"];

    fn row(r: &[&str], c: &[&str]) -> CommandBusesRow {
        CommandBusesRow {
            row: r.iter().map(|s| s.to_string()).collect(),
            column: c.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn idx(name: &str) -> usize {
        COMMANDS.iter().position(|c| *c == name).unwrap()
    }

    #[test]
    fn splits_row_and_column_commands() {
        let b = CommandBuses::from_row(&row(&ROW, &COL), &COMMANDS).unwrap();
        for r in ROW {
            assert_eq!(b.bus(idx(r)), Bus::Row, "{r}");
        }
        for c in COL {
            assert_eq!(b.bus(idx(c)), Bus::Column, "{c}");
        }
        assert_eq!(b.column_commands, ["RD", "WR", "RDA", "WRA", "TR"]);
    }

    #[test]
    fn refuses_unknown_double_and_missing_commands() {
        let e = CommandBuses::from_row(&row(&ROW, &["RD", "RDA", "WR", "WRX", "TR"]), &COMMANDS)
            .unwrap_err();
        assert!(e.contains("WRX"), "{e}");
        let e = CommandBuses::from_row(
            &row(&ROW, &["RD", "RDA", "WR", "WRA", "TR", "ACT"]),
            &COMMANDS,
        )
        .unwrap_err();
        assert!(e.contains("ACT is on both"), "{e}");
        let e = CommandBuses::from_row(&row(&ROW[1..], &COL), &COMMANDS).unwrap_err();
        assert!(e.contains("neither bus: ACT"), "{e}");
        let e = CommandBuses::from_row(
            &row(&ROW, &["RD", "RDA", "WR", "WRA", "TR", "CAS"]),
            &COMMANDS,
        )
        .unwrap_err();
        assert!(e.contains("CAS"), "{e}");
    }

    #[test]
    fn the_command_order_is_command_kinds() {
        for (i, k) in crate::command::CommandKind::ALL.iter().enumerate() {
            assert_eq!(COMMANDS[i], k.mnemonic());
        }
    }
}
