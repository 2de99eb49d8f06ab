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

/// Picks among candidates.
pub trait Scheduler: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether each bank should offer its oldest row hit (true) or strictly its oldest request.
    fn offers_row_hits(&self) -> bool;
    /// The index of the candidate to issue at `now`, if any may issue.
    fn pick(&self, cands: &[Candidate], now: u64) -> Option<usize>;
}

/// Builds the scheduler named `name` (one of [`SCHEDULERS`]).
pub fn build(name: &str) -> Option<Box<dyn Scheduler>> {
    match name {
        "frfcfs" => Some(Box::new(FrFcfs)),
        "fcfs" => Some(Box::new(Fcfs)),
        _ => None,
    }
}
