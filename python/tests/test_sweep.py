"""Sweeps (``movelab.sweep`` and ``movelab sweep``) and the executor under them: the issue's spec, axes
(lists, ranges, zips, seeds), statistics kept, failures recorded per point, bad specs named by file
and key, results saved as points finish and resumed after Ctrl-C, and the same table from one
process, a local pool and a Dask LocalCluster."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from movelab import sweep
from movelab.cli import app
from movelab.executor import Executor, Outcome, PointError, make_executor
from typer.testing import CliRunner

runner = CliRunner()

ISSUE_SPEC = """\
simulator = "dram"
config = "ddr3-1600k-bench"
[workload]
kind = "random"
count = 20000
[axes]
"controller.scheduler" = ["frfcfs", "fcfs"]
"controller.row_policy" = ["open", "closed"]
"workload.seed" = [1, 2, 3]
"""

SMALL = {
    "simulator": "dram",
    "config": "ddr3-1600k-bench",
    "workload": {"kind": "random", "count": 2000},
    "axes": {"controller.scheduler": ["frfcfs", "fcfs"], "workload.seed": [1, 2, 3]},
    "keep": ["cycles", "read_latency.mean_ns", "energy.total_nj"],
}


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def test_issue_spec_gives_twelve_rows_named_by_the_axes(tmp_path: Path) -> None:
    spec = tmp_path / "issue.toml"
    spec.write_text(ISSUE_SPEC)
    out = tmp_path / "r.parquet"
    cli("sweep", spec, "--out", out)
    df = pd.read_parquet(out)
    assert len(df) == 12
    assert {"controller.scheduler", "controller.row_policy", "workload.seed"} <= set(df.columns)
    assert df["error"].isna().all()
    # The axes reach the simulator: every point's stats name its scheduler and row policy...
    assert (df["scheduler"] == df["controller.scheduler"]).all()
    assert (df["row_policy"] == df["controller.row_policy"]).all()
    # ...and they matter: the same seed under FCFS and FR-FCFS gives different cycle counts.
    piv = df.pivot_table(index=["controller.row_policy", "workload.seed"], columns="controller.scheduler",
                         values="cycles")
    assert (piv["fcfs"] != piv["frfcfs"]).all()
    text = cli("sweep", "show", out)
    assert "12 points, 0 failed" in text and "controller.scheduler" in text
    # Never overwritten without --force; --force replaces it.
    assert "--force" in cli("sweep", spec, "--out", out, code=2)
    cli("sweep", spec, "--out", out, "--force", "--workers", "1")
    assert pd.read_parquet(out).equals(df)


def test_a_point_matches_a_direct_simulation() -> None:
    from movelab import dram

    df = sweep.run({**SMALL, "axes": {"controller.scheduler": ["fcfs"], "workload.seed": [2]}}, workers=1)
    direct = dram.simulate("ddr3-1600k-bench", {"kind": "random", "count": 2000, "seed": 2},
                           overrides={"controller": {"scheduler": "fcfs"}}).stats
    assert df.loc[0, "cycles"] == direct["cycles"]
    assert df.loc[0, "energy.total_nj"] == pytest.approx(direct["energy"]["total_nj"])
    assert list(df.columns) == ["point", "controller.scheduler", "workload.seed", "cycles", "read_latency.mean_ns",
                                "energy.total_nj", "error"]


def test_ranges_zips_seeds_and_dry_run(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text("""
simulator = "dram"
config = "ddr3-1600k-bench"
seeds = 2
keep = ["cycles"]
[workload]
kind = "stream"
count = 500
[axes]
"dram.timing.nRAS" = { from = 28, to = 36, step = 4 }
"controller.read_queue" = { from = 8, to = 32, times = 2 }
[zip.refresh]
"controller.row_policy" = ["open", "closed"]
"controller.scheduler" = ["frfcfs", "fcfs"]
""")
    s = sweep.load_spec(spec)
    pts = s.points()
    assert len(pts) == 3 * 3 * 2 * 2
    assert sorted({p["dram.timing.nRAS"] for p in pts}) == [28, 32, 36]
    assert sorted({p["controller.read_queue"] for p in pts}) == [8, 16, 32]
    assert {(p["controller.row_policy"], p["controller.scheduler"]) for p in pts} == {("open", "frfcfs"),
                                                                                      ("closed", "fcfs")}
    assert sorted({p["workload.seed"] for p in pts}) == [1, 2]
    text = cli("sweep", spec, "--dry-run")
    assert "36 points" in text and "dram.timing.nRAS" in text


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=4), st.integers(1, 3))
def test_points_are_the_product_of_the_axes(lengths: list[int], zipped: int) -> None:
    axes = {f"a{i}.x": list(range(n)) for i, n in enumerate(lengths)}
    raw = {"simulator": "dram", "config": "ddr3-1600k-bench", "workload": {"kind": "stream", "count": 10},
           "axes": axes, "zip": {"z": {"zip.p": list(range(zipped)), "zip.q": [str(i) for i in range(zipped)]}}}
    s = sweep.Spec(source="t", simulator="dram", config="c", set={}, workload={},
                   axes=(*[sweep.Axis((k,), tuple((x,) for x in v)) for k, v in axes.items()],
                         sweep.Axis(("zip.p", "zip.q"), tuple((i, str(i)) for i in range(zipped)))),
                   keep=None, name="t", raw=raw)
    pts = s.points()
    assert len(pts) == math.prod(lengths) * zipped
    assert len({json.dumps(p, sort_keys=True) for p in pts}) == len(pts)
    assert all(str(p["zip.p"]) == p["zip.q"] for p in pts)


@pytest.mark.parametrize("body, key", [
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\ncolour = 1\n[workload]\nkind = "random"\ncount = 10\n',
     "colour"),
    ('simulator = "gem5"\nconfig = "x"\n[workload]\nkind = "random"\ncount = 10\n', "simulator"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n'
     '[axes]\n"controller.scheduler" = []\n', "axes.controller.scheduler"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n'
     '[axes]\n"controller.schedular" = ["fcfs"]\n', "controller.schedular"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n'
     '[axes]\n"controller.scheduler" = [1, 2]\n', "controller.scheduler"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n'
     '[axes]\n"dram.timing.nRAS" = ["a", 3]\n', "dram.timing.nRAS"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n'
     '[axes]\n"workload.colour" = [1]\n', "workload.colour"),
    ('simulator = "platform"\nconfig = "zhao-uma-emc"\n[workload]\nname = "tcp-rx"\n'
     '[axes]\n"workload.payloads" = [1]\n', "payloads"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nkeep = "cycles"\n[workload]\nkind = "random"\ncount = 10\n',
     "keep"),
    ('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n'
     '[axes]\n"x.y" = { from = 1, to = 5 }\n', "x.y"),
])
def test_bad_specs_name_the_file_and_the_key(tmp_path: Path, body: str, key: str) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(body)
    with pytest.raises(sweep.SpecError) as e:
        sweep.load_spec(spec)
    assert str(spec) in str(e.value) and key in str(e.value), str(e.value)
    text = cli("sweep", spec, "--out", tmp_path / "o.parquet", code=2)
    assert key in text
    assert not (tmp_path / "o.parquet").exists()


def test_a_failed_point_records_its_error_and_the_others_run(tmp_path: Path, monkeypatch) -> None:
    # One seed's points fail in the simulator (in this process: workers=1); their rows carry the
    # reason and the other points run and keep their statistics.
    real = sweep._run_dram

    def failing(config, overrides, workload):
        if workload.get("seed") == 2:
            raise ValueError("injected failure for seed 2")
        return real(config, overrides, workload)

    monkeypatch.setattr(sweep, "_run_dram", failing)
    df = sweep.run(SMALL, tmp_path / "f.parquet", workers=1)
    failed = df["workload.seed"] == 2
    assert len(df) == 6 and failed.sum() == 2
    assert df.loc[failed, "error"].str.contains("injected failure for seed 2").all()
    assert df.loc[~failed, "error"].isna().all() and (df.loc[~failed, "cycles"] > 0).all()
    # A point that raises in the worker is recorded; the others still run (executor level).
    with make_executor(workers=2) as ex:
        outs = sorted(ex.imap(math.sqrt, [4.0, -1.0, 9.0]), key=lambda o: o.index)
    assert [o.value for o in outs] == [2.0, None, 3.0]
    assert outs[1].error is not None and outs[1].error.startswith("ValueError")
    with pytest.raises(PointError, match="point 1"):
        make_executor(workers=1).map(math.sqrt, [4.0, -1.0])


def test_a_keep_pattern_naming_no_statistic_is_refused_before_any_point_runs(tmp_path: Path) -> None:
    # A typo in keep would fail every point after its whole simulation: refused up front, naming
    # the key and the pattern, and nothing is written.
    out = tmp_path / "k.parquet"
    with pytest.raises(sweep.SpecError, match=r"'keep': 'read_latncy\.\*' names no statistic of the dram"):
        sweep.run({**SMALL, "keep": ["cycles", "read_latncy.*"]}, out, workers=1)
    assert not out.exists() and not out.with_name(out.name + ".parts").exists()
    # Globs that match are accepted, and an axis naming the config is laid in first.
    spec = {**SMALL, "keep": ["cycles", "read_latency.*"],
            "axes": {"config": ["ddr3-1600k-bench", "ddr4-2400r"], "workload.seed": [1]}}
    df = sweep.run(spec, workers=1)
    assert len(df) == 2 and df["error"].isna().all() and "read_latency.mean_ns" in df.columns
    spec_file = tmp_path / "typo.toml"
    spec_file.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nkeep = ["cylces"]\n'
                         '[workload]\nkind = "random"\ncount = 10\n')
    text = " ".join(cli("sweep", spec_file, "--out", out, code=2).replace("│", " ").split())
    assert "'keep': 'cylces' names no statistic" in text
    assert not out.exists()


class _Interrupting(Executor):
    """Runs points in this process and raises KeyboardInterrupt (as Ctrl-C would) after ``after`` of them."""

    def __init__(self, after: int | None = None) -> None:
        self.after, self.workers, self.description, self.ran = after, 1, "test", 0

    def imap(self, fn, points):
        for i, p in enumerate(points):
            if self.after is not None and self.ran >= self.after:
                raise KeyboardInterrupt
            self.ran += 1
            yield Outcome(i, fn(p))


def test_interrupted_sweep_keeps_what_finished_and_resume_runs_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    with pytest.raises(sweep.SweepInterrupted) as e:
        sweep.run(SMALL, out, executor=_Interrupting(after=4), save_every=0)
    assert e.value.done == 4 and not out.exists()
    parts = sorted((tmp_path / "r.parquet.parts").glob("part-*.parquet"))
    assert sum(len(pd.read_parquet(p)) for p in parts) == 4
    with pytest.raises(FileExistsError, match="--resume"):
        sweep.run(SMALL, out, executor=_Interrupting())
    # The saved sweep belongs to this spec: another base config is refused.
    with pytest.raises(sweep.SpecError, match="workload"):
        sweep.run({**SMALL, "workload": {"kind": "random", "count": 3000}}, out, executor=_Interrupting(),
                  resume=True)
    rest = _Interrupting()
    resumed = sweep.run(SMALL, out, executor=rest, resume=True)
    assert rest.ran == 2
    assert out.exists() and not (tmp_path / "r.parquet.parts").exists()
    whole = sweep.run(SMALL, workers=1)
    pd.testing.assert_frame_equal(pd.read_parquet(out), whole)
    pd.testing.assert_frame_equal(resumed, whole)
    # Resuming a finished table with a grown axis runs only the new points.
    more = {**SMALL, "axes": {**SMALL["axes"], "workload.seed": [1, 2, 3, 4]}}
    grow = _Interrupting()
    df = sweep.run(more, out, executor=grow, resume=True)
    assert grow.ran == 2 and len(df) == 8


def test_same_table_on_one_process_a_local_pool_and_a_dask_cluster() -> None:
    distributed = pytest.importorskip("distributed")
    serial = sweep.run(SMALL, workers=1)
    pool = sweep.run(SMALL, workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        dask = sweep.run(SMALL, cluster=client)
        assert len(client.nthreads()) == 2
    pd.testing.assert_frame_equal(serial, pool)
    pd.testing.assert_frame_equal(serial, dask)
    assert serial["cycles"].nunique() > 1


def test_bad_cluster_and_worker_options() -> None:
    with pytest.raises(ValueError, match="tcp://"):
        make_executor("localhost:8786")
    with pytest.raises(ValueError, match="workers"):
        make_executor(workers=0)


def test_show_on_an_unfinished_sweep_says_how_to_finish_it(tmp_path: Path) -> None:
    with pytest.raises(sweep.SweepInterrupted):
        sweep.run(SMALL, tmp_path / "r.parquet", executor=_Interrupting(after=1))
    assert "--resume" in cli("sweep", "show", tmp_path / "r.parquet", code=2)


def test_ctrl_c_on_the_command_line_then_resume(tmp_path: Path) -> None:
    """A real SIGINT to `movelab sweep` (as Ctrl-C sends): exit 130, no result table, the finished
    points saved; --resume completes the same table one process gives."""
    import signal
    import subprocess
    import sys
    import time

    spec = {**SMALL, "workload": {"kind": "random", "count": 20000}, "seeds": 20,
            "axes": {"controller.scheduler": ["frfcfs", "fcfs"]}}
    path = tmp_path / "s.toml"
    path.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nseeds = 20\n'
                    'keep = ["cycles", "read_latency.mean_ns", "energy.total_nj"]\n'
                    '[workload]\nkind = "random"\ncount = 20000\n[axes]\n"controller.scheduler" = ["frfcfs", "fcfs"]\n')
    out = tmp_path / "r.parquet"
    parts = tmp_path / "r.parquet.parts"
    movelab = Path(sys.executable).parent / "movelab"
    proc = subprocess.Popen([str(movelab), "sweep", str(path), "--out", str(out), "--workers", "2",
                             "--save-every", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(parts.glob("part-*.parquet")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the interrupt arrived (a very fast machine)")
    assert proc.returncode == 130, err
    assert "--resume" in err and not out.exists()
    saved = sum(len(pd.read_parquet(p)) for p in parts.glob("part-*.parquet"))
    assert 0 < saved < 40
    cli("sweep", path, "--out", out, "--resume")
    pd.testing.assert_frame_equal(pd.read_parquet(out), sweep.run(spec, workers=1))


def test_a_sweep_over_a_reproductions_point_function() -> None:
    from movelab.reproduce import zhao_copy_engine as zc

    spec = {"simulator": "zhao-copy-engine", "point": {"core": "out-of-order", "payload": 1024, "packets": 5},
            "axes": {"overrides.copy.stream_buffer_lines": [1, 8]}, "keep": ["table3/*/ASYNC/*.reduction"]}
    df = sweep.run(spec, workers=1)
    col = "table3/out-of-order/1024/ASYNC/off-die.reduction"
    assert list(df.columns) == ["point", "overrides.copy.stream_buffer_lines", col, "error"]
    direct = zc.point({"overrides": {"copy": {"stream_buffer_lines": 8}}, "packets": 5, "core": "out-of-order",
                       "payload": 1024})
    assert df.loc[1, col] == next(r["reduction"] for r in direct if r["mode"] == "ASYNC")
    assert df.loc[0, col] != df.loc[1, col]  # the axis reaches the model
    with pytest.raises(sweep.SpecError, match=r"'axes\.nope\.x'.*has no 'nope'"):
        sweep.load_spec({"simulator": "zhao-copy-engine", "axes": {"nope.x": [1]}})
    with pytest.raises(sweep.SpecError, match="'config'"):
        sweep.load_spec({"simulator": "zhao-copy-engine", "config": "x"})


def test_kill_9_leaves_no_worker_behind_and_loses_only_unsaved_points(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "s.toml"
    path.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nseeds = 40\nkeep = ["cycles"]\n'
                    '[workload]\nkind = "random"\ncount = 20000\n')
    out = tmp_path / "r.parquet"
    movelab = Path(sys.executable).parent / "movelab"
    proc = subprocess.Popen([str(movelab), "sweep", str(path), "--out", str(out), "--workers", "2",
                             "--save-every", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def children() -> list[int]:
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == proc.pid:
                out.append(int(stat.parent.name))
        return out

    deadline = time.monotonic() + 120
    while not list((tmp_path / "r.parquet.parts").glob("part-*.parquet")) and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    kids = children()
    if proc.poll() is not None:
        pytest.skip("the sweep finished before it could be killed (a very fast machine)")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert kids, "the pool had no worker processes"
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{k}").exists() for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [k for k in kids if Path(f"/proc/{k}").exists() and "Z" not in Path(f"/proc/{k}/stat").read_text()
             .rsplit(")", 1)[1].split()[0]]
    assert not alive, f"workers {alive} outlived their killed parent"
    assert not out.exists()
    cli("sweep", path, "--out", out, "--resume", "--workers", "1")
    assert len(pd.read_parquet(out)) == 40


def test_a_platform_sweep_matches_direct_runs() -> None:
    from movelab import platform

    df = sweep.run({"simulator": "platform", "config": "zhao-uma-emc", "workload": {"name": "tcp-rx", "packets": 5},
                    "axes": {"copy.mechanism": ["base", "ce"], "workload.payload": [512, 1024]},
                    "keep": ["time_ns", "ipc"]}, workers=1)
    assert len(df) == 4 and df["error"].isna().all()
    direct = platform.run("zhao-uma-emc", "tcp-rx", overrides={"copy": {"mechanism": "ce"}},
                          params={"packets": 5, "payload": 512}).stats
    row = df[(df["copy.mechanism"] == "ce") & (df["workload.payload"] == 512)].iloc[0]
    assert row["time_ns"] == direct["time_ns"] and row["ipc"] == direct["ipc"]
    assert df["time_ns"].nunique() == 4


def test_show_refuses_a_table_that_is_not_a_sweeps(tmp_path: Path) -> None:
    """Any Parquet file reads as a table; `sweep show` summarised a recording (or any table) as a sweep of
    unknown simulator. Now only a table with a sweep's description is shown, and a recording is named."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from movelab.record.trace import META_KEY

    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), plain)
    assert "no sweep's description" in cli("sweep", "show", plain, code=2)
    rec = tmp_path / "rec.parquet"
    pq.write_table(pa.table({"t_ns": [1]}).replace_schema_metadata({META_KEY: b"{}"}), rec)
    assert "a recording" in cli("sweep", "show", rec, code=2)


def test_a_sweep_refuses_overrides_that_every_point_would_drop() -> None:
    # A reproduction's point sets copy.mode itself (zhao-copy-engine), or runs no copy engine
    # (rowclone-fork): an axis of it ran the same point at every value, as 'reproduce --set' refuses.
    zhao = {"simulator": "zhao-copy-engine", "point": {"core": "out-of-order", "payload": 1024, "packets": 5}}
    with pytest.raises(sweep.SpecError, match=r"'axes\.overrides\.copy\.mode': zhao-copy-engine sets copy\.mode"):
        sweep.load_spec({**zhao, "axes": {"overrides.copy.mode": ["SYNC_NLB", "ASYNC"]}})
    sweep.load_spec({**zhao, "axes": {"overrides.copy.stream_buffer_lines": [8, 64]}})  # the engine reads it
    with pytest.raises(sweep.SpecError, match=r"rowclone-fork runs no copy engine"):
        sweep.load_spec({"simulator": "rowclone-fork", "axes": {"overrides.copy.stream_buffer_lines": [1, 64]}})
    # A platform sweep: no point has an engine to read copy.mode, unless an axis gives some points one.
    plat = {"simulator": "platform", "config": "zhao-numa-imc", "workload": {"name": "tcp-rx", "packets": 5}}
    with pytest.raises(sweep.SpecError, match=r"'axes\.copy\.mode': no point of this sweep has a copy engine"):
        sweep.load_spec({**plat, "axes": {"copy.mode": ["SYNC_NLB", "ASYNC"]}})
    with pytest.raises(sweep.SpecError, match=r"'set\.copy\.stream_buffer_lines'"):
        sweep.load_spec({**plat, "set": {"copy": {"stream_buffer_lines": 16}},
                         "axes": {"core.clock_mhz": [2000, 3000]}})
    s = sweep.load_spec({**plat, "axes": {"copy.mode": ["SYNC_NLB", "ASYNC"], "copy.mechanism": ["base", "ce"]}})
    assert len(list(s.points())) == 4


def test_a_shipped_example_spec_is_found_by_name_or_repository_path_anywhere(tmp_path: Path, monkeypatch) -> None:
    # As from an installed wheel: no presets/ folder where the command runs.
    monkeypatch.chdir(tmp_path)
    by_name = sweep.load_spec("dram-240")
    by_path = sweep.load_spec("presets/sweeps/dram-240.toml")
    assert len(by_name.points()) == len(by_path.points()) == 240
    with pytest.raises(sweep.SpecError, match=r"no such spec file \(the example specs .* by name: .*dram-240"):
        sweep.load_spec("nosuch.toml")
    # A file of the user's own with that name is read, not the shipped one.
    mine = tmp_path / "dram-240.toml"
    mine.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\n[workload]\nkind = "random"\ncount = 10\n')
    assert len(sweep.load_spec(mine).points()) == 1
