//! Simulated time: integer picoseconds, and the conversion from the nanoseconds configs give.

/// Simulated time in picoseconds.
pub type Ps = u64;

/// Converts nanoseconds (a config value) to picoseconds.
pub fn ns(v: f64) -> Ps {
    (v * 1000.0).round() as Ps
}
