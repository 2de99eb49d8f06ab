//! Digests for golden files: FNV-1a over numbers and text, and a DRAM command sink that folds a
//! whole command log into one digest. Two builds whose golden lines are equal ran the same
//! simulations to the same results; a refactor proves it changed nothing by leaving them equal.
use movelab_dram::command::{CommandRecord, CommandSink};
use std::sync::{Arc, Mutex};

/// FNV-1a (64 bit).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn new() -> Fnv {
        Fnv::default()
    }

    /// Folds in the eight little-endian bytes of `v`.
    pub fn eat(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }

    /// The digest of `text`, one byte per step widened to a word (the platform digests' historic
    /// form, kept so their golden lines stay comparable).
    pub fn text(text: &str) -> u64 {
        let mut d = Fnv::new();
        for b in text.bytes() {
            d.eat(u64::from(b));
        }
        d.0
    }
}

/// A command sink that folds every command into a shared digest and counts them.
pub struct CommandLogDigest(pub Arc<Mutex<(Fnv, u64)>>);

impl CommandLogDigest {
    /// A sink and the cell it writes to.
    pub fn new() -> (CommandLogDigest, Arc<Mutex<(Fnv, u64)>>) {
        let cell = Arc::new(Mutex::new((Fnv::new(), 0u64)));
        (CommandLogDigest(cell.clone()), cell)
    }
}

impl CommandSink for CommandLogDigest {
    fn record(&mut self, r: &CommandRecord) {
        let Ok(mut g) = self.0.lock() else { return };
        g.1 += 1;
        let d = &mut g.0;
        d.eat(r.cycle);
        d.eat(r.kind.index() as u64);
        d.eat(
            u64::from(r.channel) << 48
                | u64::from(r.rank) << 32
                | u64::from(r.bank_group) << 16
                | u64::from(r.bank),
        );
        d.eat(u64::from(r.row) << 32 | u64::from(r.column));
        if let Some(x) = r.dst {
            d.eat(u64::from(x.bank_group) << 48 | u64::from(x.bank) << 32 | u64::from(x.row));
            d.eat(u64::from(x.column));
        }
    }
}

/// `value` as JSON text with wall-clock fields (`wall_s`, measured, never simulated) removed,
/// so its digest depends on the simulation alone.
pub fn simulated_json(value: &serde_json::Value) -> String {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("wall_s");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = value.clone();
    strip(&mut v);
    serde_json::to_string(&v).unwrap_or_default()
}
