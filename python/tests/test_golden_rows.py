"""Golden rows of every reproduction: each one, run with small options through the CLI, must print
the rows stored in ``golden/reproduce/NAME.json`` (wall-clock fields left out). A change that moves
a number fails here and names the rows that moved; when the move is meant, rewrite the files with
``MOVELAB_BLESS=1 pytest python/tests/test_golden_rows.py`` and explain each move in the commit."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from movelab.cli import app
from typer.testing import CliRunner

GOLDEN = Path(__file__).parent / "golden" / "reproduce"
runner = CliRunner()

# Each reproduction with options small enough for the test suite (a few seconds each).
CASES: dict[str, list[str]] = {
    "rowclone-latency": [],
    "zhao-copy-engine": ["--packets", "20"],
    "rowclone-fork": ["--sizes", "4,64", "--pages", "2,32", "--zero-pages", "64"],
    "larsen-idma": ["--small-count", "40", "--large-count", "4"],
    "wun-onload": ["--payloads", "64,1472"],
    "rowclone-apps": ["--instructions", "4000", "--warmup", "2000"],
    "rowclone-multicore": ["--mixes", "2", "--cores", "2,4", "--instructions", "4000", "--warmup", "2000"],
}


def simulated(v: Any) -> Any:
    """``v`` without wall-clock fields (measured, not simulated)."""
    if isinstance(v, dict):
        return {k: simulated(x) for k, x in v.items() if k != "wall_s"}
    if isinstance(v, list):
        return [simulated(x) for x in v]
    return v


@pytest.mark.parametrize("name", list(CASES))
def test_reproduction_rows_are_golden(name: str) -> None:
    r = runner.invoke(app, ["reproduce", "--workers", "1", name, *CASES[name], "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = simulated(json.loads(r.stdout))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("MOVELAB_BLESS"):
        path.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
        return
    want = json.loads(path.read_text())
    moved = [(i, w, g) for i, (w, g) in enumerate(zip(want, rows, strict=False)) if w != g]
    detail = "\n".join(f"row {i}:\n  want {w}\n  got  {g}" for i, w, g in moved[:5])
    assert not moved and len(rows) == len(want), (
        f"{name}: {len(moved)} of {len(want)} rows moved ({len(rows)} rows now):\n{detail}")
