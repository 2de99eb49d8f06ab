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
    "overlap": {"overlap", "overlap_lo", "overlap_hi", "unstable", "repeats"},
    "pollution": {"access_ns", "case", "vs_none_lo", "vs_none_hi", "unstable", "repeats"},
    "breakdown": {"submit_ns", "queue_ns", "copy_ns", "complete_ns", "other_ns"},
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


def test_options_that_would_change_nothing_or_read_wrong_are_refused(tmp_path: Path) -> None:
    """--channels with only the cpu engine, a negative offered rate, no seconds, onload in --skip:
    each was taken (ignored, or printed as if measured); a size in GiB is read as one."""
    for args, what in [(["latency", "--quick", "--engine", "cpu", "--channels", "4"], "thread engine"),
                       (["onload", "--quick", "--rate", "-5"], "--rate"),
                       (["onload", "--quick", "--seconds", "0"], "--seconds"),
                       (["all", "--quick", "--skip", "onload"], "not part of all")]:
        res = RUNNER.invoke(bench_host_app, [*args, "--out", str(tmp_path)])
        assert res.exit_code == 2 and what in " ".join(res.output.replace("│", " ").split()), (args, res.output)
    from movelab.host.cli import _parse_sizes

    assert _parse_sizes("1g,2gib,4k") == [1 << 30, 2 << 30, 4 << 10]


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


def test_outputs_are_never_overwritten_without_force(tmp_path: Path) -> None:
    args = ["breakdown", "--quick", "--format", "json", "--sizes", "64", "--engine", "cpu", "--out", str(tmp_path)]
    assert RUNNER.invoke(bench_host_app, args).exit_code == 0
    (tmp_path / "breakdown.csv").write_text("mine")
    res = RUNNER.invoke(bench_host_app, args)
    assert res.exit_code == 2, res.output
    assert "refusing to overwrite" in res.output and "--force" in res.output
    assert (tmp_path / "breakdown.csv").read_text() == "mine"
    res = RUNNER.invoke(bench_host_app, [*args, "--force"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "breakdown.csv").read_text() != "mine"
    # `all` refuses before running anything
    (tmp_path / "results.json").write_text("{}")
    res = RUNNER.invoke(bench_host_app, ["all", "--quick", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "results.json" in res.output, res.output


def test_two_benchmarks_never_write_one_folder_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "r"
    out.mkdir()
    # Another process holds the folder (as a running benchmark would) until told to stop.
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; "
                               "from movelab._util import output_lock\n"
                               f"with output_lock(Path({str(out)!r})):\n print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        for cmd in (["breakdown", "--engine", "cpu", "--sizes", "64"], ["onload", "--config", "onload"], ["all"]):
            res = RUNNER.invoke(bench_host_app, [*cmd, "--quick", "--out", str(out)])
            assert res.exit_code == 2, res.output
            assert "being written by process" in res.output and str(holder.pid) in res.output, res.output
        assert [p.name for p in out.iterdir()] == [".movelab.lock"]  # nothing written
    finally:
        holder.communicate("", timeout=30)
    res = RUNNER.invoke(bench_host_app, ["breakdown", "--quick", "--engine", "cpu", "--sizes", "64", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "breakdown.csv").exists()


def test_a_bad_out_folder_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "a-file"
    f.write_text("x")
    for out, why in [(f, "not a folder"), (f / "sub", "cannot create"), (Path("/proc/movelab-no"), "cannot create")]:
        res = RUNNER.invoke(bench_host_app, ["breakdown", "--quick", "--engine", "cpu", "--out", str(out)])
        assert res.exit_code == 2, res.output
        assert "--out" in res.output and why in res.output, res.output
        assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)


@pytest.mark.parametrize(
    ("args", "option"),
    [(["overlap", "--repeats", "0"], "--repeats"), (["pollution", "--repeats", "1000"], "--repeats"),
     (["all", "--repeats", "-1"], "--repeats"), (["bandwidth", "--window", "0"], "--window"),
     (["latency", "--channels", "0"], "--channels"), (["all", "--skip", "nothing"], "--skip"),
     (["latency", "--sizes", "0"], "--sizes")],
)
def test_nonsense_option_values_are_refused_naming_the_option(args: list[str], option: str, tmp_path: Path) -> None:
    res = RUNNER.invoke(bench_host_app, [*args, "--quick", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert option in res.output, res.output
    assert not list(tmp_path.iterdir()), "nothing may be written"


def test_plots_draw_every_series_with_labelled_axes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    seen: list[Figure] = []
    save = Figure.savefig

    def capture(self: Figure, *a: object, **k: object) -> None:
        seen.append(self)
        save(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", capture)
    cases = ["none", "idle", "cpu", "thread", "thread_cache"]
    pol = [{"case": c, "ws_bytes": w, "size_bytes": 0, "access_ns": 10.0 + i, "vs_none": 1.0 + i, "vs_none_lo": 1.0,
            "vs_none_hi": 1.0 + 2 * i, "unstable": i == 4} for i, c in enumerate(cases) for w in (4096, 8192)]
    bench.plot("pollution", pol, tmp_path / "p.png")
    ax = seen[-1].axes[0]
    assert len(ax.patches) == len(pol), "one bar per case and working set"
    assert "ns" in ax.get_ylabel() and "bytes" in ax.get_xlabel()
    ov = [{"engine": "thread", "channels": 1, "cache": "hot", "size_bytes": s, "overlap": 0.5, "overlap_lo": 0.2,
           "overlap_hi": 0.6, "unstable": s == 4096} for s in (4096, 65536)]
    lat = [{"engine": "cpu", "channels": 0, "cache": "hot", "size_bytes": s, "latency_ns": 100.0} for s in (64, 4096)]
    bw = [{"engine": "cpu", "channels": 0, "size_bytes": s, "bandwidth_mb_s": 1e3} for s in (4096, 65536)]
    for name, rows, unit in [("overlap", ov, "fraction"), ("latency", lat, "(ns"), ("bandwidth", bw, "MB/s")]:
        bench.plot(name, rows, tmp_path / f"{name}.png")
        ax = seen[-1].axes[0]
        assert unit in ax.get_ylabel(), (name, ax.get_ylabel())
        assert ax.get_xlabel() == "copy size (bytes)"
