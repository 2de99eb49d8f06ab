//! Command schedulers: given one candidate command per bank (and per bulk job), pick the one to
//! issue this cycle. Each scheduler lives in a file of its own and is chosen by name.
mod fcfs;
mod frfcfs;

pub use fcfs::Fcfs;
pub use frfcfs::FrFcfs;

/// The scheduler names a config may use.
pub const SCHEDULERS: &[&str] = &["frfcfs", "fcfs"];

/// A command some queued request (or bulk job) needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Arrival order of the request or job (smaller is older).
    pub seq: u64,
    /// A column command (RD/WR/TR) that uses an already open row.
    pub is_hit: bool,
    /// The first cycle at which the timing rules allow it.
    pub ready_at: u64,
}

/// Picks among candidates: each scheduler ranks a candidate by a key (smaller is better, `None`
/// when it may not be chosen now); the best-ranked candidate issues if its timing allows.
pub trait Scheduler: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether each bank should offer its oldest row hit (true) or strictly its oldest request.
    fn offers_row_hits(&self) -> bool;
    /// Whether candidates that cannot issue yet still matter to the choice (strict FCFS: the
    /// oldest request blocks younger ones). When false, the controller skips banks it knows are
    /// not ready.
    fn considers_unready(&self) -> bool {
        false
    }
    /// The candidate's rank at `now`: smaller is preferred; `None` excludes it.
    fn key(&self, c: &Candidate, now: u64) -> Option<(u8, u64)>;
    /// The index of the candidate to issue at `now`, if any may issue.
    fn pick(&self, cands: &[Candidate], now: u64) -> Option<usize> {
        let mut best: Option<(usize, (u8, u64))> = None;
        for (i, c) in cands.iter().enumerate() {
            if let Some(k) = self.key(c, now) {
                if best.is_none_or(|(_, bk)| k < bk) {
                    best = Some((i, k));
                }
            }
        }
        let (i, _) = best?;
        (cands[i].ready_at <= now).then_some(i)
    }
}

/// One of the schedulers, dispatched statically: the controller asks for a key for every ready
/// candidate of every pass, and an indirect call returning through memory cost more than the
/// comparison itself.
pub enum AnyScheduler {
    FrFcfs(FrFcfs),
    Fcfs(Fcfs),
}

impl AnyScheduler {
    /// The scheduler this one wraps.
    #[inline]
    pub fn get(&self) -> &dyn Scheduler {
        match self {
            AnyScheduler::FrFcfs(s) => s,
            AnyScheduler::Fcfs(s) => s,
        }
    }

    /// [`Scheduler::key`] without the indirect call.
    #[inline]
    pub fn key(&self, c: &Candidate, now: u64) -> Option<(u8, u64)> {
        match self {
            AnyScheduler::FrFcfs(s) => s.key(c, now),
            AnyScheduler::Fcfs(s) => s.key(c, now),
        }
    }
}

/// Builds the scheduler named `name` (one of [`SCHEDULERS`]).
pub fn build(name: &str) -> Option<AnyScheduler> {
    match name {
        "frfcfs" => Some(AnyScheduler::FrFcfs(FrFcfs)),
        "fcfs" => Some(AnyScheduler::Fcfs(Fcfs)),
        _ => None,
    }
}
