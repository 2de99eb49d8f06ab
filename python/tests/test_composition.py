"""``movelab platform compose`` and ``movelab.platform.composition``: the receive server that
composes a DDIO NIC, RowClone-ZI, an on-die ASYNC copy engine and a small multithreaded core, every
combination of the three mechanisms, and the iDMA in the NIC's place; and a platform's
``[[agents]]`` list through the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from movelab import platform
from movelab.cli import app
from movelab.platform import composition
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: str, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def test_every_combination_runs_and_every_frame_arrives(tmp_path: Path) -> None:
    rows = json.loads(cli("platform", "compose", "--frames", "6", "--format", "json", "--out", tmp_path))
    names = [r["variant"] for r in rows]
    assert names[0] == "none" and names[7] == "all" and names[8:] == ["idma", "all+idma"]
    for r in rows:
        assert r["frames"] == 6 and r["rx_bytes_wrong"] == 0
        # The receive path runs once per frame received: one zeroing and one copy each.
        assert r["zero_offloads"] == (6 if r["rowclone_zi"] else 0)
        assert r["copy_offloads"] == (6 if r["copy_engine"] else 0)
        assert r["idma"] == r["variant"].endswith("idma")
    by = {r["variant"]: r for r in rows}
    assert by["all"]["saving"] > max(by[m]["saving"] for m in ("ddio", "rowclone-zi", "copy-engine"))
    for f in ("composition.json", "composition.csv", "composition.png"):
        assert (tmp_path / f).stat().st_size > 0
    # Outputs are not overwritten without --force.
    out = cli("platform", "compose", "--frames", "2", "--out", tmp_path, code=2)
    assert "--force" in out
    alone, together = composition.additivity(rows)
    assert 0 < together and alone > 0


def test_bad_arguments_are_refused() -> None:
    cli("platform", "compose", "--frames", "0", code=2)
    with pytest.raises(ValueError, match="frames"):
        composition.run(frames=5000)
    out = cli("platform", "compose", "--frames", "2", "--set", "agents.0.params.bogus=1", code=2)
    assert "agents" in out
    # The composed engine sets its own placement, mode and snoop_ack: [copy]'s changed no variant.
    out = cli("platform", "compose", "--frames", "2", "--set", "copy.mode=SYNC_NLB", code=2)
    assert "copy.mode: not read on this platform" in " ".join(out.split())


def test_an_agent_list_through_the_python_api() -> None:
    cfg = {"preset": "rowclone-system", "copy": {"mechanism": "base"},
           "agents": [{"kind": "in-memory", "takes": ["zero"], "params": {"mechanism": "rowclone-zi"}}]}
    s = platform.run(cfg, "bulk-zero", params={"pages": 4}).stats
    assert [a["name"] for a in s["agents"]] == ["in-memory"]
    assert s["agents"][0]["ops"] == s["offloads"] > 0
    bad = dict(cfg, agents=[{"kind": "dma-engine"}])
    with pytest.raises(ValueError, match=r"agents\[0\]\.kind"):
        platform.run(bad, "bulk-zero", params={"pages": 4})


def test_the_table_keeps_every_number_on_an_80_column_terminal(monkeypatch) -> None:
    # Numbers were cut to "…" (the offloads and energy columns); now only the mechanisms' names fold.
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("platform", "compose", "--frames", "64")
    table = out.split("Savings alone")[0]
    assert "…" not in table and "offloads" in table and "DRAM uJ" in table and "irqs" in table
