"""The critical path of ``movelab reproduce all``: every point run in this process, one after another,
timed in CPU seconds, then the longest points against the total CPU time. On many workers a
command cannot take less than its longest point, so ``longest / total`` bounds its speedup.

    python -m movelab.reproduce._critical_path OUT [--quick]

(OUT receives the reports, as ``reproduce all --out OUT --force`` would write them.)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from movelab import executor
from movelab.executor import Outcome, SerialExecutor, _guarded, use

#: (reproduction module, point function, point label, CPU seconds), in the order run.
TIMES: list[tuple[str, str, str, float]] = []


class TimingExecutor(SerialExecutor):
    """Runs points in this process, recording each one's CPU time."""

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        for i, p in enumerate(points):
            t = time.process_time()
            ok, v = _guarded(fn, p)
            dt = time.process_time() - t
            label = {k: x for k, x in p.items() if k not in ("overrides", "alone")} if isinstance(p, dict) else p
            TIMES.append((fn.__module__.rsplit(".", 1)[-1], fn.__name__, json.dumps(label, default=str)[:120], dt))
            yield Outcome(i, v) if ok else Outcome(i, error=v)


def main(argv: list[str]) -> int:
    from typer.testing import CliRunner

    from movelab.cli import app

    if not argv:
        print(__doc__)
        return 2
    executor.make_executor = lambda cluster=None, workers=None: TimingExecutor()  # every executor times
    t0 = time.process_time()
    with use(TimingExecutor()):
        r = CliRunner().invoke(app, ["reproduce", "all", "--out", argv[0], "--force", *argv[1:]])
    if r.exit_code != 0:
        print(r.output, file=sys.stderr)
        return r.exit_code
    total = time.process_time() - t0
    print(f"total CPU {total:.1f} s, of which {sum(t[3] for t in TIMES):.1f} s in {len(TIMES)} points")
    for mod, fn, label, dt in sorted(TIMES, key=lambda t: -t[3])[:10]:
        print(f"{dt:7.2f} s {dt / total:6.1%}  {mod}.{fn} {label}")
    longest = max(t[3] for t in TIMES)
    print(f"longest point / total CPU = {longest / total:.3f} (1/{total / longest:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
