"""Smaller promises: ``-o -`` is refused rather than written as a file named ``-``, generated files
get an ordinary mode, one payload limit for wun-onload with no repeats, a spec with a BOM is read,
``sweep show`` orders numeric axes as numbers and says no "None", and Fig. 4's legend names the
paper's marks in full."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from movelab import sweep
from movelab.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def test_generate_refuses_dash_and_writes_an_ordinary_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert "--out" in cli("dram", "generate", "random", "--count", "10", "-o", "-", code=2)
    assert not (tmp_path / "-").exists()
    cli("dram", "generate", "random", "--count", "10", "-o", "t.txt")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "t.txt").stat().st_mode) == 0o666 & ~umask


def test_wun_onload_payloads_have_one_limit_and_no_repeats() -> None:
    for bad in ["1473", "15"]:
        out = cli("reproduce", "wun-onload", "--payloads", bad, code=2)
        assert "integers from 16 to" in out and "1,472" in out and "from 1 to" not in out
    assert "repeats" in cli("reproduce", "wun-onload", "--payloads", "64,64", code=2)


def test_a_spec_with_a_bom_is_read(tmp_path: Path) -> None:
    spec = tmp_path / "bom.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + b'simulator = "dram"\nconfig = "ddr3-1600k-bench"\n'
                     b'[workload]\nkind = "random"\ncount = 100\n[axes]\n"workload.seed" = [1, 2]\n')
    assert len(sweep.load_spec(spec).points()) == 2


def test_show_orders_numbers_as_numbers(tmp_path: Path) -> None:
    out = tmp_path / "s.parquet"
    sweep.run({"simulator": "dram", "config": "ddr3-1600k-bench", "workload": {"kind": "random", "count": 200},
               "axes": {"controller.read_queue": [16, 32, 64, 8]}}, out, workers=1)
    text = cli("sweep", "show", out)
    assert "8, 16, 32, 64" in text and "None" not in text
    assert sweep.summary(sweep.read(out), ["controller.read_queue"])["axes"]["controller.read_queue"] == [8, 16, 32, 64]


def test_fig4_legend_names_the_paper_marks_in_full(tmp_path: Path, monkeypatch) -> None:
    from matplotlib.axes import Axes
    from movelab.reproduce import wun_onload as wo

    labels: list[str] = []
    real = Axes.axhline

    def capture(self, *a, **k):
        labels.append(k.get("label", ""))
        return real(self, *a, **k)

    monkeypatch.setattr(Axes, "axhline", capture)
    rows = wo.run(payloads=[64, 1472], experiments=["rx"])
    wo.write(rows, tmp_path)
    assert "paper: small" in labels and "paper: large" in labels


def test_dram_run_gives_every_energy_in_one_unit() -> None:
    text = cli("dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", "2000")
    energy = text[text.index("energy total"):]
    assert "nJ" not in energy and energy.count("uJ") >= 3
