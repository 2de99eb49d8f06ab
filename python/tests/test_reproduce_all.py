"""``movelab reproduce all --quick`` (the smoke test of every reproduction): every reproduction runs
with the lengths ``all`` passes it and writes its files. (``all`` once passed larsen-idma stream
counts its own options had stopped taking, and stopped half-way.)"""

from __future__ import annotations

from pathlib import Path

from movelab.cli import app
from movelab.reproduce.cli import FILES
from typer.testing import CliRunner


def test_reproduce_all_quick_runs_every_reproduction(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["reproduce", "--workers", "1", "all", "--quick", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output[-3000:]
    for name, files in FILES.items():
        missing = [f for f in files if not (tmp_path / name / f).is_file()]
        assert not missing, f"{name}: {missing}"
