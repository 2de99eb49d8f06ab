//! The event queue: timed events in picoseconds. The run loop pops the earliest event
//! and jumps straight to it, so idle time costs nothing. Events at the same time come out in the
//! order they were scheduled, which keeps every run deterministic.
use super::time::Ps;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A priority queue of `(time, event)` with FIFO order among equal times.
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(Ps, u64, usize)>>,
    slots: Vec<Option<E>>,
    free: Vec<usize>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `event` at `time`.
    pub fn push(&mut self, time: Ps, event: E) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(event);
                i
            }
            None => {
                self.slots.push(Some(event));
                self.slots.len() - 1
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((time, self.seq, slot)));
    }

    /// The time of the earliest event.
    pub fn peek_time(&self) -> Option<Ps> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Removes and returns the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Ps) -> Option<(Ps, E)> {
        let &Reverse((t, _, slot)) = self.heap.peek()?;
        if t > now {
            return None;
        }
        self.heap.pop();
        self.free.push(slot);
        self.slots[slot].take().map(|e| (t, e))
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_fifo_order() {
        let mut q = EventQueue::new();
        q.push(30, 'c');
        q.push(10, 'a');
        q.push(10, 'b');
        q.push(20, 'x');
        assert_eq!(q.pop_due(5), None);
        assert_eq!(q.pop_due(100), Some((10, 'a')));
        assert_eq!(q.pop_due(100), Some((10, 'b')));
        assert_eq!(q.pop_due(100), Some((20, 'x')));
        assert_eq!(q.peek_time(), Some(30));
        assert_eq!(q.pop_due(29), None);
        assert_eq!(q.pop_due(30), Some((30, 'c')));
        assert!(q.is_empty());
    }
}
