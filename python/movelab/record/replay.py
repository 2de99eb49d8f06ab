"""Replaying a recording on a simulated platform: the recorded copies and initialisations, with the
compute between them, through :func:`movelab.platform.run`, under each copy mechanism.

Method (docs/record-replay.md):

1. The movement events (interposer calls, and the kernel's copy-on-write and zeroing faults) are
   grouped by operation (copy or initialisation) and size class (the bit length of the size). Each
   class is replayed from at most ``samples`` of its events, evenly spaced in time, so a replay is
   bounded whatever the trace's length; the result is scaled by the class's call count.
2. For a class, the workload is its sampled events in time order: each preceded by the compute the
   recording measured before it on its thread (converted to instructions at the simulated core's
   own compute rate, at most ``max_gap_instructions``), then the copy or initialisation at the
   recorded addresses (folded into the first GiB, which keeps their alignment up to 1 GiB) and size.
3. A class's movement cost is the run's time minus the same workload's time with the copies and
   initialisations removed, per call; likewise its DRAM energy and channel traffic. Summed over the
   classes: the predicted time in data movement. The predicted total time is the recording's wall
   time minus the time measured inside the recorded calls plus the predicted movement time; where
   the kernel's movement (its zeroing and copy-on-write faults) is replayed too, its time, which is
   part of the program's and not measured, is taken out as the cpu mechanism predicts it before the
   mechanism's is added.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from movelab._util import layered, refuse_keys
from movelab.record import cachestate
from movelab.record.kernel import FAULT_KINDS, SYSCALLS, TOUCH_KINDS
from movelab.record.trace import COPY_KINDS, INIT_KINDS, KINDS, corrected_dur, read

FOLD = (1 << 30) - 1
#: The largest single operation a replayed call becomes: a call of more bytes (a 2 GiB memcpy, say)
#: is replayed as back-to-back operations of at most this many, at consecutive addresses folded
#: into the GiB, so that each fits it and a piece's source and destination need not overlap.
PIECE = (FOLD + 1) // 4
HOT_BASE = 0x7000_0000  # the compute's hot region (16 KiB), outside the folded GiB
EVICT_BASE = 0x5000_0000  # the ``llc`` state's eviction buffers, outside the folded GiB
ROW = 4096  # the aligned allocator's alignment: a page, one DRAM row in the RowClone configs
#: The least a replayed call's simulated movement costs, per cache state (ns): the difference of
#: the runs with and without the moves is taken as at least this (see ``replay``).
MIN_MOVE_NS = 0.0

#: The mechanisms, as platform overrides (docs/platform.md, "Copy mechanisms").
MECHANISMS: dict[str, dict[str, Any]] = {
    "cpu": {"copy": {"mechanism": "base"}},
    "ce-off-die-sync-nlb": {"copy": {"mechanism": "ce", "placement": "off-die", "mode": "SYNC_NLB"}},
    "ce-off-die-sync-wlb": {"copy": {"mechanism": "ce", "placement": "off-die", "mode": "SYNC_WLB"}},
    "ce-off-die-async": {"copy": {"mechanism": "ce", "placement": "off-die", "mode": "ASYNC"}},
    "ce-on-die-sync-nlb": {"copy": {"mechanism": "ce", "placement": "on-die", "mode": "SYNC_NLB"}},
    "ce-on-die-sync-wlb": {"copy": {"mechanism": "ce", "placement": "on-die", "mode": "SYNC_WLB"}},
    "ce-on-die-async": {"copy": {"mechanism": "ce", "placement": "on-die", "mode": "ASYNC"}},
    "rowclone": {"copy": {"mechanism": "rowclone"}},
    "rowclone-aligned": {"copy": {"mechanism": "rowclone"}},
    "rowclone-zi": {"copy": {"mechanism": "rowclone-zi"}},
    "rowclone-zi-aligned": {"copy": {"mechanism": "rowclone-zi"}},
}
ALIGNED = {"rowclone-aligned", "rowclone-zi-aligned"}
#: The keys each mechanism sets (laid over the overrides, so an override of one would be dropped).
MECHANISM_KEYS = sorted({f"copy.{k}" for ov in MECHANISMS.values() for k in ov["copy"]})


def _engine_keys(overrides: Mapping[str, Any] | None) -> list[str]:
    """The copy engine's keys (``copy.stream_buffer_lines`` and the like) that ``overrides`` sets."""
    from movelab.platform import ENGINE_KEYS

    if overrides is not None and not isinstance(overrides, Mapping):
        raise ValueError(f"overrides must be a dict shaped like the platform, got {type(overrides).__name__}")
    copy = (overrides or {}).get("copy")
    return [f"copy.{k}" for k in ENGINE_KEYS if isinstance(copy, Mapping) and k in copy]


def _refuse_mechanism_keys(overrides: Mapping[str, Any] | None) -> None:
    """``copy.mechanism``, ``placement`` and ``mode`` are the mechanism's: given as overrides, they
    were replaced by the mechanism's own without a word (``--mechanism ce-on-die-async --set
    copy.mode=SYNC_NLB`` ran ASYNC). The engine's other keys (its buffer, its latencies) are taken."""
    if overrides:
        refuse_keys(dict(overrides), MECHANISM_KEYS, "the replayed mechanism (--mechanism)")


@dataclass
class Replay:
    """One mechanism's replay: ``summary`` (predicted times, energy, traffic, threshold) and
    ``classes`` (one row per operation and size class)."""

    mechanism: str
    summary: dict[str, Any]
    classes: pd.DataFrame
    notes: list[str] = field(default_factory=list)


#: Every kind a recording's row may have (docs/record-replay.md, the tables of kinds): the interposer's
#: calls, the kernel's page faults, its system calls' byte sums and its touches of user buffers. A
#: replay runs the copies and initialisations among them and knows the others move nothing of theirs.
KNOWN_KINDS = (*KINDS.values(), *FAULT_KINDS, *SYSCALLS.values(), *TOUCH_KINDS)


def check_kinds(df: pd.DataFrame, where: str = "the trace") -> None:
    """Raises ``ValueError`` for a row whose ``kind`` is none that a recording has (or is missing),
    naming ``where``, the row (its index: the row number in a recording as read), the kind and the
    kinds known: such a row (a recording damaged, or written by another version) was dropped from
    the replay without a word, and what it moved with it."""
    kind = df["kind"]
    bad = (~kind.isin(KNOWN_KINDS) | kind.isna()).to_numpy(dtype=bool)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    k = kind.iloc[i]
    more = int(bad.sum()) - 1
    what = "no kind" if pd.isna(k) else f"unknown kind {k!r}"
    raise ValueError(f"{where}: row {df.index[i]}: {what}"
                     f"{f' (and {more:,} more rows of unknown kinds)' if more else ''}; a recording's kinds are "
                     f"{', '.join(KNOWN_KINDS)}")


def movement_events(df: pd.DataFrame, where: str = "the trace") -> pd.DataFrame:
    """The rows a replay runs: copies and initialisations that move bytes, with ``op`` (copy or
    init) and ``gap_ns`` (time since the previous recorded call on the thread ended). A row of a
    kind no recording has is refused (:func:`check_kinds`), naming ``where`` and the row."""
    check_kinds(df, where)
    ev = df[df["kind"].isin(COPY_KINDS + INIT_KINDS) & (df["bytes"] > 0)].copy()
    ev["op"] = np.where(ev["kind"].isin(COPY_KINDS), "copy", "init")
    ev["value"] = ev["value"].fillna(0)
    single = ev["t_ns"].notna()
    s = ev[single].sort_values(["pid", "tid", "t_ns"], kind="stable")
    end = s["t_ns"] + s["dur_ns"].fillna(0)
    prev_end = end.groupby([s["pid"], s["tid"]]).shift(1)
    gap = (s["t_ns"] - prev_end).clip(lower=0)
    ev["gap_ns"] = pd.Series(dtype="float64")
    ev.loc[s.index, "gap_ns"] = gap.astype("float64")
    ev["reuse"] = alloc_reuse(ev)
    return ev


def alloc_reuse(ev: pd.DataFrame) -> np.ndarray:
    """Per row: whether it is an allocating call (``calloc``, ``realloc``) that returned an address
    an earlier allocating call of the same process returned for a request of the same size rounded
    up to 16 bytes (the allocators' granule): a freed block of its own size handed back, the
    allocator's short path (glibc: the exact-size bin). Only the rows given count as earlier calls
    (a recording's ``malloc`` and ``free`` are not recorded, nor, where the caller left them out,
    its disturbed calls); aggregated rows (no time) are never a reuse."""
    out = np.zeros(len(ev), dtype=bool)
    if "dst" not in ev or "size" not in ev:
        return out
    alloc = ev["kind"].isin(["calloc", "realloc"]).to_numpy() & ev["t_ns"].notna().to_numpy()
    if not alloc.any():
        return out
    a = ev[alloc]
    order = np.argsort(a["t_ns"].to_numpy(np.float64), kind="stable")
    pos = np.flatnonzero(alloc)[order]
    pid = a["pid"].to_numpy()[order]
    dst = a["dst"].fillna(0).to_numpy(np.uint64)[order]  # 0: no address (a failed call)
    gran = ((a["size"].astype("float64").to_numpy()[order] + 15) // 16).astype(np.int64)
    last: dict[tuple, int] = {}
    for i, key in enumerate(zip(pid.tolist(), dst.tolist(), strict=True)):
        if key[1] == 0:
            continue
        if last.get(key) == gran[i]:
            out[pos[i]] = True
        last[key] = int(gran[i])
    return out


def _compute_rate(platform: Any, base: Mapping[str, Any]) -> float:
    """Instructions per ns of the platform's core on the replay's compute op (a calibration of the
    gap conversion, done once per platform)."""
    from movelab import platform as plat

    n = 200_000
    text = _toml([("compute", n, 0, 0, 0, 0)])
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "calib.toml"
        p.write_text(text)
        r = plat._run(platform, p, dict(base), unread_ok=True)
    return n / max(r.stats["time_ns"], 1e-9)


def _toml(ops: list[tuple], name: str = "replay") -> str:
    lines = [f'name = "{name}"', 'description = "a recorded program\'s copies and initialisations"',
             "iterations = 1", "", "[[regions]]", 'name = "mem"', "base = 0", f"size = {FOLD + 1}", "",
             "[[regions]]", 'name = "hot"', f"base = {HOT_BASE}", "size = 16384", ""]
    if any(op[0] == "evict" for op in ops):
        size = 2 * max(op[1] for op in ops if op[0] == "evict")
        lines += ["[[regions]]", 'name = "evict"', f"base = {EVICT_BASE}", f"size = {size}", ""]
    for kind, a, b, c, d, policy in ops:
        lines.append("[[ops]]")
        if kind == "compute":
            lines.append(f'kind = "compute"\nn = {a}\nloads = 0.25\nstores = 0.1\nregion = "hot"')
        elif kind == "evict":  # streams 2 x a bytes through the private caches (the llc state)
            lines.append(f'kind = "copy"\nsrc = {{ region = "evict", offset = 0 }}\n'
                         f'dst = {{ region = "evict", offset = {a} }}\nbytes = {a}')
        elif kind == "copy":
            lines.append(f'kind = "copy"\nsrc = {{ region = "mem", offset = {a} }}\n'
                         f'dst = {{ region = "mem", offset = {b} }}\nbytes = {c}')
            if policy:
                lines.append(f'dst_policy = "{policy}"')
        else:
            lines.append(f'kind = "init"\ndst = {{ region = "mem", offset = {b} }}\nbytes = {c}\nvalue = {d}')
        lines.append("")
    return "\n".join(lines)


def _stats(st: dict[str, Any]) -> tuple[float, float, float]:
    """(time ns, DRAM energy nJ, channel bytes) of a platform run; the energy is NaN on a memory without
    public currents (no energy model), not a zero."""
    energy = float(st["dram_energy_nj"]) if (st.get("dram") or {}).get("energy_available", True) else float("nan")
    return float(st["time_ns"]), energy, float(st["memory"]["channel_bytes"])


def _sample(cls: pd.DataFrame, samples: int, budget: int) -> pd.DataFrame:
    singles = cls[cls["t_ns"].notna()].sort_values("t_ns", kind="stable")
    mean = max(float(cls["bytes"].sum()) / max(float(cls["count"].sum()), 1.0), 1.0)
    k = int(min(samples, max(2, budget // mean)))
    if len(singles) == 0:
        return singles
    if len(singles) <= k:
        return singles
    idx = np.unique(np.linspace(0, len(singles) - 1, k).round().astype(int))
    return singles.iloc[idx]


def _ops(sample: pd.DataFrame, rate: float, max_gap: int, aligned: bool, synth: tuple[int, int, str] | None,
         with_moves: bool) -> list[tuple]:
    ops: list[tuple] = []
    if synth is not None:  # an aggregate-only class: synthetic calls of the mean size, 64-byte aligned
        n, size, kind = synth
        rows = [(kind, (i * 2 * size) % FOLD, ((i * 2 + 1) * size) % FOLD, size, 0, 1000) for i in range(n)]
        out: list[tuple] = []
        for op, s, d, sz, v, g in rows:
            out.append(("compute", g, 0, 0, 0, 0))
            if with_moves:
                out += [(op, s & ~63, d & ~63, sz, v, "")] if sz <= PIECE else _pieces(op, 0, 0, sz, v, False)
        return out
    # Only the columns read below: itertuples builds a column per column of the frame.
    for r in sample[["gap_ns", "op", "src", "dst", "size", "value"]].itertuples(index=False):
        gap = r.gap_ns if isinstance(r.gap_ns, float) and not math.isnan(r.gap_ns) else 0.0
        n = int(min(max_gap, max(1, round(gap * rate))))
        ops.append(("compute", n, 0, 0, 0, 0))
        if not with_moves:
            continue
        src = int(r.src) & FOLD if r.op == "copy" and not pd.isna(r.src) else 0
        dst = int(r.dst) & FOLD if not pd.isna(r.dst) else 0
        ops += _pieces(r.op, src, dst, int(r.size), int(r.value) if r.op == "init" else 0, aligned)
    return ops


def _pieces(op: str, src: int, dst: int, size: int, value: int, aligned: bool) -> list[tuple]:
    """One recorded call as the operations replayed for it: itself, its addresses folded into the
    GiB and moved down where the call would run past it; a call of more than ``PIECE`` bytes as
    back-to-back pieces of at most that many (the same bytes in all) from consecutive addresses."""
    out = []
    done = 0
    while True:
        n = min(size - done, PIECE)
        s, d = (src + done) & FOLD, (dst + done) & FOLD
        if d + n > FOLD + 1:
            d = (FOLD + 1 - n) & ~63
        if s + n > FOLD + 1:
            s = (FOLD + 1 - n) & ~63
        policy = ""
        if aligned:
            s, d = s & ~(ROW - 1), d & ~(ROW - 1)
            policy = "same-subarray" if op == "copy" else ""
        out.append((op, s, d, n, value, policy))
        done += n
        if done >= size:
            return out


#: The cache states a replayed call can start in (docs/record-replay.md, "Cache state").
CACHE_MODES = ("tracked", "cold", "warm")


def _cache_bytes(platform: Any, base: Mapping[str, Any]) -> tuple[int, int]:
    """(level-2 bytes, last-level bytes) of the simulated platform (the last level is the level 2
    where the platform has no LLC; the level 1 where it has no level 2)."""
    from movelab import platform as plat

    cfg = plat.load_config(platform, dict(base) or None)
    sizes = [int(c["size_kib"]) * 1024 for c in (cfg.get("l1"), cfg.get("l2")) if c]
    l2 = sizes[-1] if sizes else 32 * 1024
    llc = int(cfg["llc"]["size_kib"]) * 1024 if cfg.get("llc") else l2
    return l2, max(llc, l2)


def class_shares(cls: pd.DataFrame, st: pd.DataFrame, side: str | None = None) -> dict[str, float]:
    """The share of a class's calls (rows of ``cls``, weighted by ``count``) in each cache state,
    from :func:`movelab.record.cachestate.states`; aggregated calls (no addresses) count as in the
    last level. ``side`` (``src`` or ``dst``): one buffer's lines, from the ``split`` columns."""
    col = (lambda s: s) if side is None else (lambda s: f"{side}_{s}")
    calls = max(float(cls["count"].sum()), 1.0)
    timed = st.reindex(cls.index).dropna(subset=[col("warm")])
    w = cls.loc[timed.index, "count"].astype("float64")
    untimed = calls - float(w.sum())
    return {s: (float((timed[col(s)] * w).sum()) + (untimed if s == "llc" else 0.0)) / calls
            for s in cachestate.STATES}


def _ns_map(m: Any, least_key: int) -> bool:
    """Whether ``m`` is a non-empty mapping of whole numbers of at least ``least_key`` (bytes) to
    finite non-negative ns (a probe rule's figures)."""
    return isinstance(m, Mapping) and bool(m) and not any(
        isinstance(k, bool) or not isinstance(k, int) or k < least_key or isinstance(v, bool)
        or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 for k, v in m.items())


def dst_write_ns(cls: pd.DataFrame, st: pd.DataFrame, dst_write: Mapping[str, float],
                 cold_copy: Mapping[int, float] | None = None, op: str = "copy",
                 st_small: pd.DataFrame | None = None, stream: pd.Series | None = None,
                 stream_copy: Mapping[int, float] | None = None, stream_copy_size: int = 1024) -> float:
    """The measured extra time of a class's destination writes, per call: each timed call's
    destination lines (its 64-byte lines, alignment included) times its share of them in the last
    level (``dst_write["llc"]`` ns a line) and in memory (``dst_write["cold"]``); an aggregated
    call (no addresses) as one in the last level. ``cold_copy`` ({bytes: ns}, the isolated
    cold-copy probe, :func:`movelab.record.calibration.cold_copy_extra`): a *copy* whose size lies
    within the probe's sizes is charged, for its destination's share in memory, the probe's extra
    ns a call at its size (linear between the probe's sizes) instead of the per-line figure; other
    sizes and initialisations keep the per-line figure. ``st_small``: the states with the
    cold-copy probe's own boundary, whose destination shares (last level and memory) then stand
    for those copies' in place of ``st``'s. ``stream`` (a bool per timed call,
    :func:`movelab.record.streams.streaming`): only the copies it marks False (isolated) take the
    cold-copy probe's figure and ``st_small``'s shares; a copy continuing a stream of writes keeps
    the fill probe's per-line figure and ``st``'s shares, as a copy of another size does.
    ``stream_copy`` ({reuse distance in bytes: ns}, the streaming reply-copy probe,
    :func:`movelab.record.calibration.stream_copy_extra`), with ``stream``: a copy of those sizes
    that continues a stream is charged instead the probe's extra at its destination's median reuse
    distance (``st``'s ``dst_distance``, linear between the probe's points, its last point beyond
    them; a destination no earlier call touched counts as hot, as the tracked state takes it),
    scaled by its bytes over the probe's ``stream_copy_size``."""
    calls = max(float(cls["count"].sum()), 1.0)
    timed = st.reindex(cls.index).dropna(subset=["dst_warm"])
    c = cls.loc[timed.index]
    dst = c["dst"].astype("float64").to_numpy() % cachestate.LINE
    size = np.maximum(c["size"].astype("float64").to_numpy(), 1)
    lines = np.ceil((dst + size) / cachestate.LINE)
    w = c["count"].astype("float64").to_numpy()
    cold = lines * dst_write["cold"]
    llc_share, cold_share = timed["dst_llc"].to_numpy(), timed["dst_cold"].to_numpy()
    if cold_copy and op == "copy":
        sizes = np.array(sorted(cold_copy), dtype="float64")
        extra = np.array([cold_copy[int(n)] for n in sizes], dtype="float64")
        small = (size >= sizes[0]) & (size <= sizes[-1])
        streaming = small.copy()
        if stream is not None:
            streaming &= stream.reindex(timed.index).fillna(False).to_numpy(bool)
            small &= ~streaming
        cold = np.where(small, np.interp(size, sizes, extra), cold)
        if st_small is not None:
            other = st_small.reindex(timed.index)
            llc_share = np.where(small, other["dst_llc"].to_numpy(), llc_share)
            cold_share = np.where(small, other["dst_cold"].to_numpy(), cold_share)
    per = lines * llc_share * dst_write["llc"] + cold_share * cold
    if stream_copy and stream is not None and cold_copy and op == "copy":
        at = np.array(sorted(stream_copy), dtype="float64")
        add = np.array([stream_copy[int(d)] for d in at], dtype="float64")
        dist = np.nan_to_num(timed["dst_distance"].to_numpy(np.float64), nan=0.0)
        per = np.where(streaming, np.interp(dist, at, add) * size / stream_copy_size, per)
    untimed = cls[~cls.index.isin(timed.index)]
    agg = float((np.ceil(np.maximum(untimed["size"].astype("float64"), 1) / cachestate.LINE) * untimed["count"]).sum())
    return (float((per * w).sum()) + agg * dst_write["llc"]) / calls


def replay(trace: str | Path | pd.DataFrame, platform: Any = "rowclone-system", mechanism: str = "cpu", *,
           samples: int = 16, budget_bytes: int = 4 << 20, max_gap_instructions: int = 50_000,
           overrides: Mapping[str, Any] | None = None, warm: bool = False, cache: str | None = None,
           call_cost: Mapping[str, float] | None = None, touch_rate: float | None = None,
           distance: str | None = None, fresh: str | None = None, kernel_touches: bool = True,
           gap_edges_ns: Sequence[float] | None = None, region: int | None = None,
           alloc_cost: Mapping[str, Any] | None = None, split: bool | None = None,
           dst_write: Mapping[str, float] | None = None, llc_boundary: float | None = None,
           cold_copy: Mapping[int, float] | None = None, cold_copy_boundary: float | None = None,
           streams: bool = False, stream_copy: Mapping[int, float] | None = None, stream_copy_size: int | None = None,
           _cache: dict | None = None, _engine_keys_ok: bool = False) -> Replay:
    """Replays ``trace`` (a Parquet path from ``movelab record`` or its DataFrame) on ``platform``
    (a preset name, TOML path or dict as :func:`movelab.platform.run` takes) under ``mechanism``
    (one of :data:`MECHANISMS`).

    ``cache``: the state each replayed call starts in. ``"tracked"`` (the default): per call, from
    the recorded addresses (:mod:`movelab.record.cachestate`): its buffers in the private caches
    (``warm``), in the last level (``llc``) or in DRAM (``cold``), each class costed in each state
    its calls were in and weighted by their shares. ``"cold"``: every call finds its buffers
    wherever the previous replayed calls of its class left them (mostly DRAM); ``"warm"`` (or
    ``warm=True``): after a first pass that leaves them in the caches.

    ``touch_rate``: for ``"tracked"``, the bytes of its own data the program is taken to touch per
    ns between the calls (default :data:`movelab.record.cachestate.TOUCH_RATE`, a calibration).
    ``distance``: for ``"tracked"``, how a line's reuse distance counts the calls in between:
    ``"lines"`` (the distinct lines they touched: the LRU stack distance) or ``"bytes"`` (every
    byte they moved); default :data:`movelab.record.cachestate.DISTANCE`. ``fresh``: the state of
    a destination line no earlier recorded call touched (``"warm"``, ``"llc"``, ``"cold"``, or
    ``"untouched"``: the state of other untouched lines); default
    :data:`movelab.record.cachestate.FRESH`. ``region``: the recency granularity in bytes (a
    line's previous touch is its aligned region's latest; default
    :data:`movelab.record.cachestate.REGION` with ``"bytes"``, one line with ``"lines"``).

    ``kernel_touches``: for ``"tracked"``, count the kernel's copies to and from user buffers
    (``read``, ``pread``, ``write``, ... recorded with their buffer) as touches of those lines, as
    the recorded calls' are (a page read into a buffer and then copied out finds it cached).

    ``call_cost``: ns added per call of each kind (``memcpy``, ``calloc``, ...) for what the
    simulated copy does not contain: the call itself and the allocator's work in ``calloc`` and
    ``realloc``; :func:`movelab.record.calibration.call_costs` measures it on this machine. A kind's
    value may instead be a list of ns per gap class (the time since the thread's previous recorded
    call, classes split at ``gap_edges_ns``; :func:`movelab.record.calibration.gap_costs` measures
    it): a thread's first call takes the last class, an aggregated call (below ``--min-bytes``) the
    first.

    ``split``, ``dst_write``: for ``"tracked"``, each buffer in its own state (default
    :data:`movelab.record.cachestate.SPLIT` where ``dst_write`` is given, else off): a copy is
    simulated with its source in each state and its destination in the private caches, weighted
    by the shares of its source lines; its
    destination's lines in the last level and in memory are charged ``dst_write`` (``{"llc": ns,
    "cold": ns}`` a line, over a write to a cached line: measured on the recording machine by the
    fill probe, :func:`movelab.record.calibration.dst_write_costs`); an initialisation is its warm
    simulation plus the same charge. With ``split=True`` and no ``dst_write`` the buffers are
    classified apart but a call is costed by its lines' mixed shares, both buffers simulated in each
    state; ``split=False`` is the rule before 28 Nov 2026 (what ``movelab replay`` and ``movelab
    what-if`` do unless given ``--buffer-states`` with ``--probes``).

    ``llc_boundary``: for ``"tracked"``, the reuse distance (bytes) beyond which a line is in
    memory, in place of the simulated last level's size: measured on the recording machine by the
    fill probe's sweep (:func:`movelab.record.calibration.llc_boundary`: where a destination
    write's cost is half-way to memory's); the simulated caches are unchanged.

    ``cold_copy``: with ``dst_write`` (costed apart), the isolated cold-copy rule ({bytes: ns a copy
    adds when its destination is in memory}, measured on the recording machine by the cold-copy
    probe, :func:`movelab.record.calibration.cold_copy_extra`): a copy whose size lies within the
    probe's sizes is charged that figure (linear in size between them) for its destination's share
    in memory, in place of the fill probe's per-line ``dst_write["cold"]`` (:func:`dst_write_ns`).
    The same rule for every program; off by default (docs/record-replay.md, "Isolated copies into
    cold destinations"). ``cold_copy_boundary``: with ``cold_copy``, the reuse distance (bytes)
    beyond which those copies' destination lines count as in memory, in place of ``llc_boundary``
    (the cold-copy probe's sweep, :func:`movelab.record.calibration.cold_copy_boundary`).
    ``streams``: with ``cold_copy``, the rule by context (off by default): only *isolated* copies
    take the cold-copy probe (and ``cold_copy_boundary``); a copy that continues its thread's
    stream of writes to consecutive addresses (:func:`movelab.record.streams.streaming`) keeps the
    fill probe's figure and boundary, as the fill probe measures such copies.
    ``stream_copy``: with ``streams``, the streaming-copy rule (off by default): a copy of the
    cold-copy probe's sizes that continues a stream is charged the streaming reply-copy probe's
    extra at its destination's reuse distance ({bytes: ns} of a ``stream_copy_size``-byte copy,
    :func:`movelab.record.calibration.stream_copy_extra`; :func:`dst_write_ns`) in place of the fill
    probe's per-line figure.

    ``alloc_cost``: the allocator's own path in ``calloc`` and ``realloc`` per size class and gap,
    measured on the recording machine (:func:`movelab.record.calibration.alloc_costs`). With it, a
    ``calloc`` (``realloc``) is charged its base kind's ``call_cost`` (``memset``, ``memcpy``: the
    call itself) plus the measured path of its size class, instead of its own ``call_cost``."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r} (known: {', '.join(MECHANISMS)})")
    _refuse_mechanism_keys(overrides)
    if not _engine_keys_ok and MECHANISMS[mechanism]["copy"].get("mechanism") != "ce":
        given = _engine_keys(overrides)
        if given:
            raise ValueError(f"overrides: {given[0]}: only a copy engine reads it, and mechanism {mechanism!r} is "
                             "not one (a ce-* mechanism is)")
    for name, v in (("warm", warm), ("kernel_touches", kernel_touches)):
        if not isinstance(v, bool):
            raise ValueError(f"{name} must be True or False, got {v!r}")
    if split is not None and not isinstance(split, bool):
        raise ValueError(f"split must be True, False or None, got {split!r}")
    for name, v in (("samples", samples), ("budget_bytes", budget_bytes),
                    ("max_gap_instructions", max_gap_instructions)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    mode = cache if cache is not None else ("warm" if warm else "tracked")
    if mode not in CACHE_MODES:
        raise ValueError(f"unknown cache mode {mode!r} (known: {', '.join(CACHE_MODES)})")
    dist = cachestate.DISTANCE if distance is None else distance
    if dist not in cachestate.DISTANCES:
        raise ValueError(f"unknown distance {distance!r} (known: {', '.join(cachestate.DISTANCES)})")
    if fresh is not None and fresh not in (*cachestate.STATES, "untouched"):
        raise ValueError(f"unknown fresh state {fresh!r} (known: {', '.join(cachestate.STATES)}, untouched)")
    fresh_state = cachestate.FRESH if fresh is None else None if fresh == "untouched" else fresh
    if (distance is not None or fresh is not None or region is not None) and mode != "tracked":
        raise ValueError(f"distance, fresh and region apply to cache='tracked' only, not {mode!r}")
    reg = (cachestate.REGION if dist == "bytes" else cachestate.LINE) if region is None else region
    if isinstance(reg, bool) or not isinstance(reg, int) or reg < cachestate.LINE or reg & (reg - 1):
        raise ValueError(f"region must be a power of two of at least {cachestate.LINE} bytes, got {region!r}")
    if dist == "lines" and reg != cachestate.LINE:
        raise ValueError(f"region recency ({reg} bytes) applies to distance='bytes' only")
    if call_cost is not None and not isinstance(call_cost, Mapping):
        raise ValueError(f"call_cost must map call kinds to ns, got {type(call_cost).__name__}")
    costs = dict(call_cost or {})
    from movelab.record.calibration import KINDS as CALL_KINDS  # the interposer's calls (faults have none)

    unknown = sorted(set(costs) - set(CALL_KINDS))
    if unknown:
        raise ValueError(f"call_cost: unknown call kind {unknown[0]!r} (known: {', '.join(CALL_KINDS)})")
    edges = None if gap_edges_ns is None else [float(e) for e in gap_edges_ns]
    if edges is not None and (any(not math.isfinite(e) or e <= 0 for e in edges) or edges != sorted(set(edges))):
        raise ValueError(f"gap_edges_ns must be increasing positive numbers of ns, got {gap_edges_ns!r}")
    for k, v in costs.items():
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        if isinstance(v, (list, tuple)) and (edges is None or len(vals) != len(edges) + 1):
            raise ValueError(f"call_cost[{k!r}] is a list: it needs gap_edges_ns and one value per gap class "
                             f"({'no gap_edges_ns' if edges is None else len(edges) + 1} ), got {len(vals)}")
        for x in vals:
            if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x < 0:
                raise ValueError(f"call_cost[{k!r}] must be non-negative numbers of ns, got {v!r}")
    if alloc_cost is not None:
        _check_alloc_cost(alloc_cost)
    if dst_write is not None:
        if not isinstance(dst_write, Mapping) or set(dst_write) != {"llc", "cold"} or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0
                for v in dst_write.values()):
            raise ValueError(f"dst_write must map 'llc' and 'cold' to non-negative ns per destination line, "
                             f"got {dst_write!r}")
        if mode != "tracked":
            raise ValueError(f"dst_write applies to cache='tracked' only, not {mode!r}")
    sp = bool(cachestate.SPLIT and dst_write is not None if split is None else split) and mode == "tracked"
    costed_apart = sp and dst_write is not None
    if not isinstance(streams, bool):
        raise ValueError(f"streams must be True or False, got {streams!r}")
    for name, rule, least, keys, ok, needs in (
            ("cold_copy", cold_copy, 1, "sizes in bytes (positive integers)", costed_apart,
             "applies where each buffer is costed in its own state: it needs cache='tracked', dst_write and split "
             "not False"),
            ("stream_copy", stream_copy, 0, "reuse distances in bytes (integers from 0)", streams,
             "applies with streams=True only (the rule by context decides which copies stream)")):
        if rule is None:
            continue
        if not _ns_map(rule, least):
            raise ValueError(f"{name} must map {keys} to non-negative ns a copy, got {rule!r}")
        if not ok:
            raise ValueError(f"{name} {needs}")
    if cold_copy_boundary is not None and cold_copy is None:
        raise ValueError("cold_copy_boundary applies with cold_copy only")
    if stream_copy_size is not None and stream_copy is None:
        raise ValueError("stream_copy_size is the stream-copy probe's copy size: it applies with stream_copy only")
    stream_copy_size = 1024 if stream_copy_size is None else stream_copy_size
    if isinstance(stream_copy_size, bool) or not isinstance(stream_copy_size, int) or stream_copy_size < 1:
        raise ValueError(f"stream_copy_size must be the probe's copy size in bytes (a positive integer), "
                         f"got {stream_copy_size!r}")
    if streams and cold_copy is None:
        raise ValueError("streams applies with cold_copy only (it decides which small copies take the cold-copy "
                         "probe)")
    if isinstance(trace, pd.DataFrame):
        df, meta = trace, dict(trace.attrs.get("movelab", {}))
    else:
        df, meta = read(trace)
    # The recording's metadata is in ``meta`` from here on; pandas deep-copies a frame's attrs
    # into every frame, column and row derived from it, which was half of a replay's time.
    df = df.copy(deep=False)
    df.attrs = {}
    ev = movement_events(df, "the trace" if isinstance(trace, pd.DataFrame) else f"trace {trace}")
    if ev.empty:
        raise ValueError("the trace holds no copies or initialisations to replay")
    from movelab import platform as plat

    cache_d = _cache if _cache is not None else {}
    base = dict(overrides or {})
    key = ("rate", repr(platform), repr(sorted(base.items())))
    if key not in cache_d:
        cache_d[key] = _compute_rate(platform, base)
    rate = cache_d[key]
    l2_bytes, llc_bytes = _cache_bytes(platform, base)
    llc_sim = llc_bytes
    if llc_boundary is not None:
        _check_boundary("llc_boundary", llc_boundary, l2_bytes)
        if mode != "tracked":
            raise ValueError(f"llc_boundary applies to cache='tracked' only, not {mode!r}")
        llc_bytes = int(llc_boundary)
    rho = cachestate.TOUCH_RATE if touch_rate is None else touch_rate

    def states_at(llc: int) -> pd.DataFrame:
        """The tracked states with the last level's boundary at ``llc`` bytes (cached per trace)."""
        skey = ("states", id(df), len(df), l2_bytes, llc, rho, dist, fresh_state, kernel_touches, reg, sp)
        if skey not in cache_d:
            kt = df[df["kind"].isin(TOUCH_KINDS)] if kernel_touches else None
            # df kept: its id stays unique
            cache_d[skey] = (df, cachestate.states(ev, l2_bytes, llc, rho, distance=dist, fresh=fresh_state,
                                                   kernel=kt, region=reg, split=sp))
        return cache_d[skey][1]

    if mode == "tracked":
        st = states_at(llc_bytes)
        st_small = stream = None
        if streams:
            skey = ("streams", id(df), len(df))
            if skey not in cache_d:
                from movelab.record.streams import streaming

                cache_d[skey] = (df, streaming(ev))
            stream = cache_d[skey][1]
        if cold_copy_boundary is not None:
            _check_boundary("cold_copy_boundary", cold_copy_boundary, l2_bytes)
            st_small = states_at(int(cold_copy_boundary))
    mech_ov = layered(base, MECHANISMS[mechanism])
    cpu_ov = layered(base, MECHANISMS["cpu"])
    aligned = mechanism in ALIGNED
    rows = []
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        for (op, sc), cls in ev.groupby(["op", "size_class"], sort=True):
            calls = int(cls["count"].sum())
            nbytes = int(cls["bytes"].sum())
            sample = _sample(cls, samples, budget_bytes)
            synth = None
            if sample.empty:
                size = max(1, nbytes // max(calls, 1))
                synth = (int(min(samples, max(2, budget_bytes // size))), size, str(op))
                notes.append(f"{op} class {sc}: only aggregated calls (below --min-bytes); replayed as "
                             f"{synth[0]} synthetic {size}-byte calls, 64-byte aligned, 1000 instructions apart")
            k = synth[0] if synth else len(sample)
            key = (repr(platform), repr(sorted(base.items())), op, int(sc), k,
                   tuple(sample.index) if synth is None else synth)
            if mode == "tracked":
                share = class_shares(cls, st)
                if costed_apart:
                    src_share = class_shares(cls, st, "src") if op == "copy" else {"warm": 1.0, "llc": 0.0,
                                                                                    "cold": 0.0}
                    dst_share = class_shares(cls, st, "dst")
                    dst_extra = dst_write_ns(cls, st, dst_write, cold_copy, str(op), st_small, stream,
                                             stream_copy, stream_copy_size)
            else:
                share = {mode: 1.0}

            def sim(moves: bool, state: str, key: tuple = key, sample: pd.DataFrame = sample,
                    synth: tuple | None = synth, op: str = str(op), sc: int = int(sc), mname: str = mechanism,
                    m_ov: Mapping[str, Any] = mech_ov, m_aligned: bool = aligned) -> tuple[float, float, float]:
                """(time, energy, traffic) of the class's sample with or without its copies and
                initialisations, its buffers starting in ``state``: ``cold``, wherever the previous
                replayed calls left them; ``warm``, after a first pass with them (the same first
                pass in both runs, so the difference is the second's); ``llc``, the same first pass
                then a copy of half the level-2 size (so the level-2 size read and written) through the
                private caches. Costed
                apart (``split`` with ``dst_write``), a copy's destinations are then written once
                more (the same in both runs): the state is its source's, the destination cached."""
                apart = costed_apart and op == "copy"
                ck = ("run", moves, state, mname if (moves or state != "cold" or apart) else "", key, apart)
                if ck not in cache_d:
                    ops = _ops(sample, rate, max_gap_instructions, m_aligned, synth, moves)
                    if state != "cold":
                        pre = _ops(sample, rate, max_gap_instructions, m_aligned, synth, True)
                        if state == "llc":
                            pre.append(("evict", l2_bytes // 2, 0, 0, 0, ""))
                        ops = pre + ops
                    if apart:  # the destinations written (a non-zero fill: on the core whatever the mechanism)
                        touch = [("init", 0, o[2], o[3], 1, "") for o in
                                 _ops(sample, rate, max_gap_instructions, m_aligned, synth, True) if o[0] == "copy"]
                        main = _ops(sample, rate, max_gap_instructions, m_aligned, synth, moves)
                        ops = ops[:len(ops) - len(main)] + touch + main
                    path = Path(tmp) / f"{op}-{sc}-{int(moves)}-{state}-{int(apart)}.toml"
                    path.write_text(_toml(ops))
                    ov = m_ov if moves or state != "cold" or apart else cpu_ov
                    cache_d[ck] = _stats(plat._run(platform, path, ov, unread_ok=True).stats)
                return cache_d[ck]

            per_call = energy = traffic = raw_call = 0.0
            per_state = {}
            clamped = []
            # tracked: every state is simulated (the per-state costs are part of the output)
            for s in (cachestate.STATES if mode == "tracked" else (mode,)):
                f = share[s] if not costed_apart else src_share[s]
                t0, e0, b0 = sim(False, s)
                t1, e1, b1 = sim(True, s)
                # A call cannot take less than nothing: the difference of two runs whose compute
                # dominates (up to 50,000 instructions before each of a few sampled calls) has a
                # noise of its own, below zero for some classes of small, warm calls (gcc's
                # 64-127 byte initialisations: -22 ns a call); it counts as 0 (MIN_MOVE_NS), and
                # the class says so. Likewise energy and traffic.
                raw = (t1 - t0) / k
                if raw < MIN_MOVE_NS:
                    clamped.append(s)
                per_state[s] = max(raw, MIN_MOVE_NS)
                raw_call += f * raw
                per_call += f * per_state[s]
                energy += f * max((e1 - e0) / k, 0.0)
                traffic += f * max((b1 - b0) / k, 0.0)
            if costed_apart:
                per_call += dst_extra
                raw_call += dst_extra
            # The kernel's calls of the class (its zeroing and copy-on-write faults): their time is
            # in the program's own, not in the measured calls', so the total takes out what the
            # cpu mechanism predicts for them before it adds this mechanism's (the kernel's real
            # time is not measured; the cpu replay stands for it).
            user_calls = int(cls.loc[cls["source"] == "interposer", "count"].sum())
            kernel_cpu = 0.0
            if calls > user_calls:
                if mechanism == "cpu":
                    kernel_cpu = per_call
                else:
                    for s in (cachestate.STATES if mode == "tracked" else (mode,)):
                        f = share[s] if not costed_apart else src_share[s]
                        t0 = sim(False, s, mname="cpu", m_ov=cpu_ov, m_aligned=False)[0]
                        t1 = sim(True, s, mname="cpu", m_ov=cpu_ov, m_aligned=False)[0]
                        kernel_cpu += f * max((t1 - t0) / k, MIN_MOVE_NS)
                    if costed_apart:
                        kernel_cpu += dst_extra
            fixed = _fixed_cost(cls, costs, edges, alloc_cost) if costs or alloc_cost else 0.0
            measured = cls["dur_ns"].sum(min_count=1)
            net = corrected_dur(cls[cls["source"] == "interposer"], meta).sum()
            row = {"op": op, "size_class": int(sc),
                   "size_range": f"{1 << (int(sc) - 1) if sc else 0}-{(1 << int(sc)) - 1}",
                   "calls": calls, "bytes": nbytes, "sampled": k, "synthetic": k if synth else 0,
                   "sim_ns_per_call": per_call,
                   "call_cost_ns": fixed, "predicted_ns": per_call * calls + fixed,
                   "predicted_user_ns": per_call * user_calls + fixed,
                   "kernel_cpu_ns": kernel_cpu * (calls - user_calls),
                   "predicted_unclamped_ns": raw_call * calls + fixed, "clamped_states": ",".join(clamped),
                   "measured_ns": float(measured) if not pd.isna(measured) else float("nan"),
                   "measured_net_ns": float(net) if not pd.isna(measured) else float("nan"),
                   "energy_nj": energy * calls, "channel_bytes": traffic * calls}
            for s in cachestate.STATES:
                row[f"share_{s}"] = share.get(s, 0.0)
                row[f"sim_ns_{s}"] = per_state.get(s, float("nan"))
                if costed_apart:
                    row[f"share_src_{s}"] = src_share[s]
                    row[f"share_dst_{s}"] = dst_share[s]
            if costed_apart:
                row["dst_write_ns"] = dst_extra
            if mode == "tracked" and stream is not None and op == "copy":
                timed_w = cls.loc[cls["t_ns"].notna() & cls["dst"].notna(), "count"].astype("float64")
                iso = ~stream.reindex(timed_w.index).fillna(False).to_numpy(bool)
                row["isolated_share"] = float((timed_w * iso).sum() / max(float(timed_w.sum()), 1.0))
            rows.append(row)
    classes = pd.DataFrame(rows)
    user = df[df["source"] == "interposer"]
    # The measured side covers the calls the replay predicts (those that move bytes); calls of
    # 0 bytes (SQLite makes 0.4 million: memmove and memset of nothing) stay in the program's own
    # time, and their time inside the calls is reported apart.
    moving = user.index.isin(ev.index)
    measured_in_calls = float(user.loc[moving, "dur_ns"].sum())
    net_all = corrected_dur(user, meta)
    measured_net = float(net_all[moving].sum())
    measured_zero = float(net_all[~moving].sum())
    wall = float(meta.get("program_ns", meta.get("wall_ns", float("nan"))))
    if meta.get("timed") is False:
        # Recorded without timing the calls (record --no-time): the time inside them is part of the
        # program's and cannot be taken out, so a total (program less measured plus predicted) would
        # count the calls twice, and there is nothing measured to compare with.
        measured_in_calls = measured_net = measured_zero = float("nan")
        notes.append("the recording's calls were not timed (record --no-time): no total time and no measured "
                     "time are given (the program's time includes the calls, which cannot be taken out)")
    moved = float(classes["predicted_ns"].sum())
    moved_user = float(classes["predicted_user_ns"].sum())
    # The program's time holds its calls' measured time and the kernel's own movement: the total
    # replaces the first with the predicted calls and the second (as the cpu replay predicts it)
    # with this mechanism's prediction of the kernel's.
    kernel_cpu = float(classes["kernel_cpu_ns"].sum())
    summary = {
        "mechanism": mechanism, "movement_ns": moved, "movement_user_ns": moved_user,
        "movement_kernel_ns": moved - moved_user, "kernel_cpu_ns": kernel_cpu,
        "movement_unclamped_ns": float(classes["predicted_unclamped_ns"].sum()),
        "clamped_classes": int((classes["clamped_states"] != "").sum()),
        "total_ns": wall - measured_in_calls - kernel_cpu + moved if not math.isnan(wall - measured_in_calls)
        else float("nan"),
        "energy_nj": float(classes["energy_nj"].sum()), "channel_bytes": float(classes["channel_bytes"].sum()),
        "measured_in_calls_ns": measured_in_calls, "measured_net_ns": measured_net, "program_ns": wall,
        "measured_net_unreplayed_ns": measured_zero,
        "calls": int(ev["count"].sum()), "bytes": int(ev["bytes"].sum()),
        "sampled_calls": int(classes["sampled"].sum()), "synthetic_calls": int(classes["synthetic"].sum()),
        "classes": len(classes), "rate_instr_per_ns": rate,
        "warm": mode == "warm", "cache": mode, "call_cost_ns": float(classes["call_cost_ns"].sum()),
        "l2_bytes": l2_bytes, "llc_bytes": llc_sim, "llc_boundary": llc_bytes if mode == "tracked" else None,
        "touch_rate": rho if mode == "tracked" else None,
        "distance": dist if mode == "tracked" else None, "region": reg if mode == "tracked" else None,
        "fresh": fresh_state if mode == "tracked" else None,
        "split": sp, "dst_write": dict(dst_write) if costed_apart else None,
        "cold_copy": dict(cold_copy) if cold_copy is not None else None, "cold_copy_boundary": cold_copy_boundary,
        "streams": streams, "stream_copy": dict(stream_copy) if stream_copy is not None else None,
        "kernel_touches": int(df["kind"].isin(TOUCH_KINDS).sum()) if mode == "tracked" and kernel_touches else 0,
    }
    if mode == "tracked":
        tot = max(float(classes["calls"].sum()), 1.0)
        for s in cachestate.STATES:
            summary[f"share_{s}"] = float((classes[f"share_{s}"] * classes["calls"]).sum()) / tot
    return Replay(mechanism, summary, classes, notes)


def _check_boundary(name: str, v: Any, l2_bytes: int) -> None:
    """Refuses a boundary (bytes of reuse distance) that is not a finite number of at least the
    level-2 size, naming it."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < l2_bytes:
        raise ValueError(f"{name} must be a number of bytes of at least the level-2 size ({l2_bytes}), got {v!r}")


def _check_alloc_cost(cost: Mapping[str, Any]) -> None:
    """Refuses an ``alloc_cost`` that is not :func:`movelab.record.calibration.alloc_costs`'s
    shape (``{"ns": {kind: {"hot"|"cold": {size class: ns}}}, "edge_ns": ns}``), naming what."""
    from movelab.record.calibration import ALLOC_BASE

    ns = cost.get("ns") if isinstance(cost, Mapping) else None
    if not isinstance(ns, Mapping):
        raise ValueError("alloc_cost needs an 'ns' table ({kind: {'hot' or 'cold': {size class: ns}}}, "
                         "optionally 'reuse_hot' and 'reuse_cold'), as "
                         "movelab.record.calibration.alloc_costs() returns")
    edge = cost.get("edge_ns", 1.0)
    if isinstance(edge, bool) or not isinstance(edge, (int, float)) or not math.isfinite(edge) or edge <= 0:
        raise ValueError(f"alloc_cost['edge_ns'] must be a positive number of ns, got {edge!r}")
    for kind, per in ns.items():
        if kind not in ALLOC_BASE:
            raise ValueError(f"alloc_cost['ns'] has {kind!r}: only {', '.join(ALLOC_BASE)} run the allocator")
        if not isinstance(per, Mapping) or not ({"hot", "cold"} & set(per)) \
                or set(per) - {"hot", "cold", "reuse_hot", "reuse_cold"}:
            raise ValueError(f"alloc_cost['ns'][{kind!r}] must map 'hot' and/or 'cold' (and optionally "
                             f"'reuse_hot', 'reuse_cold') to per-class figures")
        for run, table in per.items():
            if not isinstance(table, Mapping) or not table:
                raise ValueError(f"alloc_cost['ns'][{kind!r}][{run!r}] must map size classes to ns, got {table!r}")
            for k, v in table.items():
                if not str(k).isdigit() or isinstance(v, bool) or not isinstance(v, (int, float)) \
                        or not math.isfinite(v) or v < 0:
                    raise ValueError(f"alloc_cost['ns'][{kind!r}][{run!r}]: size class {k!r} must be an integer "
                                     f"and its cost a non-negative number of ns, got {v!r}")


def _fixed_cost(cls: pd.DataFrame, costs: Mapping[str, Any], edges: Sequence[float] | None,
                alloc: Mapping[str, Any] | None = None) -> float:
    """The per-call costs of a class's calls: a kind's number per call, or its list's value for
    the call's gap class (a thread's first call: the last class; an aggregated row: the first).
    With ``alloc`` (:func:`movelab.record.calibration.alloc_costs`), an allocating kind's call is
    charged its base kind's cost plus the measured allocator path of its size class and gap."""
    from movelab.record.calibration import ALLOC_BASE, alloc_cost_ns, gap_class

    total = 0.0
    for kind, g in cls.groupby("kind", sort=False):
        n = g["count"].astype("float64").to_numpy()
        path = None
        if alloc is not None and str(kind) in ALLOC_BASE:
            gap = g["gap_ns"].astype("float64").to_numpy()
            # an aggregated row (no time): back to back, as the call cost's first gap class
            gap = np.where(g["t_ns"].isna().to_numpy(), 0.0, gap)
            reuse = g["reuse"].to_numpy(bool) if "reuse" in g else None
            size = g["size"].astype("float64").to_numpy() if "size" in g else None
            path = alloc_cost_ns(alloc, str(kind), g["size_class"].to_numpy(np.int64), gap, reuse, size)
        v = costs.get(ALLOC_BASE[str(kind)] if path is not None else str(kind))
        if path is not None:
            total += float((path * n).sum())
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            c = np.asarray(v, dtype=np.float64)[gap_class(g["gap_ns"], edges or ())]
            c = np.where(g["t_ns"].isna().to_numpy(), float(v[0]), c)
            total += float((c * n).sum())
        else:
            total += float(v) * float(n.sum())
    return total


def what_if(trace: str | Path | pd.DataFrame, platform: Any = "rowclone-system",
            mechanisms: Sequence[str] | None = None, _cache: dict | None = None,
            **kw: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every mechanism side by side: (one row per mechanism, one row per mechanism and class).
    A mechanism the platform cannot run (e.g. RowClone on DRAM without subarrays) gets its error in
    ``error`` instead of figures. ``threshold_bytes``: the smallest size from which the mechanism
    is faster than the CPU copy for every larger class of the same operation (copy or init); the
    ``best_*`` figures send only those calls to it."""
    if isinstance(trace, pd.DataFrame):
        df = trace
    else:
        df, meta = read(trace)
        check_kinds(df, f"trace {trace}")
        df.attrs["movelab"] = meta
    if mechanisms is not None and (isinstance(mechanisms, str) or not isinstance(mechanisms, Sequence)
                                   or not mechanisms):
        raise ValueError(f"mechanisms must be a non-empty list of mechanism names (None: all), got {mechanisms!r}")
    names = list(mechanisms or MECHANISMS)
    unknown = [m for m in names if m not in MECHANISMS]
    if unknown:
        raise ValueError(f"unknown mechanism {unknown[0]!r} (known: {', '.join(MECHANISMS)})")
    if "cpu" not in names:
        names.insert(0, "cpu")
    # A copy engine's key reaches the ce-* mechanisms among them; with none, it would change nothing.
    given = _engine_keys(kw.get("overrides"))
    if given and not any(MECHANISMS[m]["copy"].get("mechanism") == "ce" for m in names):
        raise ValueError(f"overrides: {given[0]}: only a copy engine reads it, and no mechanism here is one")
    cache: dict = _cache if _cache is not None else {}
    reps: dict[str, Replay] = {}
    errors: dict[str, str] = {}
    for m in names:
        try:
            reps[m] = replay(df, platform, m, _cache=cache, _engine_keys_ok=True, **kw)
        except ValueError as e:
            if m == "cpu":
                raise
            errors[m] = str(e).splitlines()[0]
    base = reps["cpu"].classes.set_index(["op", "size_class"])
    rows, cls_rows = [], []
    for m in names:
        if m in errors:
            rows.append({"mechanism": m, "error": errors[m]})
            continue
        r = reps[m]
        c = r.classes.set_index(["op", "size_class"])
        faster = c["predicted_ns"] < base["predicted_ns"]
        thresholds = {}
        best_ns = 0.0
        for op in ("copy", "init"):
            if op not in c.index.get_level_values(0):
                continue
            f = faster.loc[op]
            sizes = list(f.index)
            thr, thr_sc = None, None
            for i, sc in enumerate(sizes):
                if all(f.loc[s] for s in sizes[i:]):
                    thr, thr_sc = (1 << (int(sc) - 1) if sc else 0), int(sc)
                    break
            thresholds[op] = thr
            use = f.index >= thr_sc if thr_sc is not None else np.zeros(len(f), bool)
            best_ns += float(np.where(use, c.loc[op, "predicted_ns"], base.loc[op, "predicted_ns"]).sum())
        s = r.summary
        wall = s["program_ns"]
        rows.append({"mechanism": m, "movement_ns": s["movement_ns"], "total_ns": s["total_ns"],
                     "saving_pct": 100.0 * (1 - s["movement_ns"] / reps["cpu"].summary["movement_ns"])
                     if reps["cpu"].summary["movement_ns"] else float("nan"),
                     "energy_nj": s["energy_nj"], "channel_bytes": s["channel_bytes"],
                     "copy_threshold_bytes": thresholds.get("copy"), "init_threshold_bytes": thresholds.get("init"),
                     "best_movement_ns": best_ns,
                     "best_total_ns": wall - s["measured_in_calls_ns"] - s["kernel_cpu_ns"] + best_ns
                     if not math.isnan(wall) else None,
                     "error": None})
        cc = r.classes.copy()
        cc.insert(0, "mechanism", m)
        cls_rows.append(cc)
    return pd.DataFrame(rows), pd.concat(cls_rows, ignore_index=True)


def replay_windows(trace: str | Path | pd.DataFrame, platform: Any = "rowclone-system", mechanism: str = "cpu", *,
                   windows: int = 4, length: int = 256, max_gap_instructions: int = 50_000,
                   overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The other estimator: ``windows`` runs of ``length`` consecutive recorded calls (all sizes,
    in time order, evenly spread over the recording), each replayed with and without its moves; the
    movement cost per call of the windows, times the number of calls. Unlike the per-class replay,
    a call finds the buffers the calls just before it left in the caches (reuse within a window is
    kept; a window starts cold). Returns the predicted movement time and what it came from."""
    from movelab import platform as plat

    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r} (known: {', '.join(MECHANISMS)})")
    _refuse_mechanism_keys(overrides)
    for name, v in (("windows", windows), ("length", length), ("max_gap_instructions", max_gap_instructions)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if isinstance(trace, pd.DataFrame):
        df = trace
    else:
        df, meta = read(trace)
        df.attrs["movelab"] = meta
    ev = movement_events(df, "the trace" if isinstance(trace, pd.DataFrame) else f"trace {trace}")
    ev = ev[ev["t_ns"].notna()].sort_values("t_ns", kind="stable")
    if ev.empty:
        raise ValueError("the trace holds no timed copies or initialisations to replay")
    base = dict(overrides or {})
    rate = _compute_rate(platform, base)
    length = min(length, len(ev))
    # At most as many windows as fit side by side: more would overlap and count calls twice.
    fit = len(ev) // length
    if windows > fit:
        raise ValueError(f"windows: {windows} windows of {length} calls do not fit in the recording's {len(ev)} "
                         f"timed calls without overlapping (at most {fit})")
    starts = sorted({int(s) for s in np.linspace(0, len(ev) - length, windows).round()})
    cost = calls = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for i, s in enumerate(starts):
            w = ev.iloc[s:s + length]
            t = []
            for moves in (False, True):
                path = Path(tmp) / f"w{i}-{int(moves)}.toml"
                path.write_text(_toml(_ops(w, rate, max_gap_instructions, mechanism in ALIGNED, None, moves)))
                ov = layered(base, MECHANISMS[mechanism if moves else "cpu"])
                t.append(_stats(plat._run(platform, path, ov, unread_ok=True).stats)[0])
            cost += t[1] - t[0]
            calls += float(w["count"].sum())
    total_calls = float(ev["count"].sum())
    return {"mechanism": mechanism, "movement_ns": cost / calls * total_calls, "windows": len(starts),
            "window_calls": int(calls), "calls": int(total_calls)}
