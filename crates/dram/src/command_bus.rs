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
use crate::command::CommandKind;
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandBuses {
    /// By [`CommandKind::index`]: whether the command goes on the column bus.
    #[serde(skip)]
    column: [bool; CommandKind::ALL.len()],
    /// The column bus's commands, for reports.
    pub column_commands: Vec<CommandKind>,
}

impl CommandBuses {
    /// The split a standard file declares. Every command except LPDDR5's CAS must be on exactly
    /// one bus; an unknown mnemonic, a command on both or on neither is an error naming it.
    pub fn from_row(row: &CommandBusesRow) -> Result<CommandBuses, String> {
        let parse = |names: &[String], bus: &str| -> Result<Vec<CommandKind>, String> {
            names
                .iter()
                .map(|n| {
                    CommandKind::from_mnemonic(n)
                        .ok_or_else(|| format!("unknown command {n:?} on the {bus} bus"))
                })
                .collect()
        };
        let rows = parse(&row.row, "row")?;
        let cols = parse(&row.column, "column")?;
        let mut column = [false; CommandKind::ALL.len()];
        for &k in &cols {
            if rows.contains(&k) {
                return Err(format!("{k} is on both the row and the column bus"));
            }
            column[k.index()] = true;
        }
        let missing: Vec<&str> = CommandKind::ALL
            .iter()
            .filter(|&&k| k != CommandKind::Cas && !rows.contains(&k) && !cols.contains(&k))
            .map(|k| k.mnemonic())
            .collect();
        if !missing.is_empty() {
            return Err(format!("on neither bus: {}", missing.join(", ")));
        }
        if let Some(k) = rows.iter().chain(&cols).find(|&&k| k == CommandKind::Cas) {
            return Err(format!(
                "{k} (LPDDR5's WCK2CK sync) has no place on a row or column bus"
            ));
        }
        let mut column_commands = cols;
        column_commands.sort();
        column_commands.dedup();
        Ok(CommandBuses {
            column,
            column_commands,
        })
    }

    /// The bus that carries `kind`.
    #[inline]
    pub fn bus(&self, kind: CommandKind) -> Bus {
        if self.column[kind.index()] {
            Bus::Column
        } else {
            Bus::Row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(r: &[&str], c: &[&str]) -> CommandBusesRow {
        CommandBusesRow {
            row: r.iter().map(|s| s.to_string()).collect(),
            column: c.iter().map(|s| s.to_string()).collect(),
        }
    }
    const ROW: [&str; 9] = [
        "ACT", "PRE", "PREA", "REF", "REFPB", "REFSB", "RFM", "ACTC", "ACTM",
    ];

    #[test]
    fn splits_row_and_column_commands() {
        let b = CommandBuses::from_row(&row(&ROW, &["RD", "RDA", "WR", "WRA", "TR"])).unwrap();
        assert_eq!(b.bus(CommandKind::Act), Bus::Row);
        assert_eq!(b.bus(CommandKind::Refpb), Bus::Row);
        assert_eq!(b.bus(CommandKind::Rd), Bus::Column);
        assert_eq!(b.bus(CommandKind::Wra), Bus::Column);
    }

    #[test]
    fn refuses_unknown_double_and_missing_commands() {
        let e = CommandBuses::from_row(&row(&ROW, &["RD", "RDA", "WR", "WRX", "TR"])).unwrap_err();
        assert!(e.contains("WRX"), "{e}");
        let e = CommandBuses::from_row(&row(&ROW, &["RD", "RDA", "WR", "WRA", "TR", "ACT"]))
            .unwrap_err();
        assert!(e.contains("ACT is on both"), "{e}");
        let e =
            CommandBuses::from_row(&row(&ROW[1..], &["RD", "RDA", "WR", "WRA", "TR"])).unwrap_err();
        assert!(e.contains("neither bus: ACT"), "{e}");
        let e = CommandBuses::from_row(&row(&ROW, &["RD", "RDA", "WR", "WRA", "TR", "CAS"]))
            .unwrap_err();
        assert!(e.contains("CAS"), "{e}");
    }
}
