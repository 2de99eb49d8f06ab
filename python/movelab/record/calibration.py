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
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

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


def call_costs(platform: Any, reps: int = 2000, *, refresh: bool = False) -> dict[str, Any]:
    """Per kind, the measured cost of a call beyond what the replay on ``platform`` predicts for
    it with its buffers warm: ``{"call_ns": {kind: ns}, "measured_ns": {...}, "simulated_ns":
    {...}, "calls": n, "source": ...}``. Cached (keyed by the platform, the calibration source and
    this machine's model) unless ``refresh``."""
    from movelab.record import machine
    from movelab.record.replay import replay

    desc = machine.describe()
    key = hashlib.sha256(json.dumps([repr(platform), _build.source_text("calibrate.c").decode(), desc["model"],
                                     desc["cpu_mhz"], reps], sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = _build.cache_dir() / f"calibration-{key}.json"
    if path.is_file() and not refresh:
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass  # a damaged cache file: measure again
    # Three runs, the median of their medians: one process's clock-read cost (measured once at its
    # start) can be off by more than a hot tiny call's whole time, which would bias a single run.
    runs = [measure(reps) for _ in range(RUNS)]
    per_run = pd.DataFrame([r[r["size"] <= TINY].groupby("kind")["net_ns"].median() for r in runs])
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
           "source": f"calibrate.c under the interposer on this machine: median time inside calls of 1-{TINY} "
                     f"bytes on hot buffers, less the warm replay of the same calls"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
        json.dump(out, f, indent=2)
    os.replace(f.name, path)
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


def gap_class(gap_ns: pd.Series | np.ndarray, edges: Sequence[float] = GAP_EDGES_NS) -> np.ndarray:
    """The gap class of each call (0 for the shortest gaps; a missing gap, a thread's first call,
    falls in the last, open class)."""
    g = np.asarray(pd.Series(gap_ns, dtype="float64").to_numpy(), dtype=np.float64)
    out = np.searchsorted(np.asarray(edges, dtype=np.float64), np.nan_to_num(g, nan=0.0), side="right")
    return np.where(np.isnan(g), len(edges), out)


def gap_costs(recordings: Sequence[pd.DataFrame], l2_bytes: int, llc_bytes: int, flat: Mapping[str, float],
              simulated: Mapping[str, float] | None = None, edges: Sequence[float] = GAP_EDGES_NS,
              names: Sequence[str] | None = None) -> dict[str, Any]:
    """The per-call cost as a function of the time since the thread's previous recorded call,
    measured on real programs' recordings (a calibration; docs/record-replay.md, "Per-call cost").

    A call made right after another runs with the C library's copy code, its branch history and
    its buffers hot (3-7 ns for a call of at most 32 bytes on this machine); after microseconds of
    the program's own work it finds them cold (20-40 ns), whatever the bytes it moves. Per kind and
    gap class: the mean time inside the undisturbed calls of at most :data:`TINY` bytes whose lines
    the cache-state tracking puts in the private caches (so that the replay's own cache states do
    not count twice), the clock reads' cost removed as in the validation, less ``simulated`` (the
    replay's warm prediction for such a call). A class with fewer than :data:`MIN_GAP_CALLS` calls
    takes the next shorter class's figure; a kind with none keeps ``flat`` (the hot-loop
    calibration of :func:`call_costs`) in every class. Returns ``{"edges_ns": [...], "call_ns":
    {kind: [ns per class]}, "calls": {kind: [...]}, "programs": names, "source": ...}``."""
    from movelab.record import cachestate
    from movelab.record.kernel import TOUCH_KINDS
    from movelab.record.replay import movement_events
    from movelab.record.trace import corrected_dur, disturbed

    if not recordings:
        raise ValueError("gap_costs needs at least one recording")
    sim = dict(simulated or {})
    frames = []
    for df in recordings:
        meta = df.attrs.get("movelab", {})
        user = df[(df["source"] == "interposer") & ~disturbed(df)]
        ev = movement_events(user)
        if ev.empty:
            continue
        ev["net"] = corrected_dur(ev, meta)  # clipped per call, as the validation's measured time
        st = cachestate.states(ev, l2_bytes, llc_bytes, kernel=df[df["kind"].isin(TOUCH_KINDS)])
        ev = ev.loc[st.index]
        ev = ev[(ev["size"] <= TINY) & (st["warm"] == 1.0) & ev["net"].notna()]
        ev["gap_class"] = gap_class(ev["gap_ns"], edges)
        frames.append(ev[["kind", "gap_class", "net"]])
    both = pd.concat(frames) if frames else pd.DataFrame(columns=["kind", "gap_class", "net"])
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
            "source": f"mean time inside undisturbed calls of 1-{TINY} bytes with warm lines in the recordings of "
                      f"{', '.join(names or []) or 'the given programs'}, per gap since the thread's previous call, "
                      f"less the warm replay of such a call"}

