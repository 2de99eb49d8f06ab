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
   time minus the time measured inside the recorded calls plus the predicted movement time.
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

from movelab.record.trace import COPY_KINDS, INIT_KINDS, corrected_dur, read

FOLD = (1 << 30) - 1
HOT_BASE = 0x7000_0000  # the compute's hot region (16 KiB), outside the folded GiB
ROW = 4096  # the aligned allocator's alignment: a page, one DRAM row in the RowClone configs

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


@dataclass
class Replay:
    """One mechanism's replay: ``summary`` (predicted times, energy, traffic, threshold) and
    ``classes`` (one row per operation and size class)."""

    mechanism: str
    summary: dict[str, Any]
    classes: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def movement_events(df: pd.DataFrame) -> pd.DataFrame:
    """The rows a replay runs: copies and initialisations that move bytes, with ``op`` (copy or
    init) and ``gap_ns`` (time since the previous recorded call on the thread ended)."""
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
    return ev


def _compute_rate(platform: Any, base: Mapping[str, Any]) -> float:
    """Instructions per ns of the platform's core on the replay's compute op (a calibration of the
    gap conversion, done once per platform)."""
    from movelab import platform as plat

    n = 200_000
    text = _toml([("compute", n, 0, 0, 0, 0)])
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "calib.toml"
        p.write_text(text)
        r = plat.run(platform, p, overrides=dict(base))
    return n / max(r.stats["time_ns"], 1e-9)


def _toml(ops: list[tuple], name: str = "replay") -> str:
    lines = [f'name = "{name}"', 'description = "a recorded program\'s copies and initialisations"',
             "iterations = 1", "", "[[regions]]", 'name = "mem"', "base = 0", f"size = {FOLD + 1}", "",
             "[[regions]]", 'name = "hot"', f"base = {HOT_BASE}", "size = 16384", ""]
    for kind, a, b, c, d, policy in ops:
        lines.append("[[ops]]")
        if kind == "compute":
            lines.append(f'kind = "compute"\nn = {a}\nloads = 0.25\nstores = 0.1\nregion = "hot"')
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
    """(time ns, DRAM energy nJ, channel bytes) of a platform run."""
    return float(st["time_ns"]), float(st["dram_energy_nj"]), float(st["memory"]["channel_bytes"])


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
                out.append((op, s & ~63, d & ~63, sz, v, ""))
        return out
    for r in sample.itertuples():
        gap = r.gap_ns if isinstance(r.gap_ns, float) and not math.isnan(r.gap_ns) else 0.0
        n = int(min(max_gap, max(1, round(gap * rate))))
        ops.append(("compute", n, 0, 0, 0, 0))
        if not with_moves:
            continue
        src = int(r.src) & FOLD if r.op == "copy" and not pd.isna(r.src) else 0
        dst = int(r.dst) & FOLD if not pd.isna(r.dst) else 0
        size = int(r.size)
        if dst + size > FOLD + 1:
            dst = (FOLD + 1 - size) & ~63
        if src + size > FOLD + 1:
            src = (FOLD + 1 - size) & ~63
        policy = ""
        if aligned:
            src, dst = src & ~(ROW - 1), dst & ~(ROW - 1)
            policy = "same-subarray" if r.op == "copy" else ""
        ops.append((r.op, src, dst, size, int(r.value) if r.op == "init" else 0, policy))
    return ops


def replay(trace: str | Path | pd.DataFrame, platform: Any = "rowclone-system", mechanism: str = "cpu", *,
           samples: int = 16, budget_bytes: int = 4 << 20, max_gap_instructions: int = 50_000,
           overrides: Mapping[str, Any] | None = None, warm: bool = False, _cache: dict | None = None) -> Replay:
    """Replays ``trace`` (a Parquet path from ``movelab record`` or its DataFrame) on ``platform``
    (a preset name, TOML path or dict as :func:`movelab.platform.run` takes) under ``mechanism``
    (one of :data:`MECHANISMS`). ``warm``: cost each class's sample after a first pass over it
    that leaves the sampled calls' buffers in the caches (default: the buffers wherever the
    previous replayed calls left them)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r} (known: {', '.join(MECHANISMS)})")
    for name, v in (("samples", samples), ("budget_bytes", budget_bytes),
                    ("max_gap_instructions", max_gap_instructions)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if isinstance(trace, pd.DataFrame):
        df, meta = trace, dict(trace.attrs.get("movelab", {}))
    else:
        df, meta = read(trace)
    ev = movement_events(df)
    if ev.empty:
        raise ValueError("the trace holds no copies or initialisations to replay")
    from movelab import platform as plat

    cache = _cache if _cache is not None else {}
    base = dict(overrides or {})
    key = ("rate", repr(platform), repr(sorted(base.items())))
    if key not in cache:
        cache[key] = _compute_rate(platform, base)
    rate = cache[key]
    mech_ov = _merge(base, MECHANISMS[mechanism])
    cpu_ov = _merge(base, MECHANISMS["cpu"])
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

            def sim(moves: bool, key: tuple = key, sample: pd.DataFrame = sample, synth: tuple | None = synth,
                    op: str = str(op), sc: int = int(sc)) -> tuple[float, float, float]:
                """(time, energy, traffic) of the class's sample with or without its copies and
                initialisations; warm: after a first pass with them, which leaves their buffers in
                the caches (the same first pass in both runs, so the difference is the second's)."""
                ck = ("run", moves, warm, mechanism if (moves or warm) else "", key)
                if ck not in cache:
                    ops = _ops(sample, rate, max_gap_instructions, aligned, synth, moves)
                    if warm:
                        ops = _ops(sample, rate, max_gap_instructions, aligned, synth, True) + ops
                    path = Path(tmp) / f"{op}-{sc}-{int(moves)}.toml"
                    path.write_text(_toml(ops))
                    cache[ck] = _stats(plat.run(platform, path, overrides=mech_ov if moves or warm else cpu_ov).stats)
                return cache[ck]

            t0, e0, b0 = sim(False)
            t1, e1, b1 = sim(True)
            per_call = (t1 - t0) / k
            measured = cls["dur_ns"].sum(min_count=1)
            net = corrected_dur(cls[cls["source"] == "interposer"], meta).sum()
            rows.append({"op": op, "size_class": int(sc),
                         "size_range": f"{1 << (int(sc) - 1) if sc else 0}-{(1 << int(sc)) - 1}",
                         "calls": calls, "bytes": nbytes, "sampled": k, "sim_ns_per_call": per_call,
                         "predicted_ns": per_call * calls,
                         "measured_ns": float(measured) if not pd.isna(measured) else float("nan"),
                         "measured_net_ns": float(net) if not pd.isna(measured) else float("nan"),
                         "energy_nj": (e1 - e0) / k * calls, "channel_bytes": (b1 - b0) / k * calls})
    classes = pd.DataFrame(rows)
    user = df[df["source"] == "interposer"]
    measured_in_calls = float(user["dur_ns"].sum())
    measured_net = float(corrected_dur(user, meta).sum())
    wall = float(meta.get("program_ns", meta.get("wall_ns", float("nan"))))
    moved = float(classes["predicted_ns"].sum())
    summary = {
        "mechanism": mechanism, "movement_ns": moved,
        "total_ns": wall - measured_in_calls + moved if not math.isnan(wall) else float("nan"),
        "energy_nj": float(classes["energy_nj"].sum()), "channel_bytes": float(classes["channel_bytes"].sum()),
        "measured_in_calls_ns": measured_in_calls, "measured_net_ns": measured_net, "program_ns": wall,
        "calls": int(ev["count"].sum()), "bytes": int(ev["bytes"].sum()),
        "sampled_calls": int(classes["sampled"].sum()), "classes": len(classes), "rate_instr_per_ns": rate,
        "warm": warm,
    }
    return Replay(mechanism, summary, classes, notes)


def _merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def what_if(trace: str | Path | pd.DataFrame, platform: Any = "rowclone-system",
            mechanisms: Sequence[str] | None = None, **kw: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every mechanism side by side: (one row per mechanism, one row per mechanism and class).
    A mechanism the platform cannot run (e.g. RowClone on DRAM without subarrays) gets its error in
    ``error`` instead of figures. ``threshold_bytes``: the smallest size from which the mechanism
    is faster than the CPU copy for every larger class of the same operation (copy or init); the
    ``best_*`` figures send only those calls to it."""
    if isinstance(trace, pd.DataFrame):
        df = trace
    else:
        df, meta = read(trace)
        df.attrs["movelab"] = meta
    names = list(mechanisms or MECHANISMS)
    if "cpu" not in names:
        names.insert(0, "cpu")
    cache: dict = {}
    reps: dict[str, Replay] = {}
    errors: dict[str, str] = {}
    for m in names:
        try:
            reps[m] = replay(df, platform, m, _cache=cache, **kw)
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
                     "best_total_ns": wall - s["measured_in_calls_ns"] + best_ns if not math.isnan(wall) else None,
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
    if isinstance(trace, pd.DataFrame):
        df = trace
    else:
        df, meta = read(trace)
        df.attrs["movelab"] = meta
    ev = movement_events(df)
    ev = ev[ev["t_ns"].notna()].sort_values("t_ns", kind="stable")
    if ev.empty:
        raise ValueError("the trace holds no timed copies or initialisations to replay")
    base = dict(overrides or {})
    rate = _compute_rate(platform, base)
    length = min(length, len(ev))
    starts = sorted({int(s) for s in np.linspace(0, len(ev) - length, max(1, windows)).round()})
    cost = calls = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for i, s in enumerate(starts):
            w = ev.iloc[s:s + length]
            t = []
            for moves in (False, True):
                path = Path(tmp) / f"w{i}-{int(moves)}.toml"
                path.write_text(_toml(_ops(w, rate, max_gap_instructions, mechanism in ALIGNED, None, moves)))
                ov = _merge(base, MECHANISMS[mechanism if moves else "cpu"])
                t.append(_stats(plat.run(platform, path, overrides=ov).stats)[0])
            cost += t[1] - t[0]
            calls += float(w["count"].sum())
    total_calls = float(ev["count"].sum())
    return {"mechanism": mechanism, "movement_ns": cost / calls * total_calls, "windows": len(starts),
            "window_calls": int(calls), "calls": int(total_calls)}
