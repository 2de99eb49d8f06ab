//! The memory controller of one channel: read and write queues, write drain between watermarks,
//! all-bank, same-bank or per-bank refresh, refresh management (RFM: per-bank activation counts,
//! an all-bank, same-bank or per-bank RFM when one reaches RAAIMT, see `rfm`), a named scheduler, open- or closed-row policy, and
//! in-DRAM bulk jobs (RowClone FPM and PSM) that own their banks while they run.
//!
//! The controller is event-driven: [`Controller::tick`] issues at most one command at the given
//! cycle (on HBM, one per command bus: a row and a column command, see `command_bus`) and returns
//! the next cycle at which anything could issue, so the caller skips idle time.
use crate::command::{CommandKind, CommandRecord, CommandSink, TransferDst};
use crate::command_bus::{Bus, CommandBuses};
use crate::config::ControllerConfig;
use crate::device::{BankId, ChannelDevices};
use crate::job_queue::JobQueue;
use crate::mapper::Location;
use crate::ready_scan::{self, pack_key, KEY_BANK_BITS, KEY_SEQ_BITS, WAIT_CAP};
use crate::request::Op;
use crate::rfm::{owing_bank, refreshed_banks, RfmScope};
use crate::scheduler::{self, AnyScheduler, Candidate};
use crate::spec::{DramSpec, NK, TK_TRD, TK_TRS};
use crate::stats::{Histogram, RowStats};
use crate::wck::{uses_wck, WckSync};
use bank_queue::BankQueue;

mod bank_queue;
mod request_path;

/// Who a queued request or a finished piece of work belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// A line request from the trace.
    Trace,
    /// A line of a bulk operation done over the channel (baseline), by operation index.
    BulkLine { op: u32 },
    /// A RowClone job of a bulk operation, by operation index.
    BulkJob { op: u32 },
    /// A line request of an outside driver (the platform's memory port), by its id.
    Port { id: u32 },
}

/// Work that finished: read data returned, a write's data written, or a bulk job completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// When it is complete (read: data returned; write: data in the cells and bank ready to
    /// precharge; job: its last precharge done).
    pub time: u64,
    pub tag: Tag,
    pub op: Op,
}

/// RowClone mechanism of a job, for statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMech {
    Fpm,
    PsmInter,
    PsmIntra,
    Mrc,
}

/// An in-DRAM bulk job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobKind {
    /// Fast Parallel Mode: ACT src, ACTC dst (same subarray), PRE.
    Fpm {
        bank: BankId,
        src_row: u32,
        dst_row: u32,
        copied: bool,
    },
    /// Multi-RowCopy: ACT src, ACTM to `src_row ^ mask` (raising the group `src_row` XOR every
    /// subset of `mask`), PRE.
    Mrc {
        bank: BankId,
        src_row: u32,
        mask: u32,
        copied: bool,
    },
    /// Pipelined Serial Mode: open both rows, one TR per (src column, dst column), close both.
    Psm {
        src: BankId,
        src_row: u32,
        dst: BankId,
        dst_row: u32,
        cols: Vec<(u32, u32)>,
        next: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub op: u32,
    pub mech: JobMech,
    pub kind: JobKind,
    /// A job to run once this one is done (the second half of an intra-bank PSM).
    pub then: Option<Box<Job>>,
}

impl Job {
    fn banks(&self) -> [Option<u32>; 2] {
        match &self.kind {
            JobKind::Fpm { bank, .. } | JobKind::Mrc { bank, .. } => [Some(bank.flat), None],
            JobKind::Psm { src, dst, .. } => [Some(src.flat), Some(dst.flat)],
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    bank: BankId,
    row: u32,
    col: u32,
    op: Op,
    arrival: u64,
    seq: u64,
    tag: Tag,
    /// Issued by a copy engine (ranked behind core requests under CPU bypass).
    engine: bool,
    needed_act: bool,
    needed_pre: bool,
}

/// What a candidate stands for.
#[derive(Debug, Clone, Copy)]
enum Source {
    Entry(u32),
    Job(usize),
    Refresh,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    kind: CommandKind,
    bank: BankId,
    row: u32,
    col: u32,
    dst: Option<(BankId, u32, u32)>,
    source: Source,
}

/// A bank's candidate: the next command its queued requests need (the bank is implied).
/// Compact, since it is rewritten every time the bank's queue or open row changes.
#[derive(Debug, Clone, Copy)]
struct BankCand {
    seq: u64,
    /// Slab index of the request it serves.
    entry: u32,
    row: u32,
    col: u32,
    kind: CommandKind,
    is_hit: bool,
    engine: bool,
}

impl BankCand {
    /// The scheduler's view of this candidate, ready at `ready_at`.
    #[inline]
    fn candidate(&self, ready_at: u64) -> Candidate {
        Candidate {
            seq: self.seq,
            is_hit: self.is_hit,
            ready_at,
        }
    }
}

/// The scheduler's view of one bank.
#[derive(Debug, Clone, Copy)]
struct BankSlot {
    /// The candidate from the request queues, recomputed only when the bank's queue, its open
    /// row or the queue mode changed (the scan for a row hit is the costly part).
    cand: Option<BankCand>,
    id: BankId,
    /// The candidate must be recomputed.
    dirty: bool,
    /// A bulk job owns the bank.
    owned: bool,
    /// With `keep_activated_rows`: the request (slab index) whose ACTIVATE opened the bank's row
    /// and whose column command has not issued yet.
    activated: Option<u32>,
}

/// Where a scheduling candidate came from.
#[derive(Debug, Clone, Copy)]
enum Who {
    Bank(usize),
    Job(usize),
}

/// Per-channel counters, merged into [`crate::stats::Stats`] at the end.
#[derive(Debug, Clone, Default)]
pub struct ChannelCounters {
    pub commands: [u64; CommandKind::ALL.len()],
    /// Banks closed by PREA (each counts as a precharge for energy).
    pub banks_closed_by_prea: u64,
    /// Rows raised by Multi-RowCopy's ACTMs besides the open one (each costs an activation).
    pub mrc_rows: u64,
    pub reads: u64,
    pub writes: u64,
    pub read_latency: Histogram,
    pub write_latency: Histogram,
    pub row: RowStats,
    pub last_done: u64,
}

pub struct Controller {
    pub channel: u32,
    pub dev: ChannelDevices,
    sched: AnyScheduler,
    closed_row: bool,
    keep_activated: bool,
    refresh: bool,
    /// Same-bank refresh (REFSB) instead of all-bank REF.
    same_bank: bool,
    /// Per-bank refresh (REFPB) instead of all-bank REF.
    per_bank: bool,
    n_cl: u64,
    n_bl: u64,
    n_cwl: u64,
    n_wr: u64,
    n_rp: u64,
    n_refi: u64,
    slab: Vec<Entry>,
    free: Vec<u32>,
    /// Per bank, the queued reads / writes in arrival order as (row, slab index), with counts
    /// per row bucket that answer most row-hit searches without reading the queue
    /// ([`BankQueue`]).
    rq: Vec<BankQueue>,
    wq: Vec<BankQueue>,
    rq_len: usize,
    wq_len: usize,
    rq_cap: usize,
    wq_cap: usize,
    /// Write drain starts above this many queued writes (floor of high watermark x capacity)...
    wr_hi_n: usize,
    /// ... and stops below this many (ceil of low watermark x capacity).
    wr_lo_n: usize,
    write_mode: bool,
    refresh_due: Vec<u64>,
    refresh_pending: Vec<bool>,
    /// The earliest `refresh_due` of any rank, or 0 while a refresh is pending in one (a due
    /// cycle is never 0): what the pass after every issue reads instead of visiting the ranks.
    /// Set by [`Controller::note_refresh_state`] whenever either of the two changes.
    refresh_next: u64,
    /// Per rank, the cycles of its last two REFs and how late each was after its due cycle; and
    /// the cycle of the last command that was not a refresh's (see
    /// [`Controller::skip_idle_refreshes`]).
    last_ref: Vec<[u64; 2]>,
    ref_late: Vec<[u64; 2]>,
    last_work: u64,
    /// Same-bank refresh: per rank, the bank index refreshed next and the REFSBs issued so far;
    /// per-bank refresh: the bank (index within the rank) refreshed next and the REFPBs so far.
    sb_next: Vec<u32>,
    sb_done: Vec<u64>,
    /// Refresh management (DDR5, HBM3 parts that require it; JESD79-5 4.41): RAAIMT (0: off),
    /// each bank's rolling accumulated ACT count, and per rank whether an RFM is owed (some
    /// bank's count reached RAAIMT). An owed RFM has a refresh's priority: PREA, then RFM.
    raaimt: u32,
    raa: Vec<u32>,
    rfm_pending: Vec<bool>,
    /// Which RFM command is owed (`rfm`: all-bank, same-bank or per-bank) and, per rank, the
    /// bank (index within the rank) it is owed for.
    rfm_scope: RfmScope,
    rfm_target: Vec<u32>,
    /// LPDDR5 in WCK auto sync-off mode: each rank's WCK2CK synchronisation (see `wck`); a read
    /// or write that finds it off is issued as a CAS and the command on the next clock.
    wck: Option<WckSync>,
    /// A read or write whose CAS issued on the previous clock: the next tick issues it first
    /// (after every channel's commands of this clock, so the log stays in cycle order).
    paired: Option<(u64, Pending)>,
    jobs: Vec<(u64, Job)>,
    waiting_jobs: JobQueue<Job>,
    next_cmd_cycle: u64,
    /// HBM's separate row and column command buses; `None`: one command bus.
    buses: Option<CommandBuses>,
    /// One command bus and no WCK synchronisation: a picked request command takes the short
    /// path (`request_path`).
    plain: bool,
    /// With two buses, per bus searched (row, column) and per rank-and-kind index (`hidx`): 0
    /// where the kind goes on that bus, `u64::MAX` where not (the other bus's fast search,
    /// [`ready_scan::min_key_ready`]).
    bus_skip: [Vec<u64>; 2],
    /// The scheduler's view of each bank, by flat index.
    slots: Vec<BankSlot>,
    /// Per bank (flat index), the exact bank and bank-group part of its candidate's earliest
    /// cycle (`u64::MAX` without a candidate); with `hidx` (rank * NK + the candidate's kind, the
    /// index of the rank part in [`ChannelDevices::rank_horizons`]) and `key` (the FR-FCFS rank
    /// packed with the bank, see [`pack_key`]) the three arrays a pass reads. The
    /// rank part is shared by every bank of the rank waiting on the same kind of command, so a
    /// command that moves it costs the pass nothing; the local part moves only for the banks of
    /// the group a command issued to. Valid for banks that are not `dirty`.
    loc: Vec<u64>,
    hidx: Vec<u32>,
    key: Vec<u64>,
    /// The banks with a candidate, one bit each (bank `flat` is bit `flat % 64` of word
    /// `flat / 64`): the banks a pass over many banks visits ([`ready_scan::min_word_active`]).
    /// Valid, like `loc`, for banks that are not `dirty`. Empty (and not kept) on channels whose
    /// pass does not read it: at most [`ready_scan::FEW_BANKS`] banks, or the vector pass.
    active: Vec<u64>,
    /// Every bank with a candidate is ready less than [`WAIT_CAP`] cycles after the cycle a pass
    /// starts from (the longest rule is shorter, [`ChannelDevices::reach`]): the scalar passes
    /// need no cap on a bank's wait (`ready_scan::min_word_few_near`).
    near: bool,
    /// This CPU runs the vector pass (`Some`, [`ready_scan::VectorCpu::detect`], found once):
    /// channels of many banks scan all banks with it instead of the banks in `active`.
    vector_scan: Option<ready_scan::VectorCpu>,
    /// The banks whose candidate must be recomputed before the next pass (each once: `dirty`).
    dirty_list: Vec<u32>,
    /// FR-FCFS without CPU bypass, with lookahead: a pass after an issue also picks the command to
    /// issue at the cycle it returns, and that choice is kept up to date as requests arrive.
    fast: bool,
    /// (cycle, bank): the command of `bank` is the one the scheduler will pick at `cycle`, the
    /// earliest cycle anything can issue, unless a job, a queue-mode switch or a refresh
    /// intervenes (each of which clears it).
    pick: Option<(u64, u32)>,
    /// CPU request bypass and the engine's guaranteed share of column commands.
    bypass: bool,
    engine_share: f64,
    /// Column commands served recently (halved every 64) in total and for engine requests.
    win_total: u32,
    win_engine: u32,
    /// The engine is below its share: its requests are not ranked behind the cores'.
    engine_turn: bool,
    /// After an issue, [`Controller::tick`] returns a lower bound on the next cycle a command
    /// could issue instead of the next cycle (see [`Controller::set_lookahead`]).
    lookahead: bool,
    /// With lookahead: no command can issue before this cycle unless a request or job arrives
    /// that changes a candidate or the queue mode (which reset it to 0).
    wake: u64,
    /// The scheduler's fixed answers, asked once: whether banks offer their oldest row hit, and
    /// whether candidates that cannot issue yet still matter to its choice.
    row_hits: bool,
    scan_all: bool,
    /// Finished work, drained by the memory system.
    pub done: Vec<Done>,
    pub counters: ChannelCounters,
}

/// The command kinds (indices into the device's horizons, TR's TRS / TRD halves included) a
/// controller configured by `cfg` can issue, for [`ChannelDevices::drop_unissued_targets`]:
/// auto-precharge reads and writes only under the closed-row policy, RowClone's and
/// Multi-RowCopy's commands only when bulk operations may copy in DRAM (jobs are split off only
/// then), same-bank and per-bank refreshes only in those refresh modes, and refresh management
/// only where the part requires it (`raaimt` above 0). Everything else is kept, whether it
/// issues or not.
fn issued_kinds(cfg: &ControllerConfig, raaimt: u32) -> [bool; NK] {
    let mut issued = [true; NK];
    let mut drop = |kinds: &[usize]| {
        for &k in kinds {
            issued[k] = false;
        }
    };
    if cfg.row_policy != "closed" {
        drop(&[CommandKind::Rda.index(), CommandKind::Wra.index()]);
    }
    if cfg.bulk == "baseline" {
        drop(&[
            CommandKind::Actc.index(),
            CommandKind::Actm.index(),
            CommandKind::Tr.index(),
            TK_TRS,
            TK_TRD,
        ]);
    }
    if cfg.refresh != "same-bank" {
        drop(&[CommandKind::Refsb.index()]);
    }
    if cfg.refresh != "per-bank" {
        drop(&[CommandKind::Refpb.index()]);
    }
    if raaimt == 0 {
        drop(&[
            CommandKind::Rfm.index(),
            CommandKind::Rfmsb.index(),
            CommandKind::Rfmpb.index(),
        ]);
    }
    issued
}

impl Controller {
    pub fn new(channel: u32, spec: &DramSpec, cfg: &ControllerConfig) -> Controller {
        let raaimt = spec
            .param("RAAIMT")
            .map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX));
        let mut dev = ChannelDevices::new(spec);
        dev.drop_unissued_targets(&issued_kinds(cfg, raaimt));
        let banks = dev.banks() as usize;
        let ranks = spec.org.ranks as usize;
        let n_refi = spec.t("nREFI").max(1);
        let sched = scheduler::build(&cfg.scheduler)
            .unwrap_or(scheduler::AnyScheduler::FrFcfs(scheduler::FrFcfs));
        let (row_hits, scan_all) = (
            sched.get().offers_row_hits(),
            sched.get().considers_unready(),
        );
        let wck = WckSync::from_spec(spec, ranks);
        // A pass starts from the cycle after the last command's, so a wait is below `reach`.
        let near = dev.reach() < WAIT_CAP;
        let plain = spec.command_buses.is_none() && wck.is_none();
        let slots = (0..banks as u32)
            .map(|f| BankSlot {
                cand: None,
                id: dev.bank_from_flat(f),
                dirty: true,
                owned: false,
                activated: None,
            })
            .collect();
        let mut c = Controller {
            channel,
            dev,
            sched,
            closed_row: cfg.row_policy == "closed",
            keep_activated: cfg.keep_activated_rows,
            refresh: cfg.refresh != "none",
            same_bank: cfg.refresh == "same-bank",
            per_bank: cfg.refresh == "per-bank",
            n_cl: spec.t("nCL"),
            n_bl: spec.t("nBL"),
            n_cwl: spec.t("nCWL"),
            n_wr: spec.t("nWR"),
            n_rp: spec.t("nRP"),
            n_refi,
            slab: Vec::with_capacity((cfg.read_queue + cfg.write_queue).min(1024)),
            free: Vec::new(),
            rq: vec![BankQueue::new(); banks],
            wq: vec![BankQueue::new(); banks],
            rq_len: 0,
            wq_len: 0,
            rq_cap: cfg.read_queue,
            wq_cap: cfg.write_queue,
            wr_hi_n: (cfg.write_high_watermark * cfg.write_queue as f64).floor() as usize,
            wr_lo_n: (cfg.write_low_watermark * cfg.write_queue as f64).ceil() as usize,
            write_mode: false,
            refresh_due: vec![
                match cfg.refresh.as_str() {
                    "same-bank" => (n_refi / u64::from(spec.org.banks_per_group)).max(1),
                    "per-bank" => (n_refi
                        / u64::from(if spec.refpb_pair_offset > 0 {
                            spec.org.banks_per_rank() / 2
                        } else {
                            spec.org.banks_per_rank()
                        }))
                    .max(1),
                    _ => n_refi,
                };
                ranks
            ],
            refresh_pending: vec![false; ranks],
            refresh_next: 0,
            last_ref: vec![[0; 2]; ranks],
            ref_late: vec![[0; 2]; ranks],
            last_work: 0,
            sb_next: vec![0; ranks],
            sb_done: vec![0; ranks],
            raaimt,
            raa: vec![0; banks],
            rfm_pending: vec![false; ranks],
            rfm_scope: RfmScope::from_config(&cfg.rfm_scope),
            rfm_target: vec![0; ranks],
            wck,
            paired: None,
            jobs: Vec::new(),
            waiting_jobs: JobQueue::new(),
            next_cmd_cycle: 0,
            plain,
            buses: spec.command_buses.clone(),
            bus_skip: match &spec.command_buses {
                Some(b) => [Bus::Row, Bus::Column].map(|want| {
                    (0..ranks * NK)
                        .map(|h| if b.bus(h % NK) == want { 0 } else { u64::MAX })
                        .collect()
                }),
                None => [Vec::new(), Vec::new()],
            },
            slots,
            loc: vec![u64::MAX; banks],
            hidx: vec![0; banks],
            key: vec![u64::MAX; banks],
            // Kept only where a pass reads it (more than FEW_BANKS banks, no vector pass).
            active: if banks > ready_scan::FEW_BANKS && !ready_scan::has_vector_scan() {
                vec![0; banks.div_ceil(64)]
            } else {
                Vec::new()
            },
            vector_scan: ready_scan::VectorCpu::detect(),
            near,
            dirty_list: (0..banks as u32).collect(),
            fast: false,
            pick: None,
            bypass: cfg.cpu_bypass,
            engine_share: cfg.engine_share,
            win_total: 0,
            win_engine: 0,
            engine_turn: false,
            lookahead: false,
            wake: 0,
            row_hits,
            scan_all,
            done: Vec::new(),
            counters: ChannelCounters::default(),
        };
        c.note_refresh_state();
        c
    }

    /// Sets `refresh_next` from the ranks' refresh state, after a change to it.
    fn note_refresh_state(&mut self) {
        self.refresh_next = self.soonest_refresh();
    }

    /// What `refresh_next` stands for, from the ranks.
    fn soonest_refresh(&self) -> u64 {
        if self.refresh_pending.iter().any(|&p| p) {
            0
        } else {
            self.refresh_due.iter().copied().min().unwrap_or(u64::MAX)
        }
    }

    /// With lookahead on, a tick that issues a command returns the earliest cycle at which the
    /// next one could issue (a lower bound from every bank's candidate) instead of the next cycle,
    /// so a driver skips the cycles in between, and an arriving request re-evaluates its bank only
    /// when it can change the bank's candidate. The driver must then visit the next cycle itself
    /// when it waits for queue space the issue may have freed ([`Controller::issued_at`]).
    pub fn set_lookahead(&mut self, on: bool) {
        self.lookahead = on;
        self.fast = on
            && self.row_hits
            && !self.scan_all
            && !self.bypass
            && matches!(self.sched, AnyScheduler::FrFcfs(_))
            && self.slots.len() <= 1 << KEY_BANK_BITS;
        self.pick = None;
    }

    /// Whether a command issued at cycle `now`.
    #[inline]
    pub fn issued_at(&self, now: u64) -> bool {
        self.next_cmd_cycle == now + 1
    }

    /// Whether the queue for `op` has room.
    #[inline]
    pub fn can_accept(&self, op: Op) -> bool {
        // Selected as data, not branched on: the run loop asks it for the trace's next request,
        // whose direction is random on random traffic.
        let (len, cap) = if op == Op::Write {
            (self.wq_len, self.wq_cap)
        } else {
            (self.rq_len, self.rq_cap)
        };
        len < cap
    }

    /// Queues a line request. The caller checked [`Controller::can_accept`].
    pub fn enqueue(&mut self, loc: &Location, op: Op, now: u64, seq: u64, tag: Tag) {
        self.enqueue_from(loc, op, now, seq, tag, false);
    }

    /// Queues a line request from a core (`engine` false) or a copy engine (`engine` true).
    pub fn enqueue_from(
        &mut self,
        loc: &Location,
        op: Op,
        now: u64,
        seq: u64,
        tag: Tag,
        engine: bool,
    ) {
        let bank = self.dev.bank_id(loc.rank, loc.bank_group, loc.bank);
        let e = Entry {
            bank,
            row: loc.row,
            col: loc.column,
            op,
            arrival: now,
            seq,
            tag,
            engine,
            needed_act: false,
            needed_pre: false,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = e;
                i
            }
            None => {
                self.slab.push(e);
                (self.slab.len() - 1) as u32
            }
        };
        let flat = bank.flat as usize;
        let changed = !self.lookahead || self.changes_candidate(flat, op, loc.row);
        if changed {
            self.mark_dirty(flat);
            self.wake = 0;
        }
        // The queue picked as data (the trace mixes reads and writes at random, so a branch on
        // the direction would be mispredicted often).
        let (q, len) = if op == Op::Write {
            (&mut self.wq, &mut self.wq_len)
        } else {
            (&mut self.rq, &mut self.rq_len)
        };
        q[flat].push_back(loc.row, idx);
        *len += 1;
        if self.wanted_write_mode() != self.write_mode {
            self.wake = 0;
            self.pick = None;
        } else if changed && self.pick.is_some() {
            self.repick_with(flat, now);
        }
    }

    /// Keeps the cached pick right when bank `flat`'s candidate changed at `now` (a request
    /// arrived): only that bank's candidate moved, so the pick is either unchanged or that bank.
    /// When the pick itself was that bank, it is dropped and the next tick makes a full pass.
    fn repick_with(&mut self, flat: usize, now: u64) {
        let Some((t, p)) = self.pick else { return };
        if p as usize == flat || t < now {
            self.pick = None;
            return;
        }
        self.clean(flat);
        let at = self.loc[flat].max(self.dev.rank_horizons()[self.hidx[flat] as usize]);
        if at == u64::MAX {
            return;
        }
        let at = at.max(now);
        if !self.fast {
            self.pick = None;
        } else if (at, self.key[flat]) < (t, self.key[p as usize]) {
            self.pick = Some((at, flat as u32));
        }
    }

    /// Whether a request for `row` joining the back of bank `flat`'s queue for `op` may change
    /// the bank's candidate. The youngest request never displaces the oldest one, nor the oldest
    /// row hit; it matters when the bank had nothing to offer, or offered a precharge and the
    /// newcomer hits the open row. The closed-row policy, CPU bypass and FCFS look at more than
    /// that, and are always re-evaluated.
    fn changes_candidate(&self, flat: usize, op: Op, row: u32) -> bool {
        if self.slots[flat].dirty || self.closed_row || self.bypass || !self.row_hits {
            return true;
        }
        if (op == Op::Write) != self.write_mode {
            return false;
        }
        match &self.slots[flat].cand {
            None => true,
            Some(c) => c.kind == CommandKind::Pre && c.row == row,
        }
    }

    /// Queues an in-DRAM bulk job; it starts when its banks are free.
    pub fn submit_job(&mut self, seq: u64, job: Job) {
        self.wake = 0;
        self.pick = None;
        self.waiting_jobs.push_back(seq, job.banks(), job);
    }

    /// Nothing queued, running or waiting.
    pub fn idle(&self) -> bool {
        self.rq_len == 0 && self.wq_len == 0 && self.jobs.is_empty() && self.waiting_jobs.is_empty()
    }

    fn start_jobs(&mut self) {
        if !self.waiting_jobs.take_dirty() {
            return;
        }
        loop {
            let slots = &self.slots;
            let Some((seq, banks, job)) = self
                .waiting_jobs
                .take_first_startable(|b| !slots[b as usize].owned)
            else {
                break;
            };
            for b in banks.iter().flatten() {
                self.slots[*b as usize].owned = true;
                self.mark_dirty(*b as usize);
            }
            self.jobs.push((seq, job));
        }
    }

    /// The next command a job needs, or None when it is finished.
    fn job_next(&self, ji: usize) -> Option<Pending> {
        let job = &self.jobs[ji].1;
        let p = |kind, bank: BankId, row, col, dst| {
            Some(Pending {
                kind,
                bank,
                row,
                col,
                dst,
                source: Source::Job(ji),
            })
        };
        match &job.kind {
            JobKind::Fpm {
                bank,
                src_row,
                dst_row,
                copied,
            } => {
                let open = self.dev.open_row(*bank);
                if !copied {
                    match open {
                        None => p(CommandKind::Act, *bank, *src_row, 0, None),
                        Some(r) if r == *src_row => p(CommandKind::Actc, *bank, *dst_row, 0, None),
                        Some(r) => p(CommandKind::Pre, *bank, r, 0, None),
                    }
                } else {
                    open.map(|r| Pending {
                        kind: CommandKind::Pre,
                        bank: *bank,
                        row: r,
                        col: 0,
                        dst: None,
                        source: Source::Job(ji),
                    })
                }
            }
            JobKind::Mrc {
                bank,
                src_row,
                mask,
                copied,
            } => {
                let open = self.dev.open_row(*bank);
                match (copied, open) {
                    (false, None) => p(CommandKind::Act, *bank, *src_row, 0, None),
                    (false, Some(r)) if r == *src_row => {
                        p(CommandKind::Actm, *bank, *src_row ^ *mask, 0, None)
                    }
                    (_, Some(r)) => p(CommandKind::Pre, *bank, r, 0, None),
                    (true, None) => None,
                }
            }
            JobKind::Psm {
                src,
                src_row,
                dst,
                dst_row,
                cols,
                next,
            } => {
                if *next < cols.len() {
                    for (b, row) in [(*src, *src_row), (*dst, *dst_row)] {
                        match self.dev.open_row(b) {
                            None => return p(CommandKind::Act, b, row, 0, None),
                            Some(r) if r != row => return p(CommandKind::Pre, b, r, 0, None),
                            _ => {}
                        }
                    }
                    let (sc, dc) = cols[*next];
                    p(
                        CommandKind::Tr,
                        *src,
                        *src_row,
                        sc,
                        Some((*dst, *dst_row, dc)),
                    )
                } else {
                    for b in [*src, *dst] {
                        if let Some(r) = self.dev.open_row(b) {
                            return p(CommandKind::Pre, b, r, 0, None);
                        }
                    }
                    None
                }
            }
        }
    }

    #[inline(always)]
    fn bank_candidate(&self, flat: usize) -> Option<BankCand> {
        if let Some(i) = self.slots[flat].activated {
            return Some(self.column_candidate(flat, i));
        }
        let q = if self.write_mode {
            &self.wq[flat]
        } else {
            &self.rq[flat]
        };
        // Under CPU bypass a bank with core requests offers only those, unless it is the engine's turn.
        let prefer_cpu = self.bypass
            && !self.engine_turn
            && q.iter().any(|&(_, i)| !self.slab[i as usize].engine);
        let eligible = |i: u32| !prefer_cpu || !self.slab[i as usize].engine;
        let oldest = if prefer_cpu {
            q.iter().find(|&&(_, i)| eligible(i))?.1
        } else {
            q.front()?.1
        };
        let e = &self.slab[oldest as usize];
        match self.dev.open_row(self.slots[flat].id) {
            None => Some(self.activate_candidate(oldest)),
            Some(r) => {
                let hit = if self.row_hits && !prefer_cpu {
                    q.first_on_row(r)
                } else if self.row_hits {
                    q.iter().find(|e| e.0 == r && eligible(e.1)).map(|e| e.1)
                } else {
                    (e.row == r).then_some(oldest)
                };
                match hit {
                    Some(i) => Some(self.column_candidate(flat, i)),
                    None => Some(BankCand {
                        kind: CommandKind::Pre,
                        row: r,
                        col: 0,
                        entry: oldest,
                        seq: e.seq,
                        is_hit: false,
                        engine: e.engine,
                    }),
                }
            }
        }
    }

    /// The ACT of queued request `i`, whose bank is closed.
    #[inline(always)]
    fn activate_candidate(&self, i: u32) -> BankCand {
        let e = &self.slab[i as usize];
        BankCand {
            kind: CommandKind::Act,
            row: e.row,
            col: 0,
            entry: i,
            seq: e.seq,
            is_hit: false,
            engine: e.engine,
        }
    }

    /// Bank `flat`'s candidate right after a request's PRE or ACT issued to it, when it is known
    /// without [`Controller::bank_candidate`]'s look at the queue (`None`: not known here).
    /// Without CPU bypass and with the bank not owned by a job, a PRE leaves the bank closed with
    /// nothing activated, so the candidate is the ACT of the queue's oldest request; an ACT under
    /// `keep_activated_rows` leaves the request it opened the row for activated, so the candidate
    /// is that request's column command. These are the branches `bank_candidate` takes in those
    /// states.
    #[inline(always)]
    fn known_candidate(&self, flat: usize, kind: CommandKind) -> Option<Option<BankCand>> {
        if self.bypass || self.slots[flat].owned {
            return None;
        }
        match (kind, self.slots[flat].activated) {
            (CommandKind::Pre, None) => {
                let q = if self.write_mode {
                    &self.wq[flat]
                } else {
                    &self.rq[flat]
                };
                Some(q.front().map(|&(_, i)| self.activate_candidate(i)))
            }
            (CommandKind::Act, Some(i)) => Some(Some(self.column_candidate(flat, i))),
            _ => None,
        }
    }

    /// The column command of queued request `i`, whose row is open in bank `flat`.
    #[inline(always)]
    fn column_candidate(&self, flat: usize, i: u32) -> BankCand {
        let h = &self.slab[i as usize];
        let r = h.row;
        let mut kind = if h.op == Op::Read {
            CommandKind::Rd
        } else {
            CommandKind::Wr
        };
        // Closed-row policy: auto-precharge when no other queued request hits the row. Decided
        // here, so that readiness is checked for the command issued.
        if self.closed_row {
            let others = self.rq[flat]
                .iter()
                .chain(self.wq[flat].iter())
                .any(|&(row, j)| j != i && row == r);
            if !others {
                kind = if h.op == Op::Read {
                    CommandKind::Rda
                } else {
                    CommandKind::Wra
                };
            }
        }
        BankCand {
            kind,
            row: r,
            col: h.col,
            entry: i,
            seq: h.seq,
            is_hit: true,
            engine: h.engine,
        }
    }

    fn update_write_mode(&mut self) {
        let mode = self.wanted_write_mode();
        if mode != self.write_mode {
            self.write_mode = mode;
            self.mark_all_dirty();
        }
    }

    /// The queue mode the watermarks call for given the queue lengths now (asked after every
    /// command and arrival: inlined).
    #[inline(always)]
    fn wanted_write_mode(&self) -> bool {
        // For an integer length n: n > x iff n > floor(x), and n < x iff n < ceil(x).
        if !self.write_mode {
            self.wq_len > self.wr_hi_n || (self.rq_len == 0 && self.wq_len > 0)
        } else {
            !(self.wq_len < self.wr_lo_n && self.rq_len > 0 || self.wq_len == 0)
        }
    }

    /// The bank's candidate must be recomputed: it is, before the next pass.
    #[inline]
    fn mark_dirty(&mut self, flat: usize) {
        if !self.slots[flat].dirty {
            self.slots[flat].dirty = true;
            self.dirty_list.push(flat as u32);
        }
    }

    fn mark_all_dirty(&mut self) {
        self.pick = None;
        for flat in 0..self.slots.len() {
            self.mark_dirty(flat);
        }
    }

    /// Recomputes bank `flat`'s candidate and the arrays a pass reads for it. Not inlined: inlined
    /// into [`Controller::clean_dirty`]'s loop it loaded some thirty fields before every loop,
    /// which nearly always recomputes one bank (4% of the instructions of a random run).
    #[inline(never)]
    fn clean(&mut self, flat: usize) {
        let cand = if self.slots[flat].owned {
            None
        } else {
            self.bank_candidate(flat)
        };
        self.set_candidate(flat, cand);
    }

    /// Stores `cand` as bank `flat`'s candidate (now clean), with the arrays a pass reads for it.
    #[inline(always)]
    fn set_candidate(&mut self, flat: usize, cand: Option<BankCand>) {
        let slot = &mut self.slots[flat];
        slot.dirty = false;
        slot.cand = cand;
        let id = slot.id;
        match cand {
            Some(c) => {
                self.hidx[flat] = id.rank * NK as u32 + c.kind.index() as u32;
                if c.seq >= 1 << KEY_SEQ_BITS {
                    // Beyond what a packed key holds: rank candidates the general way.
                    self.fast = false;
                    self.pick = None;
                }
                // A key is read only on the fast path, which channels of more than
                // 2^KEY_BANK_BITS banks and sequences beyond KEY_SEQ_BITS leave (above).
                self.key[flat] = if c.seq < 1 << KEY_SEQ_BITS && flat < 1 << KEY_BANK_BITS {
                    pack_key(c.is_hit, c.seq, flat)
                } else {
                    u64::MAX
                };
                self.loc[flat] = self.dev.local_at_bank(c.kind, id);
                if let Some(w) = self.active.get_mut(flat / 64) {
                    *w |= 1 << (flat % 64);
                }
            }
            None => {
                self.loc[flat] = u64::MAX;
                self.key[flat] = u64::MAX;
                if let Some(w) = self.active.get_mut(flat / 64) {
                    *w &= !(1 << (flat % 64));
                }
            }
        }
    }

    /// Recomputes the candidates of the banks marked dirty. Most passes find none (the issue
    /// sets its bank's candidate itself): that test inline, the loop out of line.
    #[inline(always)]
    fn clean_dirty(&mut self) {
        if !self.dirty_list.is_empty() {
            self.clean_dirty_list();
        }
    }

    #[inline(never)]
    fn clean_dirty_list(&mut self) {
        while let Some(flat) = self.dirty_list.pop() {
            let flat = flat as usize;
            if self.slots[flat].dirty {
                self.clean(flat);
            }
        }
    }

    /// After a command issued: the local parts of the banks whose bank or group horizons it may
    /// have moved. The common commands move their bank's (marked dirty by the issue) and, with
    /// group-scoped rules, their group's horizons, which only rise: the group's other banks take
    /// the later of their part and the group's horizon for their kind. The rare commands
    /// (refresh, bulk copy) recompute the whole rank's.
    #[inline]
    fn refresh_locals(&mut self, kind: CommandKind, b: BankId) {
        // The common commands without group-scoped rules (every DDR3 command) move nothing here:
        // decided inline, without the call.
        if kind.is_bank_access() && !self.dev.has_group_rules(kind) {
            return;
        }
        self.refresh_locals_moved(kind, b);
    }

    /// [`Controller::refresh_locals_moved`] for a request's own command to one bank (an ACT, PRE,
    /// RD, WR, RDA or WRA), whose kind the caller knows: the banks of `b`'s group take the later
    /// of their local part and the group's horizon for their candidate's kind. Inlined into the
    /// request path (DDR5 runs it after every command), and on groups of four banks (DDR5) over
    /// a fixed array, without the loop.
    #[inline(always)]
    fn group_locals(&mut self, b: BankId) {
        let first = (b.flat - b.bank) as usize;
        let end = first + self.dev.banks_per_group() as usize;
        let group = self.dev.group_horizons(b);
        let base = b.rank * NK as u32;
        // Without a branch per bank: a bank with a candidate has `hidx` = its rank's base plus
        // the candidate's kind; one without has a local part of `u64::MAX`, which the maximum
        // keeps whatever its (stale) index reads. A dirty bank's part is recomputed anyway.
        let raise = |l: &mut u64, i: u32| {
            let h = group
                .get(i.wrapping_sub(base) as usize)
                .copied()
                .unwrap_or(0);
            *l = (*l).max(h);
        };
        let loc = &mut self.loc[first..end];
        let hidx = &self.hidx[first..end];
        match (
            <&mut [u64; 4]>::try_from(&mut *loc),
            <&[u32; 4]>::try_from(hidx),
        ) {
            (Ok(loc), Ok(hidx)) => {
                for j in 0..4 {
                    raise(&mut loc[j], hidx[j]);
                }
            }
            _ => {
                for (l, &i) in loc.iter_mut().zip(hidx) {
                    raise(l, i);
                }
            }
        }
    }

    /// [`Controller::refresh_locals`] for a command that moves something.
    #[inline(never)]
    fn refresh_locals_moved(&mut self, kind: CommandKind, b: BankId) {
        match kind {
            CommandKind::Act
            | CommandKind::Pre
            | CommandKind::Rd
            | CommandKind::Wr
            | CommandKind::Rda
            | CommandKind::Wra => self.group_locals(b),
            _ => {
                let per = self.dev.banks_per_rank() as usize;
                let first = b.rank as usize * per;
                for flat in first..first + per {
                    if !self.slots[flat].dirty {
                        if let Some(c) = self.slots[flat].cand {
                            self.loc[flat] = self.dev.local_at_bank(c.kind, self.slots[flat].id);
                        }
                    }
                }
            }
        }
    }

    /// After an issue at `now`: the next cycle a command could issue, or `now + 1` whenever the
    /// next tick may change more than readiness (a queue-mode switch, a refresh due, bulk jobs).
    /// Every bank's earliest cycle is exact (its local part and its rank's horizon for the
    /// kind), so this is the cycle the next command issues unless a request arrives first; in
    /// fast mode the same pass also picks that command (see `pick`). Skipping the cycles before
    /// it changes nothing: no command could issue in them, and no other state moves without an
    /// enqueue (after which the driver ticks anyway). Out of line, for the paths other than a
    /// picked request command's ([`Controller::next_after_issue_inline`]).
    #[inline(never)]
    fn next_after_issue(&mut self, now: u64) -> u64 {
        self.next_after_issue_inline(now)
    }

    /// [`Controller::next_after_issue`], inlined into the path of a picked request command (nearly
    /// every command), which saves a call and its register saves per command.
    #[inline(always)]
    fn next_after_issue_inline(&mut self, now: u64) -> u64 {
        if !self.jobs.is_empty() || !self.waiting_jobs.is_empty() {
            return now + 1;
        }
        self.next_after_request(now)
    }

    /// [`Controller::next_after_issue_inline`] when no job is running or waiting, which the
    /// caller knows: after a picked request command (a pick is only made without jobs, and the
    /// command starts none).
    #[inline(always)]
    fn next_after_request(&mut self, now: u64) -> u64 {
        debug_assert!(self.jobs.is_empty() && self.waiting_jobs.is_empty());
        let soon = now + 1;
        if self.wanted_write_mode() != self.write_mode {
            return soon;
        }
        let mut refresh_at = u64::MAX;
        if self.raaimt > 0 && self.rfm_pending.iter().any(|&p| p) {
            return soon;
        }
        if self.refresh {
            debug_assert_eq!(self.refresh_next, self.soonest_refresh());
            if self.refresh_next == 0 {
                return soon;
            }
            refresh_at = self.refresh_next;
        }
        self.clean_dirty();
        let horizons = self.dev.rank_horizons();
        if !self.fast {
            let next = ready_scan::min_ready(&self.loc, &self.hidx, horizons);
            return next.min(refresh_at).max(soon);
        }
        // The earliest cycle (no earlier than `soon`) and, among the banks ready then, the best
        // FR-FCFS key: the command the tick at that cycle will issue.
        debug_assert!(
            self.loc.len() <= ready_scan::FEW_BANKS
                || self.vector_scan.is_some()
                || self.active.len() == self.loc.len().div_ceil(64),
            "a bitmask pass without its bitmask"
        );
        let word = if self.loc.len() <= ready_scan::FEW_BANKS {
            if self.near {
                ready_scan::min_word_few_near(&self.loc, &self.hidx, &self.key, horizons, soon)
            } else {
                ready_scan::min_word_few(&self.loc, &self.hidx, &self.key, horizons, soon)
            }
        } else if let Some(cpu) = self.vector_scan {
            ready_scan::min_word_vector(cpu, &self.loc, &self.hidx, &self.key, horizons, soon)
        } else if self.near {
            ready_scan::min_word_active_near(
                &self.active,
                &self.loc,
                &self.hidx,
                &self.key,
                horizons,
                soon,
            )
        } else {
            ready_scan::min_word_active(
                &self.active,
                &self.loc,
                &self.hidx,
                &self.key,
                horizons,
                soon,
            )
        };
        debug_assert!(
            !self.near
                || horizons
                    .iter()
                    .chain(self.loc.iter().filter(|&&l| l != u64::MAX))
                    .all(|&h| h < soon + WAIT_CAP),
            "a horizon beyond ChannelDevices::reach: the pass without a cap would be wrong"
        );
        let (wait, best) = ready_scan::unpack(word);
        if wait == WAIT_CAP {
            // Nothing within reach of the packed word: the exact bound the plain way (rare).
            let next = ready_scan::min_ready(&self.loc, &self.hidx, horizons);
            return next.min(refresh_at).max(soon);
        }
        let best_at = soon + wait;
        if refresh_at <= best_at {
            return refresh_at.max(soon);
        }
        self.pick = Some((best_at, best as u32));
        best_at
    }

    /// Issues at most one command at cycle `now` and returns the next cycle at which a command
    /// could issue (`u64::MAX` when nothing is queued).
    #[inline]
    pub fn tick<'s>(&mut self, now: u64, log: Option<&mut (dyn CommandSink + 's)>) -> u64 {
        // Most calls find nothing to do before `wake`: answered inline in the caller's loop,
        // without the call and register saves of the full tick.
        if now < self.wake {
            return self.wake;
        }
        self.tick_woken(now, log)
    }

    /// [`Controller::tick`] at or after `wake`.
    #[inline(never)]
    fn tick_woken<'s>(&mut self, now: u64, mut log: Option<&mut (dyn CommandSink + 's)>) -> u64 {
        // The picked request command on a plain channel, nearly every tick that issues: taken
        // here, as `tick_at` would take it, so that its end skips the general tests for `wake`. A
        // pick is only made with lookahead on and no jobs (`next_after_issue_inline`), and the
        // request's command starts none, so `wake` is the cycle returned; a plain channel has no
        // CAS pairs (`paired`).
        if let Some((at, flat)) = self.pick {
            if self.plain && now == at && now >= self.next_cmd_cycle {
                if let Some(c) = self.slots[flat as usize].cand {
                    debug_assert!(self.paired.is_none() && self.lookahead);
                    debug_assert!(self.jobs.is_empty() && self.waiting_jobs.is_empty());
                    debug_assert!(self.wanted_write_mode() == self.write_mode);
                    self.issue_request(flat as usize, c, now, &mut log);
                    let next = self.next_after_request(now);
                    self.wake = next;
                    return next;
                }
            }
        }
        let next = self.tick_at(now, log);
        self.wake = if self.lookahead && self.jobs.is_empty() && self.waiting_jobs.is_empty() {
            next
        } else {
            0
        };
        next
    }

    /// The body of [`Controller::tick_woken`], its only caller.
    #[inline(always)]
    fn tick_at<'s>(&mut self, now: u64, mut log: Option<&mut (dyn CommandSink + 's)>) -> u64 {
        if now < self.next_cmd_cycle {
            return self.next_cmd_cycle;
        }
        if let Some((cas, p)) = self.paired.take() {
            // The second half of a CAS pair: ready when its CAS issued, and nothing issued since.
            debug_assert_eq!(now, cas + 1, "a CAS pair split by the driver");
            self.issue(p, now, &mut log);
            return if self.lookahead {
                self.next_after_issue(now)
            } else {
                now + 1
            };
        }
        if let Some((at, flat)) = self.pick {
            if now < at {
                return at;
            }
            self.pick = None;
            if now == at {
                debug_assert!(self.jobs.is_empty() && self.waiting_jobs.is_empty());
                debug_assert!(self.wanted_write_mode() == self.write_mode);
                // A plain channel's picked request command was taken by `tick_woken`; here
                // only a bank without a candidate (a full pass follows).
                debug_assert!(!self.plain || self.slots[flat as usize].cand.is_none());
                if !self.plain {
                    if let Some(p) = self.bank_command(flat as usize) {
                        if self.issue_picked(p, now, &mut log) {
                            return now + 1;
                        }
                        return self.next_after_issue(now);
                    }
                }
            }
        }
        if !self.jobs.is_empty() {
            self.sweep_jobs(now);
        }
        if !self.waiting_jobs.is_empty() {
            self.start_jobs();
        }
        self.update_write_mode();
        let mut next = u64::MAX;

        // An owed RFM has priority: the rank takes no other command until it issues.
        if self.raaimt > 0 {
            for r in 0..self.rfm_pending.len() {
                if !self.rfm_pending[r] {
                    continue;
                }
                let target = self
                    .dev
                    .bank_from_flat(r as u32 * self.dev.banks_per_rank() + self.rfm_target[r]);
                let (kind, b0, row) = self.rfm_scope.next_command(&self.dev, target);
                let at = self.dev.earliest(kind, b0, None);
                if at <= now {
                    self.issue(
                        Pending {
                            kind,
                            bank: b0,
                            row,
                            col: 0,
                            dst: None,
                            source: Source::Refresh,
                        },
                        now,
                        &mut log,
                    );
                    return now + 1;
                }
                next = next.min(at);
            }
        }

        // Refresh has priority: a rank with a refresh due takes no other command until its REF.
        if self.refresh {
            for r in 0..self.refresh_pending.len() {
                if !self.refresh_pending[r] {
                    if now >= self.refresh_due[r] {
                        self.refresh_pending[r] = true;
                        self.note_refresh_state();
                    } else {
                        next = next.min(self.refresh_due[r]);
                        continue;
                    }
                }
                let (kind, b0, row) = self.refresh_command(r as u32);
                let at = self.dev.earliest(kind, b0, None);
                if at <= now {
                    self.issue(
                        Pending {
                            kind,
                            bank: b0,
                            row,
                            col: 0,
                            dst: None,
                            source: Source::Refresh,
                        },
                        now,
                        &mut log,
                    );
                    if kind.is_refresh() {
                        self.refresh_pending[r] = false;
                        if self.same_bank || self.per_bank {
                            // Every bank index (same-bank) or bank (per-bank) once per nREFI,
                            // evenly spread.
                            let steps = u64::from(self.refresh_steps());
                            self.sb_done[r] += 1;
                            self.sb_next[r] = (self.sb_next[r] + 1) % steps as u32;
                            self.refresh_due[r] = (self.sb_done[r] + 1) * self.n_refi / steps;
                        } else {
                            self.refresh_due[r] += self.n_refi;
                        }
                        self.note_refresh_state();
                    }
                    if self.buses.is_some() {
                        self.issue_on_other_bus(kind, now, &mut log);
                        self.issue_on_falling_edge(now, &mut log);
                    }
                    return now + 1;
                }
                next = next.min(at);
            }
        }

        // Every bank's earliest cycle is its local part and its rank's horizon for the kind.
        self.clean_dirty();
        let any_pending = (self.refresh && self.refresh_pending.iter().any(|&p| p))
            || (self.raaimt > 0 && self.rfm_pending.iter().any(|&p| p));
        // Every candidate is ranked as it is found; nothing is collected.
        let mut best: Option<((u8, u64), u64, Who)> = None;
        let demote_engine = self.bypass && !self.engine_turn;
        let offer = |c: Candidate,
                     engine: bool,
                     who: Who,
                     best: &mut Option<((u8, u64), u64, Who)>,
                     next: &mut u64| {
            if c.ready_at > now {
                *next = (*next).min(c.ready_at);
            }
            if let Some(mut k) = self.sched.key(&c, now) {
                if demote_engine && engine {
                    k.0 += 2;
                }
                if best.is_none_or(|(bk, _, _)| k < bk) {
                    *best = Some((k, c.ready_at, who));
                }
            }
        };
        for ji in 0..self.jobs.len() {
            let seq = self.jobs[ji].0;
            if self.job_blocked(ji) {
                continue;
            }
            if let Some(p) = self.job_next(ji) {
                let at = self.dev.earliest(p.kind, p.bank, p.dst.map(|d| d.0));
                offer(
                    Candidate {
                        seq,
                        is_hit: p.kind == CommandKind::Tr,
                        ready_at: at,
                    },
                    false,
                    Who::Job(ji),
                    &mut best,
                    &mut next,
                );
            }
        }
        let horizons = self.dev.rank_horizons();
        for flat in 0..self.slots.len() {
            let at = self.loc[flat].max(horizons[self.hidx[flat] as usize]);
            if at == u64::MAX {
                continue;
            }
            // Re-examined once the refresh issues.
            if any_pending && self.refresh_blocks(self.slots[flat].id) {
                continue;
            }
            if at > now && !self.scan_all {
                // Not ready: no scheduler here ranks it (only strict FCFS looks at those).
                next = next.min(at);
                continue;
            }
            let Some(p) = self.slots[flat].cand else {
                continue;
            };
            offer(
                p.candidate(at),
                p.engine,
                Who::Bank(flat),
                &mut best,
                &mut next,
            );
        }
        let picked = match best {
            Some((_, ready_at, who)) if ready_at <= now => match who {
                Who::Bank(flat) => self.bank_command(flat),
                Who::Job(ji) => self.job_next(ji),
            },
            _ => None,
        };
        match picked {
            Some(p) => {
                if self.issue_picked(p, now, &mut log) {
                    return now + 1;
                }
                if self.lookahead {
                    self.next_after_issue(now)
                } else {
                    now + 1
                }
            }
            // A queue-mode switch or a job start can make new candidates: re-evaluate next cycle.
            None => next.max(now + 1),
        }
    }

    /// HBM: after `first` issued at `now`, the best command that the other command bus carries
    /// and that is ready at `now` issues in the same clock (`command_bus`). Candidates are ranked
    /// as in `tick_at` (jobs and banks, refresh-blocked banks left out), among that bus's
    /// commands only; with one command bus, nothing happens.
    #[inline(never)]
    fn issue_on_other_bus<'s>(
        &mut self,
        first: CommandKind,
        now: u64,
        log: &mut Option<&mut (dyn CommandSink + 's)>,
    ) {
        let Some(buses) = self.buses.as_ref() else {
            return;
        };
        let want = match buses.bus(first.index()) {
            Bus::Row => Bus::Column,
            Bus::Column => Bus::Row,
        };
        self.clean_dirty();
        let Some(buses) = self.buses.as_ref() else {
            return;
        };
        let any_pending = (self.refresh && self.refresh_pending.iter().any(|&p| p))
            || (self.raaimt > 0 && self.rfm_pending.iter().any(|&p| p));
        if self.fast && self.jobs.is_empty() && !any_pending {
            // FR-FCFS on packed keys (what `fast` guarantees): the smallest key among the banks
            // ready now whose candidate goes on the wanted bus is the choice the general pass
            // below makes, found in one pass over the dense arrays.
            let skip = &self.bus_skip[usize::from(want == Bus::Column)];
            let best = ready_scan::min_key_ready(
                &self.loc,
                &self.hidx,
                &self.key,
                self.dev.rank_horizons(),
                skip,
                now,
            );
            if best != u64::MAX {
                let (_, flat) = ready_scan::unpack(best);
                if let Some(p) = self.bank_command(flat) {
                    self.issue(p, now, log);
                }
            }
            return;
        }
        let demote_engine = self.bypass && !self.engine_turn;
        let mut best: Option<((u8, u64), u64, Who)> = None;
        let mut offer = |c: Candidate, engine: bool, who: Who| {
            if let Some(mut k) = self.sched.key(&c, now) {
                if demote_engine && engine {
                    k.0 += 2;
                }
                if best.is_none_or(|(bk, _, _)| k < bk) {
                    best = Some((k, c.ready_at, who));
                }
            }
        };
        for ji in 0..self.jobs.len() {
            let seq = self.jobs[ji].0;
            if self.job_blocked(ji) {
                continue;
            }
            if let Some(p) = self
                .job_next(ji)
                .filter(|p| buses.bus(p.kind.index()) == want)
            {
                let at = self.dev.earliest(p.kind, p.bank, p.dst.map(|d| d.0));
                let is_hit = p.kind == CommandKind::Tr;
                offer(
                    Candidate {
                        seq,
                        is_hit,
                        ready_at: at,
                    },
                    false,
                    Who::Job(ji),
                );
            }
        }
        let horizons = self.dev.rank_horizons();
        for flat in 0..self.slots.len() {
            // Readiness first: `loc` and `hidx` are dense, the slots are not.
            let at = self.loc[flat].max(horizons[self.hidx[flat] as usize]);
            if at == u64::MAX || (at > now && !self.scan_all) {
                continue;
            }
            let Some(p) = self.slots[flat].cand else {
                continue;
            };
            if buses.bus(p.kind.index()) != want
                || (any_pending && self.refresh_blocks(self.slots[flat].id))
            {
                continue;
            }
            offer(p.candidate(at), p.engine, Who::Bank(flat));
        }
        let picked = match best {
            Some((_, ready_at, who)) if ready_at <= now => match who {
                Who::Bank(flat) => self.bank_command(flat),
                Who::Job(ji) => self.job_next(ji),
            },
            _ => None,
        };
        if let Some(p) = picked {
            self.issue(p, now, log);
        }
    }

    /// HBM3 / HBM4: after the clock's row command, a PRE of another bank on the falling edge of
    /// the clock (`command_bus::HalfClockBus`), when the row bus's rising edge is held by a
    /// command a PRE may pair with: the best PRE among the banks' candidates, ranked as in
    /// `tick_at` and issued when ready (refresh-blocked banks left out; bulk jobs' PREs wait for a
    /// rising edge). On every other standard `falling_open` is `None` and nothing happens.
    #[inline(never)]
    fn issue_on_falling_edge<'s>(
        &mut self,
        now: u64,
        log: &mut Option<&mut (dyn CommandSink + 's)>,
    ) {
        let Some(paired) = self.dev.falling_open(now) else {
            return;
        };
        self.clean_dirty();
        let any_pending = (self.refresh && self.refresh_pending.iter().any(|&p| p))
            || (self.raaimt > 0 && self.rfm_pending.iter().any(|&p| p));
        let demote_engine = self.bypass && !self.engine_turn;
        let horizons = self.dev.rank_horizons();
        let mut best: Option<((u8, u64), u64, usize)> = None;
        for (flat, slot) in self.slots.iter().enumerate() {
            // A PRE of another bank, ready now (strict FCFS: or not), not held by a refresh.
            let (Some(p), id) = (slot.cand.filter(|c| self.dev.falls(c.kind)), slot.id) else {
                continue;
            };
            let at = self.loc[flat].max(horizons[self.hidx[flat] as usize]);
            let unready = at == u64::MAX || (at > now && !self.scan_all);
            if unready || id.flat == paired || (any_pending && self.refresh_blocks(id)) {
                continue;
            }
            if let Some(mut k) = self.sched.key(&p.candidate(at), now) {
                if demote_engine && p.engine {
                    k.0 += 2;
                }
                if best.is_none_or(|(bk, _, _)| k < bk) {
                    best = Some((k, at, flat));
                }
            }
        }
        // Strict FCFS ranks the unready too: only the oldest such PRE, when ready, issues.
        if let Some(p) = best
            .filter(|&(_, at, _)| at <= now)
            .and_then(|(_, _, flat)| self.bank_command(flat))
        {
            self.issue(p, now, log);
        }
    }

    /// Bank `flat`'s candidate as the command to issue.
    fn bank_command(&self, flat: usize) -> Option<Pending> {
        self.slots[flat].cand.map(|c| Pending {
            kind: c.kind,
            bank: self.slots[flat].id,
            row: c.row,
            col: c.col,
            dst: None,
            source: Source::Entry(c.entry),
        })
    }

    /// Whether a refresh that is due keeps a bank of job `ji` from taking its commands.
    fn job_blocked(&self, ji: usize) -> bool {
        self.jobs[ji]
            .1
            .banks()
            .iter()
            .flatten()
            .any(|&f| self.refresh_blocks(self.dev.bank_from_flat(f)))
    }

    /// Whether a refresh that is due keeps bank `b` from taking other commands: every bank of
    /// the rank for all-bank refresh, the banks of the bank index being refreshed for same-bank.
    #[inline]
    fn refresh_blocks(&self, b: BankId) -> bool {
        let r = b.rank as usize;
        if self.raaimt > 0 && self.rfm_pending[r] {
            let target = self.rfm_target[r] + b.rank * self.dev.banks_per_rank();
            if self.rfm_scope.blocks(self.dev.bank_from_flat(target), b) {
                return true;
            }
        }
        self.refresh_pending[r]
            && if self.per_bank {
                // The bank named, or (where REFPB refreshes pairs) its partner.
                let per = self.dev.banks_per_rank();
                b.flat % per == self.sb_next[r]
                    || self.dev.refpb_partner(b).flat % per == self.sb_next[r]
            } else {
                !self.same_bank || b.bank == self.sb_next[r]
            }
    }

    /// Refresh commands per rank per nREFI: bank indices (same-bank), banks or bank pairs
    /// (per-bank), or 1.
    fn refresh_steps(&self) -> u32 {
        if self.per_bank {
            self.dev.banks_per_rank() / if self.dev.refpb_pairs() { 2 } else { 1 }
        } else if self.same_bank {
            self.dev.banks_per_group()
        } else {
            1
        }
    }

    /// The next command a due refresh of rank `r` needs: (kind, bank, row). All-bank: PREA while
    /// any bank is open, then REF. Same-bank: PRE each open bank of the bank index, then REFSB.
    /// Per-bank: PRE the bank (and the other bank of its pair, where REFPB refreshes pairs) if
    /// open, then REFPB.
    fn refresh_command(&self, r: u32) -> (CommandKind, BankId, u32) {
        if self.per_bank {
            let b = self
                .dev
                .bank_from_flat(r * self.dev.banks_per_rank() + self.sb_next[r as usize]);
            let partner = self.dev.refpb_partner(b);
            for x in [b, partner] {
                if let Some(row) = self.dev.open_row(x) {
                    return (CommandKind::Pre, x, row);
                }
            }
            return (CommandKind::Refpb, b, 0);
        }
        if self.same_bank {
            let i = self.sb_next[r as usize];
            for g in 0..self.dev.bank_groups() {
                let b = self.dev.bank_id(r, g, i);
                if let Some(row) = self.dev.open_row(b) {
                    return (CommandKind::Pre, b, row);
                }
            }
            return (CommandKind::Refsb, self.dev.bank_id(r, 0, i), 0);
        }
        let b0 = self.dev.bank_id(r, 0, 0);
        if self.dev.any_open(r) {
            (CommandKind::Prea, b0, 0)
        } else {
            (CommandKind::Ref, b0, 0)
        }
    }

    /// Issues the picked command `p` at `now` (through [`Self::issue_synced`]) and, on a channel with
    /// two command buses, what the other bus and the falling edge can take in the same clock.
    /// Returns whether a CAS went out instead of `p` (the caller's next tick is the next clock).
    #[inline(always)]
    fn issue_picked<'s>(
        &mut self,
        p: Pending,
        now: u64,
        log: &mut Option<&mut (dyn CommandSink + 's)>,
    ) -> bool {
        let kind = p.kind;
        if self.issue_synced(p, now, log) {
            return true;
        }
        if self.buses.is_some() {
            self.issue_on_other_bus(kind, now, log);
            self.issue_on_falling_edge(now, log);
        }
        false
    }

    /// Issues `p` at `now`, or, when it is a read or write that finds its rank's WCK stopped
    /// (LPDDR5 auto sync-off mode), a CAS at `now` and keeps `p` for the next clock's tick (see
    /// `paired`): `p` was ready at `now`, and nothing else issues in between, so it is ready then
    /// too. Returns whether it issued a CAS.
    fn issue_synced<'s>(
        &mut self,
        p: Pending,
        now: u64,
        log: &mut Option<&mut (dyn CommandSink + 's)>,
    ) -> bool {
        let needs_cas = self
            .wck
            .as_ref()
            .is_some_and(|w| uses_wck(p.kind) && w.needs_cas(p.bank.rank, now));
        if !needs_cas {
            self.issue(p, now, log);
            return false;
        }
        self.counters.commands[CommandKind::Cas.index()] += 1;
        self.pick = None;
        self.next_cmd_cycle = now + 1;
        self.paired = Some((now, p));
        if let Some(sink) = log.as_deref_mut() {
            sink.record(&CommandRecord {
                cycle: now,
                kind: CommandKind::Cas,
                channel: self.channel,
                rank: p.bank.rank,
                bank_group: p.bank.bank_group,
                bank: p.bank.bank,
                row: 0,
                column: 0,
                dst: None,
            });
        }
        true
    }

    fn issue<'s>(&mut self, p: Pending, now: u64, log: &mut Option<&mut (dyn CommandSink + 's)>) {
        let kind = p.kind;
        if let Some(w) = self.wck.as_mut() {
            w.issued(kind, p.bank.rank, now);
        }
        // A request's own command to one bank (nearly every command) skips the checks for the
        // other kinds in one test.
        let one_bank = p.dst.is_none() && kind.is_bank_access();
        if !one_bank {
            self.count_rows_before(&p);
        }
        if one_bank {
            self.dev.issue_access(kind, p.bank, p.row, now);
        } else {
            self.dev
                .issue(kind, p.bank, p.row, p.dst.map(|(b, r, _)| (b, r)), now);
        }
        self.pick = None;
        // A request's own command to one bank (nearly every command): its bank's next candidate
        // is computed at the end, once the command's state changes are in, instead of marking the
        // bank for the pass to recompute (a candidate depends only on the bank's queue, open row,
        // activated request and the queue mode, none of which moves between here and the pass;
        // a queue-mode switch marks every bank anyway). After a PRE or an ACT it is known without
        // looking at the queue (`known_candidate`). Any other command's bank is marked.
        let flat = p.bank.flat as usize;
        let known = one_bank && matches!(p.source, Source::Entry(_));
        if !known {
            self.mark_dirty(flat);
        }
        self.refresh_locals(kind, p.bank);
        if matches!(kind, CommandKind::Pre | CommandKind::Rda | CommandKind::Wra) {
            // The row closed: nothing activated waits on it any more.
            self.slots[p.bank.flat as usize].activated = None;
        }
        if !one_bank {
            self.mark_other_banks(&p);
        }
        if self.raaimt > 0 {
            self.manage_refresh(kind, p.bank);
        }
        if !one_bank
            && matches!(
                kind,
                CommandKind::Prea | CommandKind::Ref | CommandKind::Rfm
            )
        {
            let per_rank = self.dev.banks_per_rank();
            for f in p.bank.rank * per_rank..(p.bank.rank + 1) * per_rank {
                self.mark_dirty(f as usize);
                self.slots[f as usize].activated = None;
            }
        }
        self.counters.commands[kind.index()] += 1;
        match (p.source, kind) {
            (Source::Refresh, CommandKind::Ref) => {
                let r = p.bank.rank as usize;
                let late = now.saturating_sub(self.refresh_due[r]);
                self.last_ref[r] = [self.last_ref[r][1], now];
                self.ref_late[r] = [self.ref_late[r][1], late];
            }
            (Source::Refresh, _) => {}
            _ => self.last_work = now,
        }
        self.next_cmd_cycle = now + 1;
        if let Some(sink) = log.as_deref_mut() {
            sink.record(&CommandRecord {
                cycle: now,
                kind,
                channel: self.channel,
                rank: p.bank.rank,
                bank_group: p.bank.bank_group,
                bank: p.bank.bank,
                row: if matches!(
                    kind,
                    CommandKind::Prea
                        | CommandKind::Ref
                        | CommandKind::Refsb
                        | CommandKind::Refpb
                        | CommandKind::Rfm
                        | CommandKind::Rfmsb
                        | CommandKind::Rfmpb
                ) {
                    0
                } else {
                    p.row
                },
                column: p.col,
                dst: p.dst.map(|(b, r, c)| TransferDst {
                    bank_group: b.bank_group,
                    bank: b.bank,
                    row: r,
                    column: c,
                }),
            });
        }
        match p.source {
            Source::Entry(i) => match kind {
                CommandKind::Act => {
                    self.slab[i as usize].needed_act = true;
                    if self.keep_activated {
                        self.slots[p.bank.flat as usize].activated = Some(i);
                    }
                }
                CommandKind::Pre => self.slab[i as usize].needed_pre = true,
                _ => self.complete_entry(i, now),
            },
            Source::Job(ji) => self.advance_job(ji, kind, now),
            Source::Refresh => {}
        }
        if known {
            match self.known_candidate(flat, kind) {
                Some(cand) => self.set_candidate(flat, cand),
                None => self.clean(flat),
            }
        }
    }

    /// Before a command other than a request's own to one bank issues: the banks a PREA closes
    /// and the rows an ACTM raises besides the open one, counted while the rows are still open.
    #[inline(never)]
    fn count_rows_before(&mut self, p: &Pending) {
        if p.kind == CommandKind::Prea {
            let per_rank = self.dev.banks_per_rank();
            let base = p.bank.rank * per_rank;
            self.counters.banks_closed_by_prea += (base..base + per_rank)
                .filter(|&f| self.dev.open_row(self.dev.bank_from_flat(f)).is_some())
                .count() as u64;
        }
        if p.kind == CommandKind::Actm {
            if let Some(open) = self.dev.open_row(p.bank) {
                self.counters.mrc_rows += (1u64 << (open ^ p.row).count_ones()) - 1;
            }
        }
    }

    /// After a command other than a request's own to one bank issued: the other banks it moved
    /// (a transfer's destination; the banks a per-bank or same-bank refresh or RFM covers) are
    /// re-evaluated, and those it refreshed hold no activated request any more.
    #[inline(never)]
    fn mark_other_banks(&mut self, p: &Pending) {
        let kind = p.kind;
        if let Some((d, _, _)) = p.dst {
            if d.rank != p.bank.rank {
                self.refresh_locals(kind, d);
            }
            self.mark_dirty(d.flat as usize);
        }
        if matches!(kind, CommandKind::Refpb | CommandKind::Rfmpb) {
            self.slots[p.bank.flat as usize].activated = None;
            let partner = self.dev.refpb_partner(p.bank).flat as usize;
            self.mark_dirty(partner);
            self.slots[partner].activated = None;
        }
        if matches!(kind, CommandKind::Refsb | CommandKind::Rfmsb) {
            for g in 0..self.dev.bank_groups() {
                let f = self.dev.bank_id(p.bank.rank, g, p.bank.bank).flat;
                self.mark_dirty(f as usize);
                self.slots[f as usize].activated = None;
            }
        }
    }

    fn complete_entry(&mut self, i: u32, now: u64) {
        let e = self.slab[i as usize];
        let flat = e.bank.flat as usize;
        if self.slots[flat].activated == Some(i) {
            self.slots[flat].activated = None;
        }
        let q = if e.op == Op::Read {
            &mut self.rq[flat]
        } else {
            &mut self.wq[flat]
        };
        q.remove(i);
        self.free.push(i);
        if self.bypass {
            self.account_share(e.engine);
        }
        let c = &mut self.counters;
        if e.needed_pre {
            c.row.conflicts += 1;
        } else if e.needed_act {
            c.row.misses += 1;
        } else {
            c.row.hits += 1;
        }
        let done_at = if e.op == Op::Read {
            self.rq_len -= 1;
            c.reads += 1;
            let t = now + self.n_cl + self.n_bl;
            c.read_latency.add(t - e.arrival);
            t
        } else {
            self.wq_len -= 1;
            c.writes += 1;
            let t = now + self.n_cwl + self.n_bl;
            c.write_latency.add(t - e.arrival);
            // A bulk write is done once its data is in the cells and its bank could close again.
            if matches!(e.tag, Tag::BulkLine { .. }) {
                t + self.n_wr + self.n_rp
            } else {
                t
            }
        };
        c.last_done = c.last_done.max(done_at);
        if e.tag != Tag::Trace {
            self.done.push(Done {
                time: done_at,
                tag: e.tag,
                op: e.op,
            });
        }
    }

    /// Counts a column command towards the engine's share; when the engine falls below (or rises
    /// back to) its guaranteed share, every bank's candidate is re-evaluated.
    fn account_share(&mut self, engine: bool) {
        self.win_total += 1;
        self.win_engine += u32::from(engine);
        if self.win_total >= 64 {
            self.win_total /= 2;
            self.win_engine /= 2;
        }
        let turn = f64::from(self.win_engine) < self.engine_share * f64::from(self.win_total);
        if turn != self.engine_turn {
            self.engine_turn = turn;
            self.mark_all_dirty();
        }
    }

    fn advance_job(&mut self, ji: usize, kind: CommandKind, now: u64) {
        let finished = {
            let job = &mut self.jobs[ji].1;
            match &mut job.kind {
                JobKind::Fpm { copied, .. } => {
                    if kind == CommandKind::Actc {
                        *copied = true;
                    }
                }
                JobKind::Mrc { copied, .. } => {
                    if kind == CommandKind::Actm {
                        *copied = true;
                    }
                }
                JobKind::Psm { next, .. } => {
                    if kind == CommandKind::Tr {
                        *next += 1;
                    }
                }
            }
            kind == CommandKind::Pre
        };
        if finished && self.job_next(ji).is_none() {
            self.finish_job(ji, now + self.n_rp);
        }
    }

    fn finish_job(&mut self, ji: usize, t: u64) {
        let (seq, job) = self.jobs.swap_remove(ji);
        for b in job.banks().iter().flatten() {
            self.slots[*b as usize].owned = false;
            self.mark_dirty(*b as usize);
        }
        self.waiting_jobs.mark_dirty();
        self.counters.last_done = self.counters.last_done.max(t);
        match job.then {
            Some(next) => self.waiting_jobs.push_front(seq, next.banks(), *next),
            None => self.done.push(Done {
                time: t,
                tag: Tag::BulkJob { op: job.op },
                op: Op::Write,
            }),
        }
    }

    /// Accounts for the refreshes of an idle gap without visiting them: with nothing queued and
    /// every bank precharged, refresh is periodic (once a rank's last two REFs both came after
    /// the last other command, equally late after their due cycles, every later one issues
    /// nREFI after the one before), so the REFs falling between
    /// now and `until` can be counted instead of simulated. A trace whose next arrival is far
    /// away then costs nothing to run. The last refresh of each rank before `until` is left to
    /// be simulated, so the device's timing state at `until` is exactly what a cycle-by-cycle
    /// run would leave. Elided REFs go to the command log as one line per rank (see
    /// [`CommandSink::idle_refreshes`]). Returns the number of REFs elided.
    pub fn skip_idle_refreshes<'s>(
        &mut self,
        now: u64,
        until: u64,
        log: Option<&mut (dyn CommandSink + 's)>,
    ) -> u64 {
        // Same-bank (REFSB) and per-bank refresh (REFPB) are due bank by bank at uneven steps:
        // visited, not elided.
        if !self.refresh || self.same_bank || self.per_bank || !self.idle() {
            return 0;
        }
        let refi = self.n_refi;
        let mut k = u64::MAX;
        for r in 0..self.refresh_due.len() {
            // Periodic only once this rank refreshed after the last other command, with its
            // banks closed and no refresh owed.
            if self.refresh_pending[r]
                || self.rfm_pending[r]
                || self.dev.any_open(r as u32)
                || self.last_ref[r][0] <= self.last_work
                || self.ref_late[r][0] != self.ref_late[r][1]
                || self.refresh_due[r] <= now
            {
                return 0;
            }
            // Elide REFs due at due, due + refi, ... while one more still falls before `until`.
            let room = until.saturating_sub(self.refresh_due[r]) / refi;
            k = k.min(room.saturating_sub(1));
        }
        if k == 0 || k == u64::MAX {
            return 0;
        }
        let mut log = log;
        for r in 0..self.refresh_due.len() {
            // Each REF issues as late after its due cycle as the last two did.
            let first = self.refresh_due[r] + self.ref_late[r][1];
            if let Some(sink) = log.as_deref_mut() {
                sink.idle_refreshes(self.channel, r as u32, first, k, refi);
            }
            self.dev.periodic_refreshes(r as u32, first, k, refi);
            if self.raaimt > 0 {
                // Each elided REF lowers every bank's count by RAAIMT, as an issued one does.
                let down =
                    u32::try_from(k.saturating_mul(u64::from(self.raaimt))).unwrap_or(u32::MAX);
                let per = self.dev.banks_per_rank() as usize;
                for c in &mut self.raa[r * per..(r + 1) * per] {
                    *c = c.saturating_sub(down);
                }
            }
            let last = first + (k - 1) * refi;
            self.last_ref[r] = [last - refi, last];
            self.refresh_due[r] += k * refi;
        }
        self.note_refresh_state();
        let elided = k * self.refresh_due.len() as u64;
        self.counters.commands[CommandKind::Ref.index()] += elided;
        elided
    }

    /// Refresh management after issuing `kind` to `b`: an activation adds one to the bank's
    /// rolling accumulated ACT count and owes the rank an RFM once the count reaches RAAIMT; a
    /// REF or RFM lowers every bank's count of the rank by RAAIMT, a REFSB or REFPB the counts of
    /// the banks it refreshes (JESD79-5 4.41: RAA decrement per REF = RAAIMT, MR59 default).
    fn manage_refresh(&mut self, kind: CommandKind, b: BankId) {
        let imt = self.raaimt;
        let r = b.rank as usize;
        let per = self.dev.banks_per_rank();
        match kind {
            CommandKind::Act | CommandKind::Actc | CommandKind::Actm => {
                let c = &mut self.raa[b.flat as usize];
                *c += 1;
                if *c >= imt && !self.rfm_pending[r] {
                    self.rfm_pending[r] = true;
                    self.rfm_target[r] = b.flat % per;
                }
                return;
            }
            CommandKind::Ref | CommandKind::Rfm => {
                for c in &mut self.raa[(r * per as usize)..((r + 1) * per as usize)] {
                    *c = c.saturating_sub(imt);
                }
            }
            _ => match refreshed_banks(&self.dev, kind, b) {
                // REFSB / RFMSB, REFPB / RFMPB: the banks they refresh.
                Some(banks) => {
                    for f in banks {
                        self.raa[f as usize] = self.raa[f as usize].saturating_sub(imt);
                    }
                }
                None => return,
            },
        }
        let banks = &self.raa[(r * per as usize)..((r + 1) * per as usize)];
        let owing = owing_bank(banks, imt);
        self.rfm_pending[r] = owing.is_some();
        if let Some(i) = owing {
            self.rfm_target[r] = i;
        }
    }

    /// Jobs whose banks a refresh closed after their last data moved are finished by it.
    fn sweep_jobs(&mut self, now: u64) {
        let mut ji = 0;
        while ji < self.jobs.len() {
            let moved = match &self.jobs[ji].1.kind {
                JobKind::Fpm { copied, .. } | JobKind::Mrc { copied, .. } => *copied,
                JobKind::Psm { cols, next, .. } => *next >= cols.len(),
            };
            if moved && self.job_next(ji).is_none() {
                self.finish_job(ji, now);
            } else {
                ji += 1;
            }
        }
    }

    /// Settles time-weighted accounting at the end of a run.
    pub fn finish(&mut self, end: u64) {
        self.dev.settle_activity(end);
    }
}
