"""The platform model's speed benchmark: simulated instructions per second of the core model on
the built-in workloads, each run in a fresh process (so peak memory is its own), median of the
repeats. The machine is shared and noisy: compare the rows of one run, not runs of different days.
Each row also gives the rate per second of the child's own CPU time (`minstr_per_cpu_s`, with its
range over the repeats, `minstr_per_cpu_s_min` and `_max`), which a loaded machine disturbs less
than the wall-clock rate."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

CHILD = r"""
import json, sys, time
from movelab import platform
from movelab._peak import own_peak_rss_kib
plat, work, overrides, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
t = time.perf_counter()
c = time.process_time()
res = platform.run(plat, work, overrides=overrides, params=params)
el = time.perf_counter() - t
cpu = time.process_time() - c
s = res.stats
peak = own_peak_rss_kib()  # since exec (getrusage would count the parent's memory at the fork)
print(json.dumps({"seconds": el, "cpu_seconds": cpu, "instructions": s["instructions"], "simulated_ns": s["time_ns"],
                  "peak_rss_kib": peak}))
"""

#: (label, platform, workload, overrides, params)
CASES: list[tuple[str, str, str, dict, dict]] = [
    ("tcp-rx OoO base", "zhao-uma-emc", "tcp-rx", {}, {"packets": 4000, "payload": 1024}),
    ("tcp-rx in-order base", "zhao-uma-emc", "tcp-rx", {"core": {"kind": "in-order"}},
     {"packets": 4000, "payload": 1024}),
    ("tcp-rx OoO ASYNC engine", "zhao-uma-emc", "tcp-rx", {"copy": {"mechanism": "ce", "mode": "ASYNC"}},
     {"packets": 4000, "payload": 1024}),
    # Several cores, each running its own copy of tcp-rx in its own memory (instructions of all cores).
    *[(f"tcp-rx OoO base, {n} cores", "zhao-uma-emc", "tcp-rx", {"cores": [{"count": n, "stride": 0x1000_0000}]},
       {"packets": 4000 // n, "payload": 1024}) for n in (2, 4, 8)],
    ("forkbench S=16MB N=1024 base", "rowclone-system", "forkbench", {}, {"s_mb": 16, "n_pages": 1024}),
    ("forkbench S=16MB N=1024 FPM", "rowclone-system", "forkbench", {"copy": {"mechanism": "rowclone"}},
     {"s_mb": 16, "n_pages": 1024}),
]


def _child(plat: str, work: str, overrides: dict, params: dict) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", CHILD, plat, work, json.dumps(overrides), json.dumps(params)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_bench(repeats: int = 3, console=None) -> list[dict[str, Any]]:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats: {repeats!r} must be a positive integer")
    rows = []
    for label, plat, work, overrides, params in CASES:
        runs = []
        for i in range(repeats):
            if console is not None:
                console.print(f"bench platform: {label}, run {i + 1}", style="dim")
            runs.append(_child(plat, work, overrides, params))
        secs = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu_seconds"] for r in runs)
        first = runs[0]
        rows.append({
            "case": label,
            "instructions": first["instructions"],
            "simulated_ms": first["simulated_ns"] / 1e6,
            "seconds_median": secs,
            "minstr_per_s": first["instructions"] / secs / 1e6,
            "cpu_seconds_median": cpu,
            "minstr_per_cpu_s": first["instructions"] / cpu / 1e6,
            # The range over the repeats (the slowest and the fastest child's CPU rate): on a
            # shared machine one median says little without it.
            "minstr_per_cpu_s_min": first["instructions"] / max(r["cpu_seconds"] for r in runs) / 1e6,
            "minstr_per_cpu_s_max": first["instructions"] / min(r["cpu_seconds"] for r in runs) / 1e6,
            "peak_rss_mib": max(r["peak_rss_kib"] for r in runs) / 1024,
        })
    return rows
