"""A sweep never loses or mislabels a result: resume refuses a changed base whether the saved points
are parts or a finished table, two sweeps never write one table at once, a lost executor saves what
finished and says how to resume, limits are checked before anything is built, messages are printed
literally, validation does not simulate every value of a long numeric axis, and ``bench sweep``
keeps an existing result unless ``--force``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from movelab import sweep
from movelab.executor import Executor, Outcome
from test_sweep import cli

SMALL = {
    "simulator": "dram",
    "config": "ddr3-1600k-bench",
    "workload": {"kind": "random", "count": 2000},
    "axes": {"controller.scheduler": ["frfcfs", "fcfs"], "workload.seed": [1, 2]},
    "keep": ["cycles", "time_ns"],
}


def test_resume_of_a_finished_table_refuses_a_changed_workload(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    sweep.run(SMALL, out, workers=1)
    before = out.read_bytes()
    changed = {**SMALL, "workload": {"kind": "random", "count": 1000}}
    with pytest.raises(sweep.SpecError, match="'workload' differs"):
        sweep.run(changed, out, workers=1, resume=True)
    # Neither the rows nor the stored description were touched.
    assert out.read_bytes() == before
    assert sweep.read_meta(out)["workload"]["count"] == 2000
    for key, value in [("keep", ["cycles"]), ("config", "ddr4-2400r"), ("set", {"controller": {"read_queue": 8}})]:
        with pytest.raises(sweep.SpecError, match=f"'{key}' differs"):
            sweep.run({**SMALL, key: value}, out, workers=1, resume=True)
    # The command line says so in one line, exit 2.
    spec = tmp_path / "changed.toml"
    spec.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nkeep = ["cycles", "time_ns"]\n'
                    '[workload]\nkind = "random"\ncount = 1000\n'
                    '[axes]\n"controller.scheduler" = ["frfcfs", "fcfs"]\n"workload.seed" = [1, 2]\n')
    text = cli("sweep", spec, "--out", out, "--resume", "--workers", "1", code=2)
    assert "'workload' differs" in text
    assert "0/4" not in text, text  # refused before a progress bar is drawn
    assert out.read_bytes() == before


def test_resume_with_fewer_axis_values_refuses_rather_than_drop_finished_points(tmp_path: Path) -> None:
    # Resumed with an axis that lost a value, the finished points of that value were dropped and
    # the table rewritten without them, status 0.
    out = tmp_path / "r.parquet"
    grown = {**SMALL, "axes": {**SMALL["axes"], "workload.seed": [1, 2, 3]}}
    sweep.run(grown, out, workers=1)
    before = out.read_bytes()
    with pytest.raises(sweep.SpecError, match=r"workload\.seed=3.*axes may grow, not shrink"):
        sweep.run(SMALL, out, workers=1, resume=True)
    assert out.read_bytes() == before
    # Growing still resumes: the finished points are kept and only the new ones run.
    more = {**SMALL, "axes": {**SMALL["axes"], "workload.seed": [1, 2, 3, 4]}}
    sweep.run(more, out, workers=1, resume=True)
    assert len(sweep.read(out)) == 8


def test_a_count_beyond_the_generator_is_refused_before_any_point_runs() -> None:
    with pytest.raises(sweep.SpecError, match=r"workload\.count 100,000,000,000,000,000 is more than"):
        sweep.load_spec({**SMALL, "workload": {"kind": "random", "count": 10**17}})


def test_a_huge_seed_count_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(sweep.SpecError, match="'seeds': the axis has 1000000000 values; at least 1 and at most"):
        sweep.load_spec({**SMALL, "axes": {}, "seeds": 1_000_000_000})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5_000_000, peak  # a list of 1e9 seeds would need tens of GB
    with pytest.raises(sweep.SpecError, match="'seeds'"):
        sweep.load_spec({**SMALL, "axes": {}, "seeds": 0})
    assert len(sweep.load_spec({**SMALL, "axes": {}, "seeds": 3}).points()) == 3


def test_two_sweeps_never_write_one_table_at_once(tmp_path: Path) -> None:
    """A second sweep on the same --out (resume or force) is refused at once, naming the process."""
    out = tmp_path / "cc.parquet"
    script = tmp_path / "hold.py"
    script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from movelab._util import output_lock\n"
        "with output_lock(Path(sys.argv[1])):\n"
        "    print('locked', flush=True)\n"
        "    time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        for flags in ([], ["--resume"], ["--force"]):
            with pytest.raises(FileExistsError, match=f"being written by process {holder.pid}"):
                sweep.run(SMALL, out, workers=1, resume="--resume" in flags, force="--force" in flags)
        assert time.monotonic() - t0 < 10
        assert not out.exists() and not out.with_name(out.name + ".parts").exists()
    finally:
        holder.kill()
        holder.wait()
    # Once the holder is gone (even killed), the lock is free.
    assert len(sweep.run(SMALL, out, workers=1)) == 4
    assert not list(tmp_path.glob(".cc.parquet.lock"))


class _LosesScheduler(Executor):
    """Runs ``after`` points, then fails as a Dask client does when its scheduler dies."""

    def __init__(self, after: int) -> None:
        self.after, self.workers, self.description = after, 1, "test"

    def imap(self, fn, points):
        from distributed.client import FutureCancelledError

        for i, p in enumerate(points):
            if i >= self.after:
                raise FutureCancelledError(key="x", reason="scheduler-connection-lost", msg=None)
            yield Outcome(i, fn(p))


def test_a_lost_scheduler_saves_the_finished_points_and_points_to_resume(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "ks.parquet"
    with pytest.raises(sweep.SweepBroken) as e:
        sweep.run(SMALL, out, executor=_LosesScheduler(after=3), save_every=0)
    msg = str(e.value)
    assert msg.startswith("lost the Dask scheduler") and "3 of 4 points saved in" in msg and "--resume" in msg
    assert e.value.done == 3 and not out.exists()
    df = sweep.run(SMALL, out, workers=1, resume=True)
    pd.testing.assert_frame_equal(df, sweep.run(SMALL, workers=1))


def test_messages_are_printed_literally(tmp_path: Path) -> None:
    spec = tmp_path / "markup.toml"
    spec.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 100\n'
                    '[axes]\n"controller.scheduler" = ["[/x]", "[bold red]loud"]\n')
    text = cli("sweep", spec, "--dry-run", code=2)
    assert "[/x]" in text and "Traceback" not in text
    spec.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[point]\nx = 1\n'
                    '[workload]\nkind = "random"\ncount = 100\n')
    assert "has a [point] (dram and platform have [workload])" in " ".join(cli("sweep", spec, "--dry-run",
                                                                                 code=2).split())
    assert "x[/y].parquet" in cli("sweep", "show", tmp_path / "x[/y].parquet", code=2)


def test_validating_a_long_numeric_axis_simulates_only_its_extremes(tmp_path: Path, monkeypatch) -> None:
    from movelab import dram

    calls = []
    real = dram.simulate

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(dram, "simulate", counting)
    s = sweep.load_spec({**SMALL, "axes": {"workload.seed": {"from": 1, "to": 100_000, "step": 1}}})
    assert len(s.points()) == 100_000
    assert len(calls) <= 4, len(calls)
    # A value beyond a limit is still found: read_fraction is a fraction.
    with pytest.raises(sweep.SpecError, match="read_fraction"):
        sweep.load_spec({**SMALL, "axes": {"workload.read_fraction": [0.1, 0.2, 0.3, 0.4, 0.5, 1.5, 0.6]}})
    # Every string value is still checked.
    with pytest.raises(sweep.SpecError, match="frfcfz"):
        sweep.load_spec({**SMALL, "axes": {"controller.scheduler": ["frfcfs", "fcfs", "frfcfz"]}})


def test_a_huge_value_is_not_echoed_whole(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(sweep.SpecError) as e:
        sweep.load_spec({**SMALL, "axes": {"controller.scheduler": ["x" * 100_000]}})
    assert len(str(e.value)) < 1000 and time.monotonic() - t0 < 10


def test_bench_sweep_keeps_an_existing_result_unless_force(tmp_path: Path) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 200\n'
                    '[axes]\n"workload.seed" = [1, 2]\n')
    out = tmp_path / "bs"
    out.mkdir()
    (out / "bench-sweep.json").write_text("PRECIOUS")
    t0 = time.monotonic()
    text = cli("bench", "sweep", "--out", out, "--spec", spec, "--workers", "2", code=2)
    assert "--force" in text and (out / "bench-sweep.json").read_text() == "PRECIOUS"
    assert time.monotonic() - t0 < 5  # refused before the benchmark ran
    cli("bench", "sweep", "--out", out, "--spec", spec, "--workers", "2", "--force")
    r = json.loads((out / "bench-sweep.json").read_text())
    assert r["points"] == 2 and r["tables_equal"]


def test_bench_sweep_checks_an_unusable_out_before_running(tmp_path: Path, monkeypatch) -> None:
    from movelab.sweep import bench

    def never(*a, **k):
        raise AssertionError("the benchmark ran before --out was checked")

    monkeypatch.setattr(bench, "run_bench", never)
    (tmp_path / "afile").write_text("")
    text = " ".join(cli("bench", "sweep", "--out", tmp_path / "afile" / "sub", "--quick", code=2).split())
    assert "--out" in text and "Not a directory" in text


def test_the_command_line_reports_a_lost_scheduler_in_one_line_with_exit_2(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("distributed")
    import movelab.executor

    monkeypatch.setattr(movelab.executor, "make_executor", lambda cluster, workers: _LosesScheduler(after=3))
    spec = tmp_path / "ks.toml"
    spec.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nkeep = ["cycles", "time_ns"]\n'
                    '[workload]\nkind = "random"\ncount = 2000\n'
                    '[axes]\n"controller.scheduler" = ["frfcfs", "fcfs"]\n"workload.seed" = [1, 2]\n')
    out = tmp_path / "ks.parquet"
    raw = cli("sweep", spec, "--out", out, "--save-every", "0", code=2)
    text = " ".join(raw.split())
    assert "lost the Dask scheduler" in text and "3 of 4 points saved in" in text and "--resume" in text
    assert "Traceback" not in raw and sum("lost the Dask scheduler" in line for line in raw.splitlines()) == 1
    assert "4 points (0 failed)" in cli("sweep", spec, "--out", out, "--resume", "--workers", "1")


def test_a_sweep_with_a_failed_point_exits_1_with_its_table_written(tmp_path: Path, monkeypatch) -> None:
    # Points that fail in the simulator (injected; --workers 1 runs them in this process).
    def failing(config, overrides, workload):
        raise ValueError("injected point failure")

    monkeypatch.setattr(sweep, "_run_dram", failing)
    spec = tmp_path / "fails.toml"
    spec.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nkeep = ["cycles"]\n'
                    '[workload]\nkind = "random"\ncount = 200\n[axes]\n"workload.seed" = [1, 2]\n')
    out = tmp_path / "f.parquet"
    text = " ".join(cli("sweep", spec, "--out", out, "--workers", "1", code=1).split())
    assert "2 points (2 failed) written" in text and "injected point failure" in text
    assert len(pd.read_parquet(out)) == 2
