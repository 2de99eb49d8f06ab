"""Ctrl-C always stops a long run: when it lands while the simulator's Python progress callback
runs, KeyboardInterrupt is raised inside the callback, and it must stop the run (it used to be
dropped, so the run went on). Any exception a progress callback raises stops the run the same way."""

from __future__ import annotations

import time

import pytest
from movelab import _core, dram


class _Stop(Exception):
    pass


def _raising_after(n: int, exc: type[BaseException]):
    calls: list[object] = []

    def progress(*args: object) -> None:
        calls.append(args)
        if len(calls) >= n:
            raise exc()

    return progress, calls


@pytest.mark.parametrize("exc", [KeyboardInterrupt, _Stop])
def test_an_exception_in_the_dram_progress_callback_stops_the_run(exc: type[BaseException]) -> None:
    progress, calls = _raising_after(2, exc)
    t0 = time.monotonic()
    with pytest.raises(exc):
        # 50 million requests would take minutes; the callback stops it after its second call.
        dram.simulate("ddr3-1600k-bench", {"kind": "random", "count": 50_000_000, "seed": 1},
                      progress=progress, progress_every=20_000)
    assert len(calls) == 2
    assert time.monotonic() - t0 < 30


def test_an_interrupt_in_a_reproduction_progress_callback_stops_it() -> None:
    progress, calls = _raising_after(1, KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        _core.reproduce_larsen_idma(["fig10"], progress=progress)
    assert len(calls) == 1
