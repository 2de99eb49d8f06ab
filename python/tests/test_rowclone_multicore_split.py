"""RowClone section 7.4: the observables that say what sets Table 7's cells
(:func:`movelab.reproduce.rowclone_multicore.split_of`), on hand-made mixes."""

from __future__ import annotations

import pytest
from movelab.reproduce import rowclone_multicore as rm


def result(alone: list[float], base: list[float], zi: list[float]) -> dict:
    n = len(alone)
    return {"mix": {"cores": n, "index": 0, "apps": ["a"] * n, "highly_intensive": 0}, "alone_ipc": alone,
            "runs": [{"mechanism": "baseline", "ipc": base}, {"mechanism": "rowclone", "ipc": base},
                     {"mechanism": "rowclone-zi", "ipc": zi}]}


def test_parts_add_up_to_the_improvements() -> None:
    # Copy-intensive core (first half) alone 1.0, shared 0.8 -> 1.2; memory-intensive alone 0.5,
    # shared 0.4 -> 0.45. WS 1.6 -> 2.1: copy part 0.4 / 1.6, memory part 0.1 / 1.6.
    s = rm.split_of(result([1.0, 0.5], [0.8, 0.4], [1.2, 0.45]), "rowclone-zi")
    assert s["ws_gain_copy"] == pytest.approx(0.25)
    assert s["ws_gain_memory"] == pytest.approx(0.0625)
    assert s["ws_gain_copy"] + s["ws_gain_memory"] == pytest.approx(2.1 / 1.6 - 1)
    # IT 1.2 -> 1.65: copy part 0.4 / 1.2, memory 0.05 / 1.2; the copy half holds 2/3 of it.
    assert s["it_gain_copy"] + s["it_gain_memory"] == pytest.approx(1.65 / 1.2 - 1)
    assert s["it_gain_copy"] == pytest.approx(0.4 / 1.2)
    assert s["baseline_copy_ipc_share"] == pytest.approx(2 / 3)
    # Slowdowns: baseline 1.25 (copy) and 1.25 (memory): a tie goes to the first (copy) core;
    # under RowClone-ZI 0.83 and 1.11: the memory-intensive one sets the maximum.
    assert s["baseline_max_slowdown_by_copy"] == 1.0
    assert s["max_slowdown_by_copy"] == 0.0
    assert s["baseline_memory_slowdown"] == pytest.approx(1.25)
    assert s["memory_slowdown"] == pytest.approx(0.5 / 0.45)


def test_throughput_weighs_the_faster_half_more() -> None:
    # The same 50% gain of the copy-intensive half: with the memory-intensive half at a tenth of
    # its IPC, throughput gains nearly 50%, weighted speedup 25%.
    s = rm.split_of(result([1.0, 0.1], [1.0, 0.1], [1.5, 0.1]), "rowclone-zi")
    assert s["ws_gain_copy"] == pytest.approx(0.25)
    assert s["it_gain_copy"] == pytest.approx(0.5 / 1.1)
    assert s["ws_gain_memory"] == s["it_gain_memory"] == 0.0


def test_four_cores_split_by_halves() -> None:
    s = rm.split_of(result([1.0, 1.0, 1.0, 1.0], [0.5, 1.0, 0.5, 0.25], [1.0, 1.0, 0.5, 0.5]), "rowclone-zi")
    assert s["ws_gain_copy"] == pytest.approx(0.5 / 2.25)
    assert s["ws_gain_memory"] == pytest.approx(0.25 / 2.25)
    assert s["baseline_max_slowdown_by_copy"] == 0.0
    assert s["baseline_memory_slowdown"] == pytest.approx((2 + 4) / 2)
