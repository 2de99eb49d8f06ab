"""The critical path of ``movelab reproduce all``: every point run in this process, one after another,
timed in CPU seconds, then the longest points against the total CPU time. On many workers a
command cannot take less than its longest point, so ``longest / total`` bounds its speedup; the
work outside the points (this process's: imports, tables, plots) bounds it too.

    python -m movelab.reproduce._critical_path OUT [--quick]
    python -m movelab.reproduce._critical_path --from OUT/critical-path.json

(OUT receives the reports, as ``reproduce all --out OUT --force`` would write them, and
``critical-path.json``: the measured batches, which ``--from`` reports again with the point
functions' present cost hints, without running anything.)

It also replays the measured run on W workers as ``reproduce all`` schedules it (:func:`replay`):
every reproduction's first batch of points started at once, later batches when their
reproduction asks for them, this process's own work between batches, a pool that starts points in
the order they were handed to it. The replay's wall time against the total CPU time is the
speedup W workers would give if CPU seconds here were wall seconds there (one point per core,
nothing else running).
"""

from __future__ import annotations

import heapq
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from movelab import executor
from movelab.executor import Outcome, SerialExecutor, _cost, _guarded, use


@dataclass
class Batch:
    """One request for points (one :func:`movelab.executor.run_points` call), as run here."""

    module: str
    function: str
    #: CPU seconds this process spent on its own between the previous batch and this one.
    before: float
    #: Per point: (the point less its overrides and inputs from earlier batches, cost hint, CPU
    #: seconds), in the order asked.
    points: list[tuple[Any, float, float]] = field(default_factory=list)
    #: Whether the function's results feed the next batch (:func:`movelab.executor.costs`).
    feeds_next: bool = False


#: The batches of the measured run, in the order asked.
BATCHES: list[Batch] = []


class TimingExecutor(SerialExecutor):
    """Runs points in this process, recording each one's CPU time and this process's own time
    between batches."""

    def __init__(self) -> None:
        super().__init__()
        self.mark = time.process_time()

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        b = Batch(fn.__module__.rsplit(".", 1)[-1], fn.__name__, time.process_time() - self.mark,
                  feeds_next=getattr(fn, "feeds_next", False))
        BATCHES.append(b)
        for i, p in enumerate(points):
            t = time.process_time()
            ok, v = _guarded(fn, p)
            dt = time.process_time() - t
            label = {k: x for k, x in p.items() if k not in ("overrides", "alone")} if isinstance(p, dict) else p
            b.points.append((label, _cost(fn, p), dt))
            self.mark = time.process_time()
            yield Outcome(i, v) if ok else Outcome(i, error=v)
        self.mark = time.process_time()


def replay(batches: list[Batch], after: float, workers: int, largest_first: bool, plan_through: float = 0.0) -> float:
    """The wall time of the measured run on ``workers`` pool workers, scheduled as ``reproduce all``
    does: the first batch of each reproduction (a batch whose module differs from the one before)
    handed to the pool at the start, any later batch of a reproduction when this process reaches
    it; this process's own work (``before`` each batch, ``after`` the last) in sequence, waiting
    for each batch's points. The pool starts points in the order handed to it: as asked, or (with
    ``largest_first``) the costliest by hint first, within each hand-over (the first batches
    together). ``plan_through``: a first batch whose results feed the next (``feeds_next``) and
    whose hints add up to at most this is run on the pool before anything else is handed over
    (:class:`movelab.executor.PlanningExecutor`), and the batch after it is handed over with the
    first ones. Seconds are the measured CPU seconds."""
    free = [0.0] * workers  # when each worker is next free
    last_start = 0.0  # a pool starts its queue in order: no point before the one handed ahead of it
    done: dict[int, float] = {}  # batch index -> when its last point ends

    def hand_over(at: float, items: list[tuple[int, float, float]]) -> None:
        nonlocal last_start
        if largest_first:
            items = sorted(items, key=lambda it: -it[1])
        for b, _hint, dt in items:
            start = max(at, last_start, free[0])
            heapq.heapreplace(free, start + dt)
            last_start = start
            done[b] = max(done.get(b, 0.0), start + dt)

    first = [i for i, b in enumerate(batches) if i == 0 or b.module != batches[i - 1].module]
    ran = [i for i in first if batches[i].feeds_next and sum(h for _, h, _ in batches[i].points) <= plan_through]
    ahead = [i for i in first if i not in ran] + [i + 1 for i in ran if i + 1 < len(batches)]
    hand_over(0.0, [(i, h, dt) for i in ran for _, h, dt in batches[i].points])
    t = max((done[i] for i in ran), default=0.0)
    hand_over(t, [(i, h, dt) for i in ahead for _, h, dt in batches[i].points])
    for i, b in enumerate(batches):
        t += b.before
        if i in ran:
            continue  # its results were handed over
        if i not in ahead:
            hand_over(t, [(i, h, dt) for _, h, dt in b.points])
        t = max(t, done.get(i, t))
    return t + after


def report(batches: list[Batch], total: float) -> None:
    """Prints the longest points against ``total`` and the replays on 8 and 16 workers."""
    points = [(b.module, b.function, *p) for b in batches for p in b.points]
    in_points = sum(p[4] for p in points)
    after = total - in_points - sum(b.before for b in batches)
    print(f"total CPU {total:.1f} s, of which {in_points:.1f} s in {len(points)} points")
    print(f"this process's own work: {total - in_points:.1f} s; before each batch: "
          + ", ".join(f"{b.module}.{b.function} {b.before:.1f}" for b in batches) + f"; after the last: {after:.1f}")
    by: dict[str, list[float]] = {}
    for mod, fn, _, _, dt in points:
        by.setdefault(f"{mod}.{fn}", []).append(dt)
    for name, ts in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {sum(ts):7.1f} s in {len(ts):3d} points of {name} (longest {max(ts):.2f} s)")
    print("the longest points (hint: the point function's cost estimate, which orders the work):")
    for mod, fn, label, hint, dt in sorted(points, key=lambda t: -t[4])[:12]:
        print(f"{dt:7.2f} s {dt / total:6.1%}  hint {hint:6.2f}  {mod}.{fn} {json.dumps(label, default=str)[:100]}")
    longest = max(p[4] for p in points)
    print(f"longest point / total CPU = {longest / total:.3f} (1/{total / longest:.1f})")
    from movelab.reproduce.cli import PLAN_THROUGH_S

    for w in (8, 16):
        fifo, lpt = (replay(batches, after, w, x) for x in (False, True))
        through = replay(batches, after, w, True, PLAN_THROUGH_S)
        print(f"replayed on {w} workers: {total / fifo:.1f}x in the order asked, {total / lpt:.1f}x largest first, "
              f"{total / through:.1f}x largest first with cheap batches run while planning")


def main(argv: list[str]) -> int:
    from typer.testing import CliRunner

    from movelab.cli import app

    if not argv:
        print(__doc__)
        return 2
    if argv[0] == "--from":
        return report_again(Path(argv[1]))
    executor.make_executor = lambda cluster=None, workers=None: timing  # every executor times
    t0 = time.process_time()
    timing = TimingExecutor()
    with use(timing):
        r = CliRunner().invoke(app, ["reproduce", "all", "--out", argv[0], "--force", *argv[1:]])
    if r.exit_code != 0:
        print(r.output, file=sys.stderr)
        return r.exit_code
    total = time.process_time() - t0
    (Path(argv[0]) / "critical-path.json").write_text(json.dumps(
        {"total": total, "batches": [asdict(b) for b in BATCHES]}, default=str))
    report(BATCHES, total)
    return 0


def report_again(path: Path) -> int:
    """The report of a measured run (its ``critical-path.json``), the hints recomputed by the
    point functions of today."""
    import importlib

    d = json.loads(path.read_text())
    batches = []
    for b in d["batches"]:
        fn = getattr(importlib.import_module(f"movelab.reproduce.{b['module']}"), b["function"])
        batches.append(Batch(b["module"], b["function"], b["before"],
                             [(label, _cost(fn, label), dt) for label, _, dt in b["points"]],
                             getattr(fn, "feeds_next", False)))
    report(batches, d["total"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
