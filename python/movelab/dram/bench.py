"""The DRAM simulator's speed benchmark. Each run is a fresh child process so that its peak
resident memory (``VmHWM`` since its exec, :mod:`movelab._peak`) is its own; runs at two trace
lengths show that memory does not grow with the trace. Line requests are measured in requests per
second; bulk operations (one RowClone COPY of a large region, the lab's headline operation) in bytes
of copy simulated per second."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

CHILD = r"""
import json, sys, time
from movelab import dram
from movelab._peak import own_peak_rss_kib
pattern, n, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gen = {"kind": pattern, "count": n, "read_fraction": 0.8, "seed": 42, "footprint_bytes": "4G"}
cfg = dram.load_config(config)
t = time.perf_counter()
res = dram.simulate(cfg, gen)
el = time.perf_counter() - t
s = res.stats
print(json.dumps({"seconds": el, "cycles": s["cycles"], "mean_read_latency_cycles": s["read_latency"]["mean_cycles"],
                  "peak_rss_kib": own_peak_rss_kib()}))
"""


#: One COPY of ``n`` bytes from address 0 to 1 GiB on the RowClone paper's system (row-interleaved
#: mapping: every 4 KB page is a row; source and destination rows fall in the same banks).
BULK_CHILD = r"""
import json, sys, time
from movelab import dram
from movelab._peak import own_peak_rss_kib
n = int(sys.argv[1])
cfg = dram.load_config("rowclone-ddr3-1066")
t = time.perf_counter()
res = dram.simulate(cfg, [("COPY", 0, 1 << 30, n)])
el = time.perf_counter() - t
s = res.stats
print(json.dumps({"seconds": el, "cycles": s["cycles"], "bytes": s["bulk"]["bytes"],
                  "peak_rss_kib": own_peak_rss_kib()}))
"""

BULK_SIZES = (64 << 20, 256 << 20)


def _run_child(code: str, *args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"benchmark child {' '.join(args)} failed (exit {out.returncode}): {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child(pattern: str, n: int, config: str) -> dict[str, Any]:
    return _run_child(CHILD, pattern, str(n), config)


def run_bulk(sizes: tuple[int, ...] = BULK_SIZES, repeats: int = 1, console=None) -> list[dict[str, Any]]:
    """Bulk-copy speed: for each size, one COPY on rowclone-ddr3-1066 (median of ``repeats`` runs),
    in bytes of copy simulated per wall-clock second, with the mechanisms that moved the bytes."""
    rows = []
    for n in sizes:
        runs = []
        for i in range(max(1, repeats)):
            if console is not None:
                console.print(f"bench dram: RowClone COPY of {n >> 20} MiB, run {i + 1}", style="dim")
            runs.append(_run_child(BULK_CHILD, str(n)))
        secs = statistics.median(r["seconds"] for r in runs)
        moved = runs[0]["bytes"]
        rows.append({
            "operation": "copy",
            "bytes": n,
            "runs": len(runs),
            "seconds_median": secs,
            "mib_per_s": n / secs / (1 << 20),
            "cycles": runs[0]["cycles"],
            "by": ", ".join(f"{k} {v >> 20} MiB" for k, v in moved.items() if v),
            "peak_rss_mib": max(r["peak_rss_kib"] for r in runs) / 1024.0,
        })
    return rows


def run_bench(requests: int, repeats: int, console=None, config: str = "ddr3-1600k-bench") -> list[dict[str, Any]]:
    """Line-request speed on ``config`` (a preset name or TOML path): stream and random patterns at
    ``requests`` and a fifth of it."""
    from movelab import dram

    if requests < 1 or repeats < 1:
        raise ValueError(f"requests ({requests}) and repeats ({repeats}) must be at least 1")
    dram.load_config(config)  # a bad config fails here, with its message, not in a child
    rows = []
    plan = [(p, n) for p in ("stream", "random") for n in (requests, max(1, requests // 5))]
    for pattern, n in plan:
        runs = []
        for i in range(repeats if n == requests else 1):
            if console is not None:
                console.print(f"bench dram: {pattern} {n:,} requests, run {i + 1}", style="dim")
            runs.append(_child(pattern, n, config))
        secs = statistics.median(r["seconds"] for r in runs)
        rows.append({
            "pattern": pattern,
            "requests": n,
            "runs": len(runs),
            "seconds_median": secs,
            "mreq_per_s": n / secs / 1e6,
            "cycles": runs[0]["cycles"],
            "mean_read_latency_cycles": runs[0]["mean_read_latency_cycles"],
            "peak_rss_mib": max(r["peak_rss_kib"] for r in runs) / 1024.0,
        })
    return rows
