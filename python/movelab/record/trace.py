"""A recording as a table: reading the interposer's per-process files and perf's kernel events into
one DataFrame of the documented schema (docs/record-replay.md), and writing and reading it as
Parquet with the recording's metadata."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SCHEMA_VERSION = 2
#: Older schema versions this movelab still reads (their missing columns are null).
READABLE_VERSIONS = (1, 2)
#: Columns added since schema version 1 (null in a version-1 recording).
ADDED_IN_2 = ("preempted", "offcpu_ns", "since_sched_ns")
META_KEY = b"movelab.record"

#: The interposer's record kinds (interposer.c, ``enum kind``).
KINDS = {1: "memcpy", 2: "memmove", 3: "memset", 4: "calloc", 5: "realloc"}
AGG = 64
FOOTER = 255
#: Records a thread's buffer holds before the interposer writes them out (its RING).
THREAD_RECORDS = 4096
#: The interposer's record flags (interposer.c, ``enum flag``) and where ``extra`` keeps the
#: scheduling fields: ns off the CPU in bits 32-63, run time since scheduled in (256 ns units) in
#: bits 9-31.
F_SCHED, F_SWITCHED, F_OFFCPU, F_SINCE = 1, 2, 4, 8
SINCE_SHIFT, SINCE_UNIT, SINCE_BITS = 9, 256, 23
#: Which recorded kinds are copies (source and destination) and which initialise memory.
COPY_KINDS = ("memcpy", "memmove", "realloc", "page_cow")
INIT_KINDS = ("memset", "calloc", "page_zero")

REC = np.dtype([("t_ns", "<u8"), ("dur_ns", "<u8"), ("dst", "<u8"), ("src", "<u8"), ("size", "<u8"),
                ("callsite", "<u8"), ("extra", "<u8"), ("tid", "<u4"), ("kind", "<u2"), ("flags", "<u2")])
assert REC.itemsize == 64

#: The most bytes one recorded row may hold (1 PiB): above it a recording is damaged.
MAX_RECORDED_BYTES = 1 << 50

#: The columns, in order, with their pandas dtypes (nullable where a value may be absent).
COLUMNS: dict[str, str] = {
    "source": "string",      # "interposer" or "kernel"
    "kind": "string",        # memcpy memmove memset calloc realloc | page_zero page_cow page_file | read write ...
    "pid": "Int64",
    "tid": "Int64",
    "image": "Int64",        # 0 for the process's first program image, 1 after its first exec, ...
    "exe": "string",
    "t_ns": "Int64",         # start, ns since the recording started (null for an aggregate row)
    "dur_ns": "Int64",       # time inside the call(s), ns (null where not measured)
    "count": "Int64",        # calls this row stands for (1 for one event)
    "size": "Int64",         # bytes of the one call (null for an aggregate row)
    "bytes": "Int64",        # bytes moved or initialised in all: size x count
    "size_class": "Int64",   # bit length of size: 0 for 0 bytes, k for 2^(k-1) <= size < 2^k
    "src": "UInt64",
    "dst": "UInt64",
    "src_align": "Int64",    # the largest power of two dividing src, at most 4096
    "dst_align": "Int64",
    "callsite": "UInt64",    # the return address of the call
    "value": "Int64",        # memset's fill byte (calloc: 0)
    "fortified": "boolean",  # called as the _chk variant
    "use_ns": "Int64",       # copy-use window: not measured (docs/record-replay.md says why)
    "faults": "Int64",       # page faults the thread took inside the call (null without kernel events)
    "switches": "Int64",     # times the thread was switched out inside the call (null without kernel events)
    # The interposer's own view of the thread's scheduling (its task-clock counter's control page;
    # null where it could not watch, and for aggregates):
    "preempted": "boolean",    # the thread was switched out (preempted or blocked) inside the call
    "offcpu_ns": "Int64",      # ns of the call's dur_ns the thread spent off the CPU (null if unknown)
    "since_sched_ns": "Int64",  # ns the thread had run since it was last scheduled in, at the call's start
}


class TraceError(ValueError):
    """A recording that cannot be read: missing, not a movelab recording, or of another schema."""


def _align(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.uint64)
    low = a & (~a + np.uint64(1))  # lowest set bit
    low = np.where(a == 0, np.uint64(4096), low)
    return np.minimum(low, np.uint64(4096)).astype(np.int64)


def _size_class(n: np.ndarray) -> np.ndarray:
    n = n.astype(np.uint64)
    out = np.zeros(len(n), dtype=np.int64)
    nz = n > 0
    out[nz] = np.floor(np.log2(n[nz].astype(np.float64))).astype(np.int64) + 1
    # float rounding near powers of two: fix with exact checks
    big = nz & (np.left_shift(np.uint64(1), (out - 1).clip(0).astype(np.uint64)) > n)
    out[big] -= 1
    return out


def read_process_file(path: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """One interposer file: its header (pid, ppid, start, threshold, executable, footer) and its
    rows in the schema (times still absolute)."""
    raw = path.read_bytes()
    if len(raw) < 256 or raw[:8] != b"MVLREC01":
        raise TraceError(f"{path} is not a movelab interposer file (bad magic)")
    version, pid, ppid, recsize = np.frombuffer(raw[8:24], dtype="<u4")
    if version != 1 or recsize != 64:
        raise TraceError(f"{path}: interposer file version {version}, record size {recsize}; expected 1, 64")
    t0, min_bytes = np.frombuffer(raw[24:40], dtype="<u8")
    exe = raw[40:248].split(b"\0", 1)[0].decode(errors="replace")
    clock_ns = int(np.frombuffer(raw[248:256], dtype="<u8")[0])
    body = raw[256:]
    n = len(body) // 64  # a torn last record (a process killed mid-write) is dropped
    recs = np.frombuffer(body[: n * 64], dtype=REC)
    image = int(path.name.split(".")[1])
    # The process's own writes to this file are the file itself (its footer's byte count leaves the
    # footer out); without a footer (a process ended by a signal or _exit()), the header's write and
    # one per full thread buffer flushed.
    head: dict[str, Any] = {"pid": int(pid), "ppid": int(ppid), "t0_ns": int(t0), "min_bytes": int(min_bytes),
                            "exe": exe, "image": image, "file": path.name, "complete": False, "clock_ns": clock_ns,
                            "own_write_bytes": len(raw), "own_writes": 1 + -(-n // THREAD_RECORDS)}
    foot = recs[recs["kind"] == FOOTER]
    if len(foot):
        f = foot[-1]
        head.update(complete=True, minor_faults=int(f["dst"]), major_faults=int(f["src"]),
                    own_writes=int(f["callsite"]), end_ns=int(f["t_ns"]))
    ev = recs[recs["kind"] < AGG]
    ag = recs[(recs["kind"] >= AGG) & (recs["kind"] < FOOTER)]
    frames = []
    if len(ev):
        kind = pd.Series(ev["kind"]).map(KINDS)
        if kind.isna().any():
            raise TraceError(f"{path}: unknown record kind {sorted(set(ev['kind'][kind.isna().to_numpy()]))}")
        is_set = kind.isin(["memset", "calloc"]).to_numpy()
        value = np.where(kind == "memset", ev["extra"] & 0xFF, 0)
        frames.append(pd.DataFrame({
            "source": "interposer", "kind": kind, "pid": int(pid), "tid": ev["tid"].astype(np.int64),
            "image": image, "exe": exe, "t_ns": ev["t_ns"].astype(np.int64), "dur_ns": ev["dur_ns"].astype(np.int64),
            "count": 1, "size": ev["size"].astype(np.int64), "bytes": ev["size"].astype(np.int64),
            "size_class": _size_class(ev["size"]),
            "src": pd.array(np.where(is_set, 0, ev["src"]), dtype="UInt64"),
            "dst": pd.array(ev["dst"], dtype="UInt64"),
            "src_align": _align(ev["src"]), "dst_align": _align(ev["dst"]),
            "callsite": pd.array(ev["callsite"], dtype="UInt64"),
            "value": pd.array(np.where(is_set, value, -1)),
            "fortified": np.where(kind == "memset", (ev["extra"] >> 8) & 1, ev["extra"] & 1).astype(bool)
            & ~kind.isin(["calloc", "realloc"]).to_numpy(),
            **sched_columns(ev["flags"], ev["extra"]),
        }))
        df = frames[-1]
        df.loc[~is_set, "value"] = None
        df.loc[is_set, "src"] = None
        df.loc[is_set, "src_align"] = None
    if len(ag):
        kind = pd.Series(ag["kind"] - AGG).map(KINDS)
        frames.append(pd.DataFrame({
            "source": "interposer", "kind": kind, "pid": int(pid), "tid": ag["tid"].astype(np.int64),
            "image": image, "exe": exe, "dur_ns": ag["dur_ns"].astype(np.int64),
            "count": ag["dst"].astype(np.int64), "bytes": ag["size"].astype(np.int64),
            "size_class": ag["src"].astype(np.int64),
        }))
    return head, conform(pd.concat(frames, ignore_index=True) if frames else empty())


def sched_columns(flags: np.ndarray, extra: np.ndarray) -> dict[str, pd.api.extensions.ExtensionArray]:
    """The scheduling columns (``preempted``, ``offcpu_ns``, ``since_sched_ns``) of interposer
    records from their ``flags`` and ``extra`` (interposer.c): null where the flag saying the
    field is known is absent."""
    flags = np.asarray(flags, dtype=np.uint16)
    extra = np.asarray(extra, dtype=np.uint64)
    watched = (flags & F_SCHED) != 0
    switched = (flags & F_SWITCHED) != 0
    off = (extra >> np.uint64(32)).astype(np.int64)
    off_known = watched & (~switched | ((flags & F_OFFCPU) != 0))
    since = ((extra >> np.uint64(SINCE_SHIFT)) & np.uint64((1 << SINCE_BITS) - 1)).astype(np.int64) * SINCE_UNIT
    return {"preempted": pd.arrays.BooleanArray(switched, ~watched),
            "offcpu_ns": pd.arrays.IntegerArray(np.where(switched, off, 0), ~off_known),
            "since_sched_ns": pd.arrays.IntegerArray(since, (flags & F_SINCE) == 0)}


#: A single call whose measured time exceeds ``STOP_NS + STOP_NS_PER_BYTE * size`` held a stop of
#: the CPU, not its own work (:func:`stopped`). 5 us: the bound the gap calibration already trims at
#: (``calibration.GAP_TRIM_NS``), above any path of a call of a few KiB on this machine (a cold
#: 4-8 KiB ``calloc``'s allocator path: 1.0-1.2 us, ``calibrate.c alloc``). 1 ns per byte (1 GB/s):
#: six to seven times the slowest copy measured here, ``memcpy`` of 64 KiB-128 MiB with both
#: buffers out of the caches at 0.14-0.16 ns per byte (docs/record-replay.md, "Stopped calls").
STOP_NS = 5000.0
STOP_NS_PER_BYTE = 1.0


def stopped(df: pd.DataFrame) -> pd.Series:
    """The single interposer calls (``count`` 1) slower than :data:`STOP_NS` plus
    :data:`STOP_NS_PER_BYTE` per byte: the CPU was stopped inside them. On this machine such calls
    (a 3-byte ``memcpy`` of 1.7 ms, a 32 KiB ``calloc`` of 9.7 ms) start within 100 us of one of
    two phases of the 4 ms timer tick (``CONFIG_HZ=250``), far more often than chance: the guest's
    timer interrupt and what the hypervisor does at it, which the kernel charges to the running
    thread (``CONFIG_IRQ_TIME_ACCOUNTING`` off) and no scheduling event marks. Aggregates and
    kernel rows are never stopped."""
    dur = df["dur_ns"].astype("float64")
    bound = STOP_NS + STOP_NS_PER_BYTE * df["size"].astype("float64").fillna(0)
    return ((df["count"].fillna(0) == 1) & (dur > bound)).fillna(False).astype(bool)


def disturbed(df: pd.DataFrame) -> pd.Series:
    """The interposer rows whose measured time holds more than the call's own work: the thread
    took a page fault inside it (``faults``, from perf), was switched out inside it (``switches``,
    from perf's ``sched_switch``), was found switched out by the interposer itself (``preempted``:
    its task-clock page, with or without perf), or was :func:`stopped` (since 28 Nov 2026). The
    validation leaves them out."""
    return ((df["faults"].fillna(0) > 0) | (df["switches"].fillna(0) > 0)
            | df["preempted"].astype("boolean").fillna(False) | stopped(df)).astype(bool)


def empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()})


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """The table with exactly the schema's columns, in order, with their types."""
    out = {}
    for c, t in COLUMNS.items():
        col = df[c] if c in df else pd.Series([None] * len(df), index=df.index)
        out[c] = col.astype(t)
    return pd.DataFrame(out).reset_index(drop=True)


def write_parquet(df: pd.DataFrame, meta: dict[str, Any], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(conform(df), preserve_index=False)
    md = dict(table.schema.metadata or {})
    md[META_KEY] = json.dumps({"schema_version": SCHEMA_VERSION, **meta}).encode()
    pq.write_table(table.replace_schema_metadata(md), path)


def read(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A recording written by ``movelab record``: (events, metadata). Raises ``TraceError`` (a
    ``ValueError``) naming the file for a missing file, a file that is not Parquet, or a table that
    is not a movelab recording of this schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"trace {p} does not exist")
    if p.is_dir():
        raise TraceError(f"trace {p} is a directory; give the .parquet file movelab record wrote")
    try:
        table = pq.read_table(p)
    except (pa.ArrowInvalid, OSError) as e:
        raise TraceError(f"trace {p} is not a Parquet file: {e}") from None
    md = (table.schema.metadata or {}).get(META_KEY)
    if md is None:
        raise TraceError(f"trace {p} is a Parquet file but not a movelab recording (no '{META_KEY.decode()}' "
                         f"metadata)")
    try:
        meta = json.loads(md)
    except ValueError:
        raise TraceError(f"trace {p}: its movelab metadata is not JSON") from None
    version = meta.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise TraceError(f"trace {p}: schema version {version!r}, this movelab reads "
                         f"{', '.join(map(str, READABLE_VERSIONS))}")
    added = ADDED_IN_2 if version == 1 else ()
    missing = [c for c in COLUMNS if c not in table.column_names and c not in added]
    if missing:
        raise TraceError(f"trace {p}: missing columns {', '.join(missing)}")
    try:
        df = conform(table.to_pandas())
    except (TypeError, ValueError) as e:
        raise TraceError(f"trace {p}: a column has the wrong type: {e}") from None
    for col in ("size", "bytes", "count", "dur_ns"):
        neg = (df[col] < 0).fillna(False).to_numpy(dtype=bool)
        if neg.any():
            i = int(np.flatnonzero(neg)[0])
            raise TraceError(f"trace {p}: row {i}: {col} {df[col].iloc[i]} is negative")
    for col in ("size", "bytes"):
        # More than any machine's memory: a damaged file (totals over it would overflow).
        big = (df[col] > MAX_RECORDED_BYTES).fillna(False).to_numpy(dtype=bool)
        if big.any():
            i = int(np.flatnonzero(big)[0])
            raise TraceError(f"trace {p}: row {i}: {col} {df[col].iloc[i]} is more than {MAX_RECORDED_BYTES:,} "
                             "bytes (1 PiB), more than a recorded program can move")
    return df, add_clock_floors(df, meta)


#: The quantile of a process's single-call durations taken as the floor no clock read's cost can
#: exceed (see :func:`add_clock_floors`): the 0.1th percentile, robust to the reads' rare low jitter.
CLOCK_FLOOR_QUANTILE = 0.001


def add_clock_floors(df: pd.DataFrame, meta: dict[str, Any]) -> dict[str, Any]:
    """Sets each process image's ``clock_floor_ns`` in ``meta["processes"]`` (in place; returned):
    the :data:`CLOCK_FLOOR_QUANTILE` quantile of the durations of its single timed calls. Every
    duration holds one clock read, so the reads cannot cost more than the shortest calls took: a
    start-up ``clock_ns`` above it (measured while the process's code and data were cold: 30-42 ns
    against floors of 26-30 ns in the demonstration recordings) overstates the reads' cost, and
    :func:`corrected_dur` takes the smaller. Computed on the whole recording (not on a part of it,
    which would give each part its own floor); a process without timed calls gets none."""
    procs = meta.get("processes") or []
    if not procs or df.empty or "dur_ns" not in df:
        return meta
    one = df[(df["source"] == "interposer") & (df["count"] == 1) & df["dur_ns"].notna()]
    floors = one.groupby([one["pid"].astype("int64"), one["image"].astype("int64")])["dur_ns"].quantile(
        CLOCK_FLOOR_QUANTILE) if len(one) else pd.Series(dtype="float64")
    for p in procs:
        f = floors.get((p.get("pid"), p.get("image")))
        if f is not None and not pd.isna(f):
            p["clock_floor_ns"] = float(f)
    return meta


def corrected_dur(df: pd.DataFrame, meta: dict[str, Any], clip: bool = True) -> pd.Series:
    """Each interposer row's time inside its calls less the clock reads' own cost, once per call:
    the median of back-to-back reads its process measured at start (``clock_ns``), or the floor of
    its calls' durations (``clock_floor_ns``, :func:`add_clock_floors`) where that is lower; null
    for rows without a duration.

    ``clip`` (default): a row's value at least 0 (one call's time cannot be negative). A call of a
    few ns measured with clock reads of about 35 ns comes out below the clock reads' median in up to
    a third of the calls; clipped, the sum keeps the positive half of the reads' jitter (an upper
    bound); unclipped, it also keeps the start-up median's own error, which these calls show to be
    high (a lower bound). The validation reports both (docs/record-replay.md, "Validation")."""
    over = {(p["pid"], p["image"]): min(p.get("clock_ns") or 0, p.get("clock_floor_ns", math.inf))
            for p in meta.get("processes", [])}
    keys = list(zip(df["pid"].fillna(-1).astype(int), df["image"].fillna(-1).astype(int), strict=True))
    o = pd.Series([over.get(k, 0) for k in keys], index=df.index, dtype="float64")
    net = df["dur_ns"].astype("float64") - o * df["count"].astype("float64")
    return net.clip(lower=0) if clip else net
