"""movelab record / replay: the allocator's own path in calloc and realloc (measured by
``calibrate alloc``, charged per size class and gap) and the fresh-destination rule of the cache
state (a destination line no earlier call touched is a first touch even inside a touched region)."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest
from movelab.record import cachestate, calibration
from movelab.record.replay import _check_alloc_cost, _fixed_cost, alloc_reuse

CC = shutil.which("cc") or shutil.which("gcc")


def _calls(rows: list[tuple[str, int, float]]) -> pd.DataFrame:
    """(kind, size class, net ns) rows as a run of alloc_measure."""
    return pd.DataFrame({"kind": [r[0] for r in rows], "size_class": [r[1] for r in rows],
                         "net_ns": [r[2] for r in rows]})


def test_alloc_path_is_the_allocating_call_less_its_base_kind() -> None:
    # the allocating call's mean less the base kind's mean without its stops over GAP_TRIM_NS (the
    # allocating call's interrupt tail is in its own mean)
    calls = _calls([("calloc", 5, 100.0), ("calloc", 5, 140.0), ("memset", 5, 20.0), ("memset", 5, 30.0),
                    ("memset", 5, calibration.GAP_TRIM_NS + 900.0),
                    ("calloc", 13, 900.0), ("memset", 12, 50.0),  # no memset of class 13: the closest, 12
                    ("calloc", 3, 10.0), ("memset", 3, 30.0),  # faster than its memset: 0, not negative
                    ("realloc", 7, 300.0), ("memcpy", 7, 25.0), ("memcpy", 5, 1.0)])
    p = calibration.alloc_path(calls)
    assert p["calloc"] == {"3": 0.0, "5": pytest.approx(95.0), "13": pytest.approx(850.0)}
    assert p["realloc"] == {"7": pytest.approx(275.0)}
    # no base kind measured: no figures for the allocating kind
    assert "realloc" not in calibration.alloc_path(calls[calls["kind"] != "memcpy"])


def test_alloc_cost_takes_the_size_class_and_gap_of_each_call() -> None:
    cost = {"edge_ns": 1000.0, "ns": {"calloc": {"hot": {"4": 10.0, "8": 80.0}, "cold": {"4": 30.0, "8": 200.0}}}}
    sc = np.array([4, 8, 9, 1, 8, 8])
    gap = np.array([50.0, 999.0, 10.0, 5000.0, 1000.0, math.nan])
    got = calibration.alloc_cost_ns(cost, "calloc", sc, gap)
    # below the edge: hot; from it on, and a thread's first call (no gap): cold; closest class
    assert got.tolist() == [10.0, 80.0, 80.0, 30.0, 200.0, 200.0]
    assert calibration.alloc_cost_ns(cost, "realloc", sc, gap) is None


def test_fixed_cost_charges_the_base_kinds_call_and_the_allocator_path() -> None:
    cls = pd.DataFrame({"kind": ["calloc", "calloc", "memset"], "size_class": [4, 8, 4], "count": [1, 1, 1],
                        "gap_ns": [50.0, 5000.0, 50.0], "t_ns": [1.0, 2.0, 3.0]})
    cost = {"edge_ns": 1000.0, "ns": {"calloc": {"hot": {"4": 10.0, "8": 80.0}, "cold": {"4": 30.0, "8": 200.0}}}}
    costs = {"memset": 3.0, "calloc": 1000.0}
    # with the allocator's path: calloc = memset's call (3) + its path (10 hot, 200 cold); memset 3
    assert _fixed_cost(cls, costs, None, cost) == pytest.approx(3 + 10 + 3 + 200 + 3)
    # without it: calloc's own call cost
    assert _fixed_cost(cls, costs, None) == pytest.approx(1000 + 1000 + 3)
    # per gap class lists for the base kind
    gcosts = {"memset": [1.0, 5.0]}
    assert _fixed_cost(cls, gcosts, [1000.0], cost) == pytest.approx((1 + 10) + (5 + 200) + 1)


def test_a_block_handed_back_is_the_same_address_for_the_same_rounded_size() -> None:
    # calloc of 100 B at A, again at A for 110 B (both 7 granules of 16 B): handed back; at A for
    # 200 B: not (another size); another process's A: not; a realloc's return counts as an earlier
    # call; a memset never; an aggregated row (no time) never; a failed call (no address) never
    ev = pd.DataFrame({
        "kind": ["calloc", "calloc", "calloc", "calloc", "realloc", "calloc", "memset", "calloc", "calloc"],
        "pid": [1, 1, 1, 2, 1, 1, 1, 1, 1],
        "t_ns": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, math.nan, 9.0],
        "dst": pd.array([0xA0, 0xA0, 0xA0, 0xA0, 0xB0, 0xB0, 0xB0, 0xB0, None], dtype="UInt64"),
        "size": [100, 110, 200, 100, 64, 60, 60, 60, 60]})
    assert alloc_reuse(ev).tolist() == [False, True, False, False, False, True, False, False, False]
    # out of time order in the frame: decided in time order
    assert alloc_reuse(ev.iloc[[1, 0]]).tolist() == [True, False]
    # no addresses recorded: nothing is a reuse
    assert not alloc_reuse(ev.drop(columns="dst")).any()


def test_a_block_handed_back_takes_the_reuse_figure_of_its_size_bucket() -> None:
    # reuse figures keyed by each bucket's largest size: 97-112 bytes 2 ns, 113-128 bytes 50 ns
    cost = {"edge_ns": 1000.0, "ns": {"calloc": {"hot": {"7": 10.0}, "cold": {"7": 30.0},
                                                 "reuse_hot": {"112": 2.0, "128": 50.0},
                                                 "reuse_cold": {"112": 6.0, "128": 70.0}}}}
    sc = np.array([7, 7, 7, 7, 7, 7])
    gap = np.array([50.0, 50.0, 50.0, 5000.0, 5000.0, 50.0])
    reuse = np.array([False, True, True, False, True, True])
    size = np.array([100.0, 100.0, 120.0, 100.0, 112.0, 9000.0])
    got = calibration.alloc_cost_ns(cost, "calloc", sc, gap, reuse, size)
    # beyond the last bound: the last bucket's
    assert got.tolist() == [10.0, 2.0, 50.0, 30.0, 6.0, 50.0]
    # without the flags or the sizes, or a calibration without reuse figures: every call the others
    assert calibration.alloc_cost_ns(cost, "calloc", sc, gap).tolist() == [10.0, 10.0, 10.0, 30.0, 30.0, 10.0]
    assert calibration.alloc_cost_ns(cost, "calloc", sc, gap, reuse).tolist() == [10.0, 10.0, 10.0, 30.0, 30.0, 10.0]
    old = {"edge_ns": 1000.0, "ns": {"calloc": {"hot": {"7": 10.0}, "cold": {"7": 30.0}}}}
    assert calibration.alloc_cost_ns(old, "calloc", sc, gap, reuse, size).tolist() == \
        [10.0, 10.0, 10.0, 30.0, 30.0, 10.0]
    # one reuse way measured: it stands for the other
    one = {"edge_ns": 1000.0, "ns": {"calloc": {"hot": {"7": 10.0}, "cold": {"7": 30.0}, "reuse_hot": {"128": 2.0}}}}
    assert calibration.alloc_cost_ns(one, "calloc", sc, gap, reuse, size).tolist() == [10.0, 2.0, 2.0, 30.0, 2.0, 2.0]
    # the replay's per-class charge follows the events' flag and size
    cls = pd.DataFrame({"kind": ["calloc", "calloc"], "size_class": [7, 7], "count": [1, 1], "size": [100, 100],
                        "gap_ns": [50.0, 50.0], "t_ns": [1.0, 2.0], "reuse": [False, True]})
    assert _fixed_cost(cls, {"memset": 3.0}, None, cost) == pytest.approx((3 + 10) + (3 + 2))


def test_reuse_path_is_per_size_bucket_less_the_memset_of_the_class() -> None:
    calls = pd.DataFrame({"kind": ["calloc", "calloc", "calloc", "memset", "memset"],
                          "size": [100, 104, 120, 100, 120], "size_class": [7, 7, 7, 7, 7],
                          "net_ns": [12.0, 16.0, 80.0, 4.0, 4.0]})
    assert calibration.alloc_reuse_path(calls) == {"112": pytest.approx(10.0), "128": pytest.approx(76.0)}
    assert calibration.ALLOC_REUSE_BOUNDS[:2] == (16, 32) and calibration.ALLOC_REUSE_BOUNDS[-1] == 8192


@pytest.mark.parametrize("bad, match", [({}, "'ns' table"), ({"ns": {"malloc": {"hot": {"1": 1.0}}}}, "malloc"),
                                        ({"ns": {"calloc": {"warmish": {"1": 1.0}}}}, "'hot' and/or 'cold'"),
                                        ({"ns": {"calloc": {"reuse_hot": {"1": 1.0}}}}, "'hot' and/or 'cold'"),
                                        ({"ns": {"calloc": {"hot": {"x": 1.0}}}}, "size class"),
                                        ({"ns": {"calloc": {"hot": {"1": -1.0}}}}, "non-negative"),
                                        ({"ns": {"calloc": {"hot": {"1": 1.0}}}, "edge_ns": 0}, "edge_ns")])
def test_bad_alloc_cost_is_refused_naming_what(bad: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _check_alloc_cost(bad)


def _events(rows: list[tuple[int, int, str, int, int | None, int]]) -> pd.DataFrame:
    """(pid, t_ns, op, dst, src, size) rows as movement events."""
    return pd.DataFrame({"pid": [r[0] for r in rows], "t_ns": [float(r[1]) for r in rows],
                         "op": [r[2] for r in rows], "dst": pd.array([r[3] for r in rows], dtype="UInt64"),
                         "src": pd.array([r[4] for r in rows], dtype="UInt64"),
                         "size": [r[5] for r in rows], "count": 1})


def test_a_fresh_line_in_a_touched_region_is_fresh() -> None:
    # call 0 writes the region's first line; call 1 writes its next line (never touched: a block
    # carved out beside a used one); call 2 rewrites the first line (reused); another process's
    # first touch of the same address is fresh too
    ev = _events([(1, 0, "init", 0x10000, None, 64), (1, 10, "init", 0x10040, None, 64),
                  (1, 20, "init", 0x10000, None, 64), (2, 30, "init", 0x10040, None, 64)])
    st = cachestate.states(ev, 64 << 10, 1 << 20, 0.0, "warm", "bytes", fresh="cold", region=1024)
    assert st["cold"].tolist() == [1.0, 1.0, 0.0, 1.0]
    # without a fresh state, the region's recency decides (as before): warm
    st0 = cachestate.states(ev, 64 << 10, 1 << 20, 0.0, "warm", "bytes", fresh=None, region=1024)
    assert st0["warm"].tolist() == [1.0, 1.0, 1.0, 1.0]
    # a source line is never fresh: a copy out of an untouched line takes ``untouched``
    cp = _events([(1, 0, "init", 0x10000, None, 64), (1, 10, "copy", 0x10000, 0x10080, 64)])
    st1 = cachestate.states(cp, 64 << 10, 1 << 20, 0.0, "warm", "bytes", fresh="cold", region=1024)
    assert (st1.loc[1, "warm"], st1.loc[1, "cold"]) == (1.0, 0.0)


def test_the_default_fresh_state_is_declared() -> None:
    assert cachestate.FRESH in (*cachestate.STATES, None)  # the replay passes it on: see the docs


@pytest.mark.skipif(CC is None, reason="no C compiler: the calibration program is built with one")
def test_alloc_measure_records_each_size_class(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOVELAB_CACHE_DIR", str(tmp_path))
    calls = calibration.alloc_measure(40)
    per = calls.groupby(["kind", "size_class"]).size()
    # calloc of 1 B .. 8 KiB (classes 1-13), memset and memcpy of the classes up to 4 KiB; a few
    # calls may be left out as disturbed (a fault or a switch inside)
    assert set(per.loc["calloc"].index) >= set(range(1, 14))
    assert set(per.loc["memset"].index) >= set(range(1, 13))
    assert per.loc["realloc"].sum() >= 13 * 30
    assert (calls["net_ns"] >= 0).all() and calls["gap_ns"].notna().any()
    p = calibration.alloc_path(calls)
    assert set(p) == {"calloc", "realloc"} and all(v >= 0 for t in p.values() for v in t.values())
    with pytest.raises(ValueError, match="reps"):
        calibration.alloc_measure(0)
    # the reuse way: each calloc asks for the size of a block just freed, and gets that block back
    # (the same address for the same size: what the replay calls a block handed back); no realloc
    r = calibration.alloc_measure(400, reuse=True)
    c = r[r["kind"] == "calloc"]
    assert set(c["size_class"]) >= set(range(1, 14)) and "realloc" not in set(r["kind"])
    assert alloc_reuse(c).mean() > 0.5
    # every size bucket measured, keyed by its bound
    assert set(calibration.alloc_reuse_path(r)) == {str(b) for b in calibration.ALLOC_REUSE_BOUNDS}
    with pytest.raises(ValueError, match="runs"):
        calibration.alloc_costs(40, runs=0)


def test_alloc_charge_sets_each_kinds_charge_beside_its_measured_time() -> None:
    """Two calloc calls of one thread (back to back, then after a 5 us gap) and a memset: the
    measured time is the duration less the clock read (5 ns), the charge is memset's call cost plus
    the allocator path of the call's side of the edge; the kinds and sides come apart."""
    df = pd.DataFrame({"source": "interposer", "kind": ["memset", "calloc", "calloc"], "bytes": [16, 16, 200],
                       "size": [16, 16, 200], "size_class": [5, 5, 8], "count": [1, 1, 1],
                       "pid": 1, "tid": 1, "image": 0, "t_ns": [0.0, 110.0, 5200.0],
                       "dur_ns": [100.0, 95.0, 405.0], "value": 0})
    df.attrs["movelab"] = {"processes": [{"pid": 1, "image": 0, "clock_ns": 5.0}]}
    cost = {"edge_ns": 1000.0, "ns": {"calloc": {"hot": {"5": 40.0, "8": 80.0}, "cold": {"5": 60.0, "8": 200.0}}}}
    t = calibration.alloc_charge(df, {"memset": 3.0, "calloc": 50.0}, None, cost).set_index(["kind", "gap"])
    # the memset is its thread's first call (no gap): "after a gap"
    assert t.loc[("memset", "after a gap"), "charged_ns"] == pytest.approx(3.0)
    assert t.loc[("calloc", "back to back"), "measured_ns"] == pytest.approx(90.0)
    assert t.loc[("calloc", "back to back"), "charged_ns"] == pytest.approx(3.0 + 40.0)
    assert t.loc[("calloc", "after a gap"), "charged_ns"] == pytest.approx(3.0 + 200.0)
    assert t.loc[("calloc", "after a gap"), "charged_without_path_ns"] == pytest.approx(50.0)
    assert t.loc[("calloc", "after a gap"), "measured_ns_per_call"] == pytest.approx(400.0)
    with pytest.raises(ValueError, match="'ns' table"):
        calibration.alloc_charge(df, {}, None, {})
