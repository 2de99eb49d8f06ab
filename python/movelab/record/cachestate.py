"""Where a recorded call's buffers were when it ran, from the recorded addresses: the cache state
the replay then simulates each call in (docs/record-replay.md, "Cache state").

Every timed call touches the 64-byte lines of its destination (and source); for each line touched,
the *reuse distance* counts what the recorded calls of the same process touched since that line
(with the default byte distance: any line of its aligned :data:`REGION`, which stands for the
program's own unseen touches around what it copies) was last touched by one of them:
``distance="lines"``, the distinct lines they touched, 64 bytes each (the LRU stack distance, which
decides eviction from a least-recently-used cache; computed by a Fenwick tree over the calls in
the extension, O(n log m) for n line touches in m calls), or
``distance="bytes"``, every byte they moved, repeats included (a program that copies the same
buffer a thousand times pushes nothing out, yet its byte count grows). To it is added
:data:`TOUCH_RATE` bytes per ns of the time between the two touches (the program's own loads and
stores, which the recording does not see, push lines out too). A line at a distance below the
level-2 cache's size is taken as ``warm`` (in the core's private caches), below the last-level
cache's size as ``llc``, beyond it as ``cold`` (in DRAM). A line no earlier recorded call touched
is taken as ``warm``: no fault was taken inside the call, so the program had touched the page,
and typically had just written the line it now copies or clears (an object built, then copied);
a destination line no earlier call touched, by its own line even inside a touched region (a block
just carved out of unused heap), may take its own state (``fresh``; the replay's default
:data:`FRESH`: measured a little slower than reused lines, far faster than a miss to DRAM,
docs/record-replay.md, "Fresh blocks and the allocator's path"). A call's state
is the share of its line touches in each (at most 16 lines per buffer, evenly spread, are looked
at).

What this ignores (a modelling choice, stated with every replay): where the program's own loads
and stores went (only their volume over time, through the touch rate), and the other programs
sharing the last-level cache.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LINE = 64
#: Lines per buffer looked at: a larger buffer's touches are sampled evenly (bounds the work).
MAX_LINES = 16
STATES = ("warm", "llc", "cold")
#: Bytes of its own data a program is taken to touch per ns between two recorded touches of a line
#: (its loads and stores, unseen by the recording, push the line out as the calls' bytes do).
#: A CALIBRATION, not a measurement, chosen by one rule for every program: of the decade grid 0,
#: 0.1, 1 and 10 bytes per ns, the rate with the smallest worst error on two recordings made on the
#: development machine (Python start-up and the shell pipeline of ``movelab bench record``, 26 Nov
#: 2026), then checked, unchanged, on gcc, SQLite and Redis; chosen again with ``distance="lines"``
#: on 27 Nov 2026 (the same rate wins) (docs/record-replay.md, "Validation").
TOUCH_RATE = 1.0
#: How a line's reuse distance counts the recorded calls between two touches: ``bytes`` (every byte
#: they moved, repeats included) or ``lines`` (the distinct lines they touched, 64 bytes each: the
#: LRU stack distance, which is what decides eviction from a least-recently-used cache).
DISTANCES = ("bytes", "lines")
#: The default distance: ``lines`` was not better overall than ``bytes`` on the five demonstration
#: programs by more than the run-to-run spread (docs/record-replay.md, "Validation").
DISTANCE = "bytes"
#: The replay's default state of a destination line no earlier recorded call touched (``None``:
#: as ``untouched``, warm; ``replay(..., fresh="cold")`` takes such a line, by its own line even
#: inside a touched region, as a first touch). Measured on the recordings of 27 Nov 2026, 11:20
#: UTC (docs/record-replay.md, "Fresh blocks and the allocator's path"): calls into never-touched
#: destination lines are slower than calls into reused ones by a few to tens of ns (Python
#: start-up's 64-511 byte memcpy 35-70 ns against 18-47; gcc's 64-127 byte memcpy 102 against 28),
#: far below a miss to DRAM; with ``cold`` the replay over-predicts Python start-up by 165-200 %
#: (gcc: +1.5 % against -16.3 % without it). Kept at warm until a state between the two is
#: measured.
FRESH: str | None = None
#: Bytes of the aligned region whose most recent recorded touch stands for each of its lines' (the
#: recency granularity; ``LINE`` tracks every line by its own touches). A program works on the
#: data around what it copies (a B-tree page's header and cell pointers before a cell is copied
#: out, an I/O buffer's next record) without a recorded call, and the hardware prefetchers fetch
#: within a 4 KiB page: a line whose region a recorded call touched recently is taken as recently
#: touched. Measured on the calibration programs (docs/record-replay.md, "Region recency"): with
#: per-line recency, the shell pipeline's calls put in ``llc`` took 9.9 ns a call against 7.8 ns
#: for its ``warm`` ones (they were not last-level hits); with 4 KiB regions the few left in ``llc``
#: took 328 ns. The size is a CALIBRATION: of the grid 64, 256, 1024 and 4096 bytes, the one with
#: the smallest worst error on Python start-up and the shell pipeline (27 Nov 2026), then checked,
#: unchanged, on gcc, SQLite and Redis.
REGION = 1024
#: The replay's default where a destination write cost is given (``replay(..., dst_write=...)``,
#: ``movelab bench record --buffer-states``): source and destination each in their own state
#: (:func:`states`'s ``split``), the destination's recency by its own line (docs/record-replay.md,
#: "Cache state"). Without it the replay keeps the mixed rule.
SPLIT = True


def _lines(addr: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row index, line number) of every line touched by the buffers [addr, addr + size), at most
    MAX_LINES per buffer, evenly spread."""
    first = addr // LINE
    n = (addr + np.maximum(size, 1) - 1) // LINE - first + 1
    k = np.minimum(n, MAX_LINES)
    rows = np.repeat(np.arange(len(addr)), k)
    start = np.repeat(np.cumsum(k) - k, k)
    j = np.arange(int(k.sum())) - start
    kk = np.repeat(k, k)
    nn = np.repeat(n, k)
    step = np.where(kk > 1, (nn - 1) / np.maximum(kk - 1, 1), 0.0)
    page = np.repeat(first, k) + np.floor(j * step).astype(np.int64)
    return rows, page


def states(ev: pd.DataFrame, l2_bytes: int, llc_bytes: int, touch_rate: float = TOUCH_RATE,
           untouched: str = "warm", distance: str = DISTANCE, fresh: str | None = None,
           kernel: pd.DataFrame | None = None, region: int | None = None, split: bool = False) -> pd.DataFrame:
    """For each timed event of ``ev`` (rows with ``t_ns``, ``pid``, ``size``, ``src``, ``dst``,
    ``op``), the share of its line touches in each state: columns ``warm``, ``llc``, ``cold``
    (summing to 1) and ``distance`` (median reuse distance in bytes, NaN where no line was touched
    before), indexed like ``ev``'s timed rows. Aggregate rows (no time) get no row.

    ``touch_rate``: bytes of other data the program is taken to touch per ns between two touches
    of a line (its own loads and stores, which the recording does not see), added to the distance
    (see :data:`TOUCH_RATE`). ``untouched``: the state of a line no earlier recorded call touched
    (default ``warm``: see the module's description). ``distance``: ``bytes`` (the bytes the
    process's recorded calls moved in between, repeats included) or ``lines`` (the distinct lines
    they touched, times 64: a buffer's sampled lines each stand for their share of its lines).
    ``fresh``: the state of a *destination* line no earlier recorded call touched (a first touch:
    a block just allocated, then copied into or cleared); ``None`` takes ``untouched`` for it too.
    ``untouched`` then applies to source lines only. With region recency, a destination line is
    fresh by its own line (its first touch) even where its region was touched before. The replay's
    default is :data:`FRESH`; this function's, ``None``.

    ``kernel``: the kernel's copies to and from user buffers (rows with ``t_ns``, ``pid``, ``dst``,
    ``size``: :data:`movelab.record.kernel.TOUCH_KINDS`, e.g. a ``pread`` of a page into the buffer
    a ``memcpy`` then copies from). Each touches its buffer's lines like a recorded call (a ``pread``
    writes them, a ``write`` reads them) and moves twice its bytes (the kernel side of the copy is
    not tracked); they get no row of their own.

    ``region``: the recency granularity in bytes (a power of two, at least :data:`LINE`; default
    :data:`REGION`): a line's previous touch is the latest touch of any line of its aligned
    region, and the distance counts from there. The byte distance only: ``distance="lines"`` keeps
    each line's own touches (its distinct-line count needs them) and takes ``region`` = ``LINE``
    unless given another, which it refuses.

    ``split``: each buffer in its own state (the replay's where ``dst_write`` is given, :data:`SPLIT`):
    a destination line's recency is its own line's (``region`` applies to sources only: a buffer
    written sequentially is not warmed by the touch of its neighbour's first line), and the result
    has per-buffer columns too: ``src_warm``, ``src_llc``, ``src_cold``, ``src_distance`` (NaN for
    a call without a source) and ``dst_warm`` ... ``dst_distance``."""
    if l2_bytes <= 0 or llc_bytes < l2_bytes:
        raise ValueError(f"cache sizes must satisfy 0 < l2 <= llc, got l2={l2_bytes} llc={llc_bytes}")
    if untouched not in STATES:
        raise ValueError(f"untouched must be one of {', '.join(STATES)}, got {untouched!r}")
    if fresh is not None and fresh not in STATES:
        raise ValueError(f"fresh must be one of {', '.join(STATES)} or None, got {fresh!r}")
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")
    if region is None:
        region = REGION if distance == "bytes" else LINE
    if not isinstance(region, (int, np.integer)) or region < LINE or region & (region - 1):
        raise ValueError(f"region must be a power of two of at least {LINE} bytes, got {region!r}")
    if distance == "lines" and region != LINE:
        raise ValueError(f"region recency ({region} bytes) applies to distance='bytes' only; "
                         f"distance='lines' tracks each line ({LINE} bytes)")
    if not np.isfinite(touch_rate) or touch_rate < 0:
        raise ValueError(f"touch_rate must be a non-negative number of bytes per ns, got {touch_rate!r}")
    t = ev[ev["t_ns"].notna() & ev["dst"].notna()]
    if t.empty:
        return pd.DataFrame(columns=[*STATES, "distance"], dtype="float64")
    own = np.ones(len(t), bool)
    if kernel is not None and len(kernel):
        k = kernel[kernel["t_ns"].notna() & kernel["dst"].notna() & (kernel["size"].fillna(0) > 0)]
        k = pd.DataFrame({"t_ns": k["t_ns"], "pid": k["pid"], "size": k["size"], "dst": k["dst"], "src": pd.NA,
                          "op": "kernel"})
        t = pd.concat([t[["t_ns", "pid", "size", "dst", "src", "op"]], k])
        own = np.r_[own, np.zeros(len(k), bool)]
    order = np.lexsort((t["t_ns"].to_numpy(np.float64), t["pid"].to_numpy(np.int64)))
    t, own = t.iloc[order], own[order]
    size = t["size"].fillna(0).to_numpy(np.int64)
    is_copy = (t["op"] == "copy").to_numpy() & t["src"].notna().to_numpy()
    moved = size * np.where(is_copy | (t["op"] == "kernel").to_numpy(), 2, 1)
    pid = t["pid"].to_numpy(np.int64)
    # Bytes the process's recorded calls moved before each call (its own excluded).
    cum = pd.Series(moved).groupby(pid).cumsum().to_numpy() - moved
    dst = t["dst"].to_numpy(np.uint64).astype(np.int64)
    src = np.where(is_copy, t["src"].fillna(0).to_numpy(np.uint64).astype(np.int64), 0)
    r1, p1 = _lines(dst, size)
    r2, p2 = _lines(src[is_copy], size[is_copy])
    r2 = np.flatnonzero(is_copy)[r2]
    # One entry per line touch, in plain arrays sorted once (a recording of millions of calls makes
    # tens of millions of touches: a DataFrame of them, its sort and group-bys held 7 GB for Redis).
    n_dst = len(r1)
    rows = np.concatenate([r1, r2])
    line = np.concatenate([p1, p2])
    del r1, r2, p1, p2
    tns = t["t_ns"].to_numpy(np.float64)
    pid_t = pid[rows]
    tt = tns[rows]
    cum_t = cum[rows]
    is_dst = np.arange(len(rows)) < n_dst
    dist = _touch_distances(rows, line, pid_t, cum_t, tt, size, region, distance, touch_rate)
    if split:
        # Per buffer: a destination line's recency is its own line's (a buffer written
        # sequentially is not warmed by its neighbour's touch); a source keeps its region's.
        dist = np.where(is_dst, dist if region == LINE else
                        _touch_distances(rows, line, pid_t, cum_t, tt, size, LINE, distance, touch_rate), dist)
    first = np.where(is_dst, STATES.index(fresh if fresh is not None else untouched), STATES.index(untouched))
    state = np.where(np.isnan(dist), first, np.where(dist < l2_bytes, 0, np.where(dist < llc_bytes, 1, 2)))
    del first, cum_t, tt
    if fresh is not None and region != LINE:
        # A destination line that no earlier call touched is fresh even where its region was
        # touched (a block just carved out beside a used one): its own first touch, by line.
        o = np.lexsort((np.arange(len(rows)), line, pid_t))
        line_first = np.empty(len(rows), bool)
        lo, po = line[o], pid_t[o]
        line_first[o] = np.r_[True, (lo[1:] != lo[:-1]) | (po[1:] != po[:-1])]
        del o, lo, po
        state = np.where(is_dst & line_first, STATES.index(fresh), state)
    nrow = len(t)

    def shares(sel: np.ndarray) -> np.ndarray:
        c = np.bincount(rows[sel] * 3 + state[sel], minlength=3 * nrow).reshape(nrow, 3).astype(np.float64)
        return c / np.maximum(c.sum(axis=1, keepdims=True), 1.0)

    share = shares(np.ones(len(rows), bool))
    med = _row_median(rows, dist, nrow)
    out = pd.DataFrame({"warm": share[own, 0], "llc": share[own, 1], "cold": share[own, 2], "distance": med[own]},
                       index=t.index[own])
    if split:
        for side, sel in (("src", ~is_dst), ("dst", is_dst)):
            sh = shares(sel)
            has = np.bincount(rows[sel], minlength=nrow) > 0
            for i, st_name in enumerate(STATES):
                out[f"{side}_{st_name}"] = np.where(has, sh[:, i], np.nan)[own]
            out[f"{side}_distance"] = _row_median(rows[sel], dist[sel], nrow)[own]
    return out


def _touch_distances(rows: np.ndarray, line: np.ndarray, pid: np.ndarray, cum: np.ndarray, tns: np.ndarray,
                     size: np.ndarray, region: int, distance: str, touch_rate: float) -> np.ndarray:
    """Per line touch (in the order given: ``rows`` the call, ``line`` the line, ``pid``, ``cum``
    the bytes the process's calls moved before the call, ``tns`` its start): the reuse distance in
    bytes, from the previous touch of the line's aligned ``region`` by an earlier call (NaN where
    none), plus ``touch_rate`` times the time between."""
    keyv = line if region == LINE else line // (region // LINE)
    # rows are numbered in process, then time order: sorting by (key, row) within a process keeps
    # the touches of one line (region) in time order, a call's destination touches first (stable)
    o = np.lexsort((rows, keyv, pid))
    r, ln, kv, tp = rows[o], line[o], keyv[o], pid[o]
    same = np.r_[False, (tp[1:] == tp[:-1]) & (kv[1:] == kv[:-1])]
    cum_t, t_t = cum[o], tns[o]
    prev_cum = np.where(same, np.r_[np.nan, cum_t[:-1]], np.nan)
    prev_t = np.where(same, np.r_[np.nan, t_t[:-1]], np.nan)
    if region != LINE:
        # The region's previous touch is its latest touch by an *earlier* call: every touch of the
        # region by one call takes the value its first touch there found.
        start = np.r_[True, ~same[1:] | (r[1:] != r[:-1])]
        first_of_block = np.flatnonzero(start)[np.cumsum(start) - 1]
        prev_cum, prev_t = prev_cum[first_of_block], prev_t[first_of_block]
        del start, first_of_block
    if distance == "bytes":
        between = cum_t - prev_cum
    else:
        between = _distinct_between(r, tp, ln, size)
    out = np.empty(len(o))
    out[o] = between + touch_rate * (t_t - prev_t)
    return out


def _row_median(rows: np.ndarray, dist: np.ndarray, nrow: int) -> np.ndarray:
    """Per row 0 .. ``nrow`` - 1: the median of its touches' ``dist`` (NaN ignored; NaN where a row
    has none), as pandas' group median gives it."""
    ok = ~np.isnan(dist)
    r, d = rows[ok], dist[ok]
    o = np.lexsort((d, r))
    r, d = r[o], d[o]
    cnt = np.bincount(r, minlength=nrow)
    start = np.cumsum(cnt) - cnt
    out = np.full(nrow, np.nan)
    has = cnt > 0
    lo = start[has] + (cnt[has] - 1) // 2
    hi = start[has] + cnt[has] // 2
    out[has] = (d[lo] + d[hi]) / 2
    return out


def _distinct_between(rows: np.ndarray, pid: np.ndarray, line: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per touch (``rows``, ``pid``, ``line`` of each, sorted by process, line and row): the bytes
    of distinct lines the process's recorded calls touched strictly between the line's previous
    touch's call and this touch's call (NaN where there is no previous touch, 0 for a line met
    earlier in the same call). A sampled line of a buffer of n lines looked at through k stands for
    n / k lines; a line met several times in between counts once, with the weight of its latest
    touch. The LRU stack distance, by a Fenwick tree over the calls in the extension
    (``movelab_host::reuse``): O(n log m) for n touches in m calls."""
    from movelab import _core

    if len(rows) == 0:
        return np.empty(0)
    # Time order: call (rows are numbered in process, then time order), then line.
    o = np.lexsort((line, rows))
    pos = np.empty(len(o), np.int64)
    pos[o] = np.arange(len(o))
    first_line = np.r_[True, (pid[1:] != pid[:-1]) | (line[1:] != line[:-1])]  # within `touch`'s order
    prev_pos = np.where(first_line, -1, np.r_[-1, pos[:-1]])
    n = -(-np.maximum(size[rows], 1) // LINE)  # the buffer's lines (its alignment aside)
    w = np.where(n > MAX_LINES, n / MAX_LINES, 1.0)
    raw = _core.reuse_distances(np.ascontiguousarray(rows[o]).tobytes(),
                                np.ascontiguousarray(prev_pos[o]).tobytes(),
                                np.ascontiguousarray(w[o], dtype=np.float64).tobytes())
    out = np.empty(len(o))
    out[o] = np.frombuffer(raw, dtype=np.float64)
    return out * LINE
