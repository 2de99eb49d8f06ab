//! Typed units. Simulated time is an integer count of DRAM clock cycles ([`Cycle`]); wall-clock
//! quantities are integer picoseconds ([`Picos`]); sizes are [`Bytes`]. Mixing them does not compile.
use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign, Sub};

macro_rules! unit {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);
        impl Add for $name {
            type Output = $name;
            #[inline]
            fn add(self, o: $name) -> $name { $name(self.0 + o.0) }
        }
        impl AddAssign for $name {
            #[inline]
            fn add_assign(&mut self, o: $name) { self.0 += o.0 }
        }
        impl Sub for $name {
            type Output = $name;
            #[inline]
            fn sub(self, o: $name) -> $name { $name(self.0.saturating_sub(o.0)) }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { self.0.fmt(f) }
        }
    };
}

unit!(
    /// A count of DRAM command-clock cycles (tCK).
    Cycle
);
unit!(
    /// Picoseconds.
    Picos
);
unit!(
    /// A size in bytes.
    Bytes
);

impl Cycle {
    /// The wall-clock length of this many cycles at clock period `tck`.
    #[inline]
    pub fn to_picos(self, tck: Picos) -> Picos {
        Picos(self.0 * tck.0)
    }
}

impl Picos {
    /// Nanoseconds as a float, for reports.
    pub fn as_ns(self) -> f64 {
        self.0 as f64 / 1000.0
    }
    /// The number of whole cycles of period `tck` needed to cover this time (rounded up).
    pub fn to_cycles_ceil(self, tck: Picos) -> Cycle {
        Cycle(self.0.div_ceil(tck.0.max(1)))
    }
}
