//! A bounded, lock-free multi-producer / single-consumer descriptor ring.
//!
//! Each slot carries a sequence number (the scheme of D. Vyukov's bounded queue): a producer
//! claims position `p` with a CAS on `tail` once slot `p % cap` has sequence `p`, writes the
//! descriptor and publishes it by storing sequence `p + 1`; the consumer takes position `c` when
//! the slot's sequence is `c + 1`, and frees the slot for the next lap with sequence `c + cap`.
//! No locks, no allocation after construction, and a full ring is reported to the producer
//! (back-pressure) instead of growing.
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Pads a value to its own cache line so that producer and consumer counters do not false-share.
#[repr(align(128))]
struct Padded<T>(T);

struct Slot<T> {
    seq: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// The ring. `push` may be called from any thread; `pop` from one consumer thread at a time.
pub struct Ring<T> {
    slots: Box<[Slot<T>]>,
    mask: usize,
    tail: Padded<AtomicUsize>,
    head: Padded<AtomicUsize>,
}

// SAFETY: values move between threads through the ring (T: Send); slot access is serialised by
// the sequence protocol, so no two threads touch one slot's value at the same time.
unsafe impl<T: Send> Send for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Ring<T> {}

impl<T> Ring<T> {
    /// A ring with room for `capacity` descriptors (rounded up to a power of two, at least 2).
    pub fn new(capacity: usize) -> Self {
        let cap = capacity.max(2).next_power_of_two();
        let slots = (0..cap)
            .map(|i| Slot {
                seq: AtomicUsize::new(i),
                value: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect();
        Ring {
            slots,
            mask: cap - 1,
            tail: Padded(AtomicUsize::new(0)),
            head: Padded(AtomicUsize::new(0)),
        }
    }

    /// Capacity in descriptors.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Append a descriptor; gives it back when the ring is full.
    pub fn push(&self, value: T) -> Result<(), T> {
        let mut pos = self.tail.0.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos & self.mask];
            let seq = slot.seq.load(Ordering::Acquire);
            let diff = seq as isize - pos as isize;
            if diff == 0 {
                match self.tail.0.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: winning the CAS for `pos` gives this producer exclusive access
                        // to the slot until it publishes seq = pos + 1.
                        unsafe { (*slot.value.get()).write(value) };
                        slot.seq.store(pos + 1, Ordering::Release);
                        return Ok(());
                    }
                    Err(actual) => pos = actual,
                }
            } else if diff < 0 {
                return Err(value);
            } else {
                pos = self.tail.0.load(Ordering::Relaxed);
            }
        }
    }

    /// Take the oldest descriptor, if any. Only one thread may pop at a time.
    pub fn pop(&self) -> Option<T> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let slot = &self.slots[pos & self.mask];
        let seq = slot.seq.load(Ordering::Acquire);
        if seq != pos + 1 {
            return None;
        }
        self.head.0.store(pos + 1, Ordering::Relaxed);
        // SAFETY: seq == pos + 1 means a producer published this slot and no one else reads it
        // (single consumer); the value is moved out exactly once before the slot is recycled.
        let value = unsafe { (*slot.value.get()).assume_init_read() };
        slot.seq.store(pos + self.mask + 1, Ordering::Release);
        Some(value)
    }

    /// Is there nothing to pop right now?
    pub fn is_empty(&self) -> bool {
        let pos = self.head.0.load(Ordering::Acquire);
        self.slots[pos & self.mask].seq.load(Ordering::Acquire) != pos + 1
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        while self.pop().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_and_full() {
        let r = Ring::new(4);
        for i in 0..4 {
            r.push(i).unwrap();
        }
        assert_eq!(r.push(9), Err(9));
        assert_eq!(r.pop(), Some(0));
        r.push(4).unwrap();
        assert_eq!(
            (1..=4).map(|_| r.pop().unwrap()).collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        assert!(r.pop().is_none());
        assert!(r.is_empty());
    }

    #[test]
    fn drops_leftovers() {
        let marker = Arc::new(());
        let r = Ring::new(8);
        for _ in 0..5 {
            r.push(marker.clone()).unwrap();
        }
        drop(r);
        assert_eq!(Arc::strong_count(&marker), 1);
    }

    #[test]
    fn many_producers_every_item_once() {
        let r = Arc::new(Ring::new(64));
        let producers: Vec<_> = (0..3u64)
            .map(|p| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let mut v = p << 32 | i;
                        while let Err(back) = r.push(v) {
                            v = back;
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u64; 3];
        let mut got = 0;
        while got < 60_000 {
            if let Some(v) = r.pop() {
                let (p, i) = ((v >> 32) as usize, v & 0xffff_ffff);
                assert_eq!(next[p], i, "per-producer order");
                next[p] += 1;
                got += 1;
            } else {
                std::thread::yield_now();
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        assert!(r.pop().is_none());
    }
}
