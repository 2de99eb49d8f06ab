//! Reading a trace ahead on a second thread, so that parsing overlaps simulation.
//!
//! [`read_ahead`] moves a stream's reader to its own thread, which parses items in chunks of
//! [`CHUNK_ITEMS`] and hands them over a channel that holds at most [`CHUNKS_IN_FLIGHT`] chunks:
//! the items come out in the same order, errors included, so a run sees exactly the trace it
//! would have read itself. What it changes is when the parsing happens: on a machine with a
//! spare core, beside the simulation rather than inside it. Wall time falls by the parsing's
//! share; CPU time does not (the same work is done, plus the hand-over), which is why the
//! speed figures report both.
//!
//! Memory stays bounded whatever the trace's length: at most `CHUNKS_IN_FLIGHT + 2` chunks are in
//! use at once (those in the channel, the one being filled, the one being read), about
//! `(CHUNKS_IN_FLIGHT + 2) * CHUNK_ITEMS * size_of::<TraceItem>()` bytes, and used chunks go back
//! to the reader thread to be filled again rather than being freed and allocated anew.
//!
//! The consumer may stop early (an error in the run, Ctrl-C): dropping the [`ReadAhead`]
//! disconnects the channel, and the reader thread ends at its next hand-over, dropping the stream
//! (and closing its file). The drop does not wait for it: a reader blocked on a slow pipe must not
//! hold up a run that has already stopped. A reader thread that ends without saying it finished (a
//! panic in a reader) is reported as an error item, never as a short trace.
use crate::error::TraceError;
use crate::request::TraceItem;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Items per chunk: large enough that the hand-over costs little per item, small enough that the
/// first chunk arrives at once (parsing 16,384 items takes about half a millisecond). The reader
/// is faster than the simulation, so it fills the channel and waits; each chunk the consumer
/// takes wakes it once, and on a virtual machine a wake-up costs several microseconds of the
/// consumer's time in the kernel. At 1,024 items those wake-ups were 3% of the simulating
/// thread's samples on 5 M random requests; at 16,384 they are a sixteenth of that.
pub const CHUNK_ITEMS: usize = 16384;

/// Chunks the channel holds before the reader thread waits for the consumer: one is enough to
/// keep the simulation fed (the reader fills the next while the consumer reads this one) and
/// keeps the memory in use at three chunks, at most 3 MiB (the test
/// `chunks_stay_within_three_mebibytes` bounds an item's size).
pub const CHUNKS_IN_FLIGHT: usize = 1;

/// What the reader thread hands over.
enum Msg {
    /// The next items, in trace order.
    Items(Vec<TraceItem>),
    /// The stream yielded this error; nothing follows it.
    Error(TraceError),
    /// The stream ended.
    End,
}

/// A trace stream read ahead by a second thread (see the module documentation). Yields what
/// the wrapped stream would have, in the same order.
pub struct ReadAhead {
    /// The stream itself, read in the caller's thread, when no thread could be started.
    inline: Option<Box<dyn Iterator<Item = Result<TraceItem, TraceError>> + Send>>,
    rx: Option<Receiver<Msg>>,
    /// Used chunks going back to the reader thread to be filled again (no allocation, and no
    /// page faults, per chunk).
    back: Option<SyncSender<Vec<TraceItem>>>,
    chunk: Vec<TraceItem>,
    /// The next item of `chunk` to hand out.
    pos: usize,
    /// An error (or the end) already received, handed out after the chunk before it.
    tail: Option<Option<TraceError>>,
    done: bool,
    /// The reader thread, detached when this is dropped.
    _worker: Option<JoinHandle<()>>,
}

/// Reads `stream` ahead on a new thread. Falls back to reading it in the caller's thread (the
/// same items, no thread) when the system cannot start one.
pub fn read_ahead<I>(stream: I) -> ReadAhead
where
    I: Iterator<Item = Result<TraceItem, TraceError>> + Send + 'static,
{
    let (tx, rx) = sync_channel(CHUNKS_IN_FLIGHT);
    let (back_tx, back_rx) = sync_channel(CHUNKS_IN_FLIGHT + 2);
    // The stream moves into the thread; if the thread cannot start, it is not lost: the
    // builder hands the closure back only through the error, so the stream is kept in a slot.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(stream)));
    let theirs = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("movelab-trace-reader".into())
        .spawn(move || {
            let stream = theirs.lock().ok().and_then(|mut s| s.take());
            if let Some(stream) = stream {
                produce(stream, &tx, &back_rx);
            }
        });
    match spawned {
        Ok(worker) => ReadAhead {
            inline: None,
            rx: Some(rx),
            back: Some(back_tx),
            chunk: Vec::new(),
            pos: 0,
            tail: None,
            done: false,
            _worker: Some(worker),
        },
        Err(_) => {
            // No thread: the stream is read in the caller's thread, item by item.
            let stream = slot.lock().ok().and_then(|mut s| s.take());
            ReadAhead {
                inline: stream.map(|s| Box::new(s) as Box<dyn Iterator<Item = _> + Send>),
                rx: None,
                back: None,
                chunk: Vec::new(),
                pos: 0,
                tail: None,
                done: false,
                _worker: None,
            }
        }
    }
}

/// The reader thread's loop: chunks until the stream ends, errs or the consumer goes away.
fn produce<I>(mut stream: I, tx: &SyncSender<Msg>, back: &Receiver<Vec<TraceItem>>)
where
    I: Iterator<Item = Result<TraceItem, TraceError>>,
{
    loop {
        let mut items = match back.try_recv() {
            Ok(mut v) => {
                v.clear();
                v
            }
            Err(_) => Vec::with_capacity(CHUNK_ITEMS),
        };
        let mut last = None;
        while items.len() < CHUNK_ITEMS {
            match stream.next() {
                Some(Ok(item)) => items.push(item),
                Some(Err(e)) => {
                    last = Some(Msg::Error(e));
                    break;
                }
                None => {
                    last = Some(Msg::End);
                    break;
                }
            }
        }
        if !items.is_empty() && tx.send(Msg::Items(items)).is_err() {
            return;
        }
        if let Some(m) = last {
            let _ = tx.send(m);
            return;
        }
    }
}

impl Iterator for ReadAhead {
    type Item = Result<TraceItem, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(&item) = self.chunk.get(self.pos) {
            self.pos += 1;
            return Some(Ok(item));
        }
        self.refill()
    }
}

impl ReadAhead {
    /// The current chunk is used up: the next one, or the error or end after it.
    #[cold]
    fn refill(&mut self) -> Option<Result<TraceItem, TraceError>> {
        if let Some(s) = self.inline.as_mut() {
            return s.next();
        }
        loop {
            if self.done {
                return None;
            }
            if let Some(tail) = self.tail.take() {
                self.done = true;
                return tail.map(Err);
            }
            let msg = match self.rx.as_ref().map(|rx| rx.recv()) {
                Some(Ok(m)) => m,
                // The thread ended without an end or an error: never a silently short trace.
                _ => Msg::Error(TraceError::Invalid(
                    "the trace reader thread stopped before the end of the trace".into(),
                )),
            };
            match msg {
                Msg::Items(items) => {
                    let used = std::mem::replace(&mut self.chunk, items);
                    self.pos = 0;
                    if let Some(back) = &self.back {
                        // Full or gone: the chunk is simply freed.
                        let _ = back.try_send(used);
                    }
                    if let Some(&item) = self.chunk.get(self.pos) {
                        self.pos += 1;
                        return Some(Ok(item));
                    }
                }
                Msg::Error(e) => self.tail = Some(Some(e)),
                Msg::End => self.tail = Some(None),
            }
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Disconnect, so that the reader thread gives up at its next hand-over (or at once, if it
        // is waiting to hand one over).
        self.rx = None;
        self.back = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Op, Request};

    fn req(i: u64) -> TraceItem {
        TraceItem::Req(Request {
            addr: i * 64,
            op: if i.is_multiple_of(5) {
                Op::Write
            } else {
                Op::Read
            },
            arrival: None,
        })
    }

    fn items(n: u64, err_at: Option<u64>) -> Vec<Result<TraceItem, TraceError>> {
        let mut v: Vec<_> = (0..n).map(|i| Ok(req(i))).collect();
        if let Some(e) = err_at {
            v.truncate(e as usize);
            v.push(Err(TraceError::Line {
                source_name: "t".into(),
                line: e as usize + 1,
                what: "bad".into(),
            }));
        }
        v
    }

    /// The same items in the same order, an error included and nothing after it, for lengths
    /// around the chunk boundaries.
    #[test]
    fn yields_what_the_stream_yields() {
        let c = CHUNK_ITEMS as u64;
        for n in [0, 1, c - 1, c, c + 1, 3 * c + 17] {
            for err_at in [None, Some(0), Some(n / 2), Some(n)] {
                let want = items(n, err_at);
                let got: Vec<_> = read_ahead(want.clone().into_iter()).collect();
                assert_eq!(got, want, "n {n}, error at {err_at:?}");
            }
        }
    }

    /// The memory the module documentation states: three chunks of at most 64-byte items.
    #[test]
    fn chunks_stay_within_three_mebibytes() {
        assert!(std::mem::size_of::<TraceItem>() <= 64);
        assert!((CHUNKS_IN_FLIGHT + 2) * CHUNK_ITEMS * std::mem::size_of::<TraceItem>() <= 3 << 20);
    }

    /// Stopping early neither hangs nor leaves the reader thread running on an endless stream:
    /// the stream is dropped (its file closed) soon after.
    #[test]
    fn dropping_early_stops_the_reader() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        struct Endless(u64, Arc<AtomicBool>);
        impl Iterator for Endless {
            type Item = Result<TraceItem, TraceError>;
            fn next(&mut self) -> Option<Self::Item> {
                self.0 += 1;
                Some(Ok(req(self.0 - 1)))
            }
        }
        impl Drop for Endless {
            fn drop(&mut self) {
                self.1.store(true, Ordering::SeqCst);
            }
        }
        let gone = Arc::new(AtomicBool::new(false));
        let mut r = read_ahead(Endless(0, gone.clone()));
        assert_eq!(r.next(), Some(Ok(req(0))));
        let t = r.nth(3 * CHUNK_ITEMS);
        assert_eq!(t, Some(Ok(req(3 * CHUNK_ITEMS as u64 + 1))));
        drop(r);
        let start = std::time::Instant::now();
        while !gone.load(Ordering::SeqCst) {
            assert!(
                start.elapsed().as_secs() < 10,
                "the reader thread kept running"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// A reader that panics ends the trace with an error, never a short trace.
    #[test]
    fn a_panicking_reader_is_an_error() {
        let n = CHUNK_ITEMS as u64 + 3;
        let stream = (0u64..).map(move |i| {
            assert!(i < n, "reader broke");
            Ok(req(i))
        });
        let got: Vec<_> = read_ahead(stream).collect();
        assert_eq!(got.len(), CHUNK_ITEMS + 1, "the full chunk, then the error");
        assert!(matches!(got.last(), Some(Err(TraceError::Invalid(m))) if m.contains("stopped")));
    }
}
