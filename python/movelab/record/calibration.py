"""The per-call cost the simulated copy does not contain, measured on this machine (a calibration,
declared as one wherever it is used; docs/record-replay.md, "Per-call cost").

A recorded call's time is the call itself (the jump through the PLT, the C library's dispatch on
the size, the return, what remains of the clock reads after their correction; in ``calloc`` and
``realloc`` also the allocator's own work) plus the bytes it moves. The simulator models the bytes
only. :func:`measure` records the calibration program ``calibrate.c`` (built at first use like the
interposer) making thousands of calls of 1 to 32 bytes on buffers hot in the L1 cache; a kind's
*call cost* is the median time measured inside them (the median over three runs of each run's
median) less the replay's own prediction for the same calls with their buffers warm (what the
simulator already counts). The result is cached per machine and calibration source in the movelab
cache directory.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from movelab._util import input_path
from movelab.record import _build

#: Calls of at most this many bytes are the calibration's (the bytes moved are negligible there; a
#: moving realloc of the smallest blocks is recorded with their usable size, 24 bytes in glibc).
TINY = 32
KINDS = ("memcpy", "memmove", "memset", "calloc", "realloc")
#: Calibration runs whose medians are combined (by their median).
RUNS = 3
#: Upper edges (ns) of the gap classes of :func:`gap_costs`: the time since the thread's previous
#: recorded call ended (the last class is open; a thread's first call falls in it).
GAP_EDGES_NS = (100, 300, 1000, 3000, 10000)
#: Fewest calls a gap class needs in the calibration recordings to get its own figure (else it
#: takes the next shorter class's).
MIN_GAP_CALLS = 100
#: Calls slower than this (ns) are left out of :func:`gap_costs`' means: a call of at most
#: :data:`TINY` bytes with warm lines that took 5 us held an interrupt or a hypervisor stop (no trace
#: event marks them; docs/record-replay.md, "What the error came from"), not the call's own cost.
#: In the calibration programs' few hundred calls per gap class, one such stop moved a class's mean
#: tenfold between two recordings of the same hour (a 1-3 us gap: 33 against 332 ns a call). Not a
#: fit: the bound is the one the validation already names for interrupts, fixed before the sets it
#: was checked on. Since 28 Nov 2026 such calls (over ``trace.STOP_NS`` plus 1 ns per byte) are
#: left out of every undisturbed set as stopped (``trace.stopped``), the validated programs' measured
#: side included; this trim applies the same bound here and stays for a tighter ``trim_ns``.
GAP_TRIM_NS = 5000.0
#: The demonstration programs whose recordings calibrate the gap-dependent call cost in
#: ``movelab bench record`` (the others validate it).
GAP_CALIBRATION_PROGRAMS = ("python", "shell")


def measure(reps: int = 2000) -> pd.DataFrame:
    """Records the calibration program (``reps`` calls per size and function, hot buffers) and
    returns its calls: one row each, with ``net_ns`` (time inside less the clock reads' cost).
    The first 64 calls of each size and function (the warm-up) are dropped."""
    from movelab.record import recorder
    from movelab.record.trace import corrected_dur

    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 10_000_000:
        raise ValueError(f"reps must be an integer in 1..10000000, got {reps!r}")
    prog = _build.calibration_program()
    df = recorder.run([str(prog), str(reps)], kernel_events=False)
    meta = df.attrs["movelab"]
    u = df[(df["source"] == "interposer") & df["kind"].isin(KINDS) & df["t_ns"].notna()].copy()
    u["net_ns"] = corrected_dur(u, meta)
    u = u.sort_values("t_ns", kind="stable")
    u = u[u.groupby(["kind", "size"]).cumcount() >= 64]
    u.attrs["movelab"] = meta
    return u


def _cached(tag: str, what: list[Any], desc: Mapping[str, Any], reps: int,
            refresh: bool) -> tuple[Path, dict[str, Any] | None]:
    """The cache file of a calibration (keyed by ``what``, the calibration source, this machine's
    model and clock, and ``reps``) and its contents, None when absent, damaged or ``refresh``."""
    key = hashlib.sha256(json.dumps([*what, _build.source_text("calibrate.c").decode(), desc["model"],
                                     desc["cpu_mhz"], reps], sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = _build.cache_dir() / f"{tag}-{key}.json"
    if path.is_file() and not refresh:
        try:
            return path, json.loads(path.read_text())
        except ValueError:
            pass  # a damaged cache file: measure again
    return path, None


def _store(path: Path, out: Mapping[str, Any]) -> None:
    """Writes a calibration's cache file atomically (a concurrent run writes the same figures or
    its own, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
        json.dump(out, f, indent=2)
    os.replace(f.name, path)


def hot_call_ns(calls: pd.DataFrame) -> pd.Series:
    """Per kind, the mean time inside the calls of at most :data:`TINY` bytes (``net_ns``), those
    over :data:`GAP_TRIM_NS` left out (an interrupt or a hypervisor stop). A mean, not a median: on
    a machine whose clock reads step in 10 ns (this virtual machine's), a call of a few ns measures
    0 or 10 ns, so every median is 0 or 10 while the mean over thousands of calls is the call's time
    (the clock's phase is uniform across calls)."""
    tiny = calls[(calls["size"] <= TINY) & (calls["net_ns"] <= GAP_TRIM_NS)]
    return tiny.groupby("kind")["net_ns"].mean()


def call_costs(platform: Any, reps: int = 2000, *, refresh: bool = False) -> dict[str, Any]:
    """Per kind, the measured cost of a call beyond what the replay on ``platform`` predicts for
    it with its buffers warm: ``{"call_ns": {kind: ns}, "measured_ns": {...}, "simulated_ns":
    {...}, "calls": n, "source": ...}``. Cached (keyed by the platform, the calibration source and
    this machine's model) unless ``refresh``."""
    from movelab.record import machine
    from movelab.record.replay import replay

    desc = machine.describe()
    path, cached = _cached("calibration", [repr(platform), "trimmed mean"], desc, reps, refresh)
    if cached is not None:
        return cached
    # Three runs, the median of their means: one process's clock-read cost (measured once at its
    # start) can be off by more than a hot tiny call's whole time, which would bias a single run.
    runs = [measure(reps) for _ in range(RUNS)]
    per_run = pd.DataFrame([hot_call_ns(r) for r in runs])
    measured = per_run.median()
    calls = runs[0]
    tiny = calls[calls["size"] <= TINY]
    simulated: dict[str, float] = {}
    for kind, g in tiny.groupby("kind"):
        g = g.copy()
        g.attrs = dict(calls.attrs)
        r = replay(g, platform, "cpu", samples=16, cache="warm")
        simulated[str(kind)] = float(r.summary["movement_ns"]) / max(float(g["count"].sum()), 1.0)
    cost = {k: max(0.0, float(measured[k]) - simulated.get(k, 0.0)) for k in measured.index}
    out = {"call_ns": cost, "measured_ns": {k: float(v) for k, v in measured.items()}, "simulated_ns": simulated,
           "measured_ns_per_run": [{k: float(v) for k, v in row.items()} for _, row in per_run.iterrows()],
           "calls": len(tiny), "reps": reps, "machine": desc["model"],
           "source": f"calibrate.c under the interposer on this machine: mean time inside calls of 1-{TINY} "
                     f"bytes on hot buffers (those over {GAP_TRIM_NS:.0f} ns left out), median of {RUNS} runs, "
                     f"less the warm replay of the same calls"}
    _store(path, out)
    return out


def latencies(sizes_kib: tuple[int, ...], hops: int = 2_000_000) -> dict[int, float]:
    """Load-to-use latency (ns) of this machine for buffers of each size (KiB), by the calibration
    program's pointer chase through the buffer's lines in a random cyclic order, timed on the
    thread's CPU time (a shared machine's preemptions are not counted; a virtual machine's
    page walks are)."""
    prog = _build.calibration_program()
    out: dict[int, float] = {}
    for kib in sizes_kib:
        if isinstance(kib, bool) or not isinstance(kib, int) or kib < 4:
            raise ValueError(f"latency buffer sizes must be integers of at least 4 KiB, got {kib!r}")
        proc = subprocess.run([str(prog), "latency", str(kib), str(hops)], capture_output=True, text=True,
                              timeout=300)
        parts = proc.stdout.split()
        if proc.returncode != 0 or len(parts) != 3 or parts[0] != "latency_ns":
            raise RuntimeError(f"the latency calibration failed for {kib} KiB: {proc.stderr.strip() or proc.stdout}")
        out[kib] = float(parts[2])
    return out


#: The fill probe's points (``calibrate fill NBUF ROUNDS``: 1 KiB copies from hot sources into NBUF
#: buffers of 16 KiB written in turn): ``hot`` one buffer (the private caches); ``llc`` 128 buffers,
#: 2 MiB (past the level 2, where the replay's last-level latency is measured); ``memory`` 8,192
#: buffers, 128 MiB (past any last level of the machines measured here).
FILL_POINTS = {"hot": 1, "llc": 128, "memory": 8192}
#: The fill probe's sweep (buffers of 16 KiB: 16 KiB to 128 MiB written in turn), for
#: :func:`llc_boundary`; it includes :data:`FILL_POINTS`.
FILL_SWEEP = (1, 64, 128, 256, 512, 1024, 2048, 8192)
#: Bytes each fill copy moves: its destination lines are this over 64.
FILL_COPY_BYTES = 1024
#: Copies per 16 KiB buffer in the fill (1,033 bytes apart).
FILL_PER_BUFFER = 16384 // 1033


def fill_costs(points: Mapping[str, int] | None = None, copies: int = 400_000,
               sweep: Sequence[int] = FILL_SWEEP) -> dict[str, Any]:
    """The fill probe (``calibrate fill``, the thread's CPU time, best of 3 laps): ns per 1 KiB copy
    from a hot source into a destination that is in the private caches (``hot``), in the last
    level (``llc``) and in memory (``memory``), each point about ``copies`` copies, and at every
    buffer count of ``sweep`` (``sweep``: {buffers: ns}, for :func:`llc_boundary`). Run at recording
    time by ``movelab bench record`` and stored in its ``platform.json`` (``fill``);
    :func:`dst_write_costs` turns it into the replay's destination write cost."""
    prog = _build.calibration_program()
    pts = dict(points or FILL_POINTS)
    if set(pts) != set(FILL_POINTS) or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                                           for v in pts.values()):
        raise ValueError(f"fill points must give a positive buffer count for each of {', '.join(FILL_POINTS)}, "
                         f"got {pts!r}")
    swept: dict[str, float] = {}
    for nbuf in sorted({*pts.values(), *(int(n) for n in sweep)}):
        rounds = max(1, copies // (nbuf * FILL_PER_BUFFER))
        proc = subprocess.run([str(prog), "fill", str(nbuf), str(rounds)], capture_output=True, text=True,
                              timeout=300)
        parts = proc.stdout.split()
        if proc.returncode != 0 or len(parts) != 3 or parts[0] != "fill":
            raise RuntimeError(f"the fill probe failed for {nbuf} buffers: {proc.stderr.strip() or proc.stdout}")
        swept[str(nbuf)] = float(parts[2])
    ns = {name: swept[str(nbuf)] for name, nbuf in pts.items()}
    return {"ns": ns, "buffers": pts, "copy_bytes": FILL_COPY_BYTES, "sweep": swept, "per_buffer": FILL_PER_BUFFER,
            "command": "calibrate.c 'fill NBUF ROUNDS' for NBUF " + ", ".join(f"{k} {v}" for k, v in pts.items()),
            "source": "1 KiB memcpy from 15 hot sources into NBUF 16 KiB buffers written 1,033 bytes at a time, "
                      "in turn; ns per copy, thread CPU time, best of 3 laps"}


def _half_way(pts: Sequence[tuple[float, float]]) -> float | None:
    """The distance at which a sorted sweep of (distance, fraction of the way from hot to memory)
    first reaches half-way, linear between the points around it (from 0 at distance 0)."""
    prev = (0.0, 0.0)
    for d, f in pts:
        if f >= 0.5:
            d0, f0 = prev
            return d0 + (0.5 - f0) / (f - f0) * (d - d0) if f > f0 else d
        prev = (d, max(f, 0.0))
    return None


def llc_boundary(fill: Mapping[str, Any]) -> float | None:
    """The last level's boundary for the replay's cache states (``replay(..., llc_boundary=...)``),
    in the replay's byte distance, from the fill probe's sweep (:func:`fill_costs`): the distance at
    which a destination write costs half-way between the hot point and the memory point,
    interpolated linearly between the two sweep points around it. A fill of n buffers writes each
    destination line again after n x (copies per buffer) copies of ``copy_bytes``, each counted
    twice (read and written), as :func:`movelab.record.cachestate.states` counts them. Measured,
    not fitted; None where the sweep is missing or never reaches half-way."""
    sw = fill.get("sweep") if isinstance(fill, Mapping) else None
    ns = fill.get("ns") if isinstance(fill, Mapping) else None
    if not isinstance(sw, Mapping) or not sw or not isinstance(ns, Mapping):
        return None
    hot, mem = float(ns["hot"]), float(ns["memory"])
    if not mem > hot:
        return None
    per = float(fill.get("per_buffer", FILL_PER_BUFFER)) * 2 * float(fill.get("copy_bytes", FILL_COPY_BYTES))
    pts = sorted((int(n) * per, (float(v) - hot) / (mem - hot)) for n, v in sw.items())
    return _half_way(pts)


def dst_write_costs(fill: Mapping[str, Any]) -> dict[str, float]:
    """The replay's destination write cost (``replay(..., dst_write=...)``): ns a destination line
    beyond a write to a cached line, in the last level (``llc``) and in memory (``cold``), from the
    fill probe (:func:`fill_costs`): (the point's ns per copy less the hot point's) over the copy's
    lines, at least 0. Measured, not fitted."""
    ns = fill.get("ns") if isinstance(fill, Mapping) else None
    if not isinstance(ns, Mapping) or any(not isinstance(ns.get(k), (int, float)) or isinstance(ns.get(k), bool)
                                          or not math.isfinite(ns[k]) or ns[k] < 0 for k in FILL_POINTS):
        raise ValueError(f"the fill probe needs ns per copy for {', '.join(FILL_POINTS)} under 'ns', got {fill!r}")
    lines = float(fill.get("copy_bytes", FILL_COPY_BYTES)) / 64
    return {"llc": max(0.0, (ns["llc"] - ns["hot"]) / lines), "cold": max(0.0, (ns["memory"] - ns["hot"]) / lines)}


#: The isolated cold-copy probe's sizes (``calibrate cold SIZE COPIES``): the replay's rule for a
#: small copy whose destination is in memory covers copies of these sizes and those between them.
COLD_COPY_SIZES = (1024, 2048)
#: The cold-copy probe's sweep (``calibrate cold SIZE COPIES SWEEP_MIB``, SIZE the smallest of
#: :data:`COLD_COPY_SIZES`): MiB read between writing the destinations and copying into them, for
#: :func:`cold_copy_boundary`.
COLD_COPY_SWEEP_MIB = (1, 2, 4, 8, 12, 16, 24, 32, 48)


def cold_copy_costs(sizes: Sequence[int] = COLD_COPY_SIZES, copies: int = 4000,
                    sweep_mib: Sequence[int] = COLD_COPY_SWEEP_MIB) -> dict[str, Any]:
    """The isolated cold-copy probe (``calibrate cold``): ``copies`` memcpy calls of each size from a
    hot source, each timed on its own, into one destination (hot) and into destinations in memory,
    one copy per destination (evicted by a read sweep three times the last level's size). Per size:
    the mean ns a call hot and cold (calls over 5 us left out), their medians and ``extra_ns``
    (cold less hot: what a destination in memory adds to an isolated copy). Run at recording time by
    ``movelab bench record`` and stored in its ``platform.json`` (``cold_copy``);
    :func:`cold_copy_extra` turns it into the replay's rule (``replay(..., cold_copy=...)``).
    ``sweep``: {MiB: mean ns a cold copy} of the smallest size with each of ``sweep_mib`` MiB read
    between the destinations' last write and the copy (the default point is 96 MiB), for
    :func:`cold_copy_boundary`."""
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4096 for n in sizes):
        raise ValueError(f"cold-copy sizes must be whole numbers of bytes from 1 to 4096, got {sizes!r}")
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= 1_000_000:
        raise ValueError(f"cold-copy copies must be a whole number from 1 to 1000000, got {copies!r}")
    prog = _build.calibration_program()
    out: dict[str, Any] = {}
    clock, left = [], 0
    for n in sorted(set(sizes)):
        proc = subprocess.run([str(prog), "cold", str(n), str(copies)], capture_output=True, text=True, timeout=300)
        parts = proc.stdout.split()
        if proc.returncode != 0 or len(parts) != 8 or parts[:2] != ["cold", str(n)]:
            raise RuntimeError(f"the cold-copy probe failed for {n} bytes: {proc.stderr.strip() or proc.stdout}")
        out[str(n)] = parse_cold_copy(parts)
        clock.append(float(parts[6]))
        left += int(parts[7])
    swept: dict[str, float] = {}
    n0 = min(sizes)
    for mib in sweep_mib:
        if isinstance(mib, bool) or not isinstance(mib, int) or not 1 <= mib <= 1024:
            raise ValueError(f"cold-copy sweep sizes must be whole MiB from 1 to 1024, got {mib!r}")
        proc = subprocess.run([str(prog), "cold", str(n0), str(copies), str(mib)], capture_output=True, text=True,
                              timeout=300)
        parts = proc.stdout.split()
        if proc.returncode != 0 or len(parts) != 8 or parts[:2] != ["cold", str(n0)]:
            raise RuntimeError(f"the cold-copy probe failed for {n0} bytes after {mib} MiB: "
                               f"{proc.stderr.strip() or proc.stdout}")
        swept[str(mib)] = parse_cold_copy(parts)["cold_ns"]
    return {"sizes": out, "copies": copies, "clock_ns": float(np.median(clock)), "left_out": left,
            "sweep_size": n0, "sweep": swept,
            "command": "calibrate.c 'cold SIZE COPIES' for SIZE " + ", ".join(str(n) for n in sorted(set(sizes))),
            "source": "isolated memcpy calls from a hot source, each timed (CLOCK_MONOTONIC), into one "
                      "destination and into one destination each in memory (evicted by a 96 MiB read sweep), "
                      "2 MiB pages; mean ns a call, calls over 5 us left out"}


def cold_copy_boundary(cold_copy: Mapping[str, Any]) -> float | None:
    """The reuse distance (bytes) beyond which an isolated small copy's destination counts as in
    memory for the cold-copy rule (``replay(..., cold_copy_boundary=...)``), from the probe's sweep
    (:func:`cold_copy_costs`): where a copy of ``sweep_size`` costs half-way between its hot and
    its memory (96 MiB) figure, linear between the sweep points around it; a sweep of n MiB is
    taken as n MiB of the replay's byte distance. Measured, not fitted (the same half-way rule as
    :func:`llc_boundary`); None where the sweep is missing or never reaches half-way."""
    sw = cold_copy.get("sweep") if isinstance(cold_copy, Mapping) else None
    sz = cold_copy.get("sizes") if isinstance(cold_copy, Mapping) else None
    n0 = str(cold_copy.get("sweep_size")) if isinstance(cold_copy, Mapping) else ""
    if not isinstance(sw, Mapping) or not sw or not isinstance(sz, Mapping) or not isinstance(sz.get(n0), Mapping):
        return None
    hot, mem = float(sz[n0]["hot_ns"]), float(sz[n0]["cold_ns"])
    if not mem > hot:
        return None
    pts = sorted((int(m) * float(1 << 20), (float(v) - hot) / (mem - hot)) for m, v in sw.items())
    return _half_way(pts)


def parse_cold_copy(parts: Sequence[str]) -> dict[str, float]:
    """One size's figures from the probe's line (``cold SIZE HOT COLD HOT_MEDIAN COLD_MEDIAN CLOCK
    LEFT_OUT``, split): ns a call, and ``extra_ns`` = cold less hot (at least 0)."""
    try:
        hot, cold, hot_med, cold_med = (float(x) for x in parts[2:6])
    except (ValueError, TypeError):
        raise ValueError(f"the cold-copy probe's line must be 'cold SIZE' and four numbers of ns, got {parts!r}") \
            from None
    if not all(math.isfinite(v) and v >= 0 for v in (hot, cold, hot_med, cold_med)):
        raise ValueError(f"the cold-copy probe's ns must be finite and non-negative, got {parts!r}")
    return {"hot_ns": hot, "cold_ns": cold, "hot_median_ns": hot_med, "cold_median_ns": cold_med,
            "extra_ns": max(0.0, cold - hot)}


def cold_copy_extra(cold_copy: Mapping[str, Any]) -> dict[int, float]:
    """The replay's cold small-copy rule (``replay(..., cold_copy=...)``) from the probe
    (:func:`cold_copy_costs`, as stored in ``platform.json``): {bytes: ns a copy adds when its
    destination is in memory}. Measured, not fitted."""
    sz = cold_copy.get("sizes") if isinstance(cold_copy, Mapping) else None
    if not isinstance(sz, Mapping) or not sz:
        raise ValueError(f"the cold-copy probe needs per-size figures under 'sizes', got {cold_copy!r}")
    out: dict[int, float] = {}
    for k, v in sz.items():
        x = v.get("extra_ns") if isinstance(v, Mapping) else None
        if not str(k).isdigit() or int(k) < 1 or isinstance(x, bool) or not isinstance(x, (int, float)) \
                or not math.isfinite(x) or x < 0:
            raise ValueError(f"the cold-copy probe's size {k!r} needs a non-negative 'extra_ns', got {v!r}")
        out[int(k)] = float(x)
    return dict(sorted(out.items()))


#: The streaming reply-copy probe's size and points (``calibrate stream SIZE COPIES SWEEP_KIB``): KiB
#: read between a reply block's last write and the chain of copies appended into it; 0 is the hot
#: chain (every reply into the same block).
STREAM_COPY_SIZE = 1024
STREAM_COPY_SWEEP_KIB = (0, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


def stream_copy_costs(copies: int = 20000, sweep_kib: Sequence[int] = STREAM_COPY_SWEEP_KIB,
                      size: int = STREAM_COPY_SIZE, repeats: int = 5) -> dict[str, Any]:
    """The streaming reply-copy probe (``calibrate stream``): chains of ``size``-byte memcpy calls
    appended into 16 KiB reply blocks in 4 KiB pages (each after a 9-byte header the program writes
    itself), from hot source elements, each call timed on its own as the interposer times a recorded
    call, the blocks last written ``sweep_kib`` KiB of other reads before (0: the same block, hot).
    Each point is measured ``repeats`` times (interleaved: every point once, then again); per point
    ``ns`` is the median over the repeats of the mean ns a call (calls over 5 us left out), with
    ``min_ns`` and ``max_ns`` (the spread), ``median_ns`` (the median of the per-run medians),
    ``cross_ns`` and ``inside_ns`` (copies whose destination crosses into a new 4 KiB page, and the
    others). Run at recording time by ``movelab bench record`` (``stream_copy`` in ``platform.json``)
    and by ``python -m movelab.record.calibration stream --out FILE`` for older recordings;
    :func:`stream_copy_extra` turns it into the replay's rule (``replay(..., stream_copy=...)``)."""
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= 1_000_000:
        raise ValueError(f"stream-copy copies must be a whole number from 1 to 1000000, got {copies!r}")
    if isinstance(size, bool) or not isinstance(size, int) or not 64 <= size <= 4096:
        raise ValueError(f"stream-copy size must be a whole number of bytes from 64 to 4096, got {size!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 100:
        raise ValueError(f"stream-copy repeats must be a whole number from 1 to 100, got {repeats!r}")
    pts = sorted(set(sweep_kib))
    if 0 not in pts or any(isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 1 << 20 for k in pts):
        raise ValueError(f"stream-copy sweep points must be whole KiB from 0 to 1048576 and include 0 (the hot "
                         f"chain), got {sweep_kib!r}")
    prog = _build.calibration_program()
    runs: dict[int, list[list[float]]] = {k: [] for k in pts}
    clock, left = [], 0
    for _ in range(repeats):
        for k in pts:
            proc = subprocess.run([str(prog), "stream", str(size), str(copies), str(k)], capture_output=True,
                                  text=True, timeout=300)
            runs[k].append(parse_stream_copy(proc.stdout.split(), size, k, proc.returncode, proc.stderr))
            clock.append(runs[k][-1][4])
            left += int(runs[k][-1][5])
    col = {k: np.array(v) for k, v in runs.items()}
    return {"size": size, "copies": copies, "repeats": repeats, "clock_ns": float(np.median(clock)), "left_out": left,
            "ns": {str(k): float(np.median(c[:, 0])) for k, c in col.items()},
            "min_ns": {str(k): float(c[:, 0].min()) for k, c in col.items()},
            "max_ns": {str(k): float(c[:, 0].max()) for k, c in col.items()},
            "median_ns": {str(k): float(np.median(c[:, 1])) for k, c in col.items()},
            "cross_ns": {str(k): float(np.median(c[:, 2])) for k, c in col.items()},
            "inside_ns": {str(k): float(np.median(c[:, 3])) for k, c in col.items()},
            "command": f"calibrate.c 'stream {size} {copies} SWEEP_KIB' for SWEEP_KIB "
                       + ", ".join(str(k) for k in pts) + f", {repeats} times",
            "source": "chains of memcpy calls appended into 16 KiB reply blocks (4 KiB pages) from hot sources, "
                      "each timed (CLOCK_MONOTONIC), the blocks last written SWEEP_KIB KiB of reads before; mean ns "
                      "a call (clock read included), calls over 5 us left out; median of the repeats"}


def parse_stream_copy(parts: Sequence[str], size: int, kib: int, rc: int = 0, err: str = "") -> list[float]:
    """One run's figures from the probe's line (``stream SIZE SWEEP_KIB MEAN MEDIAN CROSS INSIDE CLOCK
    LEFT_OUT``, split): [mean, median, cross, inside, clock, left_out]; refuses a failed run or a
    malformed line, naming the point."""
    return _probe_line(parts, ["stream", str(size), str(kib)], 6, "stream-copy", size, kib, rc, err)


def _probe_line(parts: Sequence[str], head: list[str], count: int, probe: str, size: int, kib: int, rc: int,
                err: str) -> list[float]:
    """The ``count`` figures after ``head`` on one line of a ``calibrate`` probe (split), each finite
    and non-negative; refuses a failed run or a malformed line, naming the ``probe`` and its point."""
    if rc != 0 or len(parts) != len(head) + count or list(parts[:len(head)]) != head:
        raise RuntimeError(f"the {probe} probe failed for {size} bytes after {kib} KiB: "
                           f"{err.strip() or ' '.join(parts) or 'no output'}")
    try:
        v = [float(x) for x in parts[len(head):]]
    except ValueError:
        raise RuntimeError(f"the {probe} probe's line for {kib} KiB is not numbers: {' '.join(parts)}") from None
    if not all(math.isfinite(x) and x >= 0 for x in v):
        raise RuntimeError(f"the {probe} probe's figures for {kib} KiB must be finite and non-negative: "
                           f"{' '.join(parts)}")
    return v


def stream_copy_extra(stream_copy: Mapping[str, Any]) -> dict[int, float]:
    """The replay's streaming-copy rule (``replay(..., stream_copy=...)``) from the probe
    (:func:`stream_copy_costs`, as stored in ``platform.json``): {reuse distance in bytes: ns a
    streaming copy of the probe's size adds over the hot chain (point 0)}, each at least 0; a sweep of
    n KiB is taken as n KiB of the replay's byte distance (as the other probes' sweeps are). The
    replay scales it by a copy's destination lines over the probe's. Measured, not fitted."""
    ns = stream_copy.get("ns") if isinstance(stream_copy, Mapping) else None
    size = stream_copy.get("size") if isinstance(stream_copy, Mapping) else None
    if not isinstance(ns, Mapping) or "0" not in {str(k) for k in ns} or len(ns) < 2:
        raise ValueError(f"the stream-copy probe needs 'ns' per sweep point in KiB, 0 (hot) and at least one other, "
                         f"got {stream_copy!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 64:
        raise ValueError(f"the stream-copy probe needs its copy 'size' in bytes, got {size!r}")
    vals: dict[int, float] = {}
    for k, v in ns.items():
        if not str(k).isdigit() or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0:
            raise ValueError(f"the stream-copy probe's point {k!r} needs non-negative ns, got {v!r}")
        vals[int(k)] = float(v)
    hot = vals[0]
    return {k * 1024: max(0.0, v - hot) for k, v in sorted(vals.items())}


#: The tiny-copy probe's points: KiB of other data read between two calls (0: none).
TINY_COPY_SWEEP_KIB = (0, 64, 256, 1024, 4096, 16384, 65536)
#: The tiny-copy probe's four ways (``calibrate tiny``): back to back, after the read, after the read
#: with the buffers read again (the code cold), after the read with one other copy (the buffers cold).
TINY_COPY_WAYS = ("hot", "all", "code", "buffers")


def tiny_copy_costs(size: int = 8, sweep_kib: Sequence[int] = TINY_COPY_SWEEP_KIB, copies: int = 10000,
                    budget_kib: int = 25 << 20) -> dict[str, Any]:
    """The tiny-copy probe (``calibrate tiny``): ``size``-byte memmove calls, each timed on its own as
    the interposer times a recorded call, after a read of ``sweep_kib`` KiB of other data (in 4 KiB
    pages): per point and way (:data:`TINY_COPY_WAYS`) the mean ns a call (``ns``, the clock read
    included; calls over 5 us left out) and the median (``median_ns``). Each point runs ``copies``
    calls a way, fewer where the reads would pass ``budget_kib`` KiB (at least 200). What the time
    between a program's calls costs a tiny copy on this machine: the read is the program's own work,
    nothing else. Run by ``python -m movelab.record.calibration tiny --out FILE``; no rule of the
    replay takes it (docs/record-replay.md, "zstd's tiny copies: a probe")."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 256:
        raise ValueError(f"tiny-copy size must be a whole number of bytes from 1 to 256, got {size!r}")
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= 1_000_000:
        raise ValueError(f"tiny-copy copies must be a whole number from 1 to 1000000, got {copies!r}")
    pts = sorted(set(sweep_kib))
    if not pts or any(isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 131072 for k in pts):
        raise ValueError(f"tiny-copy sweep points must be whole KiB from 0 to 131072, got {sweep_kib!r}")
    prog = _build.calibration_program()
    ns: dict[str, dict[str, float]] = {w: {} for w in TINY_COPY_WAYS}
    med: dict[str, dict[str, float]] = {w: {} for w in TINY_COPY_WAYS}
    runs: dict[str, int] = {}
    clock, left = [], 0
    for k in pts:
        n = copies if k == 0 else max(min(200, copies), min(copies, budget_kib // (3 * k)))
        proc = subprocess.run([str(prog), "tiny", str(size), str(k), str(n)], capture_output=True, text=True,
                              timeout=600)
        v = _probe_line(proc.stdout.split(), ["tiny", str(size), str(k)], 10, "tiny-copy", size, k, proc.returncode,
                        proc.stderr)
        for i, w in enumerate(TINY_COPY_WAYS):
            ns[w][str(k)] = v[i]
            med[w][str(k)] = v[4 + i]
        clock.append(v[8])
        left += int(v[9])
        runs[str(k)] = n
    return {"size": size, "ns": ns, "median_ns": med, "copies": runs, "clock_ns": float(np.median(clock)),
            "left_out": left,
            "command": f"calibrate.c 'tiny {size} SWEEP_KIB COPIES' for SWEEP_KIB " + ", ".join(str(k) for k in pts),
            "source": "memmove calls within one 4 KiB buffer, each timed (CLOCK_MONOTONIC) after a read of SWEEP_KIB "
                      "KiB of other data: hot (no read), all (the read alone), code (the buffers read again after "
                      "it), buffers (one other copy after it); mean ns a call (clock read included), calls over "
                      "5 us left out"}


#: How the probes' figures are measured, named in the errors of :func:`probe_rules`.
PROBE_COMMANDS = {
    "fill": "movelab bench record (it runs the fill probe at recording time and writes it to OUT/platform.json "
            "as 'fill')",
    "cold_copy": "movelab bench record (it runs the cold-copy probe and writes it to OUT/platform.json as "
                 "'cold_copy'), or 'python -m movelab.record.calibration cold --out FILE' on the recording machine "
                 "(FILE is then given as a probes file of its own)",
    "stream_copy": "movelab bench record (it runs the stream-copy probe and writes it to OUT/platform.json as "
                   "'stream_copy'), or 'python -m movelab.record.calibration stream --out FILE' on the recording "
                   "machine (FILE is then given as a probes file of its own)",
}


def load_probes(paths: Sequence[str | Path]) -> dict[str, Any]:
    """The probes of one or more platform descriptions (JSON files): ``movelab bench record``'s
    ``platform.json`` (keys ``fill``, ``cold_copy``, ``stream_copy``) or the cold-copy or stream-copy
    probe alone as ``python -m movelab.record.calibration cold|stream --out FILE`` writes it;
    later files win. Refuses a missing or malformed file, naming it."""
    out: dict[str, Any] = {}
    for p in paths:
        try:
            d = json.loads(input_path(p, "probes").read_text())
        except OSError as e:
            raise ValueError(f"probes file {p}: cannot be read ({e.strerror or e})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"probes file {p}: not JSON ({e})") from None
        if not isinstance(d, Mapping):
            raise ValueError(f"probes file {p}: a JSON object is needed, got {type(d).__name__}")
        if "sizes" in d and "fill" not in d and "cold_copy" not in d:
            d = {"cold_copy": d}
        elif "ns" in d and "size" in d and "fill" not in d and "stream_copy" not in d:
            d = {"stream_copy": d}
        for k in ("fill", "cold_copy", "stream_copy"):
            if k in d:
                out[k] = d[k]
                out[f"{k}_file"] = str(p)
    return out


def probe_rules(probes: Mapping[str, Any], *, buffer_states: bool = True, cold_copies: bool = False,
                streams: bool = False, stream_copies: bool = False, where: str = "the probes") -> dict[str, Any]:
    """The replay's arguments (``replay(..., **probe_rules(...))``) for the rules that need the
    recording machine's probes (:func:`load_probes`): ``buffer_states``, each buffer in its own state
    (``dst_write`` and ``llc_boundary`` from the fill probe); ``cold_copies``, the cold small-copy
    rule (``cold_copy``, from the cold-copy probe); ``streams``, the rule by context (``streams``:
    only isolated copies take the cold-copy probe, by its own boundary ``cold_copy_boundary``);
    ``stream_copies``, with ``streams``, the streaming copies take the stream-copy probe by their
    destination's reuse distance (``stream_copy``). All
    off unless asked (docs/record-replay.md, "Cache state"). A rule whose probe is missing is
    refused with the command that measures it; ``where`` names the source in the error."""
    if cold_copies and not buffer_states:
        raise ValueError("the cold small-copy rule needs each buffer in its own state (it replaces a cost of "
                         "that rule)")
    if streams and not cold_copies:
        raise ValueError("the rule by context (streams) needs the cold small-copy rule (it decides which small "
                         "copies take the cold-copy probe)")
    if stream_copies and not streams:
        raise ValueError("the streaming-copy rule needs the rule by context (streams: it decides which copies "
                         "stream)")
    if not buffer_states:
        return {}
    _need_probe(probes, "fill", "fill probe", "each buffer in its own state", where)
    fill = probes["fill"]
    out: dict[str, Any] = {"dst_write": dst_write_costs(fill)}
    boundary = llc_boundary(fill)
    if boundary is not None:
        out["llc_boundary"] = boundary
    if cold_copies:
        _need_probe(probes, "cold_copy", "cold-copy probe", "the cold small-copy rule", where)
        out["cold_copy"] = cold_copy_extra(probes["cold_copy"])
    if streams:
        out["streams"] = True
        b = cold_copy_boundary(probes["cold_copy"])
        if b is not None:
            out["cold_copy_boundary"] = b
    if stream_copies:
        _need_probe(probes, "stream_copy", "stream-copy probe", "the streaming-copy rule", where)
        out["stream_copy"] = stream_copy_extra(probes["stream_copy"])
        out["stream_copy_size"] = int(probes["stream_copy"]["size"])
    return out


def _need_probe(probes: Mapping[str, Any], key: str, name: str, user: str, where: str) -> None:
    """Refuses probes that lack ``key``, naming the rule that needs it and the command that measures it."""
    if not isinstance(probes.get(key), Mapping):
        raise ValueError(f"{where} hold no {name} ({key!r}), which {user} needs; it is measured by "
                         f"{PROBE_COMMANDS[key]}")


def gap_class(gap_ns: pd.Series | np.ndarray, edges: Sequence[float] = GAP_EDGES_NS) -> np.ndarray:
    """The gap class of each call (0 for the shortest gaps; a missing gap, a thread's first call,
    falls in the last, open class)."""
    g = np.asarray(pd.Series(gap_ns, dtype="float64").to_numpy(), dtype=np.float64)
    out = np.searchsorted(np.asarray(edges, dtype=np.float64), np.nan_to_num(g, nan=0.0), side="right")
    return np.where(np.isnan(g), len(edges), out)


def gap_costs(recordings: Sequence[pd.DataFrame], l2_bytes: int, llc_bytes: int, flat: Mapping[str, float],
              simulated: Mapping[str, float] | None = None, edges: Sequence[float] = GAP_EDGES_NS,
              names: Sequence[str] | None = None, trim_ns: float | None = GAP_TRIM_NS) -> dict[str, Any]:
    """The per-call cost as a function of the time since the thread's previous recorded call,
    measured on real programs' recordings (a calibration; docs/record-replay.md, "Per-call cost").

    A call made right after another runs with the C library's copy code, its branch history and
    its buffers hot (3-7 ns for a call of at most 32 bytes on this machine); after microseconds of
    the program's own work it finds them cold (20-40 ns), whatever the bytes it moves. Per kind and
    gap class: the mean time inside the undisturbed calls of at most :data:`TINY` bytes whose lines
    the cache-state tracking puts in the private caches (so that the replay's own cache states do
    not count twice), the clock reads' cost removed as in the validation, less ``simulated`` (the
    replay's warm prediction for such a call), calls slower than ``trim_ns`` left out (default
    :data:`GAP_TRIM_NS`: interrupts and hypervisor stops; None keeps every call). A class with
    fewer than :data:`MIN_GAP_CALLS` calls takes the next shorter class's figure; a kind with none
    keeps ``flat`` (the hot-loop calibration of :func:`call_costs`) in every class. Returns
    ``{"edges_ns": [...], "call_ns": {kind: [ns per class]}, "calls": {kind: [...]}, "programs":
    names, "trim_ns": ..., "trimmed_calls": {kind: n}, "source": ...}``."""
    from movelab.record import cachestate
    from movelab.record.kernel import TOUCH_KINDS
    from movelab.record.replay import movement_events
    from movelab.record.trace import corrected_dur, disturbed

    if not recordings:
        raise ValueError("gap_costs needs at least one recording")
    if trim_ns is not None and (isinstance(trim_ns, bool) or not isinstance(trim_ns, (int, float))
                                or not math.isfinite(trim_ns) or trim_ns <= 0):
        raise ValueError(f"trim_ns must be a positive number of ns or None, got {trim_ns!r}")
    sim = dict(simulated or {})
    frames = []
    for df in recordings:
        meta = df.attrs.get("movelab", {})
        user = df[(df["source"] == "interposer") & ~disturbed(df)]
        ev = movement_events(user)
        if ev.empty:
            continue
        ev["net"] = corrected_dur(ev, meta)  # clipped per call, as the validation's measured time
        st = cachestate.states(ev, l2_bytes, llc_bytes, kernel=df[df["kind"].isin(TOUCH_KINDS)],
                               fresh=cachestate.FRESH)
        ev = ev.loc[st.index]
        ev = ev[(ev["size"] <= TINY) & (st["warm"] == 1.0) & ev["net"].notna()]
        ev["gap_class"] = gap_class(ev["gap_ns"], edges)
        frames.append(ev[["kind", "gap_class", "net"]])
    both = pd.concat(frames) if frames else pd.DataFrame(columns=["kind", "gap_class", "net"])
    slow = both["net"].astype("float64") > trim_ns if trim_ns is not None else np.zeros(len(both), bool)
    trimmed = {str(k): int(v) for k, v in both[slow].groupby("kind").size().items()}
    both = both[~slow]
    g = both.groupby(["kind", "gap_class"])["net"].agg(["count", "mean"])
    out: dict[str, list[float]] = {}
    calls: dict[str, list[int]] = {}
    for kind, hot in flat.items():
        vals: list[float] = []
        n: list[int] = []
        for c in range(len(edges) + 1):
            k = int(g.loc[(kind, c), "count"]) if (kind, c) in g.index else 0
            n.append(k)
            if k >= MIN_GAP_CALLS:
                vals.append(max(0.0, float(g.loc[(kind, c), "mean"]) - sim.get(kind, 0.0)))
            else:
                vals.append(vals[-1] if vals else float(hot))
        out[kind] = vals
        calls[kind] = n
    return {"edges_ns": [float(e) for e in edges], "call_ns": out, "calls": calls, "programs": list(names or []),
            "trim_ns": trim_ns, "trimmed_calls": trimmed,
            "source": f"mean time inside undisturbed calls of 1-{TINY} bytes with warm lines"
                      f"{'' if trim_ns is None else f' (those over {trim_ns:.0f} ns left out)'} in the recordings of "
                      f"{', '.join(names or []) or 'the given programs'}, per gap since the thread's previous call, "
                      f"less the warm replay of such a call"}



#: The gap since the thread's previous recorded call (ns) below which a ``calloc`` or ``realloc``
#: is charged the allocator path measured back to back (``hot``), from which the one measured with
#: 64 KiB of other data read before each call (``cold``), where a measurement gives no edge of its
#: own: :func:`alloc_costs` takes the geometric mean of its two runs' median gaps (356 and 888 ns
#: on the development machine, 27 Nov 2026: 562 ns).
ALLOC_EDGE_NS = 562.0
#: The kind whose call on hot buffers holds the bytes' own cost (and the call itself) of each
#: allocating kind: what is left of the allocating call is the allocator's own path.
ALLOC_BASE = {"calloc": "memset", "realloc": "memcpy"}
#: The size buckets of ``calloc``'s path when the allocator hands back a block of the size asked
#: for (a call that returns an address an earlier allocating call of the process returned for the
#: same rounded size, :func:`movelab.record.replay.alloc_reuse`; a moving ``realloc``'s new block
#: is not such a block, so it has no such figures), measured by the probe's reuse way
#: (calibrate.c, ``alloc ... reuse``), each bucket by its largest size in bytes: 16-byte steps up
#: to 1 KiB (the allocators' bins are by size, and the sizes a program asks for within a
#: power-of-two class are its own: gcc's 64-127 byte callocs are almost all of 97-112 bytes), then
#: 1-2, 2-4 and 4-8 KiB. Its figures are keyed by these bounds.
ALLOC_REUSE_BOUNDS = (*range(16, 1025, 16), 2048, 4096, 8192)


def alloc_measure(reps: int = 2000, cold: bool = False, reuse: bool = False) -> pd.DataFrame:
    """Records ``calibrate alloc REPS [cold] [reuse]`` (the allocator in a used heap; with ``reuse``,
    each ``calloc`` asks for the size of a block of its size bucket freed just before; see calibrate.c)
    and returns its timed calls with no fault and no switch inside (``net_ns``: time inside, the
    clock reads' cost removed)."""
    from movelab.record import recorder
    from movelab.record.replay import movement_events
    from movelab.record.trace import corrected_dur, disturbed

    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 1_000_000:
        raise ValueError(f"reps must be an integer in 1..1000000, got {reps!r}")
    prog = _build.calibration_program()
    df = recorder.run([str(prog), "alloc", str(reps), *(["cold"] if cold else []), *(["reuse"] if reuse else [])])
    meta = df.attrs["movelab"]
    u = df[(df["source"] == "interposer") & df["kind"].isin(KINDS) & df["t_ns"].notna()]
    u = movement_events(u[~disturbed(u)])  # with gap_ns, the time since the thread's previous call
    u["net_ns"] = corrected_dur(u, meta)
    u.attrs["movelab"] = meta
    return u


def _base_ns(calls: pd.DataFrame) -> pd.Series:
    """Per (kind, size class), the base kind's time a call on hot buffers: the mean of the calls
    up to :data:`GAP_TRIM_NS` (an interrupt inside the call on a loaded machine left out; the
    allocating call's own mean holds its tail already). A trimmed mean, not a median: with this
    machine's 10 ns clock steps a hot ``memset`` of up to 256 bytes (about 4 ns) reads 0 or 10 ns,
    so its median was 0 and the allocator's path took the base's 4 ns as its own
    (:func:`hot_call_ns`)."""
    kept = calls[calls["net_ns"] <= GAP_TRIM_NS]
    return kept.groupby(["kind", "size_class"])["net_ns"].mean()


def alloc_path(calls: pd.DataFrame) -> dict[str, dict[str, float]]:
    """From one run of :func:`alloc_measure`: per allocating kind and size class (bit length of the
    recorded size), the mean time inside the calls less the mean time of the same run's calls of
    its :data:`ALLOC_BASE` kind of the same size class on hot buffers (the closest class measured),
    at least 0: the allocator's own path, ns a call. The allocating call's mean, not its median:
    the validation compares sums of time, and the allocator's time has a long tail (a bin search,
    a consolidation); the base kind's as :func:`_base_ns` takes it."""
    mean = calls.groupby(["kind", "size_class"])["net_ns"].mean()
    base_ns = _base_ns(calls)
    out: dict[str, dict[str, float]] = {}
    for kind, base in ALLOC_BASE.items():
        if kind not in mean.index.get_level_values(0) or base not in base_ns.index.get_level_values(0):
            continue
        b = base_ns.loc[base]
        bk = np.asarray(b.index, dtype=np.int64)
        out[kind] = {}
        for sc, v in mean.loc[kind].items():
            near = int(bk[np.argmin(np.abs(bk - int(sc)))])
            out[kind][str(int(sc))] = max(0.0, float(v) - float(b.loc[near]))
    return out


#: Runs of each way of the allocator probe; :func:`alloc_costs` keeps each class's median over them.
#: One run's mean of a class moves by up to 2-4x between runs on one quiet machine (the pool's
#: random frees leave the bins in a different state each time: a class's calls then take the
#: exact-size bin or the unsorted and sorted bins' search), 27-28 Nov 2026: e.g. a 64-127 byte
#: ``calloc`` 17-73 ns over ``memset`` in six runs within 15 minutes (docs/record-replay.md, "The
#: allocator's path: blocks handed back, and the probe's spread").
ALLOC_RUNS = 3


def alloc_reuse_path(calls: pd.DataFrame) -> dict[str, float]:
    """From one run of :func:`alloc_measure` with ``reuse``: per size bucket of
    :data:`ALLOC_REUSE_BOUNDS` (keyed by its largest size), the mean over the bucket's ``calloc``
    calls of the time inside each less the same run's ``memset`` of the call's size class on hot
    buffers (:func:`_base_ns`) (the closest class measured), at least 0: the allocator's path when it hands back
    a block of the size asked for."""
    c = calls[calls["kind"] == "calloc"]
    base = _base_ns(calls[calls["kind"] == ALLOC_BASE["calloc"]])
    base = base.loc[ALLOC_BASE["calloc"]] if not base.empty else base
    if c.empty or base.empty:
        return {}
    bk = np.asarray(base.index, dtype=np.int64)
    sc = c["size_class"].to_numpy(np.int64)
    b = base.to_numpy(np.float64)[np.abs(sc[:, None] - bk[None, :]).argmin(axis=1)]
    bounds = np.asarray(ALLOC_REUSE_BOUNDS, dtype=np.int64)
    sizes = c["size"].astype("int64").to_numpy()
    keep = sizes <= bounds[-1]
    bucket = bounds[np.searchsorted(bounds, sizes[keep])]
    net = pd.Series(c["net_ns"].to_numpy(np.float64)[keep] - b[keep]).groupby(bucket).mean()
    return {str(int(k)): max(0.0, float(v)) for k, v in net.items()}


def alloc_costs(reps: int = 2000, *, runs: int = ALLOC_RUNS, refresh: bool = False) -> dict[str, Any]:
    """The allocator's own path in ``calloc`` and a moving ``realloc`` on this machine, per size
    class, measured (not fitted) by ``calibrate alloc`` under the interposer, back to back and with
    the caches cold, and for ``calloc`` also with each call asking for the size of a block freed
    just before (``reuse_hot``, ``reuse_cold``: :func:`alloc_reuse_path`, keyed by the size
    buckets' bounds in bytes, :data:`ALLOC_REUSE_BOUNDS`); each class's (bucket's) median over
    ``runs`` runs of :func:`alloc_path`: ``{"ns": {kind: {"hot": {class: ns}, "cold": {...},
    "reuse_hot": {bytes: ns}, "reuse_cold": ...}}, "edge_ns": the geometric mean of the hot and
    cold runs' median gaps,
    "base": ALLOC_BASE, "gap_ns": {way: median gap}, "calls": ..., "command": ...}``; the replay
    charges a call the path of its size class, gap and reuse (``replay(..., alloc_cost=...)``) on
    top of its base kind's call cost. Cached per machine and calibration source unless
    ``refresh``."""
    from movelab.record import machine

    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 20:
        raise ValueError(f"runs must be an integer in 1..20, got {runs!r}")
    desc = machine.describe()
    path, cached = _cached("alloc", ["alloc", runs, "trimmed base"], desc, reps, refresh)
    if cached is not None:
        return cached
    ns: dict[str, dict[str, dict[str, float]]] = {}
    gaps: dict[str, float] = {}
    calls: dict[str, dict[str, int]] = {}
    for run, cold, reuse in (("hot", False, False), ("cold", True, False),
                             ("reuse_hot", False, True), ("reuse_cold", True, True)):
        per_run: dict[str, list[dict[str, float]]] = {}
        run_gaps: list[float] = []
        n_calls: dict[str, int] = {}
        for _ in range(runs):
            u = alloc_measure(reps, cold, reuse)
            paths = {"calloc": alloc_reuse_path(u)} if reuse else alloc_path(u)
            for kind, per in paths.items():
                if per:
                    per_run.setdefault(kind, []).append(per)
            a = u[u["kind"].isin(list(ALLOC_BASE))]
            if "gap_ns" in a and a["gap_ns"].notna().any():
                run_gaps.append(float(a["gap_ns"].median()))
            for k, v in a.groupby("kind").size().items():
                n_calls[str(k)] = n_calls.get(str(k), 0) + int(v)
        for kind, tables in per_run.items():
            classes = sorted({c for t in tables for c in t}, key=int)
            ns.setdefault(kind, {})[run] = {c: float(np.median([t[c] for t in tables if c in t])) for c in classes}
        gaps[run] = float(np.median(run_gaps)) if run_gaps else float("nan")
        calls[run] = n_calls
    edge = math.sqrt(gaps["hot"] * gaps["cold"]) \
        if all(math.isfinite(gaps[r]) and gaps[r] > 0 for r in ("hot", "cold")) else ALLOC_EDGE_NS
    out = {"ns": ns, "edge_ns": edge, "base": dict(ALLOC_BASE), "gap_ns": gaps, "calls": calls,
           "reps": reps, "runs": runs, "machine": desc["model"],
           "command": f"python -m movelab.record.calibration alloc --reps {reps} --runs {runs} (calibrate.c "
                      f"'alloc {reps}', 'alloc {reps} cold', 'alloc {reps} reuse' and 'alloc {reps} cold reuse' "
                      f"under the interposer, {runs} runs each, each class's median)",
           "source": "the allocator's path: mean time inside calloc (realloc) calls of each size class in a used "
                     "heap, less the same run's mean memset (memcpy) of the class on hot buffers (calls over 5 us left "
                     "out); reuse_hot and "
                     "reuse_cold: calloc calls asking for the size of a block freed just before, per size bucket "
                     "(keyed by its largest size in bytes)"}
    _store(path, out)
    return out


def alloc_cost_ns(cost: Mapping[str, Any], kind: str, size_class: np.ndarray, gap_ns: np.ndarray,
                  reuse: np.ndarray | None = None, size: np.ndarray | None = None) -> np.ndarray | None:
    """Per call of ``kind``: the allocator path of :func:`alloc_costs` for its size class (the
    closest class measured) and gap (``hot`` below ``edge_ns``; ``cold`` from it on and for a
    missing gap, a thread's first call); for a call marked in ``reuse`` (a block handed back,
    :func:`movelab.record.replay.alloc_reuse`) whose ``size`` is given, the ``reuse_hot`` /
    ``reuse_cold`` figure of its size bucket (the smallest bound at or above its size; the largest
    beyond them) where ``cost`` has them (an older calibration has not: every call then takes the
    others). None when ``cost`` has no figures for ``kind``."""
    per = cost.get("ns", {}).get(kind)
    if not per:
        return None
    edge = float(cost.get("edge_ns", ALLOC_EDGE_NS))
    sc = np.asarray(size_class, dtype=np.int64)
    g = np.asarray(gap_ns, dtype=np.float64)
    back = np.zeros(len(sc), dtype=bool) if reuse is None or size is None else np.asarray(reuse, dtype=bool)
    if not (per.get("reuse_hot") or per.get("reuse_cold")):
        back = np.zeros(len(sc), dtype=bool)
    hot = ~np.isnan(g) & (g < edge)
    out = np.zeros(len(sc))
    for run, use in (("hot", hot & ~back), ("cold", ~hot & ~back),
                     ("reuse_hot", hot & back), ("reuse_cold", ~hot & back)):
        if not use.any():
            continue
        pre = "reuse_" if run.startswith("reuse_") else ""
        table = per.get(run) or per.get(pre + "hot") or per.get(pre + "cold")
        ks = np.asarray(sorted(int(k) for k in table), dtype=np.int64)
        vals = np.asarray([float(table[str(k)]) for k in ks])
        if pre:  # keyed by the buckets' largest sizes: the smallest at or above the call's
            n = np.nan_to_num(np.asarray(size, dtype=np.float64), nan=0.0)
            near = np.minimum(np.searchsorted(ks, n), len(ks) - 1)
        else:  # keyed by size class: the closest measured
            near = np.abs(sc[:, None] - ks[None, :]).argmin(axis=1)
        out = np.where(use, vals[near], out)
    return out


def alloc_charge(calls: pd.DataFrame, costs: Mapping[str, Any], edges: Sequence[float] | None,
                 alloc: Mapping[str, Any]) -> pd.DataFrame:
    """What the replay charges a recording's calls beyond their bytes, against what they took: per
    kind and side of the allocator's gap edge (``alloc["edge_ns"]``: back to back, or after a longer
    gap or a thread's first call), the calls, their measured time (the clock reads' cost removed,
    as the validation does) and the per-call cost the tracked replay adds (``costs``/``edges``: the
    call cost, :func:`gap_costs`'s or flat; ``alloc``: :func:`alloc_costs`, charged to ``calloc``
    and ``realloc``), with and without the allocator's path. ``calls``: a recording's rows (its
    ``attrs["movelab"]`` metadata), disturbed calls already left out by the caller. The figures
    behind "gcc's allocator charge" in docs/record-replay.md."""
    from movelab.record.replay import _check_alloc_cost, _fixed_cost, movement_events
    from movelab.record.trace import corrected_dur

    _check_alloc_cost(alloc)
    ev = movement_events(calls[calls["source"] == "interposer"])
    ev["net"] = corrected_dur(ev, calls.attrs.get("movelab", {}))
    edge = float(alloc.get("edge_ns", ALLOC_EDGE_NS))
    rows = []
    for kind, k in ev.groupby("kind", sort=True):
        hot = (k["gap_ns"].astype("float64") < edge).to_numpy()
        for side, sel in (("back to back", hot), ("after a gap", ~hot)):
            g = k[sel]
            if g.empty:
                continue
            n = float(g["count"].sum())
            charged = _fixed_cost(g, costs, edges, alloc)
            without = _fixed_cost(g, costs, edges, None)
            rows.append({"kind": str(kind), "gap": side, "calls": int(n), "measured_ns": float(g["net"].sum()),
                         "charged_ns": charged, "charged_without_path_ns": without,
                         "measured_ns_per_call": float(g["net"].sum()) / n, "charged_ns_per_call": charged / n})
    return pd.DataFrame(rows)


def _stamped(probe: Any) -> dict[str, Any] | None:
    """A probe's figures (``probe()``) with the time they were taken (``measured_utc``) and the load
    average before and after (``load_average``, each Linux's 1, 5 and 15 minutes); None, the error
    printed, where it fails."""
    import time

    before = list(os.getloadavg())
    try:
        r = probe()
    except (RuntimeError, OSError, ValueError) as e:
        print(f"error: {e}")
        return None
    return {**r, "measured_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "load_average": [before, list(os.getloadavg())]}


def _main(argv: Sequence[str]) -> int:
    """``python -m movelab.record.calibration alloc [--reps N]``: measures the allocator's path
    afresh (replacing the cached figures) and prints it per size class. ``... cold [--out FILE]``:
    runs the isolated cold-copy probe (:func:`cold_copy_costs`) and prints it (and writes it as
    JSON, with the time it was taken, to FILE): for a recording made before the probe existed.
    ``... stream [--out FILE]``: the streaming reply-copy probe (:func:`stream_copy_costs`), likewise,
    with the load average before and after. ``... tiny [--out FILE]``: the tiny-copy probe
    (:func:`tiny_copy_costs`), likewise."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m movelab.record.calibration",
                                 description="Measure this machine's allocator path in calloc and realloc (alloc), "
                                             "isolated copies into cold destinations (cold), streaming reply "
                                             "copies (stream) or tiny copies after other work (tiny).")
    ap.add_argument("what", choices=["alloc", "cold", "stream", "tiny"])
    ap.add_argument("--reps", type=int, default=2000, help="calls per size class and kind (default 2000)")
    ap.add_argument("--runs", type=int, default=ALLOC_RUNS, help=f"alloc: runs of each way, each class's median kept "
                    f"(default {ALLOC_RUNS})")
    ap.add_argument("--out", type=Path, default=None, help="cold, stream, tiny: write the probe's figures to this JSON "
                    "file")
    a = ap.parse_args(list(argv))
    if a.what == "tiny":
        r = _stamped(tiny_copy_costs)
        if r is None:
            return 1
        print(f"{r['size']}-byte memmove, mean ns a call (median) after KiB of other data read; clock read "
              f"{r['clock_ns']:.0f} ns included")
        for k in r["ns"]["hot"]:
            print(f"{int(k):>6} KiB: " + ", ".join(f"{w} {r['ns'][w][k]:.1f} ({r['median_ns'][w][k]:.0f})"
                                                  for w in TINY_COPY_WAYS))
        t0 = r["load_average"][0]
        print(f"load average before / after: {t0[0]:.1f} / {r['load_average'][1][0]:.1f}")
        if a.out is not None:
            a.out.write_text(json.dumps(r, indent=1))
        return 0
    if a.what == "stream":
        r = _stamped(stream_copy_costs)
        if r is None:
            return 1
        t0 = r["load_average"][0]
        for k in r["ns"]:
            print(f"{int(k):>6} KiB: {r['ns'][k]:.1f} ns a {r['size']}-byte copy (spread {r['min_ns'][k]:.1f}-"
                  f"{r['max_ns'][k]:.1f}; median call {r['median_ns'][k]:.0f}; crossing a page "
                  f"{r['cross_ns'][k]:.1f}, inside {r['inside_ns'][k]:.1f})")
        print(f"load average before / after: {t0[0]:.1f} / {r['load_average'][1][0]:.1f}")
        if a.out is not None:
            a.out.write_text(json.dumps(r, indent=1))
        return 0
    if a.what == "cold":
        r = _stamped(cold_copy_costs)
        if r is None:
            return 1
        for n, v in r["sizes"].items():
            print(f"{n:>5} bytes: hot {v['hot_ns']:.1f} ns, cold destination {v['cold_ns']:.1f} ns "
                  f"(medians {v['hot_median_ns']:.0f} / {v['cold_median_ns']:.0f}); extra {v['extra_ns']:.1f} ns")
        if a.out is not None:
            a.out.write_text(json.dumps(r, indent=1))
        return 0
    try:
        r = alloc_costs(a.reps, runs=a.runs, refresh=True)
    except (RuntimeError, OSError, ValueError) as e:
        print(f"error: {e}")
        return 1
    print(f"allocator path, ns a call beyond memset/memcpy on hot buffers (median gap: back to back "
          f"{r['gap_ns'].get('hot', float('nan')):.0f} ns, cold {r['gap_ns'].get('cold', float('nan')):.0f} ns)")
    for kind, per in r["ns"].items():
        for run, table in per.items():
            cells = sorted(table.items(), key=lambda x: int(x[0]))
            print(f"{kind:8s} {run:5s} " + " ".join(f"{k}:{v:.0f}" for k, v in cells))
    return 0


if __name__ == "__main__":  # pragma: no cover
    import sys

    raise SystemExit(_main(sys.argv[1:]))
