"""The host benchmarks after section 4 of the I/OAT user-space paper, run on this machine.

Timing loops run in Rust (``movelab_host::bench``); this module picks sizes, runs one point at a
time (so a progress bar can follow), and writes CSV, PNG and JSON. Each row carries ``engine``,
``size_bytes`` and the benchmark's figure (see :data:`FIGURE`).

* ``latency``   blocking copy vs size; ``cache`` = hot (same buffers) or cold (cycled through
                regions 8x the last-level cache); cpu = memcpy, thread = icopy + wait.
* ``bandwidth`` a window of 128 outstanding icopy operations on cold buffers.
* ``overlap``   (Tcopy + Tcompute - Ttotal) / Tcopy with Tcompute ~ 1.5 Tcopy; each point is
                measured ``repeats`` times: median, range (``overlap_lo``/``_hi``) and an
                ``unstable`` flag when the range exceeds 0.2.
* ``pollution`` time per access of a column-wise walk of a cache-resident working set right after
                a 64 MiB copy: none / cpu / thread (streaming stores) / thread_cache; repeated like
                overlap (``vs_none_lo``/``_hi``, ``unstable`` when the range exceeds 25% of the
                median).
* ``breakdown`` a small async copy split into submit, queueing, copy and completion.
* ``ipc``       from :mod:`movelab.host.bench_ipc` (single copy vs two copy vs socket).
"""

from __future__ import annotations

import csv
import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from movelab import _core

KiB, MiB = 1 << 10, 1 << 20
BENCHMARKS = ["latency", "bandwidth", "overlap", "pollution", "breakdown", "ipc"]
REPEATED = ("overlap", "pollution")  # benchmarks that take ``repeats``
FIGURE = {
    "latency": "latency_ns",
    "bandwidth": "bandwidth_mb_s",
    "overlap": "overlap",
    "pollution": "access_ns",
    "breakdown": "total_ns",
    "ipc": "latency_ns",
}

_FULL: dict[str, dict[str, Any]] = {
    "latency": {
        "sizes": [64, 256, KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB],
        "cache": ["hot", "cold"],
        "budget_bytes": 256 * MiB,
        "max_iters": 20000,
        "engines": ["cpu", "thread"],
        "channels": [1],
    },
    "bandwidth": {
        "sizes": [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB],
        "window": 128,
        "cold_region": 512 * MiB,
        "budget_bytes": 1024 * MiB,
        "engines": ["cpu", "thread"],
        "channels": [1, 2],
    },
    "overlap": {
        "sizes": [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB],
        "cache": ["hot", "cold"],
        "reps": 15,
        "repeats": 5,
        "budget_bytes": 256 * MiB,
        "engines": ["cpu", "thread"],
        "channels": [1],
    },
    "pollution": {
        "ws_sizes": [256 * KiB, 512 * KiB, 2 * MiB, 8 * MiB],
        "copy_bytes": 64 * MiB,
        "reps": 9,
        "repeats": 5,
        "engines": ["thread"],
        "channels": [1],
    },
    "breakdown": {
        "sizes": [64, KiB, 4 * KiB, 64 * KiB],
        "budget_bytes": 64 * MiB,
        "engines": ["thread", "cpu"],
        "channels": [1],
    },
}

_QUICK: dict[str, dict[str, Any]] = {
    "latency": {"sizes": [64, 64 * KiB], "cold_region": 16 * MiB, "budget_bytes": 4 * MiB, "max_iters": 200},
    "bandwidth": {"sizes": [64 * KiB, MiB], "cold_region": 16 * MiB, "budget_bytes": 8 * MiB,
                  "channels": [1]},
    "overlap": {"sizes": [64 * KiB, MiB], "cold_region": 16 * MiB, "reps": 3, "repeats": 3, "budget_bytes": 4 * MiB},
    "pollution": {"ws_sizes": [256 * KiB], "copy_bytes": 4 * MiB, "reps": 3, "repeats": 3},
    "breakdown": {"sizes": [64, 4 * KiB], "budget_bytes": 256 * KiB, "max_iters": 100},
}


def spec_for(name: str, quick: bool = False, **overrides: Any) -> dict[str, Any]:
    """The spec a benchmark runs with: defaults, then the quick variant, then ``overrides``
    (``None`` values are ignored)."""
    if name not in _FULL:
        raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)})")
    spec = dict(_FULL[name])
    if quick:
        spec.update(_QUICK[name])
    spec.update({k: v for k, v in overrides.items() if v is not None})
    return spec


def _points(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a spec into one Rust call per point, so progress can be reported between them."""
    base = {k: v for k, v in spec.items() if k not in ("engines", "channels")}
    pts = []
    for engine in spec["engines"]:
        for ch in spec["channels"] if engine != "cpu" else [1]:
            if name == "pollution":
                for ws in spec["ws_sizes"]:
                    pts.append({**base, "engines": [engine], "channels": ch, "ws_sizes": [ws]})
            else:
                for size in spec["sizes"]:
                    pts.append({**base, "engines": [engine], "channels": ch, "sizes": [size]})
    return pts


def count_points(name: str, quick: bool = False, **overrides: Any) -> int:
    """How many progress steps :func:`run` will report."""
    if name == "ipc":
        return 3
    return len(_points(name, spec_for(name, quick, **overrides)))


def run(
    name: str,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """Run one benchmark; returns its rows. ``progress`` is called once per point."""
    if name == "ipc":
        from movelab.host.bench_ipc import run_ipc  # lazily: the IPC half lives there

        kw = {k: v for k, v in overrides.items() if k in ("sizes", "paths") and v is not None}
        return run_ipc(quick=quick, progress=progress, **kw)
    spec = spec_for(name, quick, **overrides)
    rows: list[dict[str, Any]] = []
    for pt in _points(name, spec):
        if progress:
            what = pt.get("sizes", pt.get("ws_sizes"))[0]
            progress(f"{name} {pt['engines'][0]} {human_bytes(what)}")
        rows.extend(json.loads(_core.host_bench(name, json.dumps(pt))))
    return rows


def output_names(name: str) -> list[str]:
    """The files :func:`write_outputs` writes for a benchmark."""
    return [f"{name}.csv", f"{name}.png"]


def human_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def _series(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        label = " ".join(str(r[k]) if k != "channels" else f"ch{r[k]}" for k in keys if k in r)
        out.setdefault(label, []).append(r)
    return out


_YLABEL = {
    "latency": "copy latency (ns, median)",
    "bandwidth": "copy bandwidth (MB/s, 10^6 bytes/s)",
    "overlap": "overlap (fraction of the copy time hidden;\nmedian, band: range over repeats, red: unstable)",
}


def plot(name: str, rows: list[dict[str, Any]], path: Path) -> None:
    """One PNG per benchmark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if name == "ipc":
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for label, rs in _series(rows, ("path",)).items():
            rs = sorted(rs, key=lambda r: r["size_bytes"])
            xs = [r["size_bytes"] for r in rs]
            axes[0].plot(xs, [r["latency_ns"] / 1e3 for r in rs], marker="o", label=label)
            axes[1].plot(xs, [r["bandwidth_mb_s"] for r in rs], marker="o", label=label)
        axes[0].set_ylabel("latency (us)")
        axes[0].set_yscale("log")
        axes[1].set_ylabel("bandwidth (MB/s)")
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("message size (bytes)")
            ax.legend()
            ax.grid(alpha=0.3)
    elif name == "pollution":
        fig, ax = plt.subplots(figsize=(8, 4))
        cases = list(dict.fromkeys(r["case"] for r in rows))
        wss = sorted({r["ws_bytes"] for r in rows})
        width = 0.8 / max(len(cases), 1)
        for i, case in enumerate(cases):
            vals = [next((r["access_ns"] for r in rows if r["case"] == case and r["ws_bytes"] == w), 0)
                    for w in wss]
            xs = [j + i * width for j in range(len(wss))]
            ax.bar(xs, vals, width, label=case)
            # the spread over the repetitions (vs_none range, scaled to access time), and a mark on
            # a point too unstable to trust
            for x, w, v in zip(xs, wss, vals, strict=True):
                r = next((r for r in rows if r["case"] == case and r["ws_bytes"] == w), None)
                if r and "vs_none_lo" in r and r["vs_none"]:
                    lo, hi = v * r["vs_none_lo"] / r["vs_none"], v * r["vs_none_hi"] / r["vs_none"]
                    ax.errorbar([x], [v], yerr=[[v - lo], [hi - v]], color="black", capsize=2, lw=0.8)
                if r and r.get("unstable"):
                    ax.annotate("?", (x, v), ha="center", va="bottom", color="red", fontweight="bold")
        ax.set_xticks([j + width * (len(cases) - 1) / 2 for j in range(len(wss))],
                      [human_bytes(w) for w in wss])
        ax.set_xlabel("working set (bytes)")
        ax.set_ylabel("access time after the copy (ns per access;\nmedian, bars: range over repeats)")
        ax.legend()
        ax.grid(alpha=0.3, axis="y")
    elif name == "breakdown":
        fig, ax = plt.subplots(figsize=(9, 4))
        labels = [f"{r['engine']}/{r['worker']}\n{human_bytes(r['size_bytes'])}" for r in rows]
        bottom = [0.0] * len(rows)
        for part in ("submit_ns", "queue_ns", "copy_ns", "complete_ns", "other_ns"):
            vals = [r[part] for r in rows]
            ax.bar(range(len(rows)), vals, bottom=bottom, label=part.removesuffix("_ns"))
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.set_xticks(range(len(rows)), labels, fontsize=7)
        ax.set_ylabel("time (ns, median)")
        ax.set_xlabel("engine / worker state, copy size")
        ax.legend()
    else:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        fig_key = FIGURE[name]
        for label, rs in _series(rows, ("engine", "channels", "cache")).items():
            rs = sorted(rs, key=lambda r: r["size_bytes"])
            xs, ys = [r["size_bytes"] for r in rs], [r[fig_key] for r in rs]
            line = ax.plot(xs, ys, marker="o", label=label)[0]
            if f"{fig_key}_lo" in rs[0]:
                # the range over the repetitions; an unstable point is circled in red
                ax.fill_between(xs, [r[f"{fig_key}_lo"] for r in rs], [r[f"{fig_key}_hi"] for r in rs],
                                color=line.get_color(), alpha=0.2)
                bad = [(x, y) for x, y, r in zip(xs, ys, rs, strict=True) if r.get("unstable")]
                if bad:
                    ax.scatter(*zip(*bad, strict=True), s=120, facecolors="none", edgecolors="red", zorder=3)
        ax.set_xscale("log", base=2)
        if name == "latency":
            ax.set_yscale("log")
        ax.set_xlabel("copy size (bytes)")
        ax.set_ylabel(_YLABEL[name])
        ax.legend()
        ax.grid(alpha=0.3)
    ax_title = {"latency": "copy latency (median)", "bandwidth": "copy bandwidth, window of 128",
                "overlap": "compute-copy overlap", "pollution": "cache pollution after a large copy",
                "breakdown": "where a small async copy's time goes", "ipc": "IPC"}[name]
    fig.suptitle(f"{ax_title} ({platform.node()})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(name: str, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """CSV + PNG of one benchmark into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = out / f"{name}.csv", out / f"{name}.png"
    write_csv(rows, csv_path)
    if rows:
        plot(name, rows, png_path)
    return [csv_path, png_path]


def bars(results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The targets computed from the rows that are present."""
    out: dict[str, Any] = {}
    ov = [r for r in results.get("overlap", []) if r["engine"] == "thread" and r["size_bytes"] >= 4 * MiB]
    if ov:
        out["overlap_thread_ge_4MiB"] = {
            f"{r['cache']} {human_bytes(r['size_bytes'])}": round(r["overlap"], 4) for r in ov
        }
        out["overlap_unstable_points"] = [
            f"{r['engine']} {r['cache']} {human_bytes(r['size_bytes'])}"
            for r in results.get("overlap", []) if r.get("unstable")
        ]
        out["overlap_bar_met"] = all(r["overlap"] >= 0.95 for r in ov)
    bw = results.get("bandwidth", [])
    if bw:
        big = max(r["size_bytes"] for r in bw)
        cpu = next((r["bandwidth_mb_s"] for r in bw if r["engine"] == "cpu" and r["size_bytes"] == big), None)
        if cpu:
            out["bandwidth_ratio_thread_vs_cpu"] = {
                f"ch{r['channels']} {human_bytes(big)}": round(r["bandwidth_mb_s"] / cpu, 3)
                for r in bw if r["engine"] == "thread" and r["size_bytes"] == big
            }
            out["bandwidth_bar_met"] = any(v >= 0.9 for v in out["bandwidth_ratio_thread_vs_cpu"].values())
    pol = results.get("pollution", [])
    if pol:
        # vs "none" (the target) and vs "idle" (a wait as long as the copy, no copy: the
        # control for whatever else evicts the caller's caches while it waits).
        idle = {r["ws_bytes"]: r["access_ns"] for r in pol if r["case"] == "idle"}
        out["pollution"] = {
            f"{human_bytes(r['ws_bytes'])} {r['case']}": {
                "vs_none": round(r["vs_none"], 3),
                "vs_none_range": [round(r.get("vs_none_lo", float("nan")), 3),
                                  round(r.get("vs_none_hi", float("nan")), 3)],
                "unstable": bool(r.get("unstable")),
                "vs_none_min": round(r.get("vs_none_min", float("nan")), 3),
                "vs_idle": round(r["access_ns"] / idle[r["ws_bytes"]], 3) if idle.get(r["ws_bytes"]) else None,
            }
            for r in pol if r["case"] not in ("none",)
        }
    lat = [r for r in results.get("latency", []) if r["engine"] == "thread" and r["size_bytes"] == 64]
    for r in lat:
        out[f"roundtrip_64B_{r['cache']}"] = {"median_ns": round(r["latency_ns"]), "p99_ns": round(r["p99_ns"])}
    return out


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"node": platform.node(), "machine": platform.machine(), "cpus": _core.host_cpus()}
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        if names:
            info["cpu"] = names[0]
    except OSError:
        pass
    return info
