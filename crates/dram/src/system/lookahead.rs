//! The trace's next item, read one ahead of the run loop, held as a plain [`TraceItem`].
//!
//! The run loop looks at the next item several times a turn (to offer it, to see whether its
//! queue is full, to see whether the trace has ended). A `Peekable` over the stream kept it as
//! the stream's whole `Option<Result<TraceItem, TraceError>>`, a value the size of the error
//! (three strings), copied through the stack at every read with loads that did not line up with
//! the stores that had just written it: in profiles of the 5 M-request runs, the CPU waited on
//! that copy once per request. Here the item is kept on its own and an error apart, so that
//! what the loop reads is the item alone. The items, their order and where an error is reported
//! are the same as with `Peekable`: the stream is read once per item taken, right after it.
use crate::error::TraceError;
use crate::request::TraceItem;

/// A trace stream with its next item read ahead.
pub(super) struct Lookahead<I> {
    stream: I,
    /// The next item; `None` at the end of the trace or at an error (then in `error`).
    next: Option<TraceItem>,
    /// The error the stream yielded instead of the next item; nothing follows it.
    error: Option<TraceError>,
}

impl<I> Lookahead<I>
where
    I: Iterator<Item = Result<TraceItem, TraceError>>,
{
    /// Reads the stream's first item.
    pub(super) fn new(stream: I) -> Lookahead<I> {
        let mut l = Lookahead {
            stream,
            next: None,
            error: None,
        };
        l.advance();
        l
    }

    /// The next item has been taken: reads the one after it.
    #[inline(always)]
    pub(super) fn advance(&mut self) {
        match self.stream.next() {
            Some(Ok(item)) => self.next = Some(item),
            Some(Err(e)) => {
                self.next = None;
                self.error = Some(e);
            }
            None => self.next = None,
        }
    }

    /// The next item, `None` at the end of the trace or at an error ([`Lookahead::error`]).
    #[inline(always)]
    pub(super) fn peek(&self) -> Option<&TraceItem> {
        self.next.as_ref()
    }

    /// The error the stream yielded in place of the next item.
    #[inline(always)]
    pub(super) fn error(&self) -> Option<&TraceError> {
        self.error.as_ref()
    }

    /// Whether the stream has anything left: an item or an error.
    #[inline(always)]
    pub(super) fn more(&self) -> bool {
        self.next.is_some() || self.error.is_some()
    }
}
