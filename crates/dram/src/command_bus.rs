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
//! same clock, on the other bus (`Controller::issue_on_other_bus`). HBM3 and HBM4 declare their
//! half-clock row commands too (`half_clock`): a PRE may take the falling edge of a clock whose
//! rising edge another row command holds ([`HalfClockBus`], `Controller::issue_on_falling_edge`).
//! The independent checker learns the rules from the standard's name, in its own code
//! (`checker.rs`, `checker/half_clock.rs`).
use serde::{Deserialize, Serialize};

/// The standard file's declaration: the commands on each bus, by mnemonic.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandBusesRow {
    pub row: Vec<String>,
    pub column: Vec<String>,
    /// HBM3 / HBM4: the row bus's half-clock commands (see [`HalfClockRow`]).
    #[serde(default)]
    pub half_clock: Option<HalfClockRow>,
}

/// HBM3's and HBM4's row bus at half-clock resolution (JESD238 / JESD270-4, as Ramulator 2.1 @
/// c5b1c3a codes them in `hbm34_controller.cpp` and tests them against JESD238 Table 35): row
/// commands go on a rising edge of CK and take half a clock, an ACT 1.5 (rising, falling, rising);
/// only a PRE may go on a falling edge, and one that shares a clock with a rising-edge row
/// command must pair with it: the rising command names one bank and the PRE another.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HalfClockRow {
    /// Row commands that may take the falling half of a clock whose rising edge another row
    /// command holds (a clock later than its own rules allow: movelab times it from the next
    /// rising edge).
    pub falling: Vec<String>,
    /// The rising-edge row commands a falling one may share a clock with (the bank commands).
    pub pairs_with: Vec<String>,
    /// Row commands of 1.5 clocks: they hold the next clock's rising edge too, and that clock's
    /// falling half is free.
    pub one_and_a_half: Vec<String>,
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
    /// HBM3 / HBM4's half-clock row bus, when the standard declares it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub half_clock: Option<HalfClock>,
}

/// [`HalfClockRow`] by command index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HalfClock {
    /// By command index: may go on a falling edge.
    pub falling: Vec<bool>,
    /// By command index: a rising-edge command a falling one may pair with.
    pub pairs_with: Vec<bool>,
    /// By command index: holds 1.5 clocks of the row bus.
    pub one_and_a_half: Vec<bool>,
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
                        return Err(format!("{n} (LPDDR5's WCK2CK sync) has no place in {bus}"));
                    }
                    commands
                        .iter()
                        .position(|c| c == n)
                        .ok_or_else(|| format!("unknown command {n:?} in {bus}"))
                })
                .collect()
        };
        let rows = parse(&row.row, "the row bus")?;
        let cols = parse(&row.column, "the column bus")?;
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
        let half_clock = match &row.half_clock {
            None => None,
            Some(h) => {
                // Each list names row commands only.
                let mask = |names: &[String], what: &str| -> Result<Vec<bool>, String> {
                    let mut m = vec![false; commands.len()];
                    for k in parse(names, &format!("half_clock.{what}"))? {
                        if column[k] {
                            return Err(format!(
                                "{} is a column command: half_clock.{what} names row commands",
                                commands[k]
                            ));
                        }
                        m[k] = true;
                    }
                    Ok(m)
                };
                let hc = HalfClock {
                    falling: mask(&h.falling, "falling")?,
                    pairs_with: mask(&h.pairs_with, "pairs_with")?,
                    one_and_a_half: mask(&h.one_and_a_half, "one_and_a_half")?,
                };
                if let Some(k) =
                    (0..commands.len()).find(|&k| hc.falling[k] && hc.one_and_a_half[k])
                {
                    return Err(format!(
                        "{} is both a falling-edge and a 1.5-clock command",
                        commands[k]
                    ));
                }
                Some(hc)
            }
        };
        Ok(CommandBuses {
            column,
            column_commands,
            half_clock,
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

/// The row bus of one channel at half-clock resolution, as issues go (HBM3 / HBM4: see
/// [`HalfClockRow`]). movelab counts whole clocks: a command issued in clock `t` goes on its rising
/// edge unless that edge is already held by another row command (one issued in `t`, or a 1.5-clock
/// ACT issued in `t - 1`), in which case it is a falling-edge command of clock `t`: its own rules
/// were met at `t`, and the rules it starts count from `t + 1` (its edge, `t + 0.5`, rounded up to
/// the next rising edge, where every command that waits on it issues).
#[derive(Debug, Clone)]
pub struct HalfClockBus {
    half: HalfClock,
    /// By command index: on the row bus.
    row: Vec<bool>,
    /// The last clock whose rising edge a row command holds: (clock, command index, bank).
    rising: (u64, usize, u32),
    /// The last clock whose falling half a falling-edge command took.
    falling_at: u64,
}

impl HalfClockBus {
    /// The tracker for a standard whose buses declare a half-clock row bus; `None` otherwise.
    pub fn new(buses: Option<&CommandBuses>) -> Option<HalfClockBus> {
        let b = buses?;
        let half = b.half_clock.clone()?;
        Some(HalfClockBus {
            row: (0..b.column.len()).map(|k| !b.column[k]).collect(),
            half,
            rising: (u64::MAX, 0, 0),
            falling_at: u64::MAX,
        })
    }

    /// Records command `kind` (`CommandKind::index`) of bank `bank` (flat index) issued in clock
    /// `now` and returns the clock the rules it starts count from: `now + 1` for a falling-edge
    /// command, else `now`. A row command that cannot take the falling half (the controller and
    /// the rule rows keep that from happening) is taken as on the rising edge.
    pub fn issue(&mut self, kind: usize, bank: u32, now: u64) -> u64 {
        if !self.row.get(kind).copied().unwrap_or(false) {
            return now;
        }
        if self.rising.0 == now && self.half.falling[kind] && self.falling_at != now {
            self.falling_at = now;
            return now + 1;
        }
        let held = if self.half.one_and_a_half[kind] {
            now + 1
        } else {
            now
        };
        self.rising = (held, kind, bank);
        now
    }

    /// Whether a falling-edge command may still issue in clock `now`: the rising edge is held by
    /// a command a falling one pairs with and the falling half is free. The bank of that command
    /// (a falling command must name another).
    pub fn falling_open(&self, now: u64) -> Option<u32> {
        let (at, kind, bank) = self.rising;
        (at == now && self.falling_at != now && self.half.pairs_with[kind]).then_some(bank)
    }

    /// Whether `kind` may go on a falling edge.
    pub fn falls(&self, kind: usize) -> bool {
        self.half.falling.get(kind).copied().unwrap_or(false)
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
            half_clock: None,
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
    fn half_clock_row_commands_pair_and_time_from_the_next_clock() {
        let mut r = row(&ROW, &COL);
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        r.half_clock = Some(HalfClockRow {
            falling: names(&["PRE"]),
            pairs_with: names(&["ACT", "PRE", "REFPB"]),
            one_and_a_half: names(&["ACT"]),
        });
        let b = CommandBuses::from_row(&r, &COMMANDS).unwrap();
        let mut h = HalfClockBus::new(Some(&b)).unwrap();
        let (act, pre, refpb, rd, rf) =
            (idx("ACT"), idx("PRE"), idx("REFPB"), idx("RD"), idx("REF"));
        // A REFPB and a PRE in one clock: the PRE's rules start at the next clock.
        assert_eq!(h.issue(refpb, 1, 10), 10);
        assert_eq!(h.falling_open(10), Some(1));
        assert_eq!(h.issue(pre, 2, 10), 11);
        assert_eq!(h.falling_open(10), None);
        // A column command does not touch the row bus.
        assert_eq!(h.issue(rd, 3, 12), 12);
        assert_eq!(h.falling_open(12), None);
        // An ACT holds the next clock's rising edge; its falling half takes a PRE.
        assert_eq!(h.issue(act, 4, 20), 20);
        assert_eq!(h.falling_open(20), None);
        assert_eq!(h.falling_open(21), Some(4));
        assert_eq!(h.issue(pre, 5, 21), 22);
        assert_eq!(h.issue(act, 6, 22), 22);
        // An all-bank command pairs with nothing.
        assert_eq!(h.issue(rf, 0, 30), 30);
        assert_eq!(h.falling_open(30), None);
        // Bad declarations are refused, naming the command.
        let mut bad = r.clone();
        bad.half_clock.as_mut().unwrap().falling = names(&["RD"]);
        let e = CommandBuses::from_row(&bad, &COMMANDS).unwrap_err();
        assert!(e.contains("RD is a column command"), "{e}");
        let mut bad = r.clone();
        bad.half_clock.as_mut().unwrap().one_and_a_half = names(&["PRE"]);
        let e = CommandBuses::from_row(&bad, &COMMANDS).unwrap_err();
        assert!(e.contains("PRE is both"), "{e}");
        let mut bad = r;
        bad.half_clock.as_mut().unwrap().pairs_with = names(&["PREX"]);
        let e = CommandBuses::from_row(&bad, &COMMANDS).unwrap_err();
        assert!(
            e.contains("PREX") && e.contains("half_clock.pairs_with"),
            "{e}"
        );
        // Without a half-clock declaration there is no tracker.
        assert!(HalfClockBus::new(Some(
            &CommandBuses::from_row(&row(&ROW, &COL), &COMMANDS).unwrap()
        ))
        .is_none());
    }

    #[test]
    fn the_command_order_is_command_kinds() {
        for (i, k) in crate::command::CommandKind::ALL.iter().enumerate() {
            assert_eq!(COMMANDS[i], k.mnemonic());
        }
    }
}
