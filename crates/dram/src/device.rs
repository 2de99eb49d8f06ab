//! The state of one channel's DRAM devices as the controller sees it: which row each bank has
//! open, and, for every command kind, the earliest cycle the timing rules allow it at each bank,
//! bank group and rank. Issuing a command pushes those times forward by the rule table's latencies.
//!
//! This is the scheduler's readiness logic. It is deliberately not what checks the log: the
//! independent checker (`checker.rs`) re-derives every rule from the command history.
use crate::command::CommandKind;
use crate::spec::{DramSpec, Scope, NK, TK_TRD, TK_TRS};
use std::collections::VecDeque;

mod vector_raise;

/// A bank of this channel: rank, bank group, bank within group, and its flat index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BankId {
    pub rank: u32,
    pub bank_group: u32,
    pub bank: u32,
    /// rank * banks_per_rank + bank_group * banks_per_group + bank
    pub flat: u32,
}

/// Time-weighted state of a rank, for the background energy. As in DRAMPower, a bank counts as
/// active while a row is open in it, until the auto-precharge of an RDA / WRA takes effect, and
/// while it is being refreshed (nRFC after a REF, nRFCsb after a REFSB of its bank index, nRFCpb
/// after a REFPB of the bank).
#[derive(Debug, Clone, Default)]
pub struct RankActivity {
    /// Banks open or refreshing.
    pub open_banks: u32,
    pub since: u64,
    /// Cycles with at least one bank active.
    pub active_cycles: u64,
    /// Cycles with all banks precharged and idle.
    pub precharged_cycles: u64,
    /// The sum over banks of the cycles each was active.
    pub bank_active_cycles: u64,
    /// Refreshes and auto-precharges in progress: (end cycle, banks), in end order.
    refresh_ends: VecDeque<(u64, u32)>,
}

impl RankActivity {
    /// Adds the time since the last change to the counters.
    #[inline]
    fn account(&mut self, now: u64) {
        let span = now.saturating_sub(self.since);
        if self.open_banks == 0 {
            self.precharged_cycles += span;
        } else {
            self.active_cycles += span;
        }
        self.bank_active_cycles += span * u64::from(self.open_banks);
        self.since = self.since.max(now);
    }

    /// Ends the refreshes that are over by `now`, then accounts up to `now`.
    #[inline(always)]
    fn advance(&mut self, now: u64) {
        while let Some(&(end, n)) = self.refresh_ends.front() {
            if end > now {
                break;
            }
            self.account(end);
            self.open_banks -= n;
            self.refresh_ends.pop_front();
        }
        self.account(now);
    }

    /// `banks` become active at `now` for `cycles` (a refresh).
    fn refresh(&mut self, now: u64, banks: u32, cycles: u64) {
        self.advance(now);
        self.open_banks += banks;
        self.end_at(now + cycles, banks);
    }

    /// `count` refreshes of `banks` banks for `cycles` each, the first at `first` and then every
    /// `period` cycles (longer than `cycles`), with the rank otherwise precharged: accounted in
    /// closed form, exactly as issuing them one by one would.
    fn periodic_refreshes(&mut self, first: u64, count: u64, period: u64, banks: u32, cycles: u64) {
        if count == 0 {
            return;
        }
        self.advance(first);
        let gaps = count - 1;
        let busy = gaps.saturating_mul(cycles);
        self.active_cycles = self.active_cycles.saturating_add(busy);
        self.precharged_cycles = self
            .precharged_cycles
            .saturating_add(gaps.saturating_mul(period.saturating_sub(cycles)));
        self.bank_active_cycles = self
            .bank_active_cycles
            .saturating_add(busy.saturating_mul(u64::from(banks)));
        self.since = first.saturating_add(gaps.saturating_mul(period));
        self.open_banks += banks;
        self.end_at(self.since.saturating_add(cycles), banks);
    }

    /// `banks` already counted active stop being active at `end`.
    fn end_at(&mut self, end: u64, banks: u32) {
        let at = self.refresh_ends.partition_point(|&(e, _)| e <= end);
        self.refresh_ends.insert(at, (end, banks));
    }
}

pub struct ChannelDevices {
    banks_per_rank: u32,
    banks_per_group: u32,
    groups_per_rank: u32,
    ranks: u32,
    /// dense[scope][from][to] = minimum separation in clocks (0: no rule; a zero latency never
    /// constrains a later command, so the two are the same). Scopes: bank, bank group, rank,
    /// other ranks. Dense rows let an issue update every horizon of a scope in one pass.
    dense: [[Vec<(u8, u64)>; NK]; 4],
    /// has[scope][from]: whether any rule of that scope starts at `from`.
    has: [[bool; NK]; 4],
    /// raises[from]: the bank, bank-group and rank rows of `dense` for `from` as one flat list,
    /// applied in one loop per issue (see [`Raise`]); rebuilt whenever `dense` changes.
    raises: [Vec<Raise>; NK],
    /// Where the CPU runs AVX-512: per starting kind, `raises` as whole rows for the kinds that
    /// start more than [`vector_raise::ROW_MIN_RULES`] rules (`None` for the others, and in all
    /// where no kind does).
    row_raises: Option<(
        crate::ready_scan::VectorCpu,
        Vec<Option<vector_raise::RowRaises>>,
    )>,
    /// (kinds counted, count, window) per window rule
    windows: Vec<([bool; NK], usize, u64)>,
    /// Per window rule, the kinds whose rank horizon it raises (those it counts, less the ones
    /// [`ChannelDevices::drop_unissued_targets`] dropped), so that folding it in visits just them.
    window_targets: Vec<Vec<u8>>,
    rank_next: Vec<[u64; NK]>,
    group_next: Vec<[u64; NK]>,
    bank_next: Vec<[u64; NK]>,
    /// Per rank and window rule: the issue cycles of the last `count` counted commands.
    window_hist: Vec<WindowHistory>,
    open_row: Vec<Option<u32>>,
    pub activity: Vec<RankActivity>,
    /// Refresh durations for the activity accounting (REF, REFSB, REFPB).
    n_rfc: u64,
    n_rfcsb: u64,
    n_rfcpb: u64,
    /// Refresh management (RFM): the rank is busy refreshing for tRFM; the banks of a same-bank
    /// RFM (RFMSB) for tRFMsb, the bank of a per-bank RFM (RFMPB) for tRFMpb.
    n_rfm: u64,
    n_rfmsb: u64,
    n_rfmpb: u64,
    /// The second bank a REFPB refreshes, this many banks further on in its rank (0: none).
    refpb_pair: u32,
    /// When an auto-precharge takes effect: nRTP after RDA, write recovery after WRA, and not
    /// before nRAS after the activation (per bank: the last activation's cycle).
    n_rtp: u64,
    n_wrec: u64,
    n_ras: u64,
    activated_at: Vec<u64>,
    /// One more than the longest latency of any timing or window rule: no horizon is ever more
    /// than this many cycles after the cycle of the command that raised it (see
    /// [`ChannelDevices::reach`]).
    reach: u64,
    /// HBM3 / HBM4: the row bus at half-clock resolution (a PRE on the falling edge of a clock
    /// whose rising edge another row command holds starts its rules a clock later).
    half_clock: Option<crate::command_bus::HalfClockBus>,
}

/// The issue cycles of the last `count` commands a window rule counts (tFAW's four ACTs), as a
/// fixed ring: recording one overwrites the oldest, without a double-ended queue's growth checks.
#[derive(Debug, Clone)]
struct WindowHistory {
    /// `count` slots; `slots[next]` is the oldest once the ring is full.
    slots: Vec<u64>,
    next: usize,
    /// How many were recorded, up to `count`.
    filled: usize,
}

impl WindowHistory {
    fn new(count: usize) -> WindowHistory {
        WindowHistory {
            slots: vec![0; count.max(1)],
            next: 0,
            filled: 0,
        }
    }

    /// Records a counted command at `at`; the oldest of the last `count` once there are `count`.
    #[inline(always)]
    fn record(&mut self, at: u64) -> Option<u64> {
        let n = self.slots.len();
        self.slots[self.next] = at;
        self.next = if self.next + 1 == n { 0 } else { self.next + 1 };
        if self.filled < n {
            self.filled += 1;
            if self.filled < n {
                return None;
            }
        }
        Some(self.slots[self.next])
    }
}

/// One timing rule compiled for the command kind that starts it: issuing that kind at cycle `t`
/// raises the earliest cycle of kind `to` at `level` (0: the issuing bank, 1: its bank group,
/// 2: its rank) to at least `t + lat`. Horizons only rise and a maximum does not depend on the
/// order it is taken in, so one flat list per kind gives the same horizons as one pass per scope.
#[derive(Debug, Clone, Copy)]
struct Raise {
    lat: u64,
    level: Level,
    to: u8,
}

/// The horizon row a [`Raise`] moves: the issuing bank's, its group's or its rank's. An enum
/// rather than a number, so that picking one of the three rows by it needs no bounds check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Level {
    Bank = 0,
    Group = 1,
    Rank = 2,
}

/// The flat lists of [`Raise`] per starting kind, from the dense rows of the bank, bank-group
/// and rank scopes (other ranks' rules stay in their dense rows: they visit every other rank).
fn compile_raises(dense: &[[Vec<(u8, u64)>; NK]; 4]) -> [Vec<Raise>; NK] {
    std::array::from_fn(|from| {
        [Level::Bank, Level::Group, Level::Rank]
            .into_iter()
            .flat_map(|level| {
                dense[level as usize][from]
                    .iter()
                    .map(move |&(to, lat)| Raise { lat, level, to })
            })
            .collect()
    })
}

fn scope_index(s: Scope) -> usize {
    match s {
        Scope::Bank => 0,
        Scope::Bankgroup => 1,
        Scope::Rank => 2,
        Scope::OtherRank => 3,
        // Resolved into Rank and OtherRank rules by `spec::resolve_rules`.
        Scope::Channel => 2,
    }
}

impl ChannelDevices {
    pub fn new(spec: &DramSpec) -> ChannelDevices {
        let o = &spec.org;
        let mut table = [[[0u64; NK]; NK]; 4];
        let mut has = [[false; NK]; 4];
        for r in &spec.rules {
            let si = scope_index(r.scope);
            table[si][r.from][r.to] = table[si][r.from][r.to].max(r.latency);
            has[si][r.from] |= r.latency > 0;
        }
        let windows: Vec<([bool; NK], usize, u64)> = spec
            .windows
            .iter()
            .map(|w| {
                let mut k = [false; NK];
                for &i in &w.kinds {
                    k[i] = true;
                }
                (k, w.count as usize, w.latency)
            })
            .collect();
        let banks = (o.ranks * o.banks_per_rank()) as usize;
        // Only the non-zero entries: an issue touches just the horizons a rule moves.
        let dense = table.map(|per_from| {
            per_from.map(|row| {
                row.iter()
                    .enumerate()
                    .filter(|(_, &l)| l > 0)
                    .map(|(to, &l)| (to as u8, l))
                    .collect()
            })
        });
        let mut dev = ChannelDevices {
            banks_per_rank: o.banks_per_rank(),
            banks_per_group: o.banks_per_group,
            groups_per_rank: o.bank_groups,
            ranks: o.ranks,
            raises: compile_raises(&dense),
            row_raises: None,
            dense,
            has,
            window_hist: (0..o.ranks)
                .flat_map(|_| windows.iter().map(|w| WindowHistory::new(w.1)))
                .collect(),
            window_targets: windows
                .iter()
                .map(|(kinds, _, _)| (0..NK as u8).filter(|&to| kinds[to as usize]).collect())
                .collect(),
            windows,
            rank_next: vec![[0; NK]; o.ranks as usize],
            group_next: vec![[0; NK]; (o.ranks * o.bank_groups) as usize],
            bank_next: vec![[0; NK]; banks],
            open_row: vec![None; banks],
            activity: vec![RankActivity::default(); o.ranks as usize],
            n_rfc: spec.t("nRFC"),
            n_rfcsb: spec.param("nRFCsb").unwrap_or(0),
            n_rfcpb: spec.param("nRFCpb").unwrap_or(0),
            n_rfm: spec.param("nRFM").unwrap_or(0),
            n_rfmsb: spec.param("nRFMsb").unwrap_or(0),
            n_rfmpb: spec.param("nRFMpb").unwrap_or(0),
            refpb_pair: spec.refpb_pair_offset,
            n_rtp: spec.t("nRTP"),
            n_wrec: spec.t("nCWL") + spec.t("nBL") + spec.t("nWR"),
            n_ras: spec.t("nRAS"),
            activated_at: vec![0; banks],
            reach: 1 + spec
                .rules
                .iter()
                .map(|r| r.latency)
                .chain(spec.windows.iter().map(|w| w.latency))
                .max()
                .unwrap_or(0),
            half_clock: crate::command_bus::HalfClockBus::new(spec.command_buses.as_ref()),
        };
        dev.compile_row_raises();
        dev
    }

    /// `row_raises` from `raises`, where the CPU runs AVX-512.
    fn compile_row_raises(&mut self) {
        let rows: Vec<_> = self
            .raises
            .iter()
            .map(|r| {
                (r.len() > vector_raise::ROW_MIN_RULES).then(|| vector_raise::RowRaises::of(r))
            })
            .collect();
        self.row_raises = crate::ready_scan::VectorCpu::detect()
            .filter(|_| rows.iter().any(|r| r.is_some()))
            .map(|cpu| (cpu, rows));
    }

    pub fn bank_id(&self, rank: u32, bank_group: u32, bank: u32) -> BankId {
        BankId {
            rank,
            bank_group,
            bank,
            flat: rank * self.banks_per_rank + bank_group * self.banks_per_group + bank,
        }
    }

    pub fn bank_from_flat(&self, flat: u32) -> BankId {
        let rank = flat / self.banks_per_rank;
        let in_rank = flat % self.banks_per_rank;
        BankId {
            rank,
            bank_group: in_rank / self.banks_per_group,
            bank: in_rank % self.banks_per_group,
            flat,
        }
    }

    pub fn banks_per_rank(&self) -> u32 {
        self.banks_per_rank
    }

    pub fn banks_per_group(&self) -> u32 {
        self.banks_per_group
    }

    pub fn bank_groups(&self) -> u32 {
        self.groups_per_rank
    }

    pub fn banks(&self) -> u32 {
        self.ranks * self.banks_per_rank
    }

    #[inline]
    pub fn open_row(&self, b: BankId) -> Option<u32> {
        self.open_row[b.flat as usize]
    }

    /// Accounts for `count` all-bank REFs of an idle, precharged `rank` issued every `period`
    /// cycles from `first`, without issuing them (see `Controller::skip_idle_refreshes`). Only the
    /// activity accounting moves: the timing state stays that of the last REF issued, which the
    /// caller keeps further back than any rule reaches.
    pub fn periodic_refreshes(&mut self, rank: u32, first: u64, count: u64, period: u64) {
        let banks = self.banks_per_rank;
        let cycles = self.n_rfc;
        self.activity[rank as usize].periodic_refreshes(first, count, period, banks, cycles);
    }

    pub fn any_open(&self, rank: u32) -> bool {
        self.rows_open(rank)
    }

    #[inline]
    fn group_index(&self, b: BankId) -> usize {
        (b.rank * self.groups_per_rank + b.bank_group) as usize
    }

    /// The earliest cycle at which `kind` may issue to bank `b` (for rank-level commands, PREA
    /// and REF, any bank of the rank; for REFSB, bank `b.bank` of every group). For TR, `b` is the
    /// source and `dst` the destination.
    #[inline]
    pub fn earliest(&self, kind: CommandKind, b: BankId, dst: Option<BankId>) -> u64 {
        let k = kind.index();
        let r = &self.rank_next[b.rank as usize];
        match kind {
            CommandKind::Prea | CommandKind::Ref | CommandKind::Rfm => {
                let base = b.rank * self.banks_per_rank;
                let mut t = r[k];
                for i in base..base + self.banks_per_rank {
                    t = t.max(self.bank_next[i as usize][k]);
                }
                t
            }
            CommandKind::Refsb | CommandKind::Rfmsb => {
                // Bank-scoped rules apply at every bank it refreshes.
                let mut t = r[k];
                for g in 0..self.groups_per_rank {
                    t = t.max(self.bank_next[self.bank_id(b.rank, g, b.bank).flat as usize][k]);
                }
                t
            }
            CommandKind::Refpb if self.refpb_pair > 0 => {
                // Bank-scoped rules apply at both banks it refreshes.
                let p = self.refpb_partner(b);
                r[k].max(self.group_next[self.group_index(b)][k])
                    .max(self.bank_next[b.flat as usize][k])
                    .max(self.bank_next[p.flat as usize][k])
            }
            CommandKind::Tr => {
                let d = dst.unwrap_or(b);
                r[k].max(self.group_next[self.group_index(b)][k])
                    .max(self.group_next[self.group_index(d)][k])
                    .max(self.bank_next[b.flat as usize][TK_TRS])
                    .max(self.bank_next[d.flat as usize][TK_TRD])
            }
            _ => r[k]
                .max(self.group_next[self.group_index(b)][k])
                .max(self.bank_next[b.flat as usize][k]),
        }
    }

    /// [`ChannelDevices::earliest`] for a command of one bank (not PREA, REF or TR).
    #[inline]
    pub fn earliest_at_bank(&self, kind: CommandKind, b: BankId) -> u64 {
        debug_assert!(!matches!(
            kind,
            CommandKind::Prea
                | CommandKind::Ref
                | CommandKind::Rfm
                | CommandKind::Tr
                | CommandKind::Refsb
                | CommandKind::Rfmsb
        ));
        let k = kind.index();
        self.rank_next[b.rank as usize][k]
            .max(self.group_next[self.group_index(b)][k])
            .max(self.bank_next[b.flat as usize][k])
    }

    /// The bank and bank-group part of [`ChannelDevices::earliest_at_bank`]: it moves only when a
    /// command issues to that bank, or to its group with a group-scoped rule
    /// ([`ChannelDevices::has_group_rules`]). The rank part is [`ChannelDevices::rank_horizons`].
    #[inline(always)]
    pub fn local_at_bank(&self, kind: CommandKind, b: BankId) -> u64 {
        let k = kind.index();
        self.group_next[self.group_index(b)][k].max(self.bank_next[b.flat as usize][k])
    }

    /// The horizons of bank `b`'s group, by command kind.
    #[inline]
    pub fn group_horizons(&self, b: BankId) -> &[u64; NK] {
        &self.group_next[self.group_index(b)]
    }

    /// How far ahead of the cycle a command issues at its rules can push a horizon: every
    /// horizon is at most `now + reach` after commands issued up to cycle `now` (a rule starts at
    /// its command's cycle, or the next one for HBM's falling-edge PRE, and raises a horizon by its
    /// latency; a window rule from an earlier command). Bank and group parts included.
    pub fn reach(&self) -> u64 {
        self.reach
    }

    /// Whether a REFPB refreshes a pair of banks.
    pub fn refpb_pairs(&self) -> bool {
        self.refpb_pair > 0
    }

    /// The other bank a REFPB to `b` refreshes when the standard pairs them (else `b`).
    pub fn refpb_partner(&self, b: BankId) -> BankId {
        if self.refpb_pair == 0 {
            return b;
        }
        let base = b.rank * self.banks_per_rank;
        let i = (b.flat - base + self.refpb_pair) % self.banks_per_rank;
        self.bank_from_flat(base + i)
    }

    /// Every rank's horizons, rank by rank: entry `rank * NK + kind` is the earliest cycle the
    /// rank- and channel-scoped rules allow `kind` in that rank.
    #[inline]
    pub fn rank_horizons(&self) -> &[u64] {
        self.rank_next.as_flattened()
    }

    /// Drops the rules whose target kind the owner never issues (`issued[to]` false; the
    /// indices are [`CommandKind::index`] and the TRS / TRD halves of TR), so that an issue
    /// raises only horizons that are read again. A horizon is read only for a command about to be
    /// ranked or issued (a bank's candidate, a refresh, a bulk job), so a kind that is never
    /// issued has a horizon nobody reads: every schedule stays the same. DDR3's ACT, for one,
    /// starts eleven bank-scoped rules, of which six target RDA, WRA and the RowClone commands
    /// that a run with open rows and no in-DRAM copy never issues.
    pub fn drop_unissued_targets(&mut self, issued: &[bool; NK]) {
        for (scope, has) in self.dense.iter_mut().zip(self.has.iter_mut()) {
            for (rows, h) in scope.iter_mut().zip(has.iter_mut()) {
                rows.retain(|&(to, _)| issued[to as usize]);
                *h = !rows.is_empty();
            }
        }
        for targets in &mut self.window_targets {
            targets.retain(|&to| issued[to as usize]);
        }
        self.raises = compile_raises(&self.dense);
        self.compile_row_raises();
    }

    /// Whether issuing `kind` moves any bank-group horizon (a group-scoped rule starts at it).
    #[inline]
    pub fn has_group_rules(&self, kind: CommandKind) -> bool {
        self.has[1][kind.index()]
    }

    #[inline]
    fn raise(next: &mut [u64; NK], lat: &[(u8, u64)], now: u64) {
        for &(to, l) in lat {
            let n = &mut next[to as usize];
            *n = (*n).max(now + l);
        }
    }

    /// Raises the horizons the rules starting at `from` move when it issues to bank `b` at `now`:
    /// the bank's, its group's and its rank's in one loop over `raises[from]`, then other ranks'.
    #[inline(always)]
    fn apply_rules(&mut self, from: usize, b: BankId, now: u64) {
        let gi = self.group_index(b);
        let rows = [
            &mut self.bank_next[b.flat as usize],
            &mut self.group_next[gi],
            &mut self.rank_next[b.rank as usize],
        ];
        let row_raises = self.row_raises.as_ref();
        match row_raises.and_then(|(_, per_kind)| per_kind[from].as_ref()) {
            #[cfg(target_arch = "x86_64")]
            Some(r) => {
                // SAFETY: `row_raises` is `Some` only with a `VectorCpu`, which exists only
                // where the CPU runs AVX-512F, the only requirement of the function.
                unsafe { vector_raise::raise_rows(rows, r, now) }
            }
            _ => {
                for r in &self.raises[from] {
                    let n = &mut rows[r.level as usize][r.to as usize];
                    *n = (*n).max(now + r.lat);
                }
            }
        }
        if self.ranks > 1 && self.has[3][from] {
            for r in 0..self.ranks {
                if r != b.rank {
                    Self::raise(&mut self.rank_next[r as usize], &self.dense[3][from], now);
                }
            }
        }
    }

    #[inline(always)]
    fn set_open(&mut self, b: BankId, row: Option<u32>, now: u64) {
        let was = self.open_row[b.flat as usize].is_some();
        self.open_row[b.flat as usize] = row;
        if was == row.is_some() {
            return;
        }
        let a = &mut self.activity[b.rank as usize];
        a.advance(now);
        if was {
            a.open_banks -= 1;
        } else {
            a.open_banks += 1;
        }
    }

    /// Whether any bank of `rank` has a row open.
    fn rows_open(&self, rank: u32) -> bool {
        let base = (rank * self.banks_per_rank) as usize;
        self.open_row[base..base + self.banks_per_rank as usize]
            .iter()
            .any(|r| r.is_some())
    }

    /// Closes the activity accounting at `now` (end of simulation).
    pub fn settle_activity(&mut self, now: u64) {
        for a in &mut self.activity {
            a.advance(now);
        }
    }

    /// HBM3 / HBM4: whether a PRE may still go on the falling edge of clock `now` (the row bus's
    /// rising edge held by a command it may pair with, its falling half free), and the bank of
    /// that command (the PRE must name another); `None` on every other standard.
    #[inline]
    pub fn falling_open(&self, now: u64) -> Option<u32> {
        self.half_clock.as_ref()?.falling_open(now)
    }

    /// Whether `kind` may go on the falling edge of a clock (HBM3 / HBM4's PRE).
    #[inline]
    pub fn falls(&self, kind: CommandKind) -> bool {
        self.half_clock
            .as_ref()
            .is_some_and(|h| h.falls(kind.index()))
    }

    /// Records `kind` issued at `now`: updates open rows and every timing horizon it affects.
    pub fn issue(
        &mut self,
        kind: CommandKind,
        b: BankId,
        row: u32,
        dst: Option<(BankId, u32)>,
        now: u64,
    ) {
        let k = kind.index();
        // The rules start here; state changes (open rows, activity) at `now`.
        let at = match &mut self.half_clock {
            Some(h) => h.issue(k, b.flat, now),
            None => now,
        };
        match kind {
            CommandKind::Tr => {
                let (d, _) = dst.unwrap_or((b, row));
                // A TRANSFER uses the internal bus of both banks' groups: bank-group scoped TR rules
                // apply at both; rank-scoped once; bank-scoped TRS / TRD rules at each side.
                let (gi, gd) = (self.group_index(b), self.group_index(d));
                if self.has[1][k] {
                    Self::raise(&mut self.group_next[gi], &self.dense[1][k], at);
                    Self::raise(&mut self.group_next[gd], &self.dense[1][k], at);
                }
                if self.has[2][k] {
                    Self::raise(&mut self.rank_next[b.rank as usize], &self.dense[2][k], at);
                }
                self.apply_rules(TK_TRS, b, at);
                self.apply_rules(TK_TRD, d, at);
                return;
            }
            CommandKind::Refsb | CommandKind::Rfmsb => {
                let g = self.groups_per_rank;
                let cycles = if kind == CommandKind::Refsb {
                    self.n_rfcsb
                } else {
                    self.n_rfmsb
                };
                self.activity[b.rank as usize].refresh(now, g, cycles);
                // Rank-scoped rules once; bank-scoped ones at each refreshed bank.
                self.apply_rules(k, b, at);
                for g in 0..self.groups_per_rank {
                    let bi = self.bank_id(b.rank, g, b.bank);
                    if bi.flat != b.flat && self.has[0][k] {
                        Self::raise(&mut self.bank_next[bi.flat as usize], &self.dense[0][k], at);
                    }
                }
                return;
            }
            CommandKind::Refpb => {
                // One bank (or a pair) refreshes; open rows do not change (they were precharged).
                let banks = if self.refpb_pair > 0 { 2 } else { 1 };
                self.activity[b.rank as usize].refresh(now, banks, self.n_rfcpb);
                self.apply_rules(k, b, at);
                if self.refpb_pair > 0 && self.has[0][k] {
                    let p = self.refpb_partner(b);
                    Self::raise(&mut self.bank_next[p.flat as usize], &self.dense[0][k], at);
                }
                return;
            }
            CommandKind::Rfmpb => {
                // One bank refreshes (HBM pairs no banks); it was precharged.
                self.activity[b.rank as usize].refresh(now, 1, self.n_rfmpb);
                self.apply_rules(k, b, at);
                return;
            }
            CommandKind::Prea | CommandKind::Ref | CommandKind::Rfm => {
                if kind != CommandKind::Prea {
                    let n = self.banks_per_rank;
                    let cycles = if kind == CommandKind::Ref {
                        self.n_rfc
                    } else {
                        self.n_rfm
                    };
                    self.activity[b.rank as usize].refresh(now, n, cycles);
                }
                self.apply_rules(k, b, at);
                if kind == CommandKind::Prea {
                    let base = b.rank * self.banks_per_rank;
                    for i in base..base + self.banks_per_rank {
                        let bi = self.bank_from_flat(i);
                        self.set_open(bi, None, now);
                    }
                }
                return;
            }
            _ => {}
        }
        self.issue_rest(kind, b, row, at, now);
    }

    /// [`ChannelDevices::issue`] for a request's own command to one bank (ACT, PRE, RD, WR, RDA,
    /// WRA; nearly every command): the same updates, without the other kinds' cases and the
    /// destination. The caller makes sure `kind` is one of those ([`CommandKind::is_bank_access`]).
    /// Always inlined: a caller that has already branched on the kind passes it as a constant, and
    /// the branch on it here folds away.
    #[inline(always)]
    pub fn issue_access(&mut self, kind: CommandKind, b: BankId, row: u32, now: u64) {
        debug_assert!(
            kind.is_bank_access(),
            "issue_access takes a request's own one-bank command, not {kind:?}"
        );
        let at = match &mut self.half_clock {
            Some(h) => h.issue(kind.index(), b.flat, now),
            None => now,
        };
        self.issue_rest(kind, b, row, at, now);
    }

    /// The rules of `kind` from `at`, the activation windows, open rows and activity at `now`.
    #[inline(always)]
    fn issue_rest(&mut self, kind: CommandKind, b: BankId, row: u32, at: u64, now: u64) {
        let k = kind.index();
        // The rules first in each arm, after the branch on the kind rather than before it: the
        // loop's length depends on the kind, and with the kind's branch behind it the CPU can
        // predict where the loop ends.
        match kind {
            CommandKind::Act | CommandKind::Actc | CommandKind::Actm => {
                self.apply_rules(k, b, at);
                for wi in 0..self.windows.len() {
                    if self.windows[wi].0[k] {
                        let lat = self.windows[wi].2;
                        let h = &mut self.window_hist[b.rank as usize * self.windows.len() + wi];
                        // The window only moves when a counted command issues: fold its bound
                        // into the rank's horizons now rather than on every readiness query.
                        if let Some(oldest) = h.record(at) {
                            let t = oldest + lat;
                            let r = &mut self.rank_next[b.rank as usize];
                            for &to in &self.window_targets[wi] {
                                r[to as usize] = r[to as usize].max(t);
                            }
                        }
                    }
                }
                self.activated_at[b.flat as usize] = now;
                self.set_open(b, Some(row), now)
            }
            CommandKind::Pre => {
                self.apply_rules(k, b, at);
                self.set_open(b, None, now)
            }
            CommandKind::Rda | CommandKind::Wra => {
                self.apply_rules(k, b, at);
                // The row closes now for scheduling; the bank stays active (background energy)
                // until the auto-precharge takes effect.
                let after = if kind == CommandKind::Rda {
                    self.n_rtp
                } else {
                    self.n_wrec
                };
                let at = (now + after).max(self.activated_at[b.flat as usize] + self.n_ras);
                self.open_row[b.flat as usize] = None;
                let a = &mut self.activity[b.rank as usize];
                a.advance(now);
                a.end_at(at, 1);
            }
            _ => self.apply_rules(k, b, at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// The ring gives the oldest of the last `count` cycles recorded, as a queue cut to `count`
    /// does, from the `count`-th record on (counts 1 to 6, 40 records each).
    #[test]
    fn window_ring_matches_a_cut_queue() {
        for count in 1..=6usize {
            let mut ring = WindowHistory::new(count);
            let mut queue = VecDeque::new();
            for i in 0..40u64 {
                let at = i * 7 + (i * i) % 5;
                queue.push_back(at);
                while queue.len() > count {
                    queue.pop_front();
                }
                let want = (queue.len() == count).then(|| queue[0]);
                assert_eq!(ring.record(at), want, "count {count}, record {i}");
            }
        }
    }

    /// The flat per-kind lists hold exactly the bank, group and rank rows of the dense table,
    /// before and after unissued targets are dropped.
    #[test]
    fn raises_are_the_dense_rows() {
        for preset in ["ddr3-1600k-bench", "ddr5-3200an"] {
            let spec = Config::preset(preset).unwrap().resolve("t").unwrap();
            let mut dev = ChannelDevices::new(&spec);
            let check = |dev: &ChannelDevices| {
                for from in 0..NK {
                    let mut want: Vec<(u8, u8, u64)> = (0..3u8)
                        .flat_map(|l| {
                            dev.dense[l as usize][from]
                                .iter()
                                .map(move |&(t, x)| (l, t, x))
                        })
                        .collect();
                    let mut got: Vec<(u8, u8, u64)> = dev.raises[from]
                        .iter()
                        .map(|r| (r.level as u8, r.to, r.lat))
                        .collect();
                    want.sort_unstable();
                    got.sort_unstable();
                    assert_eq!(got, want, "{preset}, kind {from}");
                }
            };
            check(&dev);
            let mut issued = [true; NK];
            issued[CommandKind::Rda.index()] = false;
            issued[CommandKind::Actm.index()] = false;
            dev.drop_unissued_targets(&issued);
            check(&dev);
        }
    }

    /// The row path (AVX-512) leaves every horizon as the scalar loop does, for every kind's
    /// rules of DDR3, DDR4, DDR5 and HBM3 (whatever their count), on random rows and cycles.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn row_raises_match_the_scalar_loop() {
        use crate::generator::Xoshiro256StarStar;
        if crate::ready_scan::VectorCpu::detect().is_none() {
            return;
        }
        let mut rng = Xoshiro256StarStar::seed_from_u64(23);
        for preset in ["ddr3-1600k-bench", "ddr4-2400r", "ddr5-3200an", "hbm3-6400"] {
            let spec = Config::preset(preset).unwrap().resolve("t").unwrap();
            let dev = ChannelDevices::new(&spec);
            for from in 0..NK {
                let rows = vector_raise::RowRaises::of(&dev.raises[from]);
                for _ in 0..200 {
                    let at = 1000 + rng.below(1000);
                    let start: [[u64; NK]; 3] =
                        std::array::from_fn(|_| std::array::from_fn(|_| at - 100 + rng.below(400)));
                    let mut want = start;
                    for r in &dev.raises[from] {
                        let n = &mut want[r.level as usize][r.to as usize];
                        *n = (*n).max(at + r.lat);
                    }
                    let mut got = start;
                    let [b, g, k] = &mut got;
                    // SAFETY: the CPU runs AVX-512F (tested above).
                    unsafe { vector_raise::raise_rows([b, g, k], &rows, at) };
                    assert_eq!(got, want, "{preset}, kind {from}");
                }
            }
        }
    }

    /// Dropping the rules of kinds never issued leaves the earliest cycle of every kind that is
    /// issued unchanged, after any sequence of those kinds (DDR3 and DDR5, every bank).
    #[test]
    fn dropped_targets_leave_issued_kinds_unchanged() {
        let kept = [
            CommandKind::Act,
            CommandKind::Pre,
            CommandKind::Prea,
            CommandKind::Rd,
            CommandKind::Wr,
            CommandKind::Ref,
        ];
        let mut issued = [false; NK];
        for k in kept {
            issued[k.index()] = true;
        }
        for preset in ["ddr3-1600k-bench", "ddr5-3200an"] {
            let spec = Config::preset(preset)
                .expect("preset")
                .resolve("test")
                .expect("resolve");
            let mut full = ChannelDevices::new(&spec);
            let mut pruned = ChannelDevices::new(&spec);
            pruned.drop_unissued_targets(&issued);
            let dropped: usize = (0..4)
                .flat_map(|s| (0..NK).map(move |f| (s, f)))
                .map(|(s, f)| full.dense[s][f].len() - pruned.dense[s][f].len())
                .sum();
            assert!(dropped > 0, "{preset}: no rule dropped");
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut now = 0;
            for _ in 0..5_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let kind = kept[(x % kept.len() as u64) as usize];
                let b = full.bank_from_flat(((x >> 8) % u64::from(full.banks())) as u32);
                now += (x >> 20) % 9;
                let row = ((x >> 32) % 4) as u32;
                full.issue(kind, b, row, None, now);
                pruned.issue(kind, b, row, None, now);
                for f in 0..full.banks() {
                    let bank = full.bank_from_flat(f);
                    for k in kept {
                        assert_eq!(
                            full.earliest(k, bank, None),
                            pruned.earliest(k, bank, None),
                            "{preset}: {k:?} at bank {f} after {kind:?} at {now}"
                        );
                    }
                }
            }
        }
    }
}
