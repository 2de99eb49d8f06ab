//! The controller's path for its most common command: a request's own command to one bank (ACT,
//! PRE, RD, WR and the auto-precharge forms) that the pass after the previous command picked
//! (`Controller::pick`), on a channel with one command bus and no WCK synchronisation (`plain`).
//!
//! It does what the general [`Controller::issue`] does for such a command, in the same order, but
//! without building a `Pending` and without the tests for the other commands (refreshes, PREA,
//! bulk jobs' commands, transfers with a destination, a CAS before the command, the second command
//! bus): on random traffic nearly every command takes it. Nothing else differs, so schedules are
//! the same whichever path a command takes (the golden digests and the lookahead tests hold both).
use super::{BankCand, Controller};
use crate::command::{CommandKind, CommandRecord, CommandSink};

impl Controller {
    /// Issues bank `flat`'s candidate `c` (a request's own command to the bank) at `now`, as
    /// [`Controller::issue`] would, and sets the bank's next candidate. The caller checked that
    /// the controller is `plain` and that `c` is the bank's candidate.
    #[inline(always)]
    pub(super) fn issue_request<'s>(
        &mut self,
        flat: usize,
        c: BankCand,
        now: u64,
        log: &mut Option<&mut (dyn CommandSink + 's)>,
    ) {
        // One branch on the kind: each arm issues with the kind as a constant (the device's own
        // branch on it folds away in the inlined `issue_common`), then sets the bank's next
        // candidate. The steps and their order are the same in every arm.
        let i = c.entry;
        // The bank's next candidate, set in each arm: where `known_candidate` knows it (a PRE, or
        // an ACT under `keep_activated_rows`, without CPU bypass or a job owning the bank), the
        // same value without a second look at the command's kind.
        match c.kind {
            CommandKind::Act => {
                let kind = CommandKind::Act;
                self.issue_common(flat, kind, c, now, log);
                let known = !self.bypass && !self.slots[flat].owned;
                self.slab[i as usize].needed_act = true;
                if self.keep_activated {
                    self.slots[flat].activated = Some(i);
                    if known {
                        let cand = self.column_candidate(flat, i);
                        debug_assert!(self.known_candidate(flat, kind).is_some());
                        self.set_candidate(flat, Some(cand));
                        return;
                    }
                }
                self.clean(flat);
            }
            CommandKind::Pre => {
                let kind = CommandKind::Pre;
                self.issue_common(flat, kind, c, now, log);
                let known = !self.bypass && !self.slots[flat].owned;
                // The row closed: nothing activated waits on it any more.
                self.slots[flat].activated = None;
                self.slab[i as usize].needed_pre = true;
                if known {
                    let q = if self.write_mode {
                        &self.wq[flat]
                    } else {
                        &self.rq[flat]
                    };
                    let cand = q.front().map(|&(_, j)| self.activate_candidate(j));
                    debug_assert!(self.known_candidate(flat, kind).is_some());
                    self.set_candidate(flat, cand);
                } else {
                    self.clean(flat);
                }
            }
            kind => {
                self.issue_common(flat, kind, c, now, log);
                if matches!(kind, CommandKind::Rda | CommandKind::Wra) {
                    self.slots[flat].activated = None;
                }
                self.complete_entry(i, now);
                // A column command's request left the queue: nothing known, recomputed.
                debug_assert!(self.known_candidate(flat, kind).is_none());
                self.clean(flat);
            }
        }
    }

    /// What every arm of [`Controller::issue_request`] does first, for `kind` (the candidate's
    /// kind, a constant in the arms that know it): the device's update, then the controller's
    /// bookkeeping and the log, as [`Controller::issue`] orders them.
    #[inline(always)]
    fn issue_common<'s>(
        &mut self,
        flat: usize,
        kind: CommandKind,
        c: BankCand,
        now: u64,
        log: &mut Option<&mut (dyn CommandSink + 's)>,
    ) {
        debug_assert!(kind.is_bank_access() && self.plain && kind == c.kind);
        let bank = self.slots[flat].id;
        self.dev.issue_access(kind, bank, c.row, now);
        self.pick = None;
        // `refresh_locals` for a one-bank access, whose kind it need not test.
        if self.dev.has_group_rules(kind) {
            self.group_locals(bank);
        }
        if self.raaimt > 0 {
            self.manage_refresh(kind, bank);
        }
        self.counters.commands[kind.index()] += 1;
        self.last_work = now;
        self.next_cmd_cycle = now + 1;
        if let Some(sink) = log.as_deref_mut() {
            sink.record(&CommandRecord {
                cycle: now,
                kind,
                channel: self.channel,
                rank: bank.rank,
                bank_group: bank.bank_group,
                bank: bank.bank,
                row: c.row,
                column: c.col,
                dst: None,
            });
        }
    }
}
