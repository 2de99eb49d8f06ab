"""Largest-first scheduling: point functions declare a cost hint (estimated CPU seconds), executors
start the costliest points first, ``reproduce all`` starts every reproduction's first points in
one costliest-first order, and the critical-path tool's replay of a measured run on W workers."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from movelab.executor import (
    LocalExecutor,
    Planned,
    PlanningExecutor,
    _cost,
    _submission_order,
    costs,
    largest_first,
    run_points,
    use,
)
from movelab.reproduce import _critical_path as cp
from movelab.reproduce import larsen_idma as li
from movelab.reproduce import rowclone_apps as ra
from movelab.reproduce import rowclone_fork as rf
from movelab.reproduce import rowclone_multicore as rm
from movelab.reproduce import wun_onload as wo
from movelab.reproduce import zhao_copy_engine as zc


@costs(lambda p: p["n"])
def logged(p: dict[str, Any]) -> int:
    """Appends its point's n to the point's log (the order the pool started the points)."""
    with open(p["log"], "a") as f:
        f.write(f"{p['n']}\n")
    return p["n"] * 10


def unhinted(p: int) -> int:
    return p


@costs(lambda p: p["n"], feeds_next=True)
def first_stage(p: dict[str, Any]) -> int:
    return logged(p)


def two_stages(n: list[int], log: Path) -> list[int]:
    """A command whose second batch needs its first batch's results (as rowclone-multicore's)."""
    firsts = run_points(first_stage, [{"n": k, "log": str(log)} for k in n])
    return run_points(logged, [{"n": v, "log": str(log)} for v in firsts])


def test_a_hinted_function_has_its_points_started_costliest_first() -> None:
    pts = [{"n": n} for n in [2, 9, 1, 9, 5]]
    # Equal costs keep their order (the two 9s: index 1 before index 3).
    assert [i for i, _ in _submission_order(logged, pts)] == [1, 3, 4, 0, 2]
    # Without a hint the points start as given, taken as they are iterated (a sweep's points are
    # made one by one, never indexed nor all held).
    made: list[int] = []

    def lazy():
        for k in range(3):
            made.append(k)
            yield k

    it = _submission_order(unhinted, lazy())  # type: ignore[arg-type]
    assert made == [] and next(it) == (0, 0) and made == [0]


def test_the_pool_starts_the_costliest_point_first_and_returns_every_result_in_place(tmp_path: Path) -> None:
    log = tmp_path / "started"
    pts = [{"n": n, "log": str(log)} for n in [1, 4, 2, 8, 3]]
    with LocalExecutor(1) as ex:  # one worker: it starts the points in the order they were handed over
        assert ex.map(logged, pts) == [10, 40, 20, 80, 30]
    assert [int(v) for v in log.read_text().split()] == [8, 4, 3, 2, 1]


def test_points_of_several_functions_are_ordered_together_unknown_costs_first() -> None:
    batches = [(logged, [{"n": 1}, {"n": 7}]), (unhinted, [5, 6]), (logged, [{"n": 3}])]
    order = [(fn.__name__, p) for fn, p in largest_first(batches)]
    assert order == [("unhinted", 5), ("unhinted", 6), ("logged", {"n": 7}), ("logged", {"n": 3}),
                     ("logged", {"n": 1})]
    assert _cost(unhinted, 5) == math.inf
    assert _cost(logged, {"m": 1}) == math.inf  # a hint that fails on a point: unknown, not an error


def test_every_reproduction_point_has_a_finite_hint_that_grows_with_its_work() -> None:
    def hints(fn: Any, pts: list[Any]) -> list[float]:
        hs = [_cost(fn, p) for p in pts]
        assert all(0 < h < math.inf for h in hs), (fn.__name__, hs)
        return hs

    fork = rf.points()
    h = dict(zip([(p["s_mb"], json.dumps(p["n_pages"]), json.dumps(p["mechanisms"])) for p in fork],
                 hints(rf.point, fork), strict=True))
    small = json.dumps([2, 8, 32, 128, 512, 2048, 8192])
    # a point holds every mechanism of its N group (they share the fill): twice S, more work
    assert h[(128, "[16384]", "null")] > h[(64, "[16384]", "null")]
    assert h[(128, small, "null")] > h[(64, small, "null")]
    z = hints(zc.point, zc.points(None, 200))
    assert hints(zc.point, zc.points(None, 50)) < z
    assert hints(ra.point, ra.points(None, ra.APPS, 100_000, 50_000)) > hints(ra.point, ra.points(None, ra.APPS,
                                                                                                    10_000, 5_000))
    base = {"overrides": None, "instructions": 100_000, "warmup": 50_000, "app_params": None}
    mixes = [{**base, "mix": m, "alone": {}} for m in rm.mixes(7, [2, 8], 1)]
    two, eight = hints(rm.mix_point, mixes)
    assert eight > 3 * two
    # an alone run is one of an application's point's runs (one per mechanism)
    assert hints(rm.alone_point, [{**base, "app": "shell"}]) == [
        pytest.approx(ra.cost({**base, "app": "shell"}) / len(ra.MECHS))]
    # Larsen & Lee: more messages, more work; Fig. 10's streams above the small parts
    small, large = hints(li.point, li.points(200, 8)), hints(li.point, li.points(2000, 64))
    assert all(a < b for a, b in zip(small, large, strict=True))
    parts = dict(zip(li.PARTS, large, strict=True))
    assert parts["fig10"] > parts["sensitivity"]
    # Wun & Crowley: bigger frames cost more; a section 6 point is a receive run (the same cost);
    # one platform's copy less than a pair's receive
    wun = {(p["point"]["experiment"], p["point"]["payload_bytes"]): h
           for p, h in zip(wo.points(None, [64, 1472]), hints(wo.point, wo.points(None, [64, 1472])), strict=True)}
    assert wun[("rx", 1472)] > wun[("rx", 64)] == wun[("mapping-cache", 64)] > wun[("dram-copy", 2048)]


def _batch(module: str, before: float, *points: tuple[float, float]) -> cp.Batch:
    return cp.Batch(module, "point", before, [(i, hint, dt) for i, (hint, dt) in enumerate(points)])


def test_the_replay_schedules_as_reproduce_all_does() -> None:
    # a: one batch; b: a first batch, then a second one asked for after 0.5 s of b's own work.
    batches = [_batch("a", 0.0, (1, 4.0), (2, 1.0)), _batch("b", 1.0, (3, 3.0)), _batch("b", 0.5, (0, 1.0))]
    # One worker, in the order asked: a's 4 + 1, b's 3 (both first batches start at once), then
    # this process: 1 s of b's own work (t = 6), waits for b's first batch (t = 8), 0.5 s (t = 8.5),
    # then b's second batch, handed over now (t = 9.5), and 2 s after the last batch.
    assert cp.replay(batches, 2.0, 1, False) == pytest.approx(11.5)
    # Costliest first by hint: b's 3 s first, then a's 1 s and 4 s: a ends at 8.
    assert cp.replay(batches, 2.0, 1, True) == pytest.approx(12.5)
    # Two workers: x on one (0-4), y then z on the other (0-1, 1-4); a ends at 4, t = 5, then
    # b's first batch has ended (4), t = 5.5, b's second 5.5-6.5, then 2 s.
    assert cp.replay(batches, 2.0, 2, False) == pytest.approx(8.5)
    # Enough workers: this process's own work and the longest chain are all that is left.
    assert cp.replay(batches, 0.0, 16, False) == pytest.approx(6.5)


def test_a_cheap_batch_that_feeds_the_next_is_run_while_planning_and_not_again(tmp_path: Path) -> None:
    log = tmp_path / "started"
    with LocalExecutor(2) as ex:
        planner = PlanningExecutor(run_below=5, through=ex)  # as reproduce all plans: on the pool
        with use(planner), pytest.raises(Planned):
            two_stages([1, 2], log)
        # The first batch (hints 1 + 2) ran; the second, which needs its results, is recorded.
        assert sorted((p["n"], v) for fn, p, v in planner.ran if fn is first_stage) == [(1, 10), (2, 20)]
        assert planner.batches == [(logged, [{"n": 10, "log": str(log)}, {"n": 20, "log": str(log)}])]
        assert sorted(log.read_text().split()) == ["1", "2"]
        for fn, p, v in planner.ran:
            ex.provide(fn, p, v)
        for fn, p in largest_first(planner.batches):
            ex.prefetch(fn, [p])
        with use(ex):
            assert two_stages([1, 2], log) == [100, 200]
    # The first batch was not run again; the second ran once.
    assert sorted(log.read_text().split()[2:]) == ["10", "20"] and len(log.read_text().split()) == 4


def test_a_costly_batch_or_one_that_feeds_nothing_is_only_recorded(tmp_path: Path) -> None:
    log = tmp_path / "started"
    for planner in (PlanningExecutor(run_below=2), PlanningExecutor(run_below=0)):
        with use(planner), pytest.raises(Planned):
            two_stages([1, 2], log)  # hints 1 + 2 > 2
        assert planner.ran == [] and planner.batches[0][0] is first_stage
    planner = PlanningExecutor(run_below=100)
    with use(planner), pytest.raises(Planned):
        run_points(logged, [{"n": 1, "log": str(log)}])  # cheap, but nothing waits for it
    assert not log.exists()


def test_the_replay_runs_a_cheap_feeding_batch_first_and_hands_over_the_next_at_once() -> None:
    b = [_batch("a", 0.0, (4, 4.0)), _batch("m", 1.0, (1, 1.0)), _batch("m", 0.5, (3, 3.0))]
    b[1].feeds_next = True
    # Not planned through, one worker: a 0-4, m's first 4-5; this process: m's own work until 1,
    # waits for a (4), 1 s (t = 5), m's first done (5), 0.5 s, m's second 5.5-8.5.
    assert cp.replay(b, 0.0, 1, False) == pytest.approx(8.5)
    # Planned through: m's first run here (t = 1), then a and m's second handed over together
    # (largest first: a 1-5, m's second 5-8); this process waits for a (5), then its own work
    # (1 + 0.5 s, t = 6.5), then m's second (8).
    assert cp.replay(b, 0.0, 1, True, plan_through=1.0) == pytest.approx(8.0)
    # Two workers: a 0-4 and m's first 0-1, m's second only from t = 5.5 (8.5); planned through,
    # a 1-5 and m's second 1-4 side by side: this process's own work is the end (6.5).
    assert cp.replay(b, 0.0, 2, False) == pytest.approx(8.5)
    assert cp.replay(b, 0.0, 2, True, plan_through=1.0) == pytest.approx(6.5)
    # A batch over the limit is not run while planning.
    assert cp.replay(b, 0.0, 2, True, plan_through=0.5) == pytest.approx(8.5)
