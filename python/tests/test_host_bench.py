"""`movelab bench host ...` in --quick mode: every benchmark runs, prints JSON rows with the
required fields, and writes its CSV and PNG; `all` writes a report folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from movelab.host import bench
from movelab.host.cli import bench_host_app
from typer.testing import CliRunner

RUNNER = CliRunner()

REQUIRED = {
    "latency": {"latency_ns", "cache"},
    "bandwidth": {"bandwidth_mb_s"},
    "overlap": {"overlap"},
    "pollution": {"access_ns", "case"},
    "breakdown": {"submit_ns", "queue_ns", "copy_ns", "complete_ns"},
}


@pytest.mark.parametrize("name", list(REQUIRED))
def test_each_benchmark_quick_json(name: str, tmp_path: Path) -> None:
    res = RUNNER.invoke(bench_host_app, [name, "--quick", "--format", "json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout.strip().splitlines()[-1])
    assert rows
    for r in rows:
        assert {"engine", "size_bytes"} <= r.keys()
        assert REQUIRED[name] <= r.keys(), r
    if name == "latency":
        assert {r["cache"] for r in rows} == {"hot", "cold"}
        assert {r["engine"] for r in rows} == {"cpu", "thread"}
    if name == "pollution":
        assert {r["case"] for r in rows} >= {"none", "cpu", "thread"}
    if name == "overlap":
        # the cpu engine's copy is blocking: nothing overlaps
        assert all(r["overlap"] < 0.5 for r in rows if r["engine"] == "cpu")
    assert (tmp_path / f"{name}.csv").stat().st_size > 0
    assert (tmp_path / f"{name}.png").stat().st_size > 0


def test_table_output_and_options(tmp_path: Path) -> None:
    res = RUNNER.invoke(
        bench_host_app,
        ["latency", "--quick", "--sizes", "64,4k", "--engine", "thread", "--cache", "hot", "--out", str(tmp_path)],
    )
    assert res.exit_code == 0, res.output
    assert "movelab bench host latency" in res.stdout and "4 KiB" in res.stdout


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    res = RUNNER.invoke(bench_host_app, ["latency", "--quick", "--sizes", "64,abc", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "not a size" in res.output
    res = RUNNER.invoke(bench_host_app, ["latency", "--quick", "--cache", "warm", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "warm" in res.output
    with pytest.raises(ValueError, match="unknown benchmark"):
        bench.run("nope")


def test_all_writes_a_report(tmp_path: Path) -> None:
    res = RUNNER.invoke(bench_host_app, ["all", "--quick", "--skip", "ipc", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "results.json").read_text())
    assert set(report["results"]) == {"latency", "bandwidth", "overlap", "pollution", "breakdown"}
    assert "roundtrip_64B_hot" in report["bars"]
    for name in report["results"]:
        assert (tmp_path / f"{name}.csv").exists() and (tmp_path / f"{name}.png").exists()


def test_ipc_is_registered() -> None:
    assert "ipc" in bench.BENCHMARKS
    assert bench.count_points("ipc", quick=True) > 0
