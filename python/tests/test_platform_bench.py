"""`movelab bench platform`'s rows: the median and the range of the children's CPU rates, from
fixed child results (no process is started and nothing is timed)."""

from __future__ import annotations

import pytest
from movelab.platform import bench


def test_rows_give_the_median_and_the_range_of_the_cpu_rate(monkeypatch):
    runs = iter([
        {"seconds": 4.0, "cpu_seconds": 2.0, "instructions": 8_000_000, "simulated_ns": 1e6, "peak_rss_kib": 1024},
        {"seconds": 2.0, "cpu_seconds": 1.0, "instructions": 8_000_000, "simulated_ns": 1e6, "peak_rss_kib": 3072},
        {"seconds": 8.0, "cpu_seconds": 4.0, "instructions": 8_000_000, "simulated_ns": 1e6, "peak_rss_kib": 2048},
    ])
    monkeypatch.setattr(bench, "CASES", [("one case", "p", "w", {}, {})])
    monkeypatch.setattr(bench, "_child", lambda *a: next(runs))
    (row,) = bench.run_bench(3)
    assert row["cpu_seconds_median"] == 2.0
    assert row["minstr_per_cpu_s"] == pytest.approx(4.0)
    assert row["minstr_per_cpu_s_min"] == pytest.approx(2.0)
    assert row["minstr_per_cpu_s_max"] == pytest.approx(8.0)
    assert row["minstr_per_s"] == pytest.approx(2.0)
    assert row["peak_rss_mib"] == pytest.approx(3.0)


def test_bad_repeats_are_refused_by_name():
    with pytest.raises(ValueError, match="repeats"):
        bench.run_bench(0)
