"""movelab as users install it: the wheel (what ``make wheel`` builds) installed with pip into a fresh
virtual environment and used from a folder outside the repository. ``movelab reproduce all --quick``
gives the same rows there as from the repository (paper columns included: the papers' data ship
inside the wheel), ``movelab bench sweep --quick`` finds its example spec, and nothing is read
from the repository.

The wheel is built with the profile and interpreter of ``make install`` (the environment this
test runs in), so cargo reuses that build and only the packaging runs (about 10 s). The fresh
environment gets its third-party dependencies from the project's ``.venv`` through a path file
(pip installs the wheel with ``--no-deps``), so the test needs no network."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 900


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=LIMIT, env=env)
    assert r.returncode == 0, (f"{' '.join(cmd)} (in {cwd}) exited {r.returncode}:\n"
                               f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    maturin = Path(sys.executable).with_name("maturin")
    if not maturin.exists() or shutil.which("cargo") is None:
        pytest.skip("building the wheel needs maturin and cargo")
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    env = {**os.environ, "VIRTUAL_ENV": str(Path(sys.executable).parent.parent)}
    _run([str(maturin), "build", "--release", "-q", "-i", sys.executable, "-o", str(dist)], REPO, env)
    wheels = list(dist.glob("movelab-*.whl"))
    assert len(wheels) == 1, wheels
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], root)
    py = venv / "bin" / "python"
    target = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).strip())
    # The dependencies (numpy, pandas, ...) from this environment's site-packages; its own
    # movelab (an editable install of the repository) is not on that path.
    (target / "movelab-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheels[0])], root)
    work = root / "elsewhere"
    work.mkdir()
    return {"wheel": wheels[0], "venv": venv, "py": py, "work": work, "root": root}


def test_the_wheel_is_one_abi3_wheel_holding_the_package(installed: dict[str, Path]) -> None:
    name = installed["wheel"].name
    assert "-cp311-abi3-" in name, name  # one wheel for CPython 3.11 and every later version
    files = zipfile.ZipFile(installed["wheel"]).namelist()
    assert any(f.startswith("movelab/_core") and f.endswith(".so") for f in files)
    assert "movelab/data.py" in files
    # No repository folder is shipped beside the package.
    assert not any(f.startswith(("presets/", "python/", "crates/")) for f in files)


def test_the_installed_package_reads_nothing_from_the_repository(installed: dict[str, Path]) -> None:
    out = _run([str(installed["py"]), "-c",
                "import json, sys, movelab, movelab.data as d\n"
                "print(json.dumps({'file': movelab.__file__, 'path': sys.path, 'files': d.files(),\n"
                "  'paper': sorted(d.paper('wun-onload'))}))"], installed["work"])
    got = json.loads(out)
    assert got["file"].startswith(str(installed["venv"])), got["file"]
    assert not any(p.startswith(str(REPO / "python")) for p in got["path"])
    for f in ["papers/rowclone.toml", "papers/zhao-copy-engine.toml", "papers/larsen-idma.toml",
              "papers/wun-onload.toml", "sweeps/dram-240.toml", "configs/ddr3-1600k-bench.toml", "ledger.toml"]:
        assert f in got["files"], f
    assert "rx" in got["paper"]


#: Columns that time the run on this machine (wall clock), not results.
TIMINGS = {"wall_s"}


def _rows(folder: Path) -> dict[str, object]:
    def strip(v: object) -> object:
        if isinstance(v, list):
            return [strip(x) for x in v]
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in TIMINGS}
        return v

    return {p.parent.name: strip(json.loads(p.read_text())) for p in sorted(folder.glob("*/*.json"))
            if p.stem == p.parent.name}


def test_reproduce_all_from_the_wheel_gives_the_repository_rows(installed: dict[str, Path]) -> None:
    cli = installed["venv"] / "bin" / "movelab"
    _run([str(cli), "reproduce", "all", "--quick", "--workers", "2", "--out", "rep"], installed["work"])
    _run([sys.executable, "-m", "movelab.cli", "reproduce", "all", "--quick", "--workers", "2", "--out",
          str(installed["root"] / "rep-repo")], REPO)
    wheel, repo = _rows(installed["work"] / "rep"), _rows(installed["root"] / "rep-repo")
    assert len(repo) == 8 and wheel.keys() == repo.keys()
    for name in repo:
        assert wheel[name] == repo[name], name
    # The papers' columns are filled from the shipped data (they were empty from a wheel).
    zhao = wheel["zhao-copy-engine"]
    assert any(v is not None for r in zhao if r["figure"] == "table4" for k, v in r.items() if k.startswith("paper_"))
    for png in ["wun-onload/wun-onload-throughput.png", "zhao-copy-engine/zhao-copy-engine-fig11.png"]:
        assert (installed["work"] / "rep" / png).stat().st_size > 0
    _run([str(cli), "report", "rep"], installed["work"])
    assert (installed["work"] / "rep" / "index.html").stat().st_size > 0


def test_bench_sweep_finds_its_example_spec_from_the_wheel(installed: dict[str, Path]) -> None:
    cli = installed["venv"] / "bin" / "movelab"
    _run([str(cli), "bench", "sweep", "--quick", "--workers", "2", "--out", "bs"], installed["work"])
    r = json.loads((installed["work"] / "bs" / "bench-sweep.json").read_text())
    assert r["points"] == 240 and r["tables_equal"] and r["failed"] == 0
    assert r["spec"] == "presets/sweeps/dram-240.toml"
