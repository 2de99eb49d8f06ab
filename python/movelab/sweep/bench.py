"""The executor's speed benchmark: one sweep (by default the example spec ``presets/sweeps/dram-240.toml``,
240 DRAM points, shipped with movelab) run in one process and on the local pool, timed, with a check that
both give the same table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from movelab import data
from movelab.executor import cpu_count

DEFAULT = "dram-240"
#: Requests per point of ``--quick``.
QUICK_COUNT = 500


def run_bench(spec: Path | None = None, workers: int | None = None, console=None,
              count: int | None = None) -> dict[str, Any]:
    """Times the sweep ``spec`` (a TOML file; the shipped ``dram-240`` by default) with ``workers=1``
    (this process) and with ``workers`` local processes (every core by default); returns both
    timings, the speedup and whether the tables are equal. ``count`` replaces the workload's
    request count (a quicker run of the same points)."""
    import dataclasses

    from movelab import sweep

    if spec is None:
        raw, source = data.sweep_spec(DEFAULT)
        s = sweep.load_spec(raw, source=source)
    else:
        s, source = sweep.load_spec(spec), str(spec)
    if count is not None and "count" in s.workload:
        s = dataclasses.replace(s, workload={**s.workload, "count": count})
    n = workers or cpu_count()
    runs, tables = [], []
    for w in (1, n):
        if console is not None:
            console.print(f"bench sweep: {len(s.points())} points on {w} process{'es' if w > 1 else ''}", style="dim")
        t = time.perf_counter()
        tables.append(sweep.run(s, workers=w))
        secs = time.perf_counter() - t
        runs.append({"workers": w, "seconds": secs, "points_per_s": len(tables[-1]) / secs})
    return {"spec": source, "points": len(tables[0]), "runs": runs,
            "speedup": runs[0]["seconds"] / runs[1]["seconds"], "tables_equal": bool(tables[0].equals(tables[1])),
            "failed": int(tables[0]["error"].notna().sum())}
