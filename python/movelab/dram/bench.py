"""The DRAM simulator's speed benchmark. Each run is a fresh child process so that its peak
resident memory (ru_maxrss) is its own; runs at two trace lengths show that memory does not grow
with the trace."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

CHILD = r"""
import json, resource, sys, time
from movelab import dram
pattern, n, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gen = {"kind": pattern, "count": n, "read_fraction": 0.8, "seed": 42, "footprint_bytes": "4G"}
cfg = dram.load_config(config)
t = time.perf_counter()
res = dram.simulate(cfg, gen)
el = time.perf_counter() - t
s = res.stats
print(json.dumps({"seconds": el, "cycles": s["cycles"], "mean_read_latency_cycles": s["read_latency"]["mean_cycles"],
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _child(pattern: str, n: int, config: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", CHILD, pattern, str(n), config], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_bench(requests: int, repeats: int, console=None, config: str = "ddr3-1600k-bench") -> list[dict[str, Any]]:
    """Runs the stream and random traces on ``config`` (a preset name or TOML path)."""
    from movelab import dram

    dram.load_config(config)  # a bad config fails here, with its message, not in a child
    rows = []
    plan = [(p, n) for p in ("stream", "random") for n in (requests, max(1, requests // 5))]
    for pattern, n in plan:
        runs = []
        for i in range(max(1, repeats if n == requests else 1)):
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
