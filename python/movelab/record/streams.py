"""Which recorded copies continue a stream of writes and which are isolated (docs/record-replay.md,
"Cache state", *Isolated and streaming copies*).

A copy into a destination in memory costs very different amounts by its context, measured on the
recording machine by two probes: a copy that continues the thread's writes to consecutive
addresses (the fill probe, ``calibrate fill``: 1 KiB copies written one after another into a 16 KiB
buffer) finds its lines fetched ahead by the hardware's stream prefetchers, and costs the fill
probe's figure; a copy on its own (the cold-copy probe, ``calibrate cold``: each into a destination
of its own, in random order) pays every line's miss, about three times as much.

The rule, the same for every program (by the recorded addresses, sizes and times alone): a copy
*continues a stream* where one of its thread's :data:`STREAM_CALLS` previous recorded calls that
wrote memory (copies and initialisations), ending at most :data:`STREAM_WINDOW_NS` before it
started, wrote a destination that ends at most :data:`STREAM_GAP` bytes before this copy's
destination starts (a program's own few bytes between two copies, a reply's header, fill the gap
unseen), and the chain of such contiguous writes ending there holds at least
:data:`STREAM_MIN_BYTES` bytes (followed back at most :data:`STREAM_DEPTH` calls). Every other copy
is *isolated*. These four numbers are MODELLING CHOICES, declared here and in presets/ledger.toml:
fixed before any validation with them, not fitted to an output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Bytes a copy's destination may start after the end of the earlier write it continues: one
#: 64-byte line (the program's own stores between two copies, e.g. a bulk reply's 2-byte
#: ``\r\n`` and 7-byte header, which no recorded call holds). A MODELLING CHOICE.
STREAM_GAP = 64
#: How many of the thread's previous recorded writes are looked at for the one a copy continues
#: (other small calls may come between two writes of a stream). A MODELLING CHOICE.
STREAM_CALLS = 4
#: The most ns between the end of the earlier write and the start of the copy for the copy to
#: continue it (a stream's prefetch state does not outlive long work in between). A MODELLING CHOICE.
STREAM_WINDOW_NS = 1000.0
#: The least bytes the chain of contiguous writes before a copy must hold for the copy to count as
#: continuing a stream: two lines, what a stream prefetcher needs to see a direction (a 7-byte
#: header written just before a copy into a cold block does not make it a stream). A MODELLING CHOICE.
STREAM_MIN_BYTES = 128
#: How many links of a chain of contiguous writes are followed back to count its bytes.
STREAM_DEPTH = 8


def streaming(ev: pd.DataFrame, gap: int = STREAM_GAP, calls: int = STREAM_CALLS,
              window_ns: float = STREAM_WINDOW_NS, min_bytes: int = STREAM_MIN_BYTES) -> pd.Series:
    """For each timed row of ``ev`` with a destination (columns ``t_ns``, ``dur_ns``, ``pid``,
    ``tid``, ``dst``, ``size``, ``op``), whether it continues a stream of writes (True) or is
    isolated (False), by the rule of the module's description; indexed like those rows. Every
    timed write (copy or initialisation) can be the write a copy continues; only copies are
    classified as streaming (an initialisation's row is False)."""
    for name, v, lo in (("gap", gap, 0), ("calls", calls, 1), ("min_bytes", min_bytes, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"streaming: {name} must be a whole number of at least {lo}, got {v!r}")
    if isinstance(window_ns, bool) or not isinstance(window_ns, (int, float)) or not np.isfinite(window_ns) \
            or window_ns < 0:
        raise ValueError(f"streaming: window_ns must be a non-negative number of ns, got {window_ns!r}")
    t = ev[ev["t_ns"].notna() & ev["dst"].notna()]
    if t.empty:
        return pd.Series(dtype=bool)
    tid = t["tid"] if "tid" in t.columns else pd.Series(0, index=t.index)
    order = np.lexsort((t["t_ns"].to_numpy(np.float64), tid.fillna(0).to_numpy(np.int64),
                        t["pid"].to_numpy(np.int64)))
    t = t.iloc[order]
    thread = t["pid"].to_numpy(np.int64) * (1 << 32) + tid.iloc[order].fillna(0).to_numpy(np.int64)
    start = t["t_ns"].to_numpy(np.float64)
    end = start + (t["dur_ns"].fillna(0).to_numpy(np.float64) if "dur_ns" in t.columns else 0.0)
    dst = t["dst"].to_numpy(np.uint64).astype(np.int64)
    size = t["size"].fillna(0).to_numpy(np.int64)
    dend = dst + size
    n = len(t)
    # link[i]: the nearest of the previous `calls` writes of the same thread that row i continues
    link = np.full(n, -1, np.int64)
    for j in range(calls, 0, -1):  # the nearest last, so it wins
        p = np.arange(n) - j
        ok = p >= 0
        pp = np.where(ok, p, 0)
        ok &= (thread[pp] == thread) & (start - end[pp] <= window_ns)
        off = dst - dend[pp]
        ok &= (off >= 0) & (off <= gap) & (size[pp] > 0)
        link = np.where(ok, pp, link)
    # bytes of the chain of contiguous writes ending at each row's linked write
    chain = np.where(link >= 0, size[np.maximum(link, 0)], 0)
    own = size.copy()
    for _ in range(STREAM_DEPTH - 1):
        own = np.where(link >= 0, size + np.minimum(chain, min_bytes), size)
        chain = np.where(link >= 0, own[np.maximum(link, 0)], 0)
    is_copy = (t["op"] == "copy").to_numpy() if "op" in t.columns else np.ones(n, bool)
    out = is_copy & (link >= 0) & (chain >= min_bytes)
    return pd.Series(out, index=t.index).reindex(ev.index[ev["t_ns"].notna() & ev["dst"].notna()])
