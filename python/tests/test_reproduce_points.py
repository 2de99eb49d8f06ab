"""The reproductions as points on the executor: a split run gives exactly the rows of one whole run
of the model, and the CLI's table is the same from one process, a local pool and a Dask cluster."""

from __future__ import annotations

import json

import pytest
from movelab import _core
from movelab.cli import app
from movelab.executor import make_executor, use
from movelab.reproduce import rowclone_fork as rf
from movelab.reproduce import zhao_copy_engine as zc
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def test_zhao_points_assemble_to_the_whole_run() -> None:
    whole = json.loads(_core.reproduce_zhao(None, 5, None, None))
    pts = zc.points(None, 5)
    # six Table 3 cells, the figures, and the five settings of Figs. 12-14 other than Table 2's
    assert len(pts) == 12
    assembled = zc.assemble([zc.point(p) for p in pts])
    assert [r for r in assembled if r["figure"] not in zc.SENSITIVITY] == whole
    assert len([r for r in assembled if r["figure"] in zc.SENSITIVITY]) == (2 + 3 + 3) * 4
    # Without the 1 KB cell the figures measure their own base, with the same result.
    only = zc.assemble([zc.point(p) for p in zc.points(None, 5, [512])])
    assert [r for r in only if r["figure"] != "table3" and r["placement"] == "on-die"] == \
        [r for r in whole if r["figure"] != "table3" and r["placement"] == "on-die"]


def test_fork_points_assemble_to_the_whole_run() -> None:
    whole = json.loads(_core.reproduce_rowclone_fork(None, [4, 8], [2, 16], 16, None))
    pts = rf.points(None, [4, 8], [2, 16], 16)
    # Each S is split by N (N = 16 alone: over half the largest), every mechanism of a group in one
    # point (they share its fill), in the whole run's order.
    assert [(p["s_mb"], p["n_pages"], p["mechanisms"]) for p in pts] == \
        [(s, [n], None) for s in [4, 8] for n in [2, 16]] + [(None, None, None)]
    runs = [r for p in pts for r in rf.point(p)]
    assert json.loads(_core.rowclone_fork_rows(json.dumps(runs))) == whole


def test_fork_runs_need_their_baseline_and_a_known_mechanism() -> None:
    runs = json.loads(_core.reproduce_rowclone_fork(None, [4], [2], 16, None, False, ["fpm"], True))
    assert [r["mechanism"] for r in runs] == ["fpm"]
    with pytest.raises(ValueError, match="no baseline run"):
        _core.rowclone_fork_rows(json.dumps(runs))
    with pytest.raises(ValueError, match="unknown rowclone-fork mechanism 'fmp'"):
        _core.reproduce_rowclone_fork(None, [4], [2], 16, None, False, ["fmp"], True)


def test_fork_page_groups_keep_the_order_and_put_the_large_n_alone() -> None:
    assert rf.page_groups(rf.PAPER_PAGES) == [[2, 8, 32, 128, 512, 2048, 8192], [16384]]
    assert rf.page_groups([16384, 2, 8, 8192, 32]) == [[16384], [2, 8, 8192, 32]]
    assert rf.page_groups([16384, 2, 9000, 32]) == [[16384], [2], [9000], [32]]
    assert rf.page_groups([5]) == [[5]]
    # Every mechanism of a group in one point: they share its fill, the costliest part of a point.
    assert [p["n_pages"] for p in rf.points()] == [[2, 8, 32, 128, 512, 2048, 8192], [16384]] * 2 + [None]
    assert all(p["mechanisms"] is None for p in rf.points())


def test_reproduction_is_the_same_on_every_executor() -> None:
    args = ["zhao-copy-engine", "--packets", "5", "--format", "json"]
    serial = json.loads(cli("reproduce", "--workers", "1", *args))
    pool = json.loads(cli("reproduce", "--workers", "2", *args))
    assert serial == pool
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as lc, \
            distributed.Client(lc) as client, make_executor(client) as ex, use(ex):
        assert zc.run(packets=5) == serial


def test_a_bad_override_fails_every_point_with_its_message() -> None:
    out = cli("reproduce", "--workers", "2", "zhao-copy-engine", "--packets", "5", "--set", "copy.mode=FAST", code=2)
    assert "error:" in out and "copy.mode" in out
