//! The instruction window's storage: a first-in first-out ring of entries whose capacity is a
//! power of two, so that the `i`-th entry from the head lives at slot `(head + i) & mask`. The
//! core's tick indexes its window many times per cycle (retire, issue scan, operand lookups,
//! wake-ups); a `VecDeque` pays a bounds check against its length and a wrap-around compare on
//! every index, this one a mask. The hot loops ask once for an entry's slot
//! ([`Window::slot`]) and then read and write it through [`Window::at`] and [`Window::at_mut`].
//! It grows (doubling, entries kept in order) when full, so it holds any number of entries.

/// A FIFO ring of `T` indexed from its oldest entry.
#[derive(Debug, Clone)]
pub struct Window<T> {
    buf: Vec<T>,
    /// Slot of the oldest entry.
    head: usize,
    len: usize,
    /// `buf.len() - 1` (the capacity is a power of two, at least 1).
    mask: usize,
}

impl<T: Copy + Default> Default for Window<T> {
    fn default() -> Self {
        Window::with_capacity(64)
    }
}

impl<T: Copy + Default> Window<T> {
    /// An empty window with room for `cap` entries (rounded up to a power of two) before it grows.
    pub fn with_capacity(cap: usize) -> Window<T> {
        let cap = cap.max(1).next_power_of_two();
        Window {
            buf: vec![T::default(); cap],
            head: 0,
            len: 0,
            mask: cap - 1,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The storage slot of the `i`-th entry from the head (`i` below [`Window::len`]).
    #[inline]
    pub fn slot(&self, i: usize) -> usize {
        debug_assert!(
            i < self.len,
            "window index {i} past its {} entries",
            self.len
        );
        (self.head + i) & self.mask
    }

    /// The entry in slot `s` (from [`Window::slot`]).
    #[inline]
    pub fn at(&self, s: usize) -> &T {
        &self.buf[s]
    }

    #[inline]
    pub fn at_mut(&mut self, s: usize) -> &mut T {
        &mut self.buf[s]
    }

    /// The `i`-th entry from the head, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len).then(|| &self.buf[(self.head + i) & self.mask])
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    #[inline]
    pub fn push_back(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let s = (self.head + self.len) & self.mask;
        self.buf[s] = v;
        self.len += 1;
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        Some(v)
    }

    /// Removes the oldest entry, if any, without reading it (a retiring entry is read in place
    /// first).
    #[inline]
    pub fn drop_front(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) & self.mask;
            self.len -= 1;
        }
    }

    /// Doubles the capacity, the entries moved to slots 0.. in order.
    #[cold]
    fn grow(&mut self) {
        let cap = self.buf.len() * 2;
        let mut buf = Vec::with_capacity(cap);
        buf.extend(self.iter().copied());
        buf.resize(cap, T::default());
        self.buf = buf;
        self.head = 0;
        self.mask = cap - 1;
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).map(move |i| &self.buf[(self.head + i) & self.mask])
    }

    /// Applies `f` to every entry.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut T)) {
        for i in 0..self.len {
            let s = (self.head + i) & self.mask;
            f(&mut self.buf[s]);
        }
    }
}

impl<T: Copy + Default> std::ops::Index<usize> for Window<T> {
    type Output = T;
    /// The `i`-th entry from the head; panics past the last one.
    #[inline]
    fn index(&self, i: usize) -> &T {
        assert!(
            i < self.len,
            "window index {i} past its {} entries",
            self.len
        );
        &self.buf[(self.head + i) & self.mask]
    }
}

impl<T: Copy + Default> std::ops::IndexMut<usize> for Window<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(
            i < self.len,
            "window index {i} past its {} entries",
            self.len
        );
        let s = (self.head + i) & self.mask;
        &mut self.buf[s]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    proptest! {
        /// Against a `VecDeque`, through wrap-around and growth from a small capacity: length,
        /// every index, slot access, the front, the in-order walk and what leaves agree.
        #[test]
        fn matches_a_vecdeque(cap in 1usize..9, ops in prop::collection::vec((0u8..5, 0u32..1000), 1..400)) {
            let mut w: Window<u32> = Window::with_capacity(cap);
            let mut r: VecDeque<u32> = VecDeque::new();
            for (op, x) in ops {
                match op {
                    0 | 1 => {
                        w.push_back(x);
                        r.push_back(x);
                    }
                    2 => prop_assert_eq!(w.pop_front(), r.pop_front()),
                    3 if x % 2 == 0 => {
                        w.drop_front();
                        r.pop_front();
                    }
                    3 if !r.is_empty() => {
                        let i = x as usize % r.len();
                        r[i] = x + 1;
                        let s = w.slot(i);
                        *w.at_mut(s) = x + 1;
                    }
                    _ => {
                        w.for_each_mut(|v| *v += 2);
                        r.iter_mut().for_each(|v| *v += 2);
                    }
                }
                prop_assert_eq!(w.len(), r.len());
                prop_assert_eq!(w.is_empty(), r.is_empty());
                prop_assert_eq!(w.front(), r.front());
                for i in 0..r.len() + 2 {
                    prop_assert_eq!(w.get(i), r.get(i));
                }
                for i in 0..r.len() {
                    prop_assert_eq!(w[i], r[i]);
                    prop_assert_eq!(*w.at(w.slot(i)), r[i]);
                }
                prop_assert_eq!(w.iter().copied().collect::<Vec<_>>(), r.iter().copied().collect::<Vec<_>>());
            }
        }
    }

    #[test]
    #[should_panic(expected = "window index 2 past its 2 entries")]
    fn an_index_past_the_last_entry_is_refused() {
        let mut w: Window<u8> = Window::with_capacity(4);
        w.push_back(1);
        w.push_back(2);
        let _ = w[2];
    }
}
