"""The tiny-copy probe (``calibrate tiny``, ``calibration.tiny_copy_costs``; docs/record-replay.md,
"zstd's tiny copies: a probe"): a tiny memmove timed after a read of other data, four ways; its
figures are read and checked, its bad arguments refused."""

from __future__ import annotations

import json
import subprocess

import pytest
from movelab.record import _build, calibration


def test_the_tiny_probe_runs_four_ways_and_refuses_bad_arguments() -> None:
    """One line per point: mean and median ns a call for each way, the clock read included (so at
    least half the clock's), calls left out counted; bad arguments exit 2 naming the limits."""
    prog = str(_build.calibration_program())
    r = subprocess.run([prog, "tiny", "8", "64", "300"], capture_output=True, text=True, timeout=60)
    parts = r.stdout.split()
    assert r.returncode == 0 and parts[:3] == ["tiny", "8", "64"] and len(parts) == 13
    v = [float(x) for x in parts[3:]]
    assert all(x >= v[8] * 0.5 for x in v[:4]) and 0 <= v[9] <= 4 * 300
    for args in (("0", "0", "10"), ("300", "0", "10"), ("8", "-1", "10"), ("8", "0", "0"), ("8", "200000", "10")):
        bad = subprocess.run([prog, "tiny", *args], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "tiny needs 1 <= SIZE <= 256" in bad.stderr


def test_tiny_copy_costs_keeps_every_way_per_point_and_refuses_bad_arguments() -> None:
    got = json.loads(json.dumps(calibration.tiny_copy_costs(copies=200, sweep_kib=(0, 64))))
    assert set(got["ns"]) == set(calibration.TINY_COPY_WAYS)
    for w in calibration.TINY_COPY_WAYS:
        assert set(got["ns"][w]) == {"0", "64"} and set(got["median_ns"][w]) == {"0", "64"}
    assert got["copies"] == {"0": 200, "64": 200} and got["size"] == 8
    for bad in ({"size": 0}, {"size": 257}, {"copies": 0}, {"sweep_kib": (-1,)}, {"sweep_kib": ()},
                {"sweep_kib": (200000,)}, {"size": True}):
        with pytest.raises(ValueError):
            calibration.tiny_copy_costs(**bad)
