"""A sweep's memory follows its window, not its spec: points are made lazily (the count is computed,
point i is built from its digits), ``--dry-run`` streams the points, a run with an output keeps a bit
per point and merges its parts a range at a time, and ``movelab report`` reads a table a batch of
columns at a time. Resume semantics are those of test_sweep.py (which still pass)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from movelab import report, sweep
from test_sweep import cli

MILLION = """
name = "big"
simulator = "dram"
config = "ddr3-1600k-bench"
seeds = 100000
[workload]
kind = "random"
count = 1
[axes]
"controller.read_queue" = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
"""

SMALL = {
    "simulator": "dram",
    "config": "ddr3-1600k-bench",
    "workload": {"kind": "random", "count": 300},
    "axes": {"controller.scheduler": ["frfcfs", "fcfs"], "workload.seed": [1, 2, 3, 4, 5]},
    "keep": ["cycles", "time_ns"],
}


def _axes(*lengths: int) -> tuple[sweep.Axis, ...]:
    return tuple(sweep.Axis((f"a{k}",), tuple((v,) for v in range(n))) for k, n in enumerate(lengths))


def test_a_million_point_spec_counts_and_indexes_without_building_a_list(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text(MILLION)
    s = sweep.load_spec(path)
    assert s.count == 10**6
    pts = s.points()
    assert not isinstance(pts, list) and len(pts) == 10**6
    assert pts[0] == {"controller.read_queue": 8, "workload.seed": 1}
    assert pts[123_456] == {"controller.read_queue": 9, "workload.seed": 23_457}
    assert pts[-1] == {"controller.read_queue": 17, "workload.seed": 100_000}
    assert list(itertools.islice(pts, 100_001))[-2:] == [pts[99_999], pts[100_000]]
    assert pts.index({"controller.read_queue": 12, "workload.seed": 7}) == 4 * 100_000 + 6


def test_a_trillion_points_are_counted_and_indexed_lazily() -> None:
    s = sweep.Spec(source="t", simulator="dram", config="c", set={}, workload={}, axes=_axes(100_000, 10_000, 1000),
                   keep=None, name="t")
    pts = s.points()
    assert s.count == len(pts) == 10**12
    assert pts[10**12 - 1] == {"a0": 99_999, "a1": 9_999, "a2": 999}
    assert pts[1_234_567_890] == {"a0": 123, "a1": 4_567, "a2": 890}
    assert next(iter(pts)) == {"a0": 0, "a1": 0, "a2": 0}
    with pytest.raises(IndexError):
        pts[10**12]


def test_points_agree_with_the_product(tmp_path: Path) -> None:
    s = sweep.Spec(source="t", simulator="dram", config="c", set={}, workload={},
                   axes=(*_axes(3, 1, 4), sweep.Axis(("z.p", "z.q"), ((0, "x"), (1, "y")))), keep=None, name="t")
    want = [{"a0": a, "a1": b, "a2": c, "z.p": p, "z.q": q}
            for a, b, c, (p, q) in itertools.product(range(3), range(1), range(4), [(0, "x"), (1, "y")])]
    pts = s.points()
    assert list(pts) == want == [pts[i] for i in range(len(pts))] == pts[:]
    assert all(pts.index(p) == i for i, p in enumerate(want))


def test_dry_run_of_a_trillion_point_spec_answers_at_once_with_the_count(tmp_path: Path) -> None:
    path = tmp_path / "huge.toml"
    path.write_text(MILLION.replace("[8, 9, 10, 11, 12, 13, 14, 15, 16, 17]", "{ from = 1, to = 10000, step = 1 }")
                    .replace("[axes]", '[axes]\n"controller.write_queue" = { from = 1, to = 1000, step = 1 }'))
    text = cli("sweep", path, "--dry-run", code=2)
    assert "1,000,000,000,000 points" in text and "at most 1,000,000" in text


def test_dry_run_streams_the_points_of_a_million_point_spec(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text(MILLION)
    # Read the count and the first points, then stop reading: the listing is made as it is
    # written (a reader that stops early ends it cleanly).
    p = subprocess.Popen([str(Path(sys.executable).with_name("movelab")), "sweep", str(path), "--dry-run"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    lines = [p.stdout.readline() for _ in range(4)]
    p.stdout.close()
    assert p.wait(timeout=120) == 0, p.stderr.read() if p.stderr else ""
    assert lines[0].strip() == "big: 1000000 points of dram on ddr3-1600k-bench"
    assert lines[1].split() == ["point", "controller.read_queue", "workload.seed"]
    assert [ln.split() for ln in lines[2:]] == [["0", "8", "1"], ["1", "8", "2"]]
    # Columns as wide as the longest value of each axis, so every line lines up.
    assert len(lines[2]) <= len(lines[1])


def test_dry_run_lists_every_point_aligned(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('simulator = "dram"\nconfig = "ddr3-1600k-bench"\nseeds = 12\n[workload]\nkind = "random"\n'
                    'count = 10\n[axes]\n"controller.scheduler" = ["frfcfs", "fcfs"]\n')
    lines = cli("sweep", path, "--dry-run").splitlines()
    assert lines[0].startswith("s: 24 points")
    rows = [ln.split() for ln in lines[2:]]
    assert rows == [[str(i), s, str(seed)] for i, (s, seed) in
                    enumerate(itertools.product(["frfcfs", "fcfs"], range(1, 13)))]
    starts = {ln.index(r[2], len(r[0]) + len(r[1]) + 2) for ln, r in zip(lines[2:], rows, strict=True)}
    assert len(starts) == 1


def test_a_table_merged_from_many_parts_in_ranges_equals_the_in_memory_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sweep, "FLUSH_ROWS", 2)
    monkeypatch.setattr(sweep, "MERGE_ROWS", 3)
    spec = {**SMALL, "axes": {**SMALL["axes"], "controller.read_queue": [8, 64]}}
    whole = sweep.run(spec, workers=1)
    out = tmp_path / "r.parquet"
    res = sweep.run(spec, out, workers=1, table=False)
    assert res == {"points": 20, "failed": 0, "first_error": None}
    pd.testing.assert_frame_equal(pd.read_parquet(out), whole)
    pd.testing.assert_frame_equal(sweep.read(out), whole)
    f = pq.ParquetFile(out)
    assert f.metadata.num_row_groups == math.ceil(20 / 3)
    assert sweep.read_meta(out)["axes"] == ["controller.scheduler", "workload.seed", "controller.read_queue"]


def _write_parts(d: Path, chunks: list[list[int]]) -> list[Path]:
    """Parts as a sweep writes them (pandas to Parquet), holding the given points; every third part
    lacks the statistic ``late`` and gives ``ratio`` as integers (the merge unifies them)."""
    d.mkdir()
    paths = []
    for k, pts in enumerate(chunks):
        row = {"point": pts, "a0": [p // 10 for p in pts], "a1": [p % 10 for p in pts], "cycles": [3 * p for p in pts]}
        row["ratio"] = [p // 2 for p in pts] if k % 3 == 0 else [p / 2 for p in pts]
        if k % 3:
            row["late"] = [p + 0.5 for p in pts]
        paths.append(d / f"part-{k + 1:05d}.parquet")
        pd.DataFrame(row).to_parquet(paths[-1], index=False)
    return paths


def test_the_merge_reads_each_part_a_bounded_batch_at_a_time_and_holds_one(tmp_path: Path, monkeypatch) -> None:
    import random
    import weakref

    points = list(range(60))
    random.Random(7).shuffle(points)
    # Parts of 7 rows, points out of order across and within them, as parallel workers save them.
    paths = _write_parts(tmp_path / "parts", [points[i:i + 7] for i in range(0, 60, 7)])
    monkeypatch.setattr(sweep, "MERGE_ROWS", 4)
    refs: list[weakref.ref] = []
    seen: list[int] = []

    def reader(path: Path, rows: int):
        """The parts read through pyarrow, a batch of ``rows`` at a time; before making a batch it
        checks that the merge let go of every earlier one (only one is ever materialised)."""
        assert rows == 4
        whole = pq.read_table(path)
        for i in range(0, whole.num_rows, rows):
            alive = sum(r() is not None for r in refs)
            assert alive == 0, f"{alive} earlier batch(es) still held while reading {path.name}"
            batch = whole.slice(i, rows).combine_chunks().to_batches()[0]
            refs.append(weakref.ref(batch))
            seen.extend(batch.column("point").to_pylist())
            yield batch
            del batch

    monkeypatch.setattr(sweep, "_part_batches", reader)
    spec = sweep.Spec(source="t", simulator="dram", config="c", set={}, workload={}, axes=_axes(6, 10), keep=None,
                      name="t")
    out = tmp_path / "r.parquet"
    sweep._merge_parts(paths, out, spec)
    # Every point was read in a batch (a part overlapping several ranges is read again, filtered).
    assert refs and set(seen) == set(range(60))
    df = sweep.read(out)
    assert list(df["point"]) == list(range(60)) and list(df.columns) == ["point", "a0", "a1", "cycles", "ratio",
                                                                        "late", "error"]
    whole = {p for i in range(0, 60, 21) for p in points[i:i + 7]}  # the parts with integer ratios, no 'late'
    assert list(df["cycles"]) == [3 * p for p in range(60)]
    assert list(df["ratio"]) == [p // 2 if p in whole else p / 2 for p in range(60)]
    assert [p for p in range(60) if pd.isna(df["late"][p])] == sorted(whole)
    assert df["error"].isna().all()
    f = pq.ParquetFile(out)
    assert [f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)] == [4] * 15


def test_the_real_part_reader_yields_batches_of_the_asked_size(tmp_path: Path) -> None:
    (path,) = _write_parts(tmp_path / "parts", [list(range(10))])
    assert [b.num_rows for b in sweep._part_batches(path, 4)] == [4, 4, 2]


def test_the_merge_refuses_points_saved_twice_or_missing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sweep, "MERGE_ROWS", 4)
    spec = sweep.Spec(source="t", simulator="dram", config="c", set={}, workload={}, axes=_axes(3, 4), keep=None,
                      name="t")
    twice = _write_parts(tmp_path / "twice", [list(range(12)), [5]])
    with pytest.raises(RuntimeError, match=r"more than 4 rows for points 4\.\.7: some points are saved twice"):
        sweep._merge_parts(twice, tmp_path / "t.parquet", spec)
    missing = _write_parts(tmp_path / "missing", [[0, 1, 2, 3, 4, 6, 7], [8, 9, 10, 11]])
    with pytest.raises(RuntimeError, match=r"3 rows for points 4\.\.7, not 4; resume"):
        sweep._merge_parts(missing, tmp_path / "m.parquet", spec)
    assert not (tmp_path / "t.parquet").exists() and not (tmp_path / "m.parquet").exists()


def test_without_the_table_the_first_failed_point_is_reported(tmp_path: Path, monkeypatch) -> None:
    # Every point fails in the simulator (injected, in this process); the first by position is named.
    def failing(config, overrides, workload):
        raise ValueError(f"injected failure, seed {workload.get('seed')}")

    monkeypatch.setattr(sweep, "_run_dram", failing)
    res = sweep.run(SMALL, tmp_path / "r.parquet", workers=1, table=False)
    assert res["points"] == 10 and res["failed"] == 10
    point, error = res["first_error"]
    assert point == 0 and "injected failure" in error
    df = sweep.read(tmp_path / "r.parquet")
    assert list(df["point"]) == list(range(10)) and df["error"].str.contains("injected failure").all()


def test_report_of_a_table_reads_counts_and_ranges_by_batch(tmp_path: Path, monkeypatch) -> None:
    n = 2500
    error = pa.array([None if i % 500 else f"boom {i}" for i in range(n)], pa.string())
    t = pa.table({"point": list(range(n)), "workload.seed": [i % 50 for i in range(n)],
                  "cycles": [i * 3 for i in range(n)], "flat": [7] * n, "error": error})
    meta = {b"movelab.sweep": b'{"name": "b", "simulator": "dram", "config": "c", "axes": ["workload.seed"]}'}
    (tmp_path / "s").mkdir()
    pq.write_table(t.replace_schema_metadata(meta), tmp_path / "s" / "b.parquet", row_group_size=700)
    monkeypatch.setattr(report, "PLOT_ROWS", 900)
    _fname, page, summ = report._sweep_page(tmp_path / "s" / "b.parquet", tmp_path)
    assert summ["points"] == n and summ["failed"] == 5
    assert f"{n} points, 5 failed" in page
    assert f"first {report.MAX_TABLE_ROWS} of {n} rows" in page
    data = page.split('id="sweep-data">')[1].split("</script>")[0]
    import json

    d = json.loads(data)
    assert d["stats"] == ["cycles"]  # "flat" never moves
    # The plot gets the first PLOT_ROWS rows of the axes and the plotted statistics.
    assert d["rows"][:2] == [{"workload.seed": 0, "cycles": 0}, {"workload.seed": 1, "cycles": 3}]
    assert len(d["rows"]) == 900
    assert "boom 0" in page  # the table shows every column of the first rows
