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


def test_calibration_tiny_command_prints_and_writes_the_probe(tmp_path, monkeypatch, capsys) -> None:
    """python -m movelab.record.calibration tiny --out FILE: every way per point printed, the figures
    written stamped with the time and the load average; a failing probe is exit status 1, no file."""
    ways = {w: {"0": 22.0, "1024": 22.0 + 10 * i} for i, w in enumerate(calibration.TINY_COPY_WAYS)}
    fake = {"size": 8, "ns": ways, "median_ns": ways, "copies": {"0": 10, "1024": 10}, "clock_ns": 20.0}
    monkeypatch.setattr(calibration, "tiny_copy_costs", lambda: dict(fake))
    out = tmp_path / "t.json"
    assert calibration._main(["tiny", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["ns"] == ways and got["measured_utc"] and len(got["load_average"]) == 2
    assert "1024 KiB: hot 22.0 (22), all 32.0 (32), code 42.0 (42), buffers 52.0 (52)" in capsys.readouterr().out

    def boom() -> dict:
        raise RuntimeError("the tiny-copy probe failed for 8 bytes after 0 KiB: x")

    monkeypatch.setattr(calibration, "tiny_copy_costs", boom)
    bad = tmp_path / "b.json"
    assert calibration._main(["tiny", "--out", str(bad)]) == 1 and not bad.exists()
    assert "error: the tiny-copy probe failed" in capsys.readouterr().out


def test_a_malformed_probe_line_is_refused_naming_the_probe() -> None:
    with pytest.raises(RuntimeError, match="tiny-copy probe failed for 8 bytes after 64 KiB"):
        calibration._probe_line(["tiny", "8", "64", "1"], ["tiny", "8", "64"], 10, "tiny-copy", 8, 64, 0, "")
    with pytest.raises(RuntimeError, match="not numbers"):
        calibration._probe_line(["tiny", "8", "64", *["x"] * 10], ["tiny", "8", "64"], 10, "tiny-copy", 8, 64, 0, "")
    with pytest.raises(RuntimeError, match="finite and non-negative"):
        calibration._probe_line(["tiny", "8", "64", *["-1"] * 10], ["tiny", "8", "64"], 10, "tiny-copy", 8, 64, 0, "")
