"""``movelab reproduce rowclone-apps`` and ``rowclone-multicore`` (RowClone sections 7.3, 7.4): the JSON
rows' keys and shapes, the figures' response to the applications' copy and zeroing (none: no
improvement), seeded mixes, files written, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from movelab.cli import app
from movelab.reproduce import rowclone_apps as ra
from movelab.reproduce import rowclone_multicore as rm
from typer.testing import CliRunner

runner = CliRunner()
SHORT = ["--instructions", "20000", "--warmup", "10000"]


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


APP_KEYS = {"app", "mechanism", "ipc", "energy_reduction", "bandwidth_reduction", "paper_energy_reduction",
            "paper_bandwidth_reduction"}


@pytest.fixture(scope="module")
def app_rows() -> list[dict]:
    return json.loads(cli("reproduce", "rowclone-apps", *SHORT, "--format", "json"))


def test_rowclone_apps_rows(app_rows: list[dict]) -> None:
    assert all(APP_KEYS <= set(r) for r in app_rows)
    assert [(r["app"], r["mechanism"]) for r in app_rows] == [(a, m) for a in ra.APPS for m in ra.MECHS]
    by = {(r["app"], r["mechanism"]): r for r in app_rows}
    for r in app_rows:
        assert r["ipc"] > 0
        if r["mechanism"] == "baseline":
            assert r["speedup"] == 1.0 and r["energy_reduction"] == 0.0 and r["paper_energy_reduction"] is None
        elif r["mechanism"] == "mc-dma":  # section 7.5 gives means only
            assert r["paper_speedup"] is None and r["paper_energy_reduction"] is None
        else:
            assert isinstance(r["paper_energy_reduction"], float) and isinstance(r["paper_bandwidth_reduction"], float)
    assert by[("forkbench", "rowclone-zi")]["paper_bandwidth_reduction"] == 0.60
    # Copies in DRAM: forkbench and shell gain, and their traffic falls.
    for a in ["forkbench", "shell"]:
        assert by[(a, "rowclone")]["speedup"] > 1.1 and by[(a, "rowclone")]["bandwidth_reduction"] > 0.4
    # Section 7.3: RowClone's in-DRAM zeroing moves the misses to the low-MLP phase 2 (compile,
    # mcached, mysql slow down); RowClone-ZI inserts the zero lines and gains.
    for a in ["compile", "mcached", "mysql"]:
        assert by[(a, "rowclone")]["speedup"] < 1.0
        assert by[(a, "rowclone-zi")]["speedup"] > 1.0
        assert by[(a, "rowclone-zi")]["bandwidth_reduction"] > by[(a, "rowclone")]["bandwidth_reduction"] + 0.1
    # Section 7.5: MC-DMA moves every copied and zeroed line over the channel, where RowClone moves
    # none, and the core waits for it: never faster than RowClone, and more traffic.
    for a in ra.APPS:
        assert by[(a, "mc-dma")]["speedup"] < by[(a, "rowclone")]["speedup"], a
        assert by[(a, "mc-dma")]["bandwidth_reduction"] < by[(a, "rowclone")]["bandwidth_reduction"], a


def test_rowclone_apps_without_copies_or_zeroing_gain_nothing() -> None:
    # forkbench keeps its parent's non-zero line fills: ordinary writes of the core under every
    # mechanism (MC-DMA takes the bulk copies and zeroing RowClone takes, not these).
    rows = ra.run(apps=["shell", "compile", "forkbench"], instructions=20_000, warmup=10_000,
                  app_params={"copies": 0, "zeros": 0})
    assert {r["mechanism"] for r in rows} == set(ra.MECHS)
    for r in rows:
        assert r["speedup"] == pytest.approx(1.0, abs=1e-9), r
        assert r["bandwidth_reduction"] == pytest.approx(0.0, abs=1e-9), r
        assert r["copy_init_fraction"] == 0.0


MC = ["reproduce", "rowclone-multicore", "--mixes", "2", "--cores", "2,4", *SHORT]
MC_KEYS = {"cores", "mechanism", "weighted_speedup_improvement", "harmonic_speedup_improvement",
           "max_slowdown_reduction", "bandwidth_per_instruction_reduction", "energy_per_instruction_reduction",
           "paper_weighted_speedup_improvement", "paper_harmonic_speedup_improvement",
           "paper_max_slowdown_reduction", "paper_bandwidth_per_instruction_reduction",
           "paper_energy_per_instruction_reduction", "instruction_throughput_improvement", "by_highly_intensive"}


@pytest.fixture(scope="module")
def mc_rows() -> list[dict]:
    return json.loads(cli(*MC, "--format", "json"))


def test_rowclone_multicore_rows(mc_rows: list[dict]) -> None:
    assert all(MC_KEYS <= set(r) for r in mc_rows)
    assert [(r["cores"], r["mechanism"]) for r in mc_rows] == [(c, m) for c in [2, 4]
                                                               for m in ["rowclone", "rowclone-zi"]]
    for r in mc_rows:
        assert r["mixes"] == 2
        assert all(isinstance(r[k], float) for k in MC_KEYS if k.endswith(("_improvement", "_reduction"))
                   and not k.startswith("paper_"))
        assert sum(n for _, n, _ in r["by_highly_intensive"]) == 2
        if r["mechanism"] == "rowclone-zi":
            assert r["paper_weighted_speedup_improvement"] == {2: 0.15, 4: 0.20}[r["cores"]]
            assert r["bandwidth_per_instruction_reduction"] > 0.05
        else:
            assert r["paper_harmonic_speedup_improvement"] is None
    # The same seed draws the same mixes and gives the same rows; another seed other mixes.
    assert json.loads(cli(*MC, "--format", "json")) == mc_rows
    assert rm.mixes(7, [2, 4], 2) == rm.mixes(7, [2, 4], 2) != rm.mixes(8, [2, 4], 2)


def test_rowclone_multicore_without_copies_or_zeroing_gains_nothing() -> None:
    rows = rm.run(cores=[2], n_mixes=2, instructions=20_000, warmup=10_000, app_params={"copies": 0, "zeros": 0})
    for r in rows:
        for k in rm.METRICS:
            assert r[k] == pytest.approx(0.0, abs=1e-9), (k, r)
    with_copies = rm.run(cores=[2], n_mixes=2, instructions=20_000, warmup=10_000)
    zi = next(r for r in with_copies if r["mechanism"] == "rowclone-zi")
    assert zi["bandwidth_per_instruction_reduction"] > 0.05


def test_rowclone_multicore_writes_files(tmp_path: Path) -> None:
    out = tmp_path / "mc"
    cli(*MC, "--mixes", "1", "--cores", "2", "--out", out)
    for name in ["rowclone-multicore.json", "rowclone-multicore.csv", "rowclone-multicore-mixes.csv",
                 "rowclone-multicore-table7.png", "rowclone-multicore-fig13.png"]:
        assert (out / name).is_file(), name
    rows = json.loads((out / "rowclone-multicore.json").read_text())
    ok, text = rm.check(rows)
    assert "predictions within tolerance" in text and isinstance(ok, bool)
    # An existing file is kept unless --force.
    out2 = cli(*MC, "--mixes", "1", "--cores", "2", "--out", out, code=2)
    assert "--force" in out2


@pytest.mark.parametrize(("args", "words"), [
    (["rowclone-multicore", "--cores", "3"], ["cores"]),
    (["rowclone-multicore", "--mixes", "0"], ["--mixes"]),
    (["rowclone-multicore", "--app-param", "copies"], ["--app-param"]),
    (["rowclone-multicore", "--set", "copy.mechanism=rowclone"], ["copy.mechanism"]),
    (["rowclone-apps", "--instructions", "0"], ["--instructions"]),
    (["rowclone-apps", "--app-param", "nosuch=1"], ["nosuch"]),
    (["rowclone-apps", "--app-param", "work=99999999"], ["work", "1,000,000"]),
    (["rowclone-apps", "--set", "agents=[]"], ["agents", "sets agents itself"]),
])
def test_bad_input_is_refused(args: list[str], words: list[str]) -> None:
    out = cli("reproduce", *args, *SHORT[2:], code=2)
    assert all(w in out for w in words), out


@pytest.mark.parametrize("args", [["rowclone-apps"], ["rowclone-apps-recorded"], ["rowclone-multicore", "--sample"],
                                  ["rowclone-fork"], ["zhao-copy-engine"]])
def test_a_bad_platform_override_is_refused_before_any_point_runs(args: list[str]) -> None:
    out = cli("reproduce", *args, "--set", "memory.controller.bulk_write_done=soon", code=2)
    assert "controller.bulk_write_done" in out and "'soon' is not one of" in out, out
    assert "points failed" not in out, out


@pytest.mark.parametrize("what", ["rowclone-apps", "rowclone-multicore"])
def test_an_unknown_app_param_is_refused_before_any_point_runs(what: str) -> None:
    out = cli("reproduce", what, "--app-param", "nosuch=1", *([] if what == "rowclone-apps" else ["--sample"]), code=2)
    assert "'nosuch'" in out and "copies" in out and "zeros" in out, out
    assert "points failed" not in out, out
