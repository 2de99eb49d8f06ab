"""Speed against Ramulator 2.1, the reference open DRAM simulator, rebuilt by the user outside this
repository (see docs/dram.md, "Speed"). Both simulators run the same generated trace as whole
processes (interpreter start, trace parsing, simulation, statistics), in alternation, one round
after another, so that each round's ratio is measured under the same machine load.

movelab runs its CLI (`movelab dram run CONFIG TRACE --format json`) with Ramulator 2.1's queues
(:data:`MATCHED`); Ramulator 2.1 runs through its Python front: `LoadStoreTrace` (one request offered
per memory clock, in order, retried while refused), `GenericDRAM` with one `GenericDDR` controller,
`FRFCFS`, all-bank refresh, open rows and the `RoBaRaCoCh` mapper, one channel and one rank.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Counterpart:
    """The Ramulator 2.1 device of a movelab config preset, and the overrides movelab needs on top of
    :data:`MATCHED` to match Ramulator's clocks."""

    standard: str
    org_preset: str
    timing_preset: str
    overrides: tuple[tuple[str, Any], ...] = ()


#: movelab config preset -> its Ramulator 2.1 device (same speed bin, part and organisation).
COUNTERPARTS: dict[str, Counterpart] = {
    "ddr3-1600k-bench": Counterpart("DDR3", "DDR3_4Gb_x8", "DDR3_1600K"),
    # Ramulator 2.1 resolves DDR5's refresh from tRFC1 = 295 ns and tREFI = 3.9 us at its clock
    # (472 and 6240 clocks; movelab's preset rounds the JESD79-5 way, see "DDR5" in docs/dram.md).
    # Its DDR5 device has no refresh management (no RFM command; that is its separate DDR5_RFM
    # standard), so movelab's part is run as one that does not require it (MR58 OP[0] = 0): with
    # the preset's RAAIMT 32, random traffic owes about 2,600 all-bank RFMs of tRFC1 each in 5 M
    # requests, 2.4% more cycles (see "Against Ramulator 2.1" in docs/dram.md).
    "ddr5-3200an": Counterpart("DDR5", "DDR5_16Gb_x8", "DDR5_3200AN",
                               (("dram.timing.nRFC", 472), ("dram.timing.nREFI", 6240),
                                ("controller.rfm", "false"))),
}

#: Ramulator 2's queues in movelab's terms: its buffers hold 33 requests (set to 32, they accept while
#: at or below 32), write drain from 26 queued writes (or no reads) until 6, and a row opened for a
#: request stays open until that request is served.
MATCHED: tuple[tuple[str, Any], ...] = (
    ("controller.read_queue", 33),
    ("controller.write_queue", 33),
    ("controller.write_high_watermark", 0.78),
    ("controller.write_low_watermark", 0.2),
    ("controller.keep_activated_rows", "true"),
)

#: Run by Ramulator 2.1's interpreter: builds the configuration above, runs the trace and prints
#: the statistics compared (one JSON line).
RAMULATOR_SCRIPT = r"""
import json, sys
import ramulator
std, org, timing, trace = sys.argv[1:5]
dram = getattr(ramulator.dram, std)(org_preset=org, timing_preset=timing, rank=1)
ctrl = ramulator.controller.GenericDDR(
    dram=dram,
    scheduler=ramulator.scheduler.FRFCFS(),
    refresh_manager=ramulator.refresh_manager.AllBank(),
    row_policy=ramulator.row_policy.Open(),
    addr_mapper=ramulator.addr_mapper.RoBaRaCoCh(),
)
mem = ramulator.memory_system.GenericDRAM(clock_ratio=1, controllers=[ctrl],
                                          channel_mapper=ramulator.channel_mapper.CacheLineInterleave())
sim = ramulator.Simulation(ramulator.frontend.LoadStoreTrace(clock_ratio=1, path=trace), mem)
sim.run()
s = sim.stats["memory_system"]
c = s["controller"]
print(json.dumps({"cycles": c["cycles"], "row": {"hits": c["row_hits"], "misses": c["row_misses"],
                  "conflicts": c["row_conflicts"]}, "reads": c["num_read_reqs"], "writes": c["num_write_reqs"]}))
"""

#: movelab's command line, started so that it reports its own peak memory at exit (the same
#: process as ``python -m movelab``: the same interpreter start and the same entry point).
MOVELAB_SCRIPT = r"""
import sys
from movelab._peak import report_at_exit
report_at_exit()
sys.argv = ["movelab", *sys.argv[1:]]
from movelab.__main__ import main
main()
"""


def _peak_reporting(script: str) -> str:
    """``script`` with the lines that report the process's own peak memory at exit
    (:mod:`movelab._peak`, whose functions are copied in: Ramulator's interpreter has no movelab)."""
    import inspect

    from movelab import _peak

    return "\n".join(["import sys", f"MARKER = {_peak.MARKER!r}", inspect.getsource(_peak.own_peak_rss_kib),
                      inspect.getsource(_peak.report_at_exit), "report_at_exit()", script])


def movelab_sets(config: str) -> list[str]:
    """The `--set` arguments that match movelab's queues (and refresh clocks) to Ramulator 2.1's."""
    c = COUNTERPARTS[config]
    out = []
    for k, v in (*MATCHED, *c.overrides):
        out += ["--set", f"{k}={v}"]
    return out


def check_ramulator(root: Path, python: str) -> None:
    """A clear error unless ``root`` is a built Ramulator 2.1 tree that ``python`` can import."""
    pkg = root / "python" / "ramulator"
    if not (pkg / "__init__.py").is_file():
        raise ValueError(f"--ramulator: {root} is not a Ramulator 2.1 source tree (no python/ramulator/__init__.py)")
    if not any(pkg.glob("_ramulator*.so")):
        raise ValueError(f"--ramulator: {root} is not built (no python/ramulator/_ramulator*.so; run cmake and make)")
    out = subprocess.run([python, "-c", "import ramulator._ramulator"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(pkg.parent)})
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ValueError(f"--ramulator-python: {python} cannot import Ramulator 2.1 from {root}: {last}")


def _timed(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Runs one process to its end: its JSON result (the last line starting with ``{`` begins it),
    wall seconds, CPU seconds (user and system) and peak resident memory (MiB), all its own."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        errors = err.read().decode(errors="replace")
        if p.returncode != 0:
            last = (errors.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"{Path(argv[0]).name} {' '.join(argv[1:2])} ... failed (exit {p.returncode}): {last}")
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("{")]
    if not starts:
        raise RuntimeError(f"{Path(argv[0]).name}: no JSON result in its output")
    res = json.loads("\n".join(lines[starts[-1]:]))
    # The process's own peak since its exec, as it reported it; wait4's would hold this process's
    # memory at the fork (movelab._peak).
    from movelab._peak import parse_report

    peak = parse_report(errors)
    return {"result": res, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "peak_rss_mib": (peak if peak is not None else ru.ru_maxrss) / 1024.0}


def run_against_ramulator(config: str, requests: int, repeats: int, root: Path, python: str,
                          console: Any = None) -> dict[str, Any]:
    """Times movelab and Ramulator 2.1 on the same random trace of ``requests`` requests (seed 0,
    80% reads, 1 GiB), ``repeats`` rounds of one run each, alternating (which goes first alternates
    too). Returns each simulator's medians and ranges, the ratio of each round (Ramulator's wall
    time over movelab's) and the cycles of both."""
    if config not in COUNTERPARTS:
        raise ValueError(f"--config {config}: no Ramulator 2.1 counterpart is defined "
                         f"(known: {', '.join(COUNTERPARTS)})")
    from movelab import dram

    check_ramulator(root, python)
    c = COUNTERPARTS[config]
    with tempfile.TemporaryDirectory(prefix="movelab-vs-ramulator-") as d:
        trace = str(Path(d) / f"random-{requests}.trace")
        if console is not None:
            console.print(f"bench dram: writing {requests:,} random requests (Ramulator 2 load/store trace)",
                          style="dim")
        dram.write_trace({"kind": "random", "count": requests, "read_fraction": 0.8, "seed": 0,
                          "footprint_bytes": 1 << 30}, trace, "ramulator")
        ours = [sys.executable, "-c", MOVELAB_SCRIPT, "dram", "run", config, trace,
                "--trace-format", "ramulator", "--format", "json", *movelab_sets(config)]
        theirs = [python, "-c", _peak_reporting(RAMULATOR_SCRIPT), c.standard, c.org_preset, c.timing_preset,
                  trace]
        env = {**os.environ, "PYTHONPATH": str(root / "python")}
        runs: dict[str, list[dict[str, Any]]] = {"movelab": [], "ramulator": []}
        for i in range(repeats):
            order = ["movelab", "ramulator"] if i % 2 == 0 else ["ramulator", "movelab"]
            for who in order:
                if console is not None:
                    console.print(f"bench dram: {who} on {config}, round {i + 1} of {repeats}", style="dim")
                runs[who].append(_timed(ours) if who == "movelab" else _timed(theirs, env))
    ratios = [r["wall_s"] / m["wall_s"] for m, r in zip(runs["movelab"], runs["ramulator"], strict=True)]
    cpu_ratios = [r["cpu_s"] / m["cpu_s"] for m, r in zip(runs["movelab"], runs["ramulator"], strict=True)]

    def summary(rs: list[dict[str, Any]]) -> dict[str, Any]:
        walls = [r["wall_s"] for r in rs]
        res = rs[0]["result"]
        return {"wall_s_median": statistics.median(walls), "wall_s_min": min(walls), "wall_s_max": max(walls),
                "cpu_s_median": statistics.median(r["cpu_s"] for r in rs),
                "peak_rss_mib": max(r["peak_rss_mib"] for r in rs), "cycles": res["cycles"],
                "row": res["row"]}

    m, r = summary(runs["movelab"]), summary(runs["ramulator"])
    return {"config": config, "requests": requests, "rounds": repeats,
            "ramulator": {"standard": c.standard, "org_preset": c.org_preset, "timing_preset": c.timing_preset, **r},
            "movelab": {"set": dict((k, v) for k, v in (*MATCHED, *c.overrides)), **m},
            "ratio_wall_median": statistics.median(ratios), "ratio_wall_min": min(ratios),
            "ratio_wall_max": max(ratios), "ratio_cpu_median": statistics.median(cpu_ratios),
            "cycles_difference": m["cycles"] / r["cycles"] - 1.0}
