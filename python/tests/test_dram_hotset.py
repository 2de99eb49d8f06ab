"""``movelab dram generate hotset``: the hot-set trace of the Ramulator 2 agreement runs (90% of
requests to the footprint's first MiB by default), its options and their errors."""

from __future__ import annotations

import json
from pathlib import Path

from movelab.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def addrs(path: Path) -> list[int]:
    return [int(line.split()[1], 16) for line in path.read_text().splitlines()]


def test_hotset_sends_its_share_to_the_first_bytes(tmp_path: Path) -> None:
    t = tmp_path / "h.trace"
    cli("dram", "generate", "hotset", "--out", t, "--format", "ramulator", "--count", "20000", "--footprint", "2G",
        "--hot-fraction", "0.75", "--hot-bytes", "4M", "--seed", "3")
    a = addrs(t)
    assert len(a) == 20000 and all(x % 64 == 0 and x < 2 << 30 for x in a)
    hot = sum(x < 4 << 20 for x in a) / len(a)
    assert abs(hot - 0.75) < 0.02, hot
    # The defaults: 90% to 1 MiB; the same seed gives the same trace, as native or Ramulator lines.
    d = tmp_path / "d.trace"
    cli("dram", "generate", "hotset", "--out", d, "--count", "20000", "--footprint", "2G")
    assert abs(sum(x < 1 << 20 for x in addrs(d)) / 20000 - 0.9) < 0.01
    r = tmp_path / "d.ramulator"
    cli("dram", "generate", "hotset", "--out", r, "--format", "ramulator", "--count", "20000", "--footprint", "2G")
    assert addrs(r) == addrs(d)
    # run --generate hotset simulates the same requests as the written trace.
    direct = json.loads(cli("dram", "run", "ddr3-1600k-bench", "--generate", "hotset", "--count", "20000",
                            "--footprint", "2G", "--format", "json"))
    assert json.loads(cli("dram", "run", "ddr3-1600k-bench", d, "--format", "json")) == direct
    assert direct["row"]["hits"] > 2000  # a hot set gives row hits; uniform random traffic almost none


def test_hotset_options_are_checked(tmp_path: Path) -> None:
    t = tmp_path / "x.trace"
    out = cli("dram", "generate", "random", "--out", t, "--hot-fraction", "0.5", code=2)
    assert "generator.hot_fraction: applies only to kind = \"hotset\"" in out
    out = cli("dram", "generate", "hotset", "--out", t, "--hot-bytes", "2G", "--footprint", "1G", code=2)
    assert "generator.hot_bytes: 2147483648 is not a positive multiple of line_bytes (64) within footprint_bytes" in out
    out = cli("dram", "generate", "hotset", "--out", t, "--hot-fraction", "1.5", code=2)
    assert "--hot-fraction" in out
    assert not t.exists()
