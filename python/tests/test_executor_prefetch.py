"""Points started ahead on the pool (``reproduce all`` plans every reproduction and starts their first
batches at once): a prefetched point is used, not run again, and planning runs nothing."""

from __future__ import annotations

import math

import pytest
from movelab.executor import LocalExecutor, Planned, PlanningExecutor, SerialExecutor, run_points, use


def test_prefetched_points_are_used_not_run_twice() -> None:
    with LocalExecutor(2) as ex:
        ex.prefetch(math.factorial, [5, 6, 7])
        assert sum(len(v) for v in ex._ahead.values()) == 3
        # Asked for in another order, with one point that was not started ahead.
        assert ex.map(math.factorial, [7, 5, 8, 6]) == [5040, 120, 40320, 720]
        assert not any(ex._ahead.values())


def test_a_point_started_twice_ahead_is_used_twice() -> None:
    with LocalExecutor(2) as ex:
        ex.prefetch(math.factorial, [4, 4])
        assert ex.map(math.factorial, [4, 4, 4]) == [24, 24, 24]


def test_planning_records_the_first_batch_and_runs_nothing() -> None:
    p = PlanningExecutor()
    with use(p), pytest.raises(Planned):
        run_points(math.factorial, [1, 2])
    assert p.batches == [(math.factorial, [1, 2])]
    # Planned is not an Exception: a command's own error handling does not swallow it.
    assert not issubclass(Planned, Exception)


def test_executors_without_a_pool_start_nothing_ahead() -> None:
    ex = SerialExecutor()
    ex.prefetch(math.factorial, [3])
    assert ex.map(math.factorial, [3]) == [6]
